"""``python -m polybeam.engines fetch ENGINE...``: ``polybeam engines`` (see :mod:`polybeam.engines.command`)."""

import sys

from polybeam.engines.command import main

if __name__ == "__main__":
    sys.exit(main())
