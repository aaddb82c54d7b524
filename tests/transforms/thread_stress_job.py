"""The two-thread local runner under load, measured in a fresh process.

``python -m tests.transforms.thread_stress_job SPEC.json`` runs ``polybeam train`` (softmax, with
``--direct_num_workers 2 --direct_running_mode multi_threading``: two workers' bundles on threads of
this one process) ``spec["runs"]`` times in a row, in this process, with GIL switches forced every
``spec["switch_interval"]`` seconds and ``spec["hammers"]`` threads spinning in Python meanwhile (so
that the bundles' threads, the learners' helper thread and the parser's interleave in many more ways
than on a quiet machine). It writes ``spec["out"]`` as JSON: per run, the peak resident memory of the
run alone (Linux's VmHWM, reset before each run through ``/proc/self/clear_refs``), the resident memory
after it (free pages handed back to the system first), the objects frozen out of the garbage
collector's view, the report's counts, the model's weights, and how many signatures each of polybeam's
numba kernels holds. ``test_thread_stress.py`` runs it.

SPEC: ``{"argv": [...train options but --model...], "model_dir": path, "runs": n, "hammers": n,
"switch_interval": seconds, "out": path}``
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import io
import json
import sys
import threading
import time


def status_kib(field: str) -> int:
    """A ``/proc/self/status`` figure in KiB (``VmHWM``, ``VmRSS``)."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def release_free_memory() -> None:
    """Hand the allocator's free pages back to the system (glibc ``malloc_trim``), where it can.

    Without it the resident memory after a run counts free blocks the allocator's per-thread arenas keep
    for reuse, which vary by 100-150 MiB from run to run with how the threads interleaved; what the
    test checks is what the process still holds (objects a run left behind), not the allocator's cache.
    """
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the figure keeps the allocator's cache
        pass


def reset_peak() -> bool:
    """Start VmHWM again from the current resident memory (Linux >= 4.0); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def kernel_signatures() -> dict[str, int]:
    """How many compiled signatures each numba kernel of polybeam holds."""
    from numba.core.registry import CPUDispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("polybeam"):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher) and value.py_func.__module__.startswith("polybeam"):
                found[f"{value.py_func.__module__}.{value.py_func.__name__}"] = len(value.signatures)
    return found


def _hammer(stop: threading.Event) -> None:
    # Pure Python: holds the GIL between switches, as another busy job's threads would compete for it.
    counter = 0
    while not stop.is_set():
        counter += 1


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    import numpy as np

    from polybeam.pipelines import cli
    from polybeam.transforms.model_io import read_model

    runs = []
    stop = threading.Event()
    hammers = [threading.Thread(target=_hammer, args=(stop,), daemon=True) for _ in range(spec.get("hammers", 0))]
    for hammer in hammers:
        hammer.start()
    sys.setswitchinterval(spec.get("switch_interval", 0.005))
    try:
        for run in range(spec["runs"]):
            model = f"{spec['model_dir']}/model-{run}.pb"
            gc.collect()
            peak_reset = reset_peak()
            started = time.perf_counter()
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = cli.main(["train", *spec["argv"], "--model", model])
            seconds = time.perf_counter() - started
            peak = status_kib("VmHWM")
            gc.collect()
            release_free_memory()
            entry = {
                "code": code,
                "seconds": seconds,
                "peak_kib": peak,
                "peak_reset": peak_reset,
                "rss_after_kib": status_kib("VmRSS"),
                "frozen": gc.get_freeze_count(),
                "stderr": stderr.getvalue()[-2000:],
            }
            if code == 0:
                report = json.loads(stdout.getvalue().strip().splitlines()[-1])
                weights = read_model(model)
                entry.update(
                    records=report["records"],
                    examples=report["examples"],
                    dead_letters=report["dead_letters"],
                    skipped=report["skipped"],
                    reconciles=report["reconciles"],
                    examples_trained=report["examples_trained"],
                    learned=report["passes"][0]["examples"],
                    slots=weights.slots.tolist(),
                    weights=np.asarray(weights.weights).tolist(),
                )
            entry["signatures"] = kernel_signatures()
            runs.append(entry)
    finally:
        stop.set()
        sys.setswitchinterval(0.005)
    with open(spec["out"], "w") as handle:
        json.dump({"runs": runs}, handle)


if __name__ == "__main__":
    main(sys.argv[1])
