"""``python -m engines fetch ENGINE...`` from a checkout: ``polybeam engines`` (:mod:`polybeam.engines.command`)."""

import sys

from polybeam.engines.command import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m engines"))
