"""Files for the streaming tests: VW lines of a small planted logistic task, dropped into a watched folder as
a producer would (written under another name, then renamed)."""

from __future__ import annotations

import os

import numpy as np


def vw_rows(seed: int, rows: int = 400) -> str:
    """``rows`` VW lines (features a, b, c; labels +-1) drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3))
    y = np.where(x @ np.array([1.0, -1.0, 2.0]) + rng.logistic(size=rows) > 0, 1, -1)
    return "".join(f"{label} | a:{r[0]:.5f} b:{r[1]:.5f} c:{r[2]:.5f}\n" for label, r in zip(y, x))


def drop(folder, name: str, text: str) -> None:
    """``text`` as ``folder/name``, whole at once: written as ``.name`` first, then renamed."""
    temporary = os.path.join(folder, f".{name}")
    with open(temporary, "w") as handle:
        handle.write(text)
    os.rename(temporary, os.path.join(folder, name))


def wait_for_version(models, number: int, job=None, timeout: float = 240.0) -> None:
    """Wait until the folder ``models`` holds version ``number`` (failing after ``timeout`` s, or as soon as
    ``job``, a Popen, has ended)."""
    import time

    from polybeam.transforms import version_folder

    deadline = time.time() + timeout
    while (version_folder.latest_number(str(models)) or 0) < number:
        assert job is None or job.poll() is None, "the streaming job ended early"
        assert time.time() < deadline, f"no version {number} within {timeout} s"
        time.sleep(0.2)
