"""The entry point a Dataflow flex template's launcher runs: launch the job, then exit.

``python -m polybeam.pipelines.template_main COMMAND --name=value ...`` (or
with the command in ``POLYBEAM_TEMPLATE_COMMAND``, for an image made for one
command) runs ``polybeam COMMAND`` with ``--no-wait`` as the default: the
flex-template launcher requires the program to exit right after the job is
submitted. Everything the job reports goes to its JSON report next to its
output (see :class:`polybeam.transforms.report.WriteReport`), not to this
process's output.

>>> command_line(["train", "--input=a.libsvm"], {})
['train', '--input=a.libsvm', '--no-wait']
>>> command_line(["--input=a.libsvm"], {"POLYBEAM_TEMPLATE_COMMAND": "evaluate"})
['evaluate', '--input=a.libsvm', '--no-wait']
"""

from __future__ import annotations

import os
import sys
from typing import Mapping, Sequence

COMMAND_VARIABLE = "POLYBEAM_TEMPLATE_COMMAND"


def command_line(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The ``polybeam`` arguments for the launcher's ``argv``: the command first, ``--no-wait`` added."""
    argv = list(argv)
    if environ.get(COMMAND_VARIABLE) and (not argv or argv[0].startswith("-")):
        argv.insert(0, environ[COMMAND_VARIABLE])
    if not any(arg.split("=", 1)[0] in ("--no-wait", "--no_wait") for arg in argv):
        argv.append("--no-wait")
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    from polybeam.pipelines.cli import main as polybeam

    return polybeam(command_line(sys.argv[1:] if argv is None else argv, os.environ))


if __name__ == "__main__":
    sys.exit(main())
