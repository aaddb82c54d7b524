"""Shared tools of the side-by-side benchmarks: measured subprocesses, Vowpal Wabbit, file blocks, tables.

Benchmarks may use peers (``vowpalwabbit``, ``scikit-learn``); the polybeam
package never imports them. Every subprocess is measured by a tiny wrapper
process that runs it and reads ``getrusage(RUSAGE_CHILDREN)``, so the peak
memory reported is that of the measured command alone (the largest process of
its tree), not of the benchmark that started it.

Examples
--------
>>> run = measured_run([sys.executable, "-c", "print('hi')"])
>>> run.returncode, run.stdout.strip(), run.seconds < 10, run.peak_rss_bytes > 0
(0, 'hi', True, True)
>>> markdown_table(["a", "b"], [[1, "x"], [2.5, None]]).splitlines()[2]
'| 1 | x |'
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

# Runs argv[2:], then writes its wall time and the children's peak RSS to argv[1].
_WRAPPER = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call(sys.argv[2:])
seconds = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as handle:
    json.dump({"returncode": code, "seconds": seconds, "maxrss_kib": usage.ru_maxrss,
               "user": usage.ru_utime, "system": usage.ru_stime}, handle)
sys.exit(code)
"""


@dataclass
class MeasuredRun:
    """What one measured subprocess did."""

    command: list[str]
    returncode: int
    seconds: float
    peak_rss_bytes: int
    cpu_seconds: float
    stdout: str
    stderr: str

    def check(self) -> MeasuredRun:
        """Raise with the command's error output when it failed."""
        if self.returncode != 0:
            tail = "\n".join(self.stderr.strip().splitlines()[-25:])
            raise RuntimeError(f"command failed ({self.returncode}): {' '.join(self.command)}\n{tail}")
        return self

    def last_json(self) -> dict:
        """The JSON object on the last non-empty line of stdout (polybeam's report)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        if not lines:
            raise RuntimeError(f"no output from {' '.join(self.command)}")
        return json.loads(lines[-1])


def measured_run(command: Sequence[str], *, env: dict | None = None, timeout: float | None = None) -> MeasuredRun:
    """Run ``command`` in a dedicated wrapper process; wall time, peak RSS and CPU time of the command alone."""
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as report:
        report_path = report.name
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _WRAPPER, report_path, *command],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        with open(report_path) as handle:
            text = handle.read()
        measured = (
            json.loads(text)
            if text
            else {
                "returncode": completed.returncode,
                "seconds": float("nan"),
                "maxrss_kib": 0,
                "user": 0.0,
                "system": 0.0,
            }
        )
    finally:
        os.unlink(report_path)
    return MeasuredRun(
        command=list(command),
        returncode=measured["returncode"],
        seconds=measured["seconds"],
        peak_rss_bytes=int(measured["maxrss_kib"]) * 1024,  # Linux reports KiB
        cpu_seconds=measured["user"] + measured["system"],
        stdout=completed.stdout,
        stderr=completed.stderr,
    )


# -- Vowpal Wabbit -----------------------------------------------------------------


@dataclass
class VWRun:
    """One run of VW's command-line driver."""

    run: MeasuredRun
    average_loss: float
    examples: int


def vw_command(*arguments: str) -> list[str]:
    """VW's command-line driver as shipped by the ``vowpalwabbit`` Python package."""
    return [sys.executable, "-m", "vowpalwabbit", *arguments]


def run_vw(*arguments: str, timeout: float | None = None, prefix: Sequence[str] = ()) -> VWRun:
    """Run VW; parse the ``average loss`` and ``number of examples`` it prints at the end.

    ``prefix`` goes before the command, e.g. ``("taskset", "-c", "0")`` to pin it to one core.
    """
    run = measured_run([*prefix, *vw_command(*arguments)], timeout=timeout).check()
    text = run.stdout + run.stderr
    loss = re.search(r"^average loss = (\S+)", text, re.MULTILINE)
    examples = re.search(r"^number of examples = (\d+)", text, re.MULTILINE)
    return VWRun(
        run=run,
        average_loss=float(loss.group(1)) if loss else float("nan"),
        examples=int(examples.group(1)) if examples else -1,
    )


def vw_version() -> str:
    try:
        from importlib.metadata import version

        return version("vowpalwabbit")
    except Exception:  # noqa: BLE001 - only a label in the report
        return "unknown"


def libsvm_to_vw(source: str, target: str, namespace: str = "f") -> str:
    """Convert a LIBSVM file to VW text, each feature named by its index: ``label |f 3:0.5 7:2``. VW has
    no missing values: a missing one (``4:nan``) is left out, an absent feature.

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.libsvm").write_text("+1 3:0.5 4:nan 7:2\\n-1 2:1\\n")
    >>> print(Path(libsvm_to_vw(str(folder / "a.libsvm"), str(folder / "a.vw"))).read_text(), end="")
    1 |f 3:0.5 7:2
    -1 |f 2:1
    """
    with open(source) as reader, open(target, "w") as writer:
        for line in reader:
            label, _, features = line.strip().partition(" ")
            present = " ".join(token for token in features.split() if not token.lower().endswith(":nan"))
            writer.write(f"{float(label):g} |{namespace} {present}\n")
    return target


def read_predictions(path: str) -> list[float]:
    """VW's ``-p`` file: the first number of each line."""
    with open(path) as handle:
        return [float(line.split()[0]) for line in handle if line.strip()]


def read_vw_model(path: str) -> tuple[dict[int, float], float]:
    """VW's ``--readable_model``: ``{slot: weight}`` and the accumulated L1 (``l1_state``).

    A slot's line is ``slot:weight`` followed, for adaptive and normalised runs, by its
    AdaGrad sum and scale; only the weight is read. VW applies ``l1_state`` when it
    predicts, so the weight in force is ``sign(w) max(|w| - l1_state, 0)``.
    """
    weights, l1_state = {}, 0.0
    with open(path) as handle:
        for line in handle:
            if line.startswith("l1_state"):
                l1_state = float(line.split()[1])
                continue
            slot, colon, value = line.strip().partition(":")
            if colon and slot.isdigit() and value:
                weights[int(slot)] = float(value.split()[0])
    return weights, l1_state


# -- reading files in blocks ------------------------------------------------------------


def line_blocks(path: str, block_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, block)`` of about ``block_bytes`` of whole lines each, as a block reader would see them."""
    offset = 0
    rest = b""
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(block_bytes)
            if not chunk:
                break
            data = rest + chunk if rest else chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            yield offset, data[:cut]
            offset += cut
            rest = data[cut:]
    if rest:
        yield offset, rest


def compile_bytecode() -> None:
    """Compile polybeam's modules to bytecode, as pip does at install: a source checkout run with
    ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile some 120 modules in every measured command
    (about 0.3 s of a 10-row ``train``)."""
    import compileall

    import polybeam

    compileall.compile_dir(os.path.dirname(polybeam.__file__), quiet=1)


# -- reporting --------------------------------------------------------------------------


def write_report(
    folder: str, stem: str, report: dict, markdown: str, *, indent: int = 1, sort_keys: bool = False
) -> None:
    """``<folder>/<stem>.json`` (every figure) and ``<stem>.md`` (the readable summary)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{stem}.json"), "w") as handle:
        json.dump(report, handle, indent=indent, sort_keys=sort_keys, default=float)
        handle.write("\n")
    with open(os.path.join(folder, f"{stem}.md"), "w") as handle:
        handle.write(markdown)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table; ``None`` prints as an empty cell."""

    def cell(value: object) -> str:
        return "" if value is None else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_info() -> dict:
    """What the numbers were measured on."""
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "vowpalwabbit": vw_version(),
        # Other work on the machine slows every figure: the load says how busy it was.
        "load_average": load_average(),
    }
    for package in ("apache_beam", "numpy", "numba"):
        try:
            module = __import__(package)
            info[package] = getattr(module, "__version__", "unknown")
        except ImportError:
            info[package] = None
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=os.path.dirname(__file__)
        ).stdout.strip()
    except OSError:
        info["git_commit"] = None
    return info


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages (None where the OS does not say)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


@dataclass
class Target:
    """A goal a figure is checked against."""

    name: str
    value: float | None
    limit: float
    comparison: str = "<="  # or "<"
    unit: str = ""
    met: bool | None = field(init=False)

    def __post_init__(self) -> None:
        if self.value is None or self.value != self.value:
            self.met = None
        elif self.comparison == "<":
            self.met = self.value < self.limit
        else:
            self.met = self.value <= self.limit

    def verdict(self) -> str:
        return {True: "met", False: "MISSED", None: "n/a"}[self.met]
