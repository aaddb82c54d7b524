"""``python -m engines fetch ENGINE...``: fetch and build what each engine needs into the cache.

Each engine is a module of this package with a ``fetch()`` returning the paths
it made; add one to ``ENGINES`` to make it fetchable.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from engines.tools import EngineUnavailable

ENGINES = {"flink": "engines.flink", "spark": "engines.spark", "prism": "engines.prism"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engines", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="fetch and build engines into the cache")
    fetch.add_argument("engines", nargs="+", choices=sorted(ENGINES))
    args = parser.parse_args(argv)
    for name in args.engines:
        try:
            paths = importlib.import_module(ENGINES[name]).fetch()
        except EngineUnavailable as error:
            print(f"{name}: {error}", file=sys.stderr)
            return 1
        print(f"{name}: " + " ".join(str(path) for path in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
