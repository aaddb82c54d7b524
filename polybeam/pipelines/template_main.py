"""The entry point a Dataflow flex template's launcher runs: launch the job, then exit.

``python -m polybeam.pipelines.template_main COMMAND --name=value ...`` (or
with the command in ``POLYBEAM_TEMPLATE_COMMAND``, for an image made for one
command, as ``polybeam template`` writes it) runs ``polybeam COMMAND`` with
``--no-wait`` as the default: the flex-template launcher requires the program
to exit right after the job is submitted. Everything the job reports goes to
its JSON report next to its output (see
:class:`polybeam.transforms.report.WriteReport`), not to this process's output.

The launcher spells every parameter ``--name=value``, flags included
(``--no_center=true``): a flag's ``true`` becomes the bare flag and its
``false`` drops it.

>>> command_line(["train", "--input=a.libsvm"], {})
['train', '--input=a.libsvm', '--no-wait']
>>> command_line(["--input=a.libsvm", "--no_center=true", "--gsa_exact=false"], {"POLYBEAM_TEMPLATE_COMMAND": "train"})
['train', '--input=a.libsvm', '--no_center', '--no-wait']
>>> command_line(["evaluate", "--no_wait=false"], {})
['evaluate']
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

COMMAND_VARIABLE = "POLYBEAM_TEMPLATE_COMMAND"
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


class TemplateParameterError(ValueError):
    """A flag parameter whose value is not true or false."""


def command_line(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The ``polybeam`` arguments for the launcher's ``argv``: the command first, flags' values
    turned into bare flags, ``--no-wait`` added unless the parameters say otherwise."""
    from polybeam.pipelines.flex_template import TEMPLATE_COMMANDS, boolean_parameters

    argv = list(argv)
    if environ.get(COMMAND_VARIABLE) and (not argv or argv[0].startswith("-")):
        argv.insert(0, environ[COMMAND_VARIABLE])
    if not argv:
        return argv
    command, arguments = argv[0], argv[1:]
    flags = boolean_parameters(command) if command in TEMPLATE_COMMANDS else {"no_wait"}
    line, wait_said = [command], False
    for argument in arguments:
        name, has_value, value = argument.partition("=")
        dest = name.lstrip("-").replace("-", "_")
        wait_said = wait_said or dest == "no_wait"
        if not (has_value and name.startswith("--") and dest in flags):
            line.append(argument)
            continue
        if value.strip().lower() in TRUE:
            line.append(name)
        elif value.strip().lower() not in FALSE:
            raise TemplateParameterError(f"{name} is a flag: give it true or false, not {value!r}")
    if not wait_said:
        line.append("--no-wait")
    return line


def main(argv: Sequence[str] | None = None) -> int:
    from polybeam.pipelines.cli import main as polybeam

    try:
        line = command_line(sys.argv[1:] if argv is None else argv, os.environ)
    except TemplateParameterError as error:
        print(f"polybeam template: error: {error}", file=sys.stderr)
        return 2
    return polybeam(line, freeze=argv is None)  # the launcher's own process: see polybeam's main


if __name__ == "__main__":
    sys.exit(main())
