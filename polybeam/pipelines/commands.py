"""The registry of ``polybeam``'s commands: what each does and which function runs it.

The command line (:mod:`polybeam.pipelines.cli`), its help and the flex
templates (:mod:`polybeam.pipelines.flex_template`) read their commands from
here, and the option schema (:mod:`polybeam.pipelines.option_specs`) says
which options each takes. A command's runner is named by its dotted path, so
that this registry imports neither Beam nor the jobs: ``polybeam --help``
answers at once.

>>> COMMANDS["train"].description
'train a model from examples and write the model file'
>>> COMMANDS["sequence"].runner
'polybeam.pipelines.anytime:run_sequence'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Command:
    """A ``polybeam`` command: its one-line description and the function that runs its job (as
    ``module:function``; None for commands the command line runs itself)."""

    name: str
    description: str
    runner: str | None = None

    def run_function(self) -> Callable:
        """The function that runs the command's job (imports its module: Beam, the kernels)."""
        module, _, function = self.runner.partition(":")
        return getattr(importlib.import_module(module), function)


COMMANDS = {
    command.name: command
    for command in (
        Command("train", "train a model from examples and write the model file", "polybeam.pipelines.jobs:run_train"),
        Command("evaluate", "held-out metrics of a model on examples (JSON on the last line)",
                "polybeam.pipelines.jobs:run_evaluate"),
        Command("predict", "write a prediction for every example", "polybeam.pipelines.jobs:run_predict"),
        Command("sequence", "order cost-weighted feature groups into anytime model prefixes (JSON lines)",
                "polybeam.pipelines.anytime:run_sequence"),
        Command("timeliness", "held-out explained variance against cost and alpha-timeliness of prefix files",
                "polybeam.pipelines.anytime:run_timeliness"),
        Command("inspect", "print a model's summary: settings, non-zeros, largest weights"),
        Command("plot", "draw a model's learning curve, non-zeros and weights by degree, or anytime curves of "
                "prefix files"),
        Command("template", "write a Dataflow flex template of a command: metadata.json, Dockerfile, entry point, "
                "README"),
        Command("demo", "train and evaluate on bundled real data with the local runner",
                "polybeam.pipelines.demo:run_demo"),
    )
}
