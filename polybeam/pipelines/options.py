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

import argparse

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from polybeam.formats.input_settings import InputSettings, readable_by
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.option_specs import FORMATS  # noqa: F401  (re-exported)
from polybeam.transforms.files import absolute_path
from polybeam.pipelines.engine_options import FlinkBatchOptions  # noqa: F401  (registers it with Beam)

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


class WindowOptions(PipelineOptions):
    """Models per event-time window: ``--window``, ``--timestamp``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        specs.add_window_options(parser)


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
    "loss", "step", "learning_rate", "power_t", "l2", "bits", "seed", "passes", "early_terminate",
    "holdout_min_examples", "classes", "class_names",
    "gsa_target", "gsa_exact", "sparsity", "gravity", "truncate_every", "truncate_threshold",
    "expand", "alpha", "expand_rule", "max_degree", "expansions", "expand_after", "examples_per_pass", "interactions",
    "lbfgs_passes", "lbfgs_l2",
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
        holdout_period=0 if learner.holdout_off else learner.holdout_period,
        normalized=not learner.no_normalize,
        safe_updates=not learner.plain_updates,
        repeat_factors=not learner.no_repeat_factors,
        offset_prior=options.view_as(KeyOptions).offset_prior,
    )


def given_input_settings(options: PipelineOptions) -> dict:
    """The input options given (not left to a default), by the names of the formats' settings
    (``format``, ``label_column``, ``delimiter``, ``has_header``, ...)."""
    read = options.view_as(InputOptions)
    given = {name: getattr(read, attribute) for name, attribute in _INPUT_SETTINGS.items()
             if getattr(read, attribute) is not None}  # fmt: skip
    if read.no_csv_header:
        given["has_header"] = False
    if read.feature_names:
        given["feature_names"] = True
    return given


# Format settings -> the InputOptions attribute that gives them (None when not given).
_INPUT_SETTINGS = {
    "format": "format", "label_column": "label_column", "weight_column": "weight_column",
    "categorical_columns": "categorical_columns", "ignore_columns": "ignore_columns", "id_column": "id_column",
    "delimiter": "csv_delimiter",
}  # fmt: skip


def input_settings(options: PipelineOptions, config: LearnerConfig, *, key: str | None = None,
                   model: InputSettings | None = None, model_path: str | None = None) -> InputSettings:  # fmt: skip
    """How to read the input: the input options given, else, for a model that records how its own input
    was read (``model``), as it was read, else the formats' defaults; the learner's bits, seed and classes;
    for ``--key namespace:NAME`` or ``column:NAME``, where the readers find each example's key.

    A ``--format`` whose features the model cannot know (LIBSVM's numbered features for a model of named
    CSV or VW features, or the reverse) is refused, naming the model's format and how to read its input.
    """
    given = given_input_settings(options)
    name = given.pop("format", None) or (model.format if model is not None else "libsvm")
    if model is not None and not readable_by(model.format, name):
        where = f" in {model_path}" if model_path else ""
        raise ValueError(f"--format {name} cannot be the input of the model{where}: it was trained on "
                         f"{model.format} input, whose features {_FEATURES[model.format]}, and {name}'s "
                         f"{_FEATURES[name]}; give it input like its training data, read with {model.flags()} "
                         "(or leave --format out)")  # fmt: skip
    settings = model if model is not None and model.format == name else InputSettings(name)
    own = {setting: value for setting, value in given.items() if setting in settings.options}
    column = own.get("label_column")
    if isinstance(column, str) and column.isdigit() and not own.get("has_header", settings.options.get("has_header", True)):
        own["label_column"] = int(column)  # headerless CSV: a label column by (0-based) position
    kind, _, key_name = (key or "").partition(":")
    if key is not None:  # per-key: where the key is (else a model's own key column stays out of the features)
        for setting, key_kind in (("key_column", "column"), ("key_namespace", "namespace")):
            if setting in settings.options:
                own[setting] = key_name if kind == key_kind else None
    timestamp = options.view_as(WindowOptions).timestamp
    if timestamp is not None and "timestamp_column" in settings.options:  # (other formats: refused by train)
        own["timestamp_column"] = timestamp.partition(":")[2]
    softmax = config.loss == "softmax"
    return settings.replace(**own, bits=config.bits, seed=config.seed, classes=config.classes if softmax else 0,
                            class_names=config.class_names if softmax else ())  # fmt: skip


# How each format's features become slots (for the message refusing a format a model cannot read).
_FEATURES = {"libsvm": "are numbered", "parquet": "are numbered or named by column", "csv": "are named by column",
             "vw": "are named"}  # fmt: skip


def format_options(
    options: PipelineOptions, config: LearnerConfig, *, labels: str | None = None, key: str | None = None
) -> dict:
    """Keyword arguments for ``ReadExamples`` (without the format's name, see :func:`input_settings`): the
    input options plus what the learner needs (its bits and seed, the labels it accepts, its classes) and,
    for ``--key namespace:NAME`` or ``column:NAME``, where the readers find each example's key."""
    return input_settings(options, config, key=key).reader_options(labels or config.label_kind)


def given_options(options: PipelineOptions) -> dict:
    """polybeam's own options that were given (not left to their defaults), as plain JSON, for the record
    a job keeps of how it ran (Beam's options, such as where the job service is, are the runner's)."""
    own = argparse.ArgumentParser(add_help=False)
    for add_options in specs.ALL_OPTIONS:
        add_options(own)
    names = {action.dest for action in own._actions}
    given = options.get_all_options(drop_default=True)
    return {name: list(value) if isinstance(value, tuple) else value
            for name, value in sorted(given.items()) if name in names}  # fmt: skip


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
