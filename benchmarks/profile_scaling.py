"""Where ``polybeam train``'s time goes, with one worker and with forked workers: a timeline per process.

Runs ``polybeam train`` in this process with timers wrapped around its parts
(the launcher's phases, the runner's stages, and in every worker its
bundles, parsing, learning, merging, pickling and the time its threads wait
for each other), then prints a breakdown table. Timestamps are
``CLOCK_BOOTTIME`` seconds, so forked workers' events line up with the
launcher's, and the process start comes from ``/proc/self/stat``.

Usage::

    python benchmarks/profile_scaling.py --events /tmp/p1 -- train --input F --loss logistic --model M
    python benchmarks/profile_scaling.py --events /tmp/p2 -- train --input F --loss logistic --model M \\
        --direct_num_workers 2 --direct_running_mode multi_processing
    python benchmarks/profile_scaling.py --summarise /tmp/p1 /tmp/p2

The timers cost a few microseconds per call (a few hundred calls per run).
"""

from __future__ import annotations

import atexit
import collections
import functools
import json
import os
import sys
import threading
import time

_EVENTS: str | None = None
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def now() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def process_start() -> float:
    with open("/proc/self/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[19]) / _CLK_TCK  # field 22 of stat: start time in clock ticks since boot


def record(kind: str, name: str, start: float, end: float, **extra) -> None:
    line = json.dumps(
        {
            "pid": os.getpid(),
            "thread": threading.current_thread().name,
            "kind": kind,
            "name": name,
            "start": start,
            "end": end,
            **extra,
        }
    )
    with open(os.path.join(_EVENTS, f"{os.getpid()}.jsonl"), "a") as handle:
        handle.write(line + "\n")


def timed(owner, attribute: str, kind: str, name: str | None = None, describe=None):
    """Wrap ``owner.attribute`` (a function or method) so that each call is recorded."""
    original = getattr(owner, attribute)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        start, cpu, process_cpu = now(), time.thread_time(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            extra = describe(*args, **kwargs) if describe else {}
            record(
                kind,
                name or attribute,
                start,
                now(),
                cpu=time.thread_time() - cpu,
                process_cpu=time.process_time() - process_cpu,
                **extra,
            )

    setattr(owner, attribute, wrapper)
    return original


def _stage_name(self, runner_execution_context, bundle_context_manager, bundle_input):
    return {"stage": bundle_context_manager.stage.name[:80]}


def _bundle_name(self, instruction_id, *args, **kwargs):
    names = sorted(t.unique_name for t in self.process_bundle_descriptor.transforms.values() if t.unique_name)
    return {"stage": ",".join(n.split("/")[0] for n in names[:3])[:80]}


def install() -> None:
    """Wrap the parts of a run (in this process; forked workers inherit the wrappers)."""
    from concurrent.futures import Future

    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.worker import bundle_processor, sdk_worker_main

    from polybeam.formats.libsvm import LibsvmFormat
    from polybeam.learners.background import BackgroundLearner
    from polybeam.learners.linear import LinearLearner
    from polybeam.pipelines import cli, commands, forked_workers, job_parts, jobs, launch, model_input
    from polybeam.transforms import report, train

    timed(cli, "_check_arguments", "launcher", "check arguments (imports Beam)")
    timed(commands.Command, "run_function", "launcher", "import the job's module")
    timed(jobs, "run_train", "launcher", "run_train")
    timed(jobs, "check_sample", "launcher", "check sample")
    timed(model_input, "header_columns", "launcher", "header columns")
    timed(jobs, "settle_input", "launcher", "settle input (sample)")
    timed(job_parts, "preload_kernels", "launcher", "preload kernels")
    timed(launch, "forked_runner", "launcher", "fork workers")
    timed(launch, "read_json", "launcher", "read report")
    timed(fn_runner.FnApiRunner, "run_pipeline", "launcher", "runner: run_pipeline")
    timed(fn_runner.FnApiRunner, "create_stages", "launcher", "runner: create stages")
    timed(fn_runner.FnApiRunner, "run_stages", "launcher", "runner: run stages")
    timed(fn_runner.FnApiRunner, "_execute_bundle", "stage", "stage", describe=_stage_name)
    timed(bundle_processor.BundleProcessor, "process_bundle", "bundle", "bundle", describe=_bundle_name)
    timed(sdk_worker_main, "main", "worker", "SDK harness")
    timed(LibsvmFormat, "parse", "work", "parse")
    timed(LinearLearner, "learn", "work", "learn")
    timed(LinearLearner, "merge", "work", "merge")
    timed(LinearLearner, "to_model", "work", "to_model")
    timed(LinearLearner, "__getstate__", "work", "pickle learner")
    timed(BackgroundLearner, "settle", "work", "settle (wait for learning)")
    timed(train.TrainFn, "merge_accumulators", "work", "merge_accumulators")
    timed(train.TrainFn, "compact", "work", "compact")
    timed(train.TrainFn, "extract_output", "work", "extract_output")
    timed(report.WriteReport, "expand", "launcher", "construct report")
    timed(Future, "result", "wait", "wait for a future")
    # The forked child's first moment: when it is handed the runner's addresses.
    serve = forked_workers._serve

    def _serve(read_fd):
        record("worker", "forked", process_start(), now())
        return serve(read_fd)

    forked_workers._serve = _serve


def main(argv: list[str]) -> int:
    global _EVENTS
    if argv[0] == "--summarise":
        for folder in argv[1:]:
            print(summarise(folder))
        return 0
    assert argv[0] == "--events" and argv[2] == "--"
    _EVENTS = argv[1]
    os.makedirs(_EVENTS, exist_ok=True)
    for name in os.listdir(_EVENTS):
        os.unlink(os.path.join(_EVENTS, name))
    started = process_start()
    t0 = now()
    import apache_beam  # noqa: F401  (timed here: the command would import it in _check_arguments)

    t1 = now()
    from polybeam.pipelines import cli

    install()
    t2 = now()
    record("launcher", "interpreter start-up", started, t0)
    record("launcher", "import apache_beam", t0, t1)
    record("launcher", "import polybeam cli + profiler", t1, t2)
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and record("launcher", "exit", now(), now()))
    code = cli.main(argv[3:])
    record("launcher", "main returned", now(), now())
    return code


def summarise(folder: str) -> str:
    events = _load(folder)
    launcher = min(events, key=lambda e: e["start"])["pid"]
    origin = min(e["start"] for e in events)
    lines = [f"== {folder}: {len({e['pid'] for e in events}) - 1} worker process(es) besides the launcher"]
    for e in sorted(
        (e for e in events if e["pid"] == launcher and e["kind"] in ("launcher",)), key=lambda e: e["start"]
    ):
        lines.append(
            f"  launcher {e['start'] - origin:7.3f} .. {e['end'] - origin:7.3f}  {e['end'] - e['start']:6.3f} s"
            f" (process CPU {e.get('process_cpu', float('nan')):6.3f} s)  {e['name']}"
        )
    for e in sorted((e for e in events if e["kind"] == "stage"), key=lambda e: e["start"]):
        lines.append(
            f"  stage    {e['start'] - origin:7.3f} .. {e['end'] - origin:7.3f}  {e['end'] - e['start']:6.3f} s  {e['stage']}"
        )
    by_pid = collections.defaultdict(list)
    for e in events:
        by_pid[e["pid"]].append(e)
    for pid, mine in sorted(by_pid.items()):
        role = "launcher" if pid == launcher else "worker"
        lines.append(f"  -- {role} {pid}")
        for e in sorted((e for e in mine if e["kind"] in ("worker", "bundle")), key=lambda e: e["start"]):
            label = e.get("stage", e["name"])
            lines.append(
                f"     {e['start'] - origin:7.3f} .. {e['end'] - origin:7.3f}  {e['end'] - e['start']:6.3f} s"
                f" (process CPU {e.get('process_cpu', float('nan')):6.3f} s)  {e['kind']} {label}"
            )
        totals = collections.defaultdict(lambda: [0.0, 0.0, 0])
        for e in mine:
            if e["kind"] in ("work", "wait"):
                key = f"{e['name']} [{e['thread'].rsplit('_', 1)[0]}]"
                totals[key][0] += e["end"] - e["start"]
                totals[key][1] += e.get("cpu", 0.0)
                totals[key][2] += 1
        for key, (seconds, cpu, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"     total {seconds:6.3f} s wall, {cpu:6.3f} s CPU in {calls:4d} calls: {key}")
    lines.append(f"  end {max(e['end'] for e in events) - origin:7.3f}")
    return "\n".join(lines)


def _load(folder: str) -> list[dict]:
    events = []
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as handle:
            events += [json.loads(line) for line in handle]
    return events


def breakdown(folder: str) -> dict:
    """Seconds per part of one profiled run (see the module's docstring), and per worker of its main stage."""
    events = _load(folder)
    launcher = min(events, key=lambda e: e["start"])["pid"]
    mine = [e for e in events if e["pid"] == launcher]

    def one(name):
        found = [e for e in mine if e["name"] == name]
        return found[0] if found else None

    def span(name):
        found = one(name)
        return found["end"] - found["start"] if found else 0.0

    stages = sorted((e for e in events if e["kind"] == "stage"), key=lambda e: e["start"])
    work = [e for e in events if e["name"] in ("parse", "learn")]

    def work_in(stage):
        return sum(stage["start"] <= e["start"] <= stage["end"] for e in work)

    # The main stage is the one that reads, parses and learns: on a small input a later stage (merging,
    # writing the model) can take longer, so the stage with the most parse and learn calls, then the longest.
    main = max(stages, key=lambda e: (work_in(e), e["end"] - e["start"]))
    run_train, run_pipeline, run_stages = one("run_train"), one("runner: run_pipeline"), one("runner: run stages")
    parts = {
        "interpreter start-up": span("interpreter start-up"),
        "import Beam": span("import apache_beam"),
        "import polybeam (numba, formats, learners, transforms)": span("import polybeam cli + profiler"),
        "argument checks": span("check arguments (imports Beam)") + span("import the job's module"),
        "first kernel call (numba set-up, parse kernel) in the input check": span("check sample"),
        "pipeline construction": run_pipeline["start"]
        - run_train["start"]
        - span("check sample")
        - span("header columns")
        - span("preload kernels")
        - span("fork workers"),
        "preload kernels for forked workers": span("preload kernels"),
        "fork workers": span("fork workers"),
        "runner: translation, worker start, first stage scheduled": stages[0]["start"] - run_pipeline["start"],
        "stages before the main stage": main["start"] - stages[0]["start"],
        "main stage (read, parse, learn)": main["end"] - main["start"],
        "stages after the main stage (merge, model, report)": run_stages["end"] - main["end"],
        "read report, print": one("main returned")["end"] - run_stages["end"],
    }
    parts["pipeline (run_train)"] = run_train["end"] - run_train["start"]
    workers = []
    for pid in sorted({e["pid"] for e in events}):
        own = [e for e in events if e["pid"] == pid]
        bundles = [e for e in own if e["kind"] == "bundle" and e["start"] >= main["start"] and e["end"] <= main["end"]]
        if not bundles:
            continue
        bundle = max(bundles, key=lambda e: e["end"] - e["start"])

        def total(name, field="cpu", within=bundle, threads=None, own=own):
            return sum(
                e[field] if field != "wall" else e["end"] - e["start"]
                for e in own
                if e["name"] == name
                and within["start"] <= e["start"] <= within["end"]
                and (threads is None or threads(e["thread"]))
            )

        harness = [e for e in own if e["name"] == "SDK harness"]
        forked = [e for e in own if e["name"] == "forked"]
        workers.append(
            {
                "pid": pid,
                "main bundle wall": bundle["end"] - bundle["start"],
                "main bundle CPU (all threads)": bundle["process_cpu"],
                "parse CPU": total("parse"),
                "learn CPU": total("learn"),
                "learn wall (thread busy or waiting for a core)": total("learn", "wall"),
                "bundle thread waiting for parse/learn threads": total("wait for a future", "wall"),
                "idle before its main bundle": bundle["start"] - main["start"],
                "idle after its main bundle": main["end"] - bundle["end"],
                "start-up (fork to harness)": harness[0]["start"] - forked[0]["start"] if harness and forked else None,
            }
        )
    return {"parts": parts, "workers": workers}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
