"""``polybeam engines``: fetch and build Beam's engines into the cache, print the options that run on them, and
start one here.

``polybeam engines fetch flink spark prism`` builds what each engine needs (see
:mod:`polybeam.engines`); ``polybeam engines options flink`` prints the Beam
options that run a polybeam command on an engine fetched before, for the
shell to splice in::

    polybeam train --input 'train-*.csv' --format csv --model m.model $(polybeam engines options flink)

The options are printed as ``--name=value`` words without quotes, as ``$(...)`` needs them.
``polybeam engines start flink [--cluster]`` starts the engine here (a job server, a standalone
cluster with ``--cluster``, and a pool of Python workers in processes of their own), prints the
options that send a job to it on its first line, and runs until Ctrl-C or SIGTERM stops it all.
The same runs as ``python -m polybeam.engines`` (and, from a checkout, ``python -m engines``).
The engines are the entries of :data:`~polybeam.engines.specs.ENGINE_SPECS`.

>>> parser("polybeam engines").parse_args(["start", "spark", "--cluster"]).cluster
True
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from polybeam.engines.specs import ENGINE_SPECS
from polybeam.engines.tools import EngineUnavailable, joined_options

DESCRIPTION = (
    "Fetch and build Beam's engines into a cache, print the options that run polybeam on them, and start one here."
)
NAMES = list(ENGINE_SPECS)
WATCH_SECONDS = 0.5  # how often `start` looks whether the engine's processes are still up


class _Parser(argparse.ArgumentParser):
    """A parser whose mistakes are one line (``prog: error: ...``) and exit status 2, with no usage block."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def parser(prog: str) -> argparse.ArgumentParser:
    """The ``polybeam engines`` parser (``prog``: its name in messages)."""
    names = ", ".join(NAMES)
    top = _Parser(prog=prog, description=DESCRIPTION, allow_abbrev=False)
    commands = top.add_subparsers(dest="command", required=True, metavar="{fetch,options,start}")
    needs = "; ".join(f"{spec.title}: {spec.needs_text}" for spec in ENGINE_SPECS.values())
    fetch = commands.add_parser(
        "fetch",
        help=f"fetch and build engines into the cache ({needs})",
        description="Fetch and build what each engine needs into the cache ($POLYBEAM_ENGINE_CACHE or "
        "~/.cache/polybeam-engines) from package registries: Beam's Flink and Spark job servers from Maven "
        "Central, Spark's jars from the pyspark wheel, Prism with go install.",
        allow_abbrev=False,
    )
    fetch.add_argument("engines", nargs="+", choices=NAMES, metavar="ENGINE", help=names)
    options = commands.add_parser(
        "options",
        help="print the Beam options that run polybeam on a fetched engine",
        description="Print the Beam options that run a polybeam command on ENGINE through what "
        "polybeam engines fetch built, on one line, for $(polybeam engines options ENGINE).",
        allow_abbrev=False,
    )
    options.add_argument("engine", choices=NAMES, metavar="ENGINE", help=names)
    options.add_argument(
        "--master",
        default=None,
        help="where the engine runs: "
        + "; ".join(f"{spec.name}: {spec.master} (default: {spec.default_master})" for spec in ENGINE_SPECS.values()),
    )
    start = commands.add_parser(
        "start",
        help="start a fetched engine here and print the options that send a job to it; Ctrl-C stops it",
        description="Start ENGINE on this machine, as a cluster's users run one: its job server for many jobs "
        "(with --cluster on a standalone cluster, each process its own) and a pool of Python workers in "
        "processes of their own. The first line of standard output is the options that send a polybeam "
        "command to it (--runner=PortableRunner --job_endpoint=... --environment_type=EXTERNAL ...); it runs "
        "until Ctrl-C or SIGTERM, then stops everything it started.",
        allow_abbrev=False,
    )
    start.add_argument("engine", choices=NAMES, metavar="ENGINE", help=names)
    start.add_argument(
        "--cluster",
        action="store_true",
        help=f"a standalone cluster (a master and two workers, each its own process) instead of the embedded "
        f"engine ({clustered_names()})",
    )
    start.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where its logs and working folders go, kept (default: a fresh folder, removed when it stops)",
    )
    start.add_argument(
        "--private-tmp",
        action="store_true",
        help="give the Python workers an empty /tmp of their own, as remote workers cannot see this machine's "
        "(needs root and unshare -m; where it cannot, they share /tmp, saying so)",
    )
    return top


def main(argv: list[str] | None = None, *, prog: str = "python -m polybeam.engines") -> int:
    """Run ``polybeam engines`` with ``argv``; the exit status (1: an engine is unavailable here)."""
    top = parser(prog)
    args = top.parse_args(argv)
    if args.command == "options":
        spec = ENGINE_SPECS[args.engine]
        try:
            options = spec.load().polybeam_options(args.master or spec.default_master)
        except EngineUnavailable as error:
            print(f"{prog}: error: {args.engine}: {error}", file=sys.stderr)
            return 1
        print(" ".join(options))  # (no quotes: $(...) splits words but removes no quotes)
        return 0
    if args.command == "start":
        spec = ENGINE_SPECS[args.engine]
        if args.cluster and not spec.cluster:
            top.error(f"--cluster: {spec.title} has no standalone cluster (engines with one: {clustered_names()})")
        return start(spec.setup(args.cluster), args.workdir, private_tmp=args.private_tmp, prog=prog)
    for name in args.engines:
        try:
            paths = ENGINE_SPECS[name].load().fetch()
        except EngineUnavailable as error:
            print(f"{prog}: error: {name}: {error}", file=sys.stderr)
            return 1
        print(f"{name}: " + " ".join(str(path) for path in paths))
    ran = " ".join(args.engines)
    print(f"to run a polybeam command on one: polybeam COMMAND ... $(polybeam engines options ENGINE), ENGINE: {ran}")
    print("or start one here for many commands: polybeam engines start ENGINE")
    return 0


def clustered_names() -> str:
    """The engines that also start as a standalone cluster, for messages."""
    return ", ".join(spec.name for spec in ENGINE_SPECS.values() if spec.cluster)


class _Stopped(Exception):
    """SIGTERM arrived: stop the engine as Ctrl-C would."""


def _on_sigterm(signum, frame):
    raise _Stopped


def start(setup: str, workdir: Path | None, *, private_tmp: bool = False, prog: str = "polybeam engines") -> int:
    """``polybeam engines start``: start ``setup`` (:data:`polybeam.engines.running.SETUPS`), print its
    options, and serve until Ctrl-C or SIGTERM (exit status 0) or until one of its processes ends (1)."""
    from polybeam.engines import running

    spec, _ = running.setup_of(setup)
    if not spec.load().fetched():
        print(
            f"{prog}: error: {spec.name}: {spec.title} is not fetched: run polybeam engines fetch {spec.name} "
            f"(needs {spec.needs_text})",
            file=sys.stderr,
        )
        return 1
    temporary = workdir is None
    if temporary:
        workdir = Path(
            tempfile.mkdtemp(prefix=f"polybeam-{setup}-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
        )
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    engine = None
    try:
        began = time.monotonic()
        engine = running.start(setup, workdir, private_tmp=private_tmp)
        print(" ".join(joined_options(engine.options)), flush=True)
        one_at_a_time = ", one job at a time" if engine.parallel == 1 else ""
        isolation = f", {engine.services[0].notes[-1]}" if private_tmp else ""  # (the pool is its first service)
        print(
            f"{setup} ({engine.versions}) started in {time.monotonic() - began:.1f} s: its job server at "
            f"{engine.job_endpoint}{one_at_a_time}, Python workers from the pool at {engine.pool_address}"
            f"{isolation}; logs in {workdir / setup}\n"
            "send a polybeam command to it with the options above: polybeam COMMAND ... OPTIONS\n"
            "Ctrl-C (or SIGTERM) stops it",
            file=sys.stderr,
            flush=True,
        )
        while (ended := engine.exited()) is None:
            time.sleep(WATCH_SECONDS)
        print(
            f"{prog}: error: {setup}: its {ended.name} ended with exit status {ended.process.returncode}:\n"
            f"{ended.log_tail(15)}",
            file=sys.stderr,
        )
        return 1
    except (KeyboardInterrupt, _Stopped):
        print(f"{setup}: stopping", file=sys.stderr, flush=True)
        return 0
    except RuntimeError as error:  # EngineUnavailable, or a process that did not start listening
        print(f"{prog}: error: {setup}: {error}", file=sys.stderr)
        return 1
    finally:
        # A second Ctrl-C must not leave half of it running: stopping is not interrupted.
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            if engine is not None:
                engine.stop()
            if temporary:
                shutil.rmtree(workdir, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, interrupt)
            signal.signal(signal.SIGTERM, previous)
