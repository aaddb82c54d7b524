"""The registry of ``polybeam``'s commands: what each does, which options it takes and which function runs it.

The command line (:mod:`polybeam.pipelines.cli`), its help, the jobs' settings
(:mod:`polybeam.pipelines.options`) and the flex templates
(:mod:`polybeam.pipelines.flex_template`) read their commands from here; the
options themselves are rows of the schema (:mod:`polybeam.pipelines.option_specs`).
A command takes whole PipelineOptions classes by name, or single options
(:class:`Use`) of another command's class, with its own help where they mean
something else to it. A command's runner is named by its dotted path, so that
this registry imports neither Beam nor the jobs: ``polybeam --help`` answers at
once.

>>> COMMANDS["train"].description
'train a model from examples and write the model file'
>>> COMMANDS["sequence"].runner, COMMANDS["sequence"].required
('polybeam.pipelines.anytime:run_sequence', ('input', 'groups', 'output'))
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Use:
    """One option of another command's options class, as this command takes it: with its own ``help``,
    ``section`` (heading of ``--help``) and ``metavar`` when given, and not read as a path unless ``is_path``."""

    name: str
    help: str | None = None
    section: str | None = None
    metavar: str | None = None
    is_path: bool = True


@dataclass(frozen=True)
class Command:
    """A ``polybeam`` command.

    ``runner``: the function that runs its job, as ``module:function`` (None for the commands the command line
    runs itself, which parse their own few options). ``options``: the PipelineOptions classes (by name) and single
    options (:class:`Use`) it takes. ``required``: the options (attributes) it cannot run without, in the order a
    job without them says so.
    """

    name: str
    description: str
    runner: str | None = None
    options: tuple[str | Use, ...] = ()
    required: tuple[str, ...] = ()

    def run_function(self) -> Callable:
        """The function that runs the command's job (imports its module: Beam, the kernels)."""
        module, _, function = self.runner.partition(":")
        return getattr(importlib.import_module(module), function)


# What --alpha, --prefixes and --groups mean to commands that share another command's flag (Beam parses every
# options class together, so two classes cannot both define one flag).
TIMELINESS_ALPHA_HELP = "alpha of the alpha-stopping cost, in (0, 1], or auto: the paper's plateau rule (default: auto)"
PREDICT_PREFIXES_HELP = (
    "predict with the anytime prefixes of this file (polybeam sequence --output) instead of "
    "--model; choose the prefix with --budget or --groups. Each line then ends with the "
    "prefix's size and cost"
)
PREDICT_GROUPS_HELP = (
    "with --prefixes: the feature groups available (comma-separated names); the longest prefix "
    "made of them only answers"
)

_READING = ("InputOptions", "KeyOptions")

COMMANDS = {
    command.name: command
    for command in (
        Command(
            "train",
            "train a model from examples and write the model file",
            "polybeam.pipelines.jobs:run_train",
            (*_READING, "WindowOptions", "LearnerOptions", "ModelOptions", "TrainingOptions", "RunOptions"),
            required=("input", "model"),
        ),
        Command(
            "evaluate",
            "held-out metrics of a model on examples (JSON on the last line)",
            "polybeam.pipelines.jobs:run_evaluate",
            (*_READING, "ScoringOptions", "ModelOptions", "RoutingOptions", "RunOptions"),
            required=("model", "input"),
        ),
        Command(
            "predict",
            "write a prediction for every example",
            "polybeam.pipelines.jobs:run_predict",
            (
                *_READING,
                "ScoringOptions",
                "ModelOptions",
                "RoutingOptions",
                Use("prefixes", help=PREDICT_PREFIXES_HELP, metavar="PATH"),
                Use("groups", help=PREDICT_GROUPS_HELP, section="anytime", metavar="a,b,c", is_path=False),
                "AnytimePredictionOptions",
                "OutputOptions",
                "RunOptions",
            ),
            required=("input", "output"),
        ),
        Command(
            "sequence",
            "order cost-weighted feature groups into anytime model prefixes (JSON lines)",
            "polybeam.pipelines.anytime:run_sequence",
            (
                "InputOptions",
                Use("bits"),
                Use("seed"),
                "SequenceOptions",
                Use("output", help="where to write the prefixes (JSON lines, one file)"),
                "RunOptions",
            ),
            required=("input", "groups", "output"),
        ),
        Command(
            "timeliness",
            "held-out explained variance against cost and alpha-timeliness of prefix files",
            "polybeam.pipelines.anytime:run_timeliness",
            (
                "InputOptions",
                "TimelinessOptions",
                Use("alpha", help=TIMELINESS_ALPHA_HELP, section="anytime"),
                "RunOptions",
            ),
            required=("input", "prefixes"),
        ),
        Command("inspect", "print a model's summary: settings, non-zeros, largest weights"),
        Command(
            "plot", "draw a model's learning curve, non-zeros and weights by degree, or anytime curves of prefix files"
        ),
        Command(
            "template", "write a Dataflow flex template of a command: metadata.json, Dockerfile, entry point, README"
        ),
        Command(
            "demo",
            "train and evaluate on bundled real data with the local runner",
            "polybeam.pipelines.demo:run_demo",
            ("DemoOptions", Use("no-wait")),
        ),
        Command(
            "engines",
            "fetch Beam's Flink and Spark job servers and Prism into a cache; print the options that run on them; "
            "start one here",
        ),
    )
}
