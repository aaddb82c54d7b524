"""polybeam's PipelineOptions, made from the option schema, and the settings a job reads from them once.

Every option has a hyphenated spelling for people (``--learning-rate``) and an
underscored one for templates and Beam habits (``--learning_rate``); both fill
the same attribute. Beam's own options (``--runner``, ``--temp_location``, ...)
pass through untouched. A job reads its options once, into frozen
:class:`JobSettings` (:func:`job_settings`), and builds its LearnerConfig from
them (:func:`learner_config`).

>>> from apache_beam.options.pipeline_options import PipelineOptions
>>> options = PipelineOptions(["--loss", "logistic", "--learning_rate", "0.1"])
>>> learner_config(options).learning_rate
0.1
"""

from __future__ import annotations

import dataclasses
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from polybeam.formats.formats import format_spec
from polybeam.formats.input_settings import InputSettings, readable_by
from polybeam.learners.config import LearnerConfig
from polybeam.learners.key_spec import KeySpec
from polybeam.learners.windows import TimestampSpec
from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.engine_options import FlinkBatchOptions  # noqa: F401  (registers it with Beam)
from polybeam.pipelines.errors import OptionError
from polybeam.pipelines.option_specs import FORMATS  # noqa: F401  (re-exported)
from polybeam.pipelines.written_paths import check_given_outputs
from polybeam.transforms.files import absolute_path

# The local runner that needs no network (the DirectRunner name first tries to
# download the Prism runner).
DEFAULT_RUNNER = "FnApiRunner"


def _holding(group: str) -> classmethod:
    """The ``_add_argparse_args`` of the PipelineOptions class ``group``: its rows of the option schema."""

    def add_arguments(cls, parser) -> None:
        specs.add_group(parser, group)

    return classmethod(add_arguments)


# (Beam knows an options class only as a direct subclass of PipelineOptions, so each is spelled out.)
class InputOptions(PipelineOptions):
    """Where examples come from and how to read them."""

    _add_argparse_args = _holding("InputOptions")


class KeyOptions(PipelineOptions):
    """Per-key models: ``--key``, ``--key-model``, ``--offset-prior``."""

    _add_argparse_args = _holding("KeyOptions")


class WindowOptions(PipelineOptions):
    """Models per event-time window: ``--window``, ``--timestamp``, ``--timestamp-unit``."""

    _add_argparse_args = _holding("WindowOptions")


class LearnerOptions(PipelineOptions):
    """How the learner learns (see polybeam.learners.config.LearnerConfig)."""

    _add_argparse_args = _holding("LearnerOptions")


class ModelOptions(PipelineOptions):
    """Where the model file (or directory of per-key models) is."""

    _add_argparse_args = _holding("ModelOptions")


class TrainingOptions(PipelineOptions):
    """Warm start, checkpoints and resume of ``polybeam train``."""

    _add_argparse_args = _holding("TrainingOptions")


class RoutingOptions(PipelineOptions):
    """Per-key evaluate/predict: the model for keys without one."""

    _add_argparse_args = _holding("RoutingOptions")


class ScoringOptions(PipelineOptions):
    """How evaluate and predict hold their input against the model's columns: ``--missing-columns``."""

    _add_argparse_args = _holding("ScoringOptions")


class OutputOptions(PipelineOptions):
    """Where results go."""

    _add_argparse_args = _holding("OutputOptions")


class RunOptions(PipelineOptions):
    """Whether the launcher waits for the job, and where the job's report goes."""

    _add_argparse_args = _holding("RunOptions")


class SequenceOptions(PipelineOptions):
    """Options of ``polybeam sequence``: feature groups, method, ridge."""

    _add_argparse_args = _holding("SequenceOptions")


class TimelinessOptions(PipelineOptions):
    """Options of ``polybeam timeliness``."""

    _add_argparse_args = _holding("TimelinessOptions")


class AnytimePredictionOptions(PipelineOptions):
    """``polybeam predict --prefixes``: the budget that picks the prefix."""

    _add_argparse_args = _holding("AnytimePredictionOptions")


class DemoOptions(PipelineOptions):
    """Options of ``polybeam demo``."""

    _add_argparse_args = _holding("DemoOptions")


# The options classes by name, as the schema's rows name them.
OPTIONS_CLASSES = {
    cls.__name__: cls
    for cls in (
        InputOptions,
        KeyOptions,
        WindowOptions,
        LearnerOptions,
        ModelOptions,
        TrainingOptions,
        RoutingOptions,
        ScoringOptions,
        OutputOptions,
        RunOptions,
        SequenceOptions,
        TimelinessOptions,
        AnytimePredictionOptions,
        DemoOptions,
    )
}


def _value_type(option: specs.Option) -> Any:
    """The type of an option's value in :class:`JobSettings`."""
    if option.flag:
        return bool | None if option.default is None else bool
    types = {int: int, float: float, specs.columns: tuple[str, ...], specs.number_or_auto: float | str}
    kind = types.get(option.type, str)
    return kind | None if option.default is None else kind


def _settings_class():
    fields = [
        (option.attribute, _value_type(option), dataclasses.field(default=option.default)) for option in specs.TABLE
    ]
    fields.append(("given", frozenset, dataclasses.field(default=frozenset())))
    return dataclasses.make_dataclass("JobSettings", fields, frozen=True, namespace={"__module__": __name__})


JobSettings = _settings_class()
JobSettings.__doc__ = """polybeam's options of one job, read once from its PipelineOptions (see :func:`job_settings`).

One attribute per row of the option schema (:data:`polybeam.pipelines.option_specs.TABLE`), by its attribute
name (``learning_rate``), with its type and default, plus ``given``: the names of the options given (not left to
their defaults). Frozen: a job's code reads its settings and never changes them.
"""


def job_settings(options: PipelineOptions, command: str | None = None) -> JobSettings:
    """polybeam's options in ``options``, read once into typed, frozen settings.

    With a ``command``, the path options it takes that were given are first made absolute in ``options``
    themselves (see :func:`absolute_paths`: the job's record of its options and a detached copy of the
    command see the same paths), and a required option that is missing fails with what to give.

    >>> settings = job_settings(PipelineOptions(["--input", "/data/a.libsvm", "--model", "/m", "--no-bias"]), "train")
    >>> settings.input, settings.no_bias, settings.passes, sorted(settings.given)
    ('/data/a.libsvm', True, 1, ['input', 'model', 'no_bias'])
    >>> job_settings(PipelineOptions(["--model", "m"]), "train")
    Traceback (most recent call last):
    ...
    polybeam.pipelines.errors.OptionError: polybeam train needs --input
    """
    if command is not None:
        absolute_paths(options, command=command)
    values = options.get_all_options()
    given = frozenset(options.get_all_options(drop_default=True)) & _ATTRIBUTES
    settings = JobSettings(**{name: values.get(name, _DEFAULTS[name]) for name in _ATTRIBUTES}, given=given)
    if command is not None:
        for name in specs.required_options(command):
            if not getattr(settings, name):
                raise OptionError(f"polybeam {command} needs --{name.replace('_', '-')}")
        check_given_outputs(settings, command)  # (into folders that exist, under names Beam can write)
    return settings


def spelled_options(options: PipelineOptions) -> frozenset[str]:
    """The options spelled out on the command line, even at their default value (``--loss squared``: a warm
    start then keeps it rather than its model's loss; ``JobSettings.given`` leaves defaults out)."""
    flags = getattr(options, "_flags", None) or ()
    spelled = set()
    for flag in flags:
        if isinstance(flag, str) and flag.startswith("-"):
            spelled.add(_BY_FLAG.get(flag.split("=", 1)[0]))
    return frozenset(spelled - {None})


_ATTRIBUTES = frozenset(option.attribute for option in specs.TABLE)
_BY_FLAG = {flag: option.attribute for option in specs.TABLE for flag in option.flags}
_DEFAULTS = {option.attribute: option.default for option in specs.TABLE}


def _settings(source: PipelineOptions | JobSettings) -> JobSettings:
    return job_settings(source) if isinstance(source, PipelineOptions) else source


def learner_config(
    source: PipelineOptions | JobSettings, defaults: dict | None = None, given: frozenset[str] = frozenset()
) -> LearnerConfig:
    """The LearnerConfig the options describe (validated, with clear messages). Every option that fills a
    LearnerConfig field is a row of the schema naming it; options not given leave ``defaults`` (a warm
    start's model's settings) unless their field is among ``given``, else LearnerConfig's own defaults."""
    settings = _settings(source)
    defaults = dict(defaults or {})
    values = dict(defaults)
    for option in specs.TABLE:
        value = getattr(settings, option.attribute)
        if option.sets is None and option.config is not None and value is not None:
            if option.config not in defaults or option.attribute in settings.given or option.config in given:
                values[option.config] = value
    for option in specs.TABLE:  # flags last: --holdout-off overrides --holdout-period
        if option.sets is not None and getattr(settings, option.attribute):
            values[option.sets[0]] = option.sets[1]
    if values.get("alpha") == "auto":
        raise ValueError("--alpha auto applies to polybeam timeliness; apple's --alpha is a number (default: 1)")
    return LearnerConfig(**values)


def given_config_fields(source: PipelineOptions | JobSettings, spelled: frozenset[str] = frozenset()) -> frozenset[str]:
    """The LearnerConfig fields the options given (or ``spelled`` out, see :func:`spelled_options`) set
    (``--loss`` sets ``loss``, ``--no-bias`` ``bias``)."""
    settings = _settings(source)
    fields = set()
    for option in specs.TABLE:
        if option.attribute not in settings.given and option.attribute not in spelled:
            continue
        if option.sets is not None:
            fields.add(option.sets[0])
        elif option.config is not None:
            fields.add(option.config)
    return frozenset(fields)


def given_input_settings(source: PipelineOptions | JobSettings) -> dict:
    """The input options given (not left to a default), by the names of the formats' settings
    (``format``, ``label_column``, ``delimiter``, ``has_header``, ...)."""
    read = _settings(source)
    given = {
        name: getattr(read, attribute)
        for name, attribute in _INPUT_SETTINGS.items()
        if getattr(read, attribute) is not None
    }
    if read.no_csv_header:
        given["has_header"] = False
    if read.feature_names:
        given["feature_names"] = True
    if read.zero_based:
        given["zero_based"] = True
    return given


# Format settings -> the InputOptions attribute that gives them (None when not given).
_INPUT_SETTINGS = {
    "format": "format",
    "label_column": "label_column",
    "weight_column": "weight_column",
    "categorical_columns": "categorical_columns",
    "ignore_columns": "ignore_columns",
    "id_column": "id_column",
    "delimiter": "csv_delimiter",
    "na_values": "na_values",
}


def input_settings(
    source: PipelineOptions | JobSettings,
    config: LearnerConfig,
    *,
    key: str | None = None,
    model: InputSettings | None = None,
    model_path: str | None = None,
) -> InputSettings:
    """How to read the input: the input options given, else, for a model that records how its own input
    was read (``model``), as it was read, else the formats' defaults; the learner's bits, seed and classes;
    for ``--key namespace:NAME`` or ``column:NAME``, where the readers find each example's key.

    A ``--format`` whose features the model cannot know (LIBSVM's numbered features for a model of named
    CSV or VW features, or the reverse) is refused, naming the model's format and how to read its input.
    """
    settings = _settings(source)
    given = given_input_settings(settings)
    name = given.pop("format", None) or (model.format if model is not None else "libsvm")
    if model is not None and not readable_by(model.format, name):
        where = f" in {model_path}" if model_path else ""
        raise ValueError(
            f"--format {name} cannot be the input of the model{where}: it was trained on "
            f"{model.format} input, whose features {format_spec(model.format).features}, and {name}'s "
            f"{format_spec(name).features}; give it input like its training data, read with {model.flags()} "
            "(or leave --format out)"
        )
    read = model if model is not None and model.format == name else InputSettings(name)
    own = {setting: value for setting, value in given.items() if setting in read.options}
    column = own.get("label_column")
    if isinstance(column, str) and column.isdigit() and not own.get("has_header", read.options.get("has_header", True)):
        own["label_column"] = int(column)  # headerless CSV: a label column by (0-based) position
    if key is not None:  # per-key: where the key is (else a model's own key column stays out of the features)
        spec = KeySpec.parse(key)
        for setting, key_kind in (("key_column", "column"), ("key_namespace", "namespace")):
            if setting in read.options:
                own[setting] = spec.name if spec.kind == key_kind else None
    timestamp = settings.timestamp
    if timestamp is not None and "timestamp_column" in read.options:  # (other formats: refused by train)
        own["timestamp_column"] = TimestampSpec.parse(timestamp).column
        unit = settings.timestamp_unit
        own["timestamp_unit"] = None if unit in (None, "s") else unit  # (seconds: recorded as before, not at all)
    return read.replace(
        **own,
        bits=config.bits,
        seed=config.seed,
        classes=config.classes if config.label_kind == "multiclass" else 0,
        class_names=config.class_names,
    )


def format_options(
    source: PipelineOptions | JobSettings, config: LearnerConfig, *, labels: str | None = None, key: str | None = None
) -> dict:
    """Keyword arguments for ``ReadExamples`` (without the format's name, see :func:`input_settings`): the
    input options plus what the learner needs (its bits and seed, the labels it accepts, its classes) and,
    for ``--key namespace:NAME`` or ``column:NAME``, where the readers find each example's key."""
    return input_settings(source, config, key=key).reader_options(labels or config.label_kind)


def given_options(source: PipelineOptions | JobSettings) -> dict:
    """polybeam's own options that were given (not left to their defaults), as plain JSON, for the record
    a job keeps of how it ran (Beam's options, such as where the job service is, are the runner's)."""
    settings = _settings(source)
    values = {name: getattr(settings, name) for name in sorted(settings.given)}
    return {name: list(value) if isinstance(value, tuple) else value for name, value in values.items()}


def with_default_runner(options: PipelineOptions) -> PipelineOptions:
    """Use the local FnApiRunner unless the user chose a runner."""
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = DEFAULT_RUNNER
    return options


def absolute_paths(
    options: PipelineOptions, *, not_paths: tuple[str, ...] = (), command: str | None = None
) -> PipelineOptions:
    """Make every local path option that was given absolute (those ``command`` takes, or every path option of
    the schema): a worker elsewhere would resolve a relative one in its own folder, reading nothing or writing
    where nobody looks. URLs (gs://...), ``-`` (standard input or output, see :mod:`polybeam.pipelines.streams`)
    and defaults (which other commands' options have too) are left alone,
    and so are ``not_paths`` and the options a command reads otherwise (``polybeam predict --groups`` names
    groups)."""
    options_of = specs.command_options(command) if command is not None else specs.TABLE
    given = options.get_all_options(drop_default=True)
    for option in options_of:
        name = option.attribute
        if option.path is None or name not in given or name in not_paths:
            continue
        view = options.view_as(OPTIONS_CLASSES[option.group])
        value = getattr(view, name, None)
        if isinstance(value, tuple):
            setattr(view, name, tuple(absolute_path(item) for item in value))
        elif isinstance(value, str) and value != "-" and not (name == "reference" and "/" not in value):
            setattr(view, name, absolute_path(value))  # (--reference may name a method instead)
    return options
