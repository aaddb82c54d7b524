"""polybeam's PipelineOptions: the same names from Python, the command line and templates.

Every option has a hyphenated spelling for people (``--learning-rate``) and an
underscored one for templates and Beam habits (``--learning_rate``); both fill
the same attribute. Beam's own options (``--runner``, ``--temp_location``, ...)
pass through untouched.

>>> from apache_beam.options.pipeline_options import PipelineOptions
>>> options = PipelineOptions(["--loss", "logistic", "--learning_rate", "0.1"])
>>> learner_config(options).learning_rate
0.1
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from polybeam.learners.config import LearnerConfig
from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.option_specs import FORMATS  # noqa: F401  (re-exported)
from polybeam.transforms.files import absolute_path

# The local runner that needs no network (the DirectRunner name first tries to
# download the Prism runner).
DEFAULT_RUNNER = "FnApiRunner"


class InputOptions(PipelineOptions):
    """Where examples come from and how to read them."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_input_options(parser)


class KeyOptions(PipelineOptions):
    """Per-key models: ``--key``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_key_options(parser)


class LearnerOptions(PipelineOptions):
    """How the learner learns (see polybeam.learners.config.LearnerConfig)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_learner_options(parser)


class ModelOptions(PipelineOptions):
    """Where the model file (or directory of per-key models) is."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_model_options(parser)


class TrainingOptions(PipelineOptions):
    """Warm start, checkpoints and resume of ``polybeam train``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_training_options(parser)


class RoutingOptions(PipelineOptions):
    """Per-key evaluate/predict: the model for keys without one."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_routing_options(parser)


class OutputOptions(PipelineOptions):
    """Where results go."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_output_options(parser)


class RunOptions(PipelineOptions):
    """Whether the launcher waits for the job, and where the job's report goes."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_run_options(parser)


class SequenceOptions(PipelineOptions):
    """Options of ``polybeam sequence``: feature groups, method, ridge."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_sequence_options(parser)


class TimelinessOptions(PipelineOptions):
    """Options of ``polybeam timeliness``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_timeliness_options(parser)


class AnytimePredictionOptions(PipelineOptions):
    """``polybeam predict --prefixes``: the budget that picks the prefix."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_anytime_prediction_options(parser)


class DemoOptions(PipelineOptions):
    """Options of ``polybeam demo``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_demo_options(parser)


# LearnerOptions attributes that carry a LearnerConfig field of the same name.
_SAME_NAMES = (
    "loss", "step", "learning_rate", "power_t", "l2", "bits", "seed", "passes", "classes", "class_names",
    "gsa_target", "gsa_exact", "sparsity", "gravity", "truncate_every", "truncate_threshold",
    "expand", "alpha", "expand_rule", "max_degree", "expansions", "expand_after", "examples_per_pass", "interactions",
)  # fmt: skip


def learner_config(options: PipelineOptions) -> LearnerConfig:
    """The LearnerConfig the options describe (validated, with clear messages)."""
    learner = options.view_as(LearnerOptions)
    values = {name: getattr(learner, name) for name in _SAME_NAMES}
    if values["alpha"] is None:
        values["alpha"] = 1.0
    elif values["alpha"] == "auto":
        raise ValueError("--alpha auto applies to polybeam timeliness; apple's --alpha is a number (default: 1)")
    return LearnerConfig(
        **values,
        bias=not learner.no_bias,
        center=not learner.no_center,
        scale_labels=False if learner.no_scale_labels else None,
        apple_guard=not learner.no_apple_guard,
        normalized=not learner.no_normalize,
        safe_updates=not learner.plain_updates,
        repeat_factors=not learner.no_repeat_factors,
    )


def format_options(
    options: PipelineOptions, config: LearnerConfig, *, labels: str | None = None, key: str | None = None
) -> dict:
    """Keyword arguments for ``ReadExamples``: the input options plus what the learner needs
    (its bits and seed, the labels it accepts, its classes) and, for ``--key namespace:NAME``
    or ``column:NAME``, where the readers find each example's key."""
    read = options.view_as(InputOptions)
    settings: dict = {"bits": config.bits, "seed": config.seed, "labels": labels or config.label_kind}
    if config.loss == "softmax":
        settings.update(classes=config.classes, label_names=config.class_names)
    if read.format == "csv":
        settings.update(
            delimiter=read.csv_delimiter,
            has_header=not read.no_csv_header,
            categorical_columns=read.categorical_columns,
            weight_column=read.weight_column,
        )
        if read.label_column is not None:
            column = read.label_column
            settings["label_column"] = int(column) if read.no_csv_header and column.isdigit() else column
    elif read.format == "parquet":
        settings["weight_column"] = read.weight_column
        if read.label_column is not None:
            settings["label_column"] = read.label_column
    elif read.format == "vw":
        settings["feature_names"] = read.feature_names
    kind, _, name = (key or "").partition(":")
    if kind == "namespace":
        settings["key_namespace"] = name
    elif kind == "column":
        settings["key_column"] = name
    return settings


def with_default_runner(options: PipelineOptions) -> PipelineOptions:
    """Use the local FnApiRunner unless the user chose a runner."""
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = DEFAULT_RUNNER
    return options


# Options that name files or folders, by the options class that holds them.
_PATH_OPTIONS = {
    InputOptions: ("input", "dead_letters"),
    ModelOptions: ("model",),
    TrainingOptions: ("initial_model", "checkpoint_dir"),
    RoutingOptions: ("fallback_model",),
    OutputOptions: ("output",),
    RunOptions: ("report",),
    SequenceOptions: ("groups", "skipped_output"),
    TimelinessOptions: ("prefixes", "reference", "plot"),
    DemoOptions: ("output_dir",),
}


def absolute_paths(options: PipelineOptions, *, not_paths: tuple[str, ...] = ()) -> PipelineOptions:
    """Make every local path option that was given absolute: a worker elsewhere would resolve a
    relative one in its own folder, reading nothing or writing where nobody looks. URLs (gs://...)
    and defaults (which other commands' options have too) are left alone, and so are ``not_paths``:
    options this command reads otherwise (``polybeam predict --groups`` names groups)."""
    given = options.get_all_options(drop_default=True)
    for options_class, names in _PATH_OPTIONS.items():
        view = options.view_as(options_class)
        for name in names:
            if name not in given or name in not_paths:
                continue
            value = getattr(view, name, None)
            if isinstance(value, tuple):
                setattr(view, name, tuple(absolute_path(item) for item in value))
            elif isinstance(value, str) and not (name == "reference" and "/" not in value):
                setattr(view, name, absolute_path(value))  # (--reference may name a method instead)
    return options
