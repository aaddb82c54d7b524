"""``polybeam engines``: fetch and build Beam's engines into the cache, and print the options that run on them.

``polybeam engines fetch flink spark prism`` builds what each engine needs (see
:mod:`polybeam.engines`); ``polybeam engines options flink`` prints the Beam
options that run a polybeam command on an engine fetched before, for the
shell to splice in::

    polybeam train --input 'train-*.csv' --format csv --model m.model $(polybeam engines options flink)

The options are printed as ``--name=value`` words without quotes, as ``$(...)`` needs them.
The same runs as ``python -m polybeam.engines`` (and, from a checkout, ``python -m engines``).
Each engine is an entry of :data:`ENGINES`: a module with ``fetch()`` (the paths it made),
``fetched()`` (whether it is built) and ``polybeam_options(master)`` (the options that run on it).

>>> sorted(ENGINES)
['flink', 'prism', 'spark']
"""

from __future__ import annotations

import argparse
import importlib
import sys

from polybeam.engines.tools import EngineUnavailable

DESCRIPTION = "Fetch and build Beam's engines into a cache, and print the options that run polybeam on them."
# name -> (module, what --master means to it, its default master)
ENGINES = {
    "flink": ("polybeam.engines.flink", "Flink's master: [local] (embedded) or a JobManager's HOST:PORT", "[local]"),
    "spark": ("polybeam.engines.spark", "Spark's master URL: local[N] or spark://HOST:PORT", "local[2]"),
    "prism": ("polybeam.engines.prism", "(Prism runs on this machine: no master)", None),
}


class _Parser(argparse.ArgumentParser):
    """A parser whose mistakes are one line (``prog: error: ...``) and exit status 2, with no usage block."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def parser(prog: str) -> argparse.ArgumentParser:
    """The ``polybeam engines`` parser (``prog``: its name in messages)."""
    top = _Parser(prog=prog, description=DESCRIPTION, allow_abbrev=False)
    commands = top.add_subparsers(dest="command", required=True, metavar="{fetch,options}")
    fetch = commands.add_parser(
        "fetch",
        help="fetch and build engines into the cache (Flink, Spark: Java 17 and Maven; Prism: Go)",
        description="Fetch and build what each engine needs into the cache ($POLYBEAM_ENGINE_CACHE or "
        "~/.cache/polybeam-engines) from package registries: Beam's Flink and Spark job servers from Maven "
        "Central, Spark's jars from the pyspark wheel, Prism with go install.",
        allow_abbrev=False,
    )
    fetch.add_argument("engines", nargs="+", choices=sorted(ENGINES), metavar="ENGINE", help="flink, spark, prism")
    options = commands.add_parser(
        "options",
        help="print the Beam options that run polybeam on a fetched engine",
        description="Print the Beam options that run a polybeam command on ENGINE through what "
        "polybeam engines fetch built, on one line, for $(polybeam engines options ENGINE).",
        allow_abbrev=False,
    )
    options.add_argument("engine", choices=sorted(ENGINES), metavar="ENGINE", help="flink, spark or prism")
    options.add_argument(
        "--master",
        default=None,
        help="where the engine runs: "
        + "; ".join(f"{name}: {meaning} (default: {default})" for name, (_, meaning, default) in ENGINES.items()),
    )
    return top


def engine(name: str):
    """The module of engine ``name``."""
    return importlib.import_module(ENGINES[name][0])


def main(argv: list[str] | None = None, *, prog: str = "python -m polybeam.engines") -> int:
    """Run ``polybeam engines`` with ``argv``; the exit status (1: an engine is unavailable here)."""
    args = parser(prog).parse_args(argv)
    if args.command == "options":
        try:
            options = engine(args.engine).polybeam_options(args.master or ENGINES[args.engine][2])
        except EngineUnavailable as error:
            print(f"{prog}: error: {args.engine}: {error}", file=sys.stderr)
            return 1
        print(" ".join(options))  # (no quotes: $(...) splits words but removes no quotes)
        return 0
    for name in args.engines:
        try:
            paths = engine(name).fetch()
        except EngineUnavailable as error:
            print(f"{prog}: error: {name}: {error}", file=sys.stderr)
            return 1
        print(f"{name}: " + " ".join(str(path) for path in paths))
    ran = " ".join(args.engines)
    print(f"to run a polybeam command on one: polybeam COMMAND ... $(polybeam engines options ENGINE), ENGINE: {ran}")
    return 0
