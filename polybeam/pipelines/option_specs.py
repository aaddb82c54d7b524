"""Every option of polybeam's commands, in one table that needs no Beam.

Each row (an :class:`Option`) says everything about one option: its names, the
PipelineOptions class that holds it, the heading ``--help`` lists it under, its
type, choices and default, the LearnerConfig field it fills (its default then
comes from ``LearnerConfig`` itself), whether it names a file or folder, and its
row of the option table in docs/cli.md. From this table come

- the ``argparse`` definitions of ``polybeam COMMAND --help`` (:func:`command_parser`),
  built without importing Apache Beam or the numba kernels, so help answers at once;
- the PipelineOptions classes (:mod:`polybeam.pipelines.options`), so the same
  names work from Python, the command line and templates, and the typed settings
  a job reads once (:class:`polybeam.pipelines.options.JobSettings`);
- which options are paths, made absolute before a job launches, and which a
  command cannot run without (the registry :mod:`polybeam.pipelines.commands`
  says which options each command takes);
- the flex templates' parameters (:mod:`polybeam.pipelines.flex_template`);
- the option table of docs/cli.md (:func:`readme_table`; a test compares them).

Every option has a hyphenated spelling for people (``--learning-rate``) and an
underscored one for templates and Beam habits (``--learning_rate``); both fill
the same attribute.

A new option is one row of :data:`TABLE` (in an existing options class; a new
class also needs its PipelineOptions class in :mod:`polybeam.pipelines.options`
and a place in the commands that take it, :mod:`polybeam.pipelines.commands`),
plus, for train, evaluate and predict, its row in docs/cli.md: ``python -m
polybeam.pipelines.option_specs`` prints the table to paste.

>>> parser = command_parser("train")
>>> parser.parse_args(["--learning_rate", "0.1", "--loss", "logistic"]).learning_rate
0.1
>>> OPTIONS["power-t"].default == LearnerConfig().power_t  # learner defaults are LearnerConfig's
True
>>> OPTIONS["no-bias"].flags, OPTIONS["no-bias"].sets
(('--no-bias', '--no_bias'), ('bias', False))
>>> key_spec("column:store")
'column:store'
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from polybeam.formats.acceptance import DEFAULT_MAX_DEAD_LETTER_FRACTION
from polybeam.formats.formats import COLUMN_FORMATS, FORMATS, format_spec
from polybeam.learners.choices import (
    DEFAULT_OFFSET_PRIOR,
    EXPANSION_RULES,
    EXPANSIONS,
    KEY_MODELS,
    LOSSES,
    MISSING_COLUMNS,
    PREDICTION_KINDS,
    SPARSITY,
    STEP_RULES,
)
from polybeam.learners.config import LearnerConfig
from polybeam.learners.key_spec import KeySpec
from polybeam.learners.loss_specs import loss_parameters, losses_where
from polybeam.learners.windows import TimestampSpec
from polybeam.pipelines.commands import COMMANDS, Use

# The formats of rows with named columns, for the help.
COLUMNS = "/".join(format_spec(name).title for name in COLUMN_FORMATS)
# The losses the L-BFGS finishing stage minimises, for the help.
_SMOOTH = ", ".join(losses_where(finishing=True))
# How --key names the key of an example: a VW tag, a feature of a VW namespace,
# a CSV/Parquet/JSON Lines/Avro column, or the file the example came from.


def number_or_auto(text: str) -> float | str:
    """--alpha: a number, or "auto" (timeliness: the plateau rule). One flag serves both commands
    because Beam parses every options class together, so two classes cannot both define it."""
    if text.strip().lower() == "auto":
        return "auto"
    return float(text)


def columns(text: str) -> tuple[str, ...]:
    """A comma-separated list, blanks dropped."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def key_spec(text: str) -> str:
    """Validate ``--key``: ``tag``, ``file``, ``namespace:NAME`` or ``column:NAME`` (see KeySpec)."""
    try:
        KeySpec.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def window_spec(text: str) -> str:
    """Validate ``--window``: ``fixed:SIZE`` or ``sliding:SIZE,PERIOD`` (sizes like 3600, 1h, 1d)."""
    from polybeam.learners.windows import parse_window  # (pure Python: no Beam, no kernels)

    try:
        parse_window(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def timestamp_spec(text: str) -> str:
    """Validate ``--timestamp``: ``column:NAME`` (a CSV/Parquet/JSON Lines/Avro column of event times)."""
    try:
        TimestampSpec.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--timestamp must be column:NAME (the {COLUMNS} column of each example's event time), got {text!r}"
        ) from None
    return text


def method_names() -> tuple[str, ...]:
    from polybeam.selection.methods import METHODS  # names only: no SciPy, no kernels

    return tuple(METHODS)


# The headings of ``polybeam COMMAND --help``, in the order it lists them, with what they hold.
SECTIONS = {
    "input": "where examples come from and how they are read",
    "per-key": "models per key",
    "windows": "models per event-time window",
    "learning": "loss, step sizes, hashing",
    "passes": "passes, holdout and the L-BFGS finishing stage",
    "expansion": "polynomial features",
    "sparsity": "truncated gradient",
    "model": "the model file or folder",
    "checkpoints": "warm starts, checkpoints, merging",
    "stream": "streaming training: learning from files as they appear, a model version every few seconds",
    "sequence": "sequencing feature groups",
    "anytime": "anytime prefixes",
    "output": "where results go",
    "demo": "",
    "runner": "launch, report, progress; any Apache Beam option (--runner, ...) passes through too",
}

_UNSET: Any = object()  # (a default not given: the LearnerConfig field's, else None, or False for a flag)


@dataclass(frozen=True)
class Option:
    """One option of polybeam's commands.

    Parameters
    ----------
    name : str
        The hyphenated name (``learning-rate``); ``--learning_rate`` is its twin, ``learning_rate`` its attribute.
    group : str
        The PipelineOptions class that holds it (``LearnerOptions``).
    section : str
        The heading ``--help`` lists it under (a key of ``SECTIONS``).
    help : str
        Its help; ``{default}`` stands for its default, ``{config_default}`` for the LearnerConfig field's.
    type, choices : optional
        What ``argparse`` converts and checks its value with (``choices`` may be a function that names them, so
        that they are looked up only when a parser is made).
    default : optional
        Its value when not given; for an option that fills a LearnerConfig field, that field's default.
    config : str, optional
        The LearnerConfig field it fills (a value option), or that it sets when given (a flag with ``sets``).
    sets : optional
        A flag: the value ``config`` takes when the flag is given (``no-bias``: ``bias=False``); not given, the
        field keeps its own default.
    flag : bool
        Given or not, no value (``store_true``).
    path : {"read", "write", "folder"}, optional
        It names a file it reads, a file it writes, or a folder it writes; made absolute before a launch.
    written_by : tuple of str
        Commands that write the file an option with ``path="read"`` names (``--model`` of ``train``).
    metavar : str, optional
        Its value's name in ``--help`` and docs/cli.md (default: the attribute's in capitals).
    readme, readme_with : optional
        Its row of the option table in docs/cli.md, and the options that row shows with it.
    short : str, optional
        A one-letter alias beside the two long spellings (``-P``, as VW's).
    """

    name: str
    group: str
    section: str
    help: str
    type: Callable | None = None
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    default: Any = _UNSET
    config: str | None = None
    sets: tuple[str, Any] | None = None
    flag: bool = False
    path: str | None = None
    written_by: tuple[str, ...] = ()
    metavar: str | None = None
    readme: str | None = None
    readme_with: tuple[str, ...] = ()
    short: str | None = None

    def __post_init__(self) -> None:
        flag = self.flag or self.sets is not None
        object.__setattr__(self, "flag", flag)
        if self.default is _UNSET:
            learner = self.config is not None and self.sets is None
            object.__setattr__(self, "default", _config_default(self.config) if learner else (False if flag else None))
        text = self.help.replace("{default}", _text(self.default))
        if self.config is not None:
            text = text.replace("{config_default}", _text(_config_default(self.config)))
        object.__setattr__(self, "help", text)

    @property
    def attribute(self) -> str:
        return self.name.replace("-", "_")

    @property
    def flags(self) -> tuple[str, ...]:
        """``--a-name`` and its ``--a_name`` twin (after the short alias, if any)."""
        long = (f"--{self.name}", f"--{self.attribute}") if "-" in self.name else (f"--{self.name}",)
        return (self.short, *long) if self.short else long

    def argparse_settings(self) -> dict:
        """What ``ArgumentParser.add_argument`` takes, besides the flags."""
        settings = {"dest": self.attribute, "default": self.default, "help": self.help}
        if self.flag:
            return {**settings, "action": "store_true"}
        settings.update(type=self.type, choices=self.all_choices(), metavar=self.metavar)
        return {name: value for name, value in settings.items() if value is not None or name == "default"}

    def all_choices(self) -> tuple[str, ...] | None:
        return self.choices() if callable(self.choices) else self.choices


def _config_default(field: str) -> Any:
    return LearnerConfig.defaults()[field]


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# What evaluate and predict do when an input option is not given.
AS_MODEL = "; evaluate/predict: as the model's input was read, unless given"

_I, _K, _W, _L, _M = "InputOptions", "KeyOptions", "WindowOptions", "LearnerOptions", "ModelOptions"
_T, _R, _O, _RUN = "TrainingOptions", "RoutingOptions", "OutputOptions", "RunOptions"
_S, _TL, _A, _D = "SequenceOptions", "TimelinessOptions", "AnytimePredictionOptions", "DemoOptions"
_SC = "ScoringOptions"

TABLE = (
    # -- input. evaluate and predict read as the model's input was read (its format and columns, recorded in
    # the model) unless told otherwise, so these have no default of their own (None: not given).
    Option(
        "input",
        _I,
        "input",
        "file pattern of the examples (glob; local, gs://, s3://, ...; .gz is read as gzip); - for standard "
        "input (local runner only)",
        path="read",
        metavar="PATTERN",
        readme="file pattern (glob) of examples, any Beam file system; `.gz` files are read as gzip; `-`: standard "
        "input",
    ),
    Option(
        "format",
        _I,
        "input",
        "input format (default: libsvm; evaluate and predict: the format the model was trained on)",
        choices=FORMATS,
        readme="input format (default libsvm; `evaluate` and `predict`: the model's, see [Models](models.md))",
    ),
    Option(
        "label-column",
        _I,
        "input",
        f"{COLUMNS}: the label column (CSV default: the first column; others: 'label'){AS_MODEL}",
        metavar="COLUMN",
        readme_with=("weight-column",),
        readme=f"{COLUMNS} label and importance-weight columns (CSV label default: first column)",
    ),
    Option("weight-column", _I, "input", f"{COLUMNS}: a column of importance weights{AS_MODEL}", metavar="COLUMN"),
    Option(
        "categorical-columns",
        _I,
        "input",
        f"{COLUMNS}: comma-separated columns whose values are categories (feature 'column=value'; text values "
        f"of JSON Lines, text columns of Parquet and Avro are categories anyway){AS_MODEL}",
        type=columns,
        metavar="a,b",
        readme=f"{COLUMNS} columns whose values are categories (feature `a=value`; text values of "
        "JSON Lines, text columns of Parquet and Avro are anyway)",
    ),
    Option(
        "id-column",
        _I,
        "input",
        f"{COLUMNS}: a column of example IDs, not a feature; predict writes each "
        f"example's ID in the last column (named after it), as it writes VW's tags{AS_MODEL}",
        metavar="NAME",
        readme=f"{COLUMNS}: a column of example IDs, not a feature; `predict` writes each example's ID in its "
        "last column, named after it (VW's tags are IDs already)",
    ),
    Option(
        "ignore-columns",
        _I,
        "input",
        f"{COLUMNS}: comma-separated columns that are not features{AS_MODEL}",
        type=columns,
        metavar="a,b",
        readme=f"{COLUMNS} columns that are not features",
    ),
    Option(
        "csv-delimiter",
        _I,
        "input",
        f"CSV: the field delimiter (default: ','){AS_MODEL}",
        metavar="CHARACTER",
        readme_with=("no-csv-header",),
        readme="CSV dialect",
    ),
    Option(
        "no-csv-header",
        _I,
        "input",
        f"CSV: files have no header line; columns are named 1, 2, ... (with a header, the default, a first "
        f"line whose every field is a number is refused){AS_MODEL}",
        flag=True,
    ),
    Option(
        "na-values",
        _I,
        "input",
        "CSV: comma-separated spellings of a missing value besides the empty cell, quoted or not (default: "
        f"pandas' NA, NaN, null, #N/A, ... and ?; '' for none){AS_MODEL}",
        type=columns,
        metavar="NA,?",
        readme="CSV spellings of a missing value besides the empty cell (default: pandas' `NA`, `NaN`, `null`, "
        "`#N/A`, ... and `?`; `''`: none); a missing cell is a missing number (NaN: predicted at the feature's "
        "training mean), no category, a missing label, a weight of 1",
    ),
    Option(
        "feature-names",
        _I,
        "input",
        f"VW: keep feature names for the model summary (costs parse time, like VW's --invert_hash){AS_MODEL}",
        flag=True,
        readme="VW: keep feature names so `inspect` can show them (like VW's `--invert_hash`)",
    ),
    Option(
        "zero-based",
        _I,
        "input",
        "LIBSVM: feature indices count from 0, as scikit-learn's dump_svmlight_file writes them (index i is "
        "then the feature 1-based files number i + 1); train detects it from an index 0 at the start or end of "
        f"the input{AS_MODEL}",
        flag=True,
        readme="LIBSVM: indices count from 0 (scikit-learn's `dump_svmlight_file`); train detects it from an index 0",
    ),
    Option(
        "dead-letters",
        _I,
        "input",
        "where to write records that could not be read (JSON lines); default: next to the model or output",
        path="write",
        metavar="PATH",
        readme="where unreadable records go (JSON lines); default next to the model/output",
    ),
    Option(
        "max-dead-letter-fraction",
        _I,
        "input",
        "fail the job when more than this share of the records (blank, "
        "comment and header lines aside) cannot be read, showing the first reasons and the likely cause "
        "(default: {default}, so that a wrong --format, which makes every record a dead letter, fails; 1 accepts "
        "any share). The dead letters are written in full either way",
        type=float,
        default=DEFAULT_MAX_DEAD_LETTER_FRACTION,
        metavar="F",
        readme="fail the job when more than this share of the records (blank, comment and header lines aside) "
        "are dead letters (default {default}: a wrong `--format` makes every record one); 1 accepts any share",
    ),
    Option(
        "allow-empty",
        _I,
        "input",
        "accept an input that yields no example (by default such a job fails, since "
        "it most likely read the wrong files)",
        flag=True,
        readme="accept an input that yields no example (by default such a job fails)",
    ),
    # -- how evaluate and predict hold their input against the model's columns
    Option(
        "version",
        _SC,
        "model",
        "evaluate/predict with a --model folder of streaming training (train --watch): score with this model "
        "version (default: the latest)",
        type=int,
        metavar="N",
        readme="evaluate/predict with a `--model` folder that `train --watch` writes: the version to score with "
        "(default: the latest; `polybeam inspect --model FOLDER` lists them)",
    ),
    Option(
        "missing-columns",
        _SC,
        "input",
        f"evaluate/predict, {COLUMNS}: a file that lacks some of the model's feature columns is refused, naming "
        "them (refuse, the default), or each absent column is missing in every row, as an empty cell: a number at its training mean (allow). "
        "Columns the model never saw are left out either way",
        choices=MISSING_COLUMNS,
        default="refuse",
        readme=f"`evaluate`/`predict`, {COLUMNS}: a file lacking some of the model's feature columns is refused, "
        "naming them (`refuse`, default), or each is missing in every row, a number at its training mean (`allow`); "
        "columns the model never "
        "saw are left out",
    ),
    # -- per-key models
    Option(
        "key",
        _K,
        "per-key",
        "train one model per key: tag (VW tag), namespace:NAME (the feature of VW "
        f"namespace NAME, which is then not a feature), column:NAME (a {COLUMNS} column, then not a feature) or "
        "file (the input file); --model is then a directory of models with an index. evaluate/predict take the "
        "key from that index",
        type=key_spec,
        metavar="{tag,file,namespace:NAME,column:NAME}",
        readme="train one model per key (see [Production runs](production.md))",
    ),
    Option(
        "key-model",
        _K,
        "per-key",
        "train with --key: separate (one model per key, a directory) or shared (ONE "
        "model file: each key's prediction is shared weights plus the key's own offsets, learnt together from the "
        "key-crossed and plain copies of every feature in one hashed weight space; for few rows per key; a key it "
        "never trained gets the shared weights). evaluate/predict read it from the model",
        choices=KEY_MODELS,
        default="separate",
        readme="with `--key`: one model per key (default), or one shared model of shared weights plus per-key "
        "offsets, for few rows per key (see [Production runs](production.md))",
    ),
    Option(
        "offset-prior",
        _K,
        "per-key",
        "--key-model shared: pull the keys' offsets toward zero by starting each "
        "one's AdaGrad sum as if this many examples of unit gradient had come before (default: "
        f"{DEFAULT_OFFSET_PRIOR:g}; 0: none); larger leans keys with few rows more on the shared weights",
        type=float,
        config="offset_prior",
        metavar="P",
        readme="`--key-model shared`: the keys' offsets start as if this many examples of unit gradient had "
        f"come before (default {DEFAULT_OFFSET_PRIOR:g}; 0: none); larger leans keys with few rows more on the "
        "shared weights",
    ),
    Option(
        "fallback-model",
        _R,
        "per-key",
        "per-key models: score examples whose key has no model with this model "
        "file (default: such examples are dead letters)",
        path="read",
        metavar="PATH",
        readme="evaluate/predict with per-key models: the model for keys that have none (default: their "
        "examples are dead letters)",
    ),
    # -- models per window
    Option(
        "window",
        _W,
        "windows",
        "train one model per event-time window (per key with --key): fixed:SIZE or "
        "sliding:SIZE,PERIOD, sizes in seconds or with a unit s, m, h, d, w (fixed:1d, sliding:1d,6h); needs "
        "--timestamp. --model is then a folder of window-START-END.model files (per key: folders) with an "
        "index.json; evaluate scores each window's examples with that window's model",
        type=window_spec,
        metavar="{fixed:SIZE,sliding:SIZE,PERIOD}",
        readme_with=("timestamp", "timestamp-unit"),
        readme="train one model per event-time window (per key with `--key`), by each example's time in a "
        f"{COLUMNS} column (see [Models per window](windows.md))",
    ),
    Option(
        "timestamp",
        _W,
        "windows",
        f"with --window: column:NAME, the {COLUMNS} column of each example's event "
        "time (a number since the epoch, in seconds unless --timestamp-unit says otherwise, or ISO-8601 such as "
        "2026-11-01T06:30:00Z), then not a feature; a record without a readable time is a dead letter",
        type=timestamp_spec,
        metavar="column:NAME",
    ),
    Option(
        "timestamp-unit",
        _W,
        "windows",
        "the unit of the --timestamp column's numbers: s, ms, us or ns since the epoch (default: s); Kafka and "
        "Java write ms. Evaluate reads a windowed folder's times as its training input's were read",
        choices=("s", "ms", "us", "ns"),
        default="s",
    ),
    # -- learning
    Option(
        "loss",
        _L,
        "learning",
        "loss function (default: {default}); softmax needs --classes or --class-names",
        choices=LOSSES,
        config="loss",
        readme="loss (default {default}); logistic/hinge take labels +1/-1 (or 0); softmax takes classes 1..K "
        "(or names); quantile predicts --quantile-tau's quantile; poisson the mean of counts >= 0 "
        "(see [Learning](learning.md#losses))",
    ),
    # Each loss's number (quantile's tau) is an option of its own, named after its LearnerConfig field.
    *(
        Option(
            parameter.name.replace("_", "-"),
            _L,
            "learning",
            f"{parameter.meaning} (default: {parameter.default:g}; strictly between {parameter.low:g} and "
            f"{parameter.high:g})",
            type=float,
            config=parameter.name,
            metavar="X",
            readme=f"{parameter.meaning} (default {parameter.default:g})",
        )
        for parameter in loss_parameters()
    ),
    Option(
        "classes",
        _L,
        "learning",
        "softmax: number of classes (labels 1..K)",
        type=int,
        config="classes",
        metavar="K",
        readme_with=("class-names",),
        readme="softmax: the number of classes, or their names (the i-th name is class i; labels may be names)",
    ),
    Option(
        "class-names",
        _L,
        "learning",
        "softmax: comma-separated class names; the i-th is class i (labels may be names)",
        type=columns,
        config="class_names",
        metavar="a,b,c",
    ),
    Option(
        "step",
        _L,
        "learning",
        "step size rule (default: adaptive, VW's normalised AdaGrad, at --learning-rate; "
        "gsa is greedy step averaging, the GSA paper's rule with no rate)",
        choices=STEP_RULES,
        config="step",
        readme="step rule. Default: `adaptive` (VW's normalised AdaGrad; rate 1 for logistic, 2 for softmax, 0.5 "
        "for squared and hinge loss) for every loss; `gsa` is greedy step averaging (no learning rate), the GSA "
        "paper's rule, formerly the default for squared and hinge loss (see [Learning](learning.md))",
    ),
    Option(
        "learning-rate",
        _L,
        "learning",
        "base learning rate eta of adaptive/constant/decay (default: 1.0 for logistic, 2.0 for softmax, else 0.5)",
        type=float,
        config="learning_rate",
        metavar="R",
        readme_with=("power-t",),
        readme="eta of adaptive/constant/decay (default 1.0 for logistic, 2.0 for softmax loss, 0.5 otherwise; "
        "see `benchmarks/results/default_rates.md`) and the decay exponent of `decay` (eta/t^P, default "
        "{power-t})",
    ),
    Option(
        "power-t",
        _L,
        "learning",
        "decay exponent of --step decay (default: {default}, eta/sqrt(t))",
        type=float,
        config="power_t",
        metavar="P",
    ),
    Option(
        "l2",
        _L,
        "learning",
        "L2 regularisation strength (default: {default})",
        type=float,
        config="l2",
        metavar="L",
        readme="L2 penalty (`inverse` = 1/(L (t+1)) needs it)",
    ),
    Option(
        "gsa-target",
        _L,
        "learning",
        "gsa: p_hat, the probability each greedy step aims the true class at (default: {default})",
        type=float,
        config="gsa_target",
        metavar="P",
        readme_with=("gsa-exact",),
        readme="GSA: the probability each greedy step aims the true class at (default {default}); the exact "
        "logistic greedy step instead of the paper's eq. 16",
    ),
    Option(
        "gsa-exact",
        _L,
        "learning",
        "gsa with logistic loss: the exact greedy step (paper section 3.2) instead of eq. 16",
        sets=("gsa_exact", True),
    ),
    Option(
        "bits",
        _L,
        "learning",
        "hash into 2**bits weights (1..30, default: {default})",
        type=int,
        config="bits",
        metavar="B",
        readme_with=("seed",),
        readme="2^B hashed weights (1..30, default {default}); hashing seed",
    ),
    Option(
        "seed",
        _L,
        "learning",
        "seed of feature hashing and of the learner's randomness (default: {default})",
        type=int,
        config="seed",
        metavar="S",
    ),
    Option(
        "no-bias",
        _L,
        "learning",
        "do not learn a bias weight",
        sets=("bias", False),
        readme_with=("no-normalize", "plain-updates"),
        readme="drop the bias; adaptive and GSA steps without online per-feature normalisation; plain instead of "
        "importance-aware updates",
    ),
    Option(
        "no-center",
        _L,
        "learning",
        "learn on the raw features; by default the features every example has are "
        "centred online on their running means (the models are the same; learning is far better conditioned on "
        "unscaled numeric columns)",
        sets=("center", False),
        readme_with=("no-scale-labels",),
        readme="learn on the raw features instead of centring the features every example has on their running "
        "means; squared and quantile loss: VW's adaptive update exactly, instead of the bias following the labels' running "
        "mean and steps in units of their running standard deviation",
    ),
    Option(
        "no-scale-labels",
        _L,
        "learning",
        "squared and quantile loss with adaptive steps: VW's update exactly; by default the "
        "bias follows the labels' running mean and steps are in units of their running standard deviation, so "
        "that learning does not depend on the labels' offset or unit",
        sets=("scale_labels", False),
    ),
    Option(
        "no-normalize",
        _L,
        "learning",
        "adaptive and gsa steps without per-feature scale normalisation",
        sets=("normalized", False),
    ),
    Option(
        "plain-updates",
        _L,
        "learning",
        "plain gradient steps instead of importance-aware safe updates",
        sets=("safe_updates", False),
    ),
    # -- passes, holdout, L-BFGS
    Option(
        "passes",
        _L,
        "passes",
        "passes over the data; workers average after each (default: {default}). With "
        "more than one, a holdout scores every pass (see --holdout-period)",
        type=int,
        config="passes",
        metavar="N",
        readme="passes over the data; after each, the workers' learners are averaged. With N > 1 a holdout "
        "judges every pass (see [Learning](learning.md))",
    ),
    Option(
        "holdout-period",
        _L,
        "passes",
        "with --passes > 1: hold one example in this many out of training (chosen "
        "by a hash of where it sits in its file: the same examples in every pass, on every worker), score every "
        "pass's model on them, keep the best pass's model, and let apple's guard choose between products and the "
        "linear model by them (default: {default}, as VW's --holdout_period)",
        type=int,
        config="holdout_period",
        metavar="K",
        readme_with=("holdout-off", "early-terminate", "holdout-min-examples", "pass-schedule", "small-holdout"),
        readme="with `--passes` > 1: one example in K ({default}) is held out of training in every pass, each "
        "pass's model is scored on them, and the best pass's model is written; after E ({early-terminate}) passes "
        "without a lower holdout loss, learning starts again from the beginning at half the rate, until a restart "
        "does no better than the passes before it (`--pass-schedule constant`: training stops there instead, as "
        "VW's `--holdout_period`, `--holdout_off` and `--early_terminate`); when the first pass held out fewer than M ({holdout-min-examples}) examples, "
        "the rate and passes are chosen by 10-fold cross-validation over every example and learned again on all "
        "of them (`--small-holdout release`: every later pass learns every example and the last pass is written); "
        "`--holdout-off` learns every example in every pass",
    ),
    Option(
        "holdout-off",
        _L,
        "passes",
        "with --passes > 1: hold nothing out; every pass learns every example and "
        "the last pass's model is written (VW's --holdout_off)",
        sets=("holdout_period", 0),
    ),
    Option(
        "holdout-min-examples",
        _L,
        "passes",
        "with a holdout: judge passes only when the first pass held out at "
        "least this many examples (per key with --key); with fewer, they cannot tell passes apart: see "
        "--small-holdout (default: {default}; 0 always judges)",
        type=int,
        config="holdout_min_examples",
        metavar="M",
    ),
    Option(
        "early-terminate",
        _L,
        "passes",
        "with a holdout: this many passes in a row without a lower holdout loss end the passes at one rate "
        "(default: {default}, as VW's --early_terminate); see --pass-schedule for what follows",
        type=int,
        config="early_terminate",
        metavar="E",
    ),
    Option(
        "pass-schedule",
        _L,
        "passes",
        "with a holdout that judges: 'restart' (the default) starts learning again from the beginning at half "
        "the rate when --early-terminate passes bring no lower holdout loss, and stops once a restart's best "
        "pass is no better than the passes before it (where the first rate overfits: short texts, rare or noisy "
        "features); 'constant' keeps one rate and stops there, as VW does. Either way the best pass is written",
        choices=("restart", "constant"),
        config="pass_schedule",
        metavar="S",
    ),
    Option(
        "small-holdout",
        _L,
        "passes",
        "with fewer than --holdout-min-examples held out (a small input): 'cross-validate' (the default) holds "
        "every example out once in one of 10 folds, a learner per fold learns the others, their losses judge "
        "each pass (with --pass-schedule's restarts), and the best pass's rate and passes are learned again "
        "from the beginning on every example; 'release' learns every example from the second pass on and "
        "writes the last pass. Per key (--key), always 'release'",
        choices=("cross-validate", "release"),
        config="small_holdout",
        metavar="R",
    ),
    Option(
        "watch",
        _T,
        "stream",
        "keep running: read the files matching --input as they appear (polled every S seconds; each file once, "
        "when complete), learn them in arrival order and write a model version to the --model folder every "
        "--model-every seconds; SIGTERM or SIGINT ends it with a last version, and the same command started "
        "again continues from the latest version (needs a streaming runner: Prism here, `polybeam engines fetch "
        "prism`; default: off, one batch job)",
        type=float,
        metavar="S",
        readme_with=("model-every", "model-every-examples", "stop-after-idle"),
        readme="train: keep running, reading the files matching `--input` as they appear (polled every S seconds, "
        "each once when complete, in arrival order) and writing a model version to the `--model` folder every "
        "`--model-every` seconds (default 5) or `--model-every-examples` examples (default 1,000,000); SIGTERM or "
        "SIGINT, or `--stop-after-idle` seconds without a new file, ends it with a last version; started again, "
        "it continues from the latest version. See docs/streaming.md",
    ),
    Option(
        "model-every",
        _T,
        "stream",
        "with --watch: a model version this many seconds after the first example not in one arrived (default: "
        "{default})",
        type=float,
        default=5.0,
        metavar="S",
    ),
    Option(
        "model-every-examples",
        _T,
        "stream",
        "with --watch: a model version as soon as this many examples wait for one (default: {default})",
        type=int,
        default=1_000_000,
        metavar="N",
    ),
    Option(
        "stop-after-idle",
        _T,
        "stream",
        "with --watch: end (with a last version) once no new file appeared for S seconds (default: never)",
        type=float,
        metavar="S",
    ),
    Option(
        "shuffle-buffer",
        _T,
        "passes",
        "learn every pass's examples in a random order through a shuffle buffer of N examples per worker "
        "(each leaves at a random time; N at least the longest run of one label mixes sorted input; the "
        "holdout keeps the same examples); one model only, not per key (default: 0, in the order read)",
        type=int,
        default=0,
        metavar="N",
        readme_with=("shuffle-seed",),
        readme="train: every pass learns its examples through a shuffle buffer of N examples (a new random "
        "order each pass, seeded by `--shuffle-seed`, default `--seed`'s); for input sorted by label (train "
        "warns when the first pass's labels come in long runs). See docs/order.md",
    ),
    Option(
        "shuffle-seed",
        _T,
        "passes",
        "the seed of --shuffle-buffer's orders (default: --seed's value)",
        type=int,
        metavar="S",
    ),
    Option(
        "in-memory",
        _T,
        "passes",
        "keep the input in one worker's memory, read and hashed once, and run every pass and the L-BFGS stage "
        "there, not as a Beam stage each: auto (default) does so on the local runner with --passes > 1 or "
        "--lbfgs-passes for an input of at most 64 MB (gzip counted 8 times its size) and one model (no --key, --window, "
        "--checkpoint-dir, --resume or --merge-fanout); on: always (refused with those); off: never",
        choices=("auto", "on", "off"),
        default="auto",
        readme="train: run every pass in one worker's memory (read once, milliseconds a pass on small data): "
        "`auto` on the local runner for inputs up to 64 MB with more than one pass, `on`, `off`",
    ),
    Option(
        "learners",
        _T,
        "passes",
        "learn every pass as N workers would, in one worker's memory: N contiguous shares of the input, each "
        "learned by its own learner (fresh in the first pass, from the last average after), averaged as the "
        "workers' learners are; to see on one machine what N workers' averages cost (default: {default}, one "
        "learner; not with --key, --window, --checkpoint-dir, --resume, --merge-fanout or --in-memory off)",
        type=int,
        default=1,
        metavar="N",
        readme_with=("lbfgs-after-averaging",),
        readme="train: learn every pass as N workers would (N shares, a learner each, averaged), in one "
        "worker's memory. When the last pass averaged more than two learners (N > 2, or a runner's workers' "
        "bundles: the model's learners_averaged) and `--lbfgs-passes` is not given, P passes (default 5; 0: never) of the L-BFGS finishing "
        "stage follow, L2 chosen on the holdout, the average kept when they do no better there. See "
        "docs/scaling.md",
    ),
    Option(
        "lbfgs-after-averaging",
        _T,
        "passes",
        "when --lbfgs-passes is not given and the last pass averaged more than two learners (--learners, "
        "or the bundles of a runner's workers), run this many passes of the L-BFGS finishing stage, its L2 "
        "chosen on the holdout; the average is kept when the stage does no better there; 0: never "
        "(default: {default})",
        type=int,
        default=5,
        metavar="P",
    ),
    Option(
        "lbfgs-passes",
        _L,
        "passes",
        "after the online passes, this many passes of L-BFGS over the training data, "
        "warm-started from the averaged model, each summing the loss and gradient across workers (the terascale "
        f"learner's finishing stage; {_SMOOTH} loss; default: {{default}}, none)",
        type=int,
        config="lbfgs_passes",
        metavar="P",
        readme_with=("lbfgs-l2",),
        readme="after the online passes, P passes of L-BFGS over the training examples, warm-started from the "
        "averaged model, each summing the loss and gradient across workers (the terascale learner's finishing "
        f"stage; {_SMOOTH} loss; one model, not per key); the objective is the summed "
        "importance-weighted loss plus L/2 * ||w||^2 without the bias (as `LogisticRegression(C=1/L)`), L chosen "
        "on the holdout (one example in `--holdout-period`) among 0.1, 1 and 10 unless `--lbfgs-l2` gives it, "
        "beside three penalties that pull toward the online model instead of 0 (docs/defaults.md); the "
        "model is the point of lowest held-out loss, or the online model when none did better (never worse on the "
        "holdout); recorded in the model's `metadata[\"lbfgs\"]`; the optimiser's state between passes holds 20 "
        "dense weight vectors per penalty (40 MB at 18 bits). See `benchmarks/results/averaging.md`",
    ),
    Option(
        "lbfgs-l2",
        _L,
        "passes",
        "the L-BFGS stage's L2 penalty on the summed loss, lbfgs_l2/2 * ||w||^2 without "
        "the bias: scikit-learn's LogisticRegression(C=1/lbfgs_l2) (default: chosen on the holdout among "
        "0.1, 1 and 10; the online model is kept when no L-BFGS point does better there)",
        type=float,
        config="lbfgs_l2",
        metavar="L",
    ),
    # -- expansion
    Option(
        "expand",
        _L,
        "expansion",
        "polynomial features: apple (adaptive, stage-wise), quadratic or cubic (all "
        "pairs / triples), or none (default)",
        choices=EXPANSIONS,
        config="expand",
        readme="polynomial features: `apple` grows them stage by stage from the heaviest weights; `quadratic` / "
        "`cubic` add every pair / triple of an example's features",
    ),
    Option(
        "interactions",
        _L,
        "expansion",
        "quadratic/cubic: only products across these namespaces (first letters), "
        "like VW's -q/--cubic: e.g. ab,abc (VW text input)",
        type=columns,
        config="interactions",
        metavar="ab,abc",
        readme="quadratic / cubic: only products of one feature from each named namespace (by first letter; the "
        "default namespace is a space), like VW's `-q ab --cubic abc`; needs VW text input",
    ),
    # --alpha has no default of its own: polybeam timeliness reads its absence as "auto".
    Option(
        "alpha",
        _L,
        "expansion",
        "apple: each expansion adds (mean non-zeros per example)**alpha parent monomials (default: {config_default})",
        type=number_or_auto,
        config="alpha",
        default=None,
        metavar="A",
        readme_with=(
            "expand-rule",
            "max-degree",
            "expansions",
            "examples-per-pass",
            "expand-after",
            "no-repeat-factors",
        ),
        readme="(`--alpha` of `polybeam timeliness` is the alpha-stopping level instead, see [Anytime prediction](sequencing.md)) apple: each "
        "expansion makes (mean non-zeros per example)^A monomials parents (default A = {config_default}), picked "
        "by weight, by the risk-consistent fall-back rule or by the SSM heuristic (mean squared residual where the "
        "monomial is large); products up to degree D ({max-degree}); N expansions ({expansions}): equally spaced "
        "({epochs} epochs) when the number of examples is known (`--examples-per-pass`, or counted by `train` "
        "itself when `--passes` > 1), otherwise the first after B examples ({expand-after}) and each later one "
        "after twice as many; `--no-repeat-factors` for binary features (x*x = x)",
    ),
    Option(
        "expand-rule",
        _L,
        "expansion",
        "apple: pick parents by weight magnitude (default), the risk-consistent "
        "fallback rule, or the SSM residual heuristic",
        choices=EXPANSION_RULES,
        config="expand_rule",
    ),
    Option(
        "max-degree",
        _L,
        "expansion",
        "apple: largest degree of a product (default: {default})",
        type=int,
        config="max_degree",
        metavar="D",
    ),
    Option(
        "expansions",
        _L,
        "expansion",
        "apple: how many times the feature set grows (default: {default})",
        type=int,
        config="expansions",
        metavar="N",
    ),
    Option(
        "no-apple-guard",
        _L,
        "expansion",
        "apple: keep the products even where they predicted worse than the "
        "same learner without them (by default apple learns that linear model alongside and writes the better: "
        "by their holdout loss with --passes > 1, else by their progressive loss since apple's last expansion)",
        sets=("apple_guard", False),
        readme="apple: keep the products even where they predicted worse than the same learner without them "
        "(by default apple learns that linear model alongside and writes the better)",
    ),
    Option(
        "expand-after",
        _L,
        "expansion",
        "apple: first expansion after this many examples, then after twice as many each time (default: {default})",
        type=int,
        config="expand_after",
        metavar="B",
    ),
    Option(
        "examples-per-pass",
        _L,
        "expansion",
        "apple: number of training examples, when known: the 6 epochs are "
        "then equally spaced over them (counted by itself with --passes > 1; default: unknown, a stream)",
        type=int,
        config="examples_per_pass",
        metavar="C",
    ),
    Option(
        "no-repeat-factors",
        _L,
        "expansion",
        "products never repeat a factor (x*x); for binary features",
        sets=("repeat_factors", False),
    ),
    # -- sparsity
    Option(
        "sparsity",
        _L,
        "sparsity",
        "cumulative (truncated gradient with a cumulative penalty, as VW's --l1: each "
        "weight's sum of steps truncated by all the pull it owed, so noise weights end at exactly 0; default when "
        "--gravity > 0), truncate (the paper's K/theta truncated gradient; default with --truncate-threshold), "
        "round (eq. 4), subgradient (eq. 5 baseline) or none",
        choices=SPARSITY,
        config="sparsity",
        readme="`cumulative` (default when `--gravity` > 0): the weight in force is the sum of its steps "
        "truncated by all the pull it owed (VW's `--l1`), so noise weights end at exactly 0; `truncate`: the "
        "paper's truncated gradient (default with `--truncate-threshold`); the paper's baselines: `round` (weights "
        "below T set to 0 every K examples) and `subgradient` (L1 subgradient, rounded below T at the end)",
    ),
    Option(
        "gravity",
        _L,
        "sparsity",
        "truncated gradient's g: pull of small weights toward 0 (default: {default})",
        type=float,
        config="gravity",
        metavar="G",
        readme_with=("truncate-every", "truncate-threshold"),
        readme="truncated gradient: every K examples each weight owes a pull of step * K * G toward 0; with "
        "`--truncate-threshold`, only weights with abs(w) <= T shrink (the paper's K/theta form; T = G is its "
        "second variant)",
    ),
    Option(
        "truncate-every",
        _L,
        "sparsity",
        "K: truncate every K examples (default: {default})",
        type=int,
        config="truncate_every",
        metavar="K",
    ),
    Option(
        "truncate-threshold",
        _L,
        "sparsity",
        "theta: only weights up to this size are truncated (default: "
        "infinity); rounding threshold of round/subgradient",
        type=float,
        config="truncate_threshold",
        metavar="T",
    ),
    # -- model, checkpoints
    Option(
        "model",
        _M,
        "model",
        "path of the model file, or of the directory of per-key models (local, gs://, ...)",
        path="read",
        written_by=("train",),
        metavar="PATH",
        readme="model file to write (train) or read; with `--key`, a folder of per-key models",
    ),
    Option(
        "initial-model",
        _T,
        "checkpoints",
        "continue training from this model file (like VW's -i) or "
        "learner-state checkpoint (exact continuation); its loss, bits, seed, expansion and step rule must match "
        "this run's",
        path="read",
        metavar="PATH",
        readme="train: continue from a model file (its weights) or a learner-state checkpoint (exactly), like "
        "VW's `-i`",
    ),
    Option(
        "checkpoint-dir",
        _T,
        "checkpoints",
        "where the learner state is saved after each pass (default with --passes > 1 or --resume: MODEL.checkpoints)",
        path="folder",
        metavar="DIR",
        readme_with=("resume",),
        readme="train: save the learner state after every pass (default with `--passes` > 1: "
        "`MODEL.checkpoints`); restart after the last complete pass",
    ),
    Option(
        "resume",
        _T,
        "checkpoints",
        "restart from the last complete pass saved in --checkpoint-dir (a fresh start if there is none)",
        flag=True,
    ),
    Option(
        "merge-fanout",
        _T,
        "checkpoints",
        "average the workers' partial learners in a tree of merges with this "
        "fan-out instead of all at once on one worker (for jobs with thousands of bundles; see docs/scaling.md)",
        type=int,
        metavar="K",
        readme="train: average the workers' learners in a tree of merges with fan-out K instead of on one worker",
    ),
    Option(
        "progress-every",
        _T,
        "runner",
        "a progress line (and learning-curve point, in the model too) every N "
        "examples of each learner's pass, as VW's -P N; default: {default}, at doubling counts 1, 2, 4, 8, ...",
        type=int,
        default=0,
        metavar="N",
        short="-P",
        readme="train: a progress line (and learning-curve point, in the model too) every N examples of each "
        "learner's pass, as VW's `-P N`; default {default}: at 1, 2, 4, 8, ... examples (see "
        "[Models](models.md))",
    ),
    # -- sequence
    Option(
        "groups",
        _S,
        "sequence",
        'group specification JSON: {"groups": [{"name": ..., "features": [1, "3-48", "name"], "cost": 2.5}, ...]}',
        path="read",
        metavar="PATH",
    ),
    Option(
        "method", _S, "sequence", "sequencing method (default: {default})", choices=method_names, default="cs-g-omp"
    ),
    Option(
        "ridge",
        _S,
        "sequence",
        "ridge lambda of every prefix model, on the standardised problem (default: 1e-6)",
        type=float,
        default=1e-6,
        metavar="LAMBDA",
    ),
    Option(
        "no-whiten",
        _S,
        "sequence",
        "do not whiten groups (individually standardised features; no-whiten and single never whiten)",
        flag=True,
    ),
    Option("no-standardize", _S, "sequence", "neither centre nor scale features and response", flag=True),
    Option(
        "default-group",
        _S,
        "sequence",
        "name of a group for features the specification does not name (default: such features fail the job)",
        metavar="NAME",
    ),
    Option(
        "default-group-cost",
        _S,
        "sequence",
        "cost of --default-group (default: {default})",
        type=float,
        default=1.0,
        metavar="COST",
    ),
    Option(
        "memory-limit-mb",
        _S,
        "sequence",
        "refuse Gram statistics above this size per worker, in MiB (default: {default})",
        type=float,
        default=2048,
        metavar="MB",
    ),
    Option(
        "minimum-cost",
        _S,
        "sequence",
        "doubling: c_min, the most the first group may cost (default: the cheapest group's cost)",
        type=float,
        metavar="COST",
    ),
    Option(
        "lasso-points",
        _S,
        "sequence",
        "sparse: points on the group lasso path (default: {default})",
        type=int,
        default=100,
        metavar="N",
    ),
    Option(
        "skipped-output",
        _S,
        "sequence",
        "where to write the skipped groups and reasons (JSON lines; default: OUTPUT.skipped.jsonl)",
        path="write",
        metavar="PATH",
    ),
    # -- anytime prefixes
    Option(
        "prefixes",
        _TL,
        "anytime",
        "comma-separated prefix files (polybeam sequence --output), one per method",
        type=columns,
        default=(),
        path="read",
        metavar="a.jsonl,b.jsonl",
    ),
    Option(
        "reference",
        _TL,
        "anytime",
        "the prefix file whose training curve sets the stopping cost (default: the cs-g-omp one, else the first)",
        path="read",
        metavar="PATH",
    ),
    Option(
        "plot",
        _TL,
        "anytime",
        "write a PNG of held-out explained variance against cost of every method (needs "
        "matplotlib: pip install polybeam[plot])",
        path="write",
        metavar="PNG",
    ),
    Option(
        "budget",
        _A,
        "anytime",
        "with --prefixes: the feature cost each prediction may spend; the longest prefix "
        "whose cumulative cost fits answers",
        type=float,
        metavar="B",
    ),
    # -- output
    Option(
        "output",
        _O,
        "output",
        "the prediction file, written whole once the input check passed (- for standard output, local runner "
        "only); with --num-shards, the prefix of the shards' names",
        path="write",
        metavar="PATH",
        readme_with=("num-shards",),
        readme="the prediction file (`-`: standard output); `--num-shards N` writes N files `PATH-00000-of-0000N` "
        "instead (0: as many as the runner likes)",
    ),
    Option(
        "num-shards",
        _O,
        "output",
        "write the predictions as N files PATH-SSSSS-of-NNNNN (0: as many as the runner likes) instead of the "
        "one file PATH",
        type=int,
        metavar="N",
    ),
    Option(
        "predictions",
        _O,
        "output",
        "what each prediction is: label (the class, by name when the model has class names; for a regression "
        "the value), probability (P(positive) for logistic loss; one column per class for softmax) or "
        "score (the raw margin; one column per class for softmax). Default: probability for logistic, score "
        "for hinge, label otherwise",
        choices=PREDICTION_KINDS,
        readme="what each prediction is: the class or value, the probability (every class for softmax) or the raw "
        "score (default: probability for logistic, score for hinge, label otherwise); see docs/predict.md",
    ),
    # -- demo
    Option(
        "output-dir",
        _D,
        "demo",
        "folder for the demo's data split, model and report (default: ./{default})",
        default="polybeam-demo",
        path="folder",
        metavar="DIR",
    ),
    # -- running. --no-wait defaults to None, not False: a flex template's entry point makes it the default.
    Option(
        "no-wait",
        _RUN,
        "runner",
        "launch the job and return at once with its id and where its outputs and report "
        "will appear (default when run as a flex template's entry point); on the local runner the job runs on in "
        "a detached process",
        flag=True,
        default=None,
        readme="launch the job and return at once with its id and where its outputs and report will appear",
    ),
    Option(
        "report",
        _RUN,
        "runner",
        "where the job writes its JSON report (default: next to the model or output, e.g. MODEL.report.json)",
        path="write",
        metavar="PATH",
        readme="where the job writes its JSON report (default next to the model or output)",
    ),
    Option(
        "quiet",
        _RUN,
        "runner",
        "no progress lines: by default training prints one on stderr at 1, 2, 4, 8, ... "
        "examples of each learner's pass, or every -P N examples (examples, examples/s, pass, progressive loss), "
        "as VW does, but for per-key models (a line per key would drown the terminal); the figures are Beam "
        "metrics either way",
        flag=True,
        readme="no progress lines on stderr (the figures are Beam metrics either way)",
    ),
)

# Every option by its hyphenated name.
OPTIONS = {option.name: option for option in TABLE}
# Every option's every spelling, for telling "not an option" from "not an option of this command".
ALL_FLAGS = {flag: option for option in TABLE for flag in option.flags}
# The PipelineOptions classes, in the order of the table.
GROUPS = tuple(dict.fromkeys(option.group for option in TABLE))


def group_options(group: str) -> tuple[Option, ...]:
    """The options a PipelineOptions class holds."""
    return tuple(option for option in TABLE if option.group == group)


def command_options(command: str) -> tuple[Option, ...]:
    """The options ``polybeam COMMAND`` takes, as it takes them (a command may give one its own help, heading and
    value name, or not read it as a path), in the order the command lists them."""
    chosen: dict[str, Option] = {}
    for entry in COMMANDS[command].options:
        if isinstance(entry, Use):
            own = {"help": entry.help, "section": entry.section, "metavar": entry.metavar}
            changes = {name: value for name, value in own.items() if value is not None}
            if not entry.is_path:
                changes["path"] = None
            chosen[entry.name] = dataclasses.replace(OPTIONS[entry.name], **changes)
        else:
            chosen.update((option.name, option) for option in group_options(entry))
    return tuple(chosen.values())


def required_options(command: str) -> tuple[str, ...]:
    """The options (attributes) a command cannot run without; a job without one fails fast saying so, and
    templates mark them as required parameters."""
    return COMMANDS[command].required


def add_group(parser, group: str) -> None:
    """Add the options of a PipelineOptions class to ``parser`` (Beam's, when Beam parses options)."""
    for option in group_options(group):
        parser.add_argument(*option.flags, **option.argparse_settings())


def command_parser(command: str, **settings) -> argparse.ArgumentParser:
    """The parser of ``polybeam COMMAND``'s own options, under the headings of ``SECTIONS`` (the ones ``--help``
    lists; ``settings`` go to ``ArgumentParser``, e.g. its description)."""
    parser = argparse.ArgumentParser(prog=f"polybeam {command}", allow_abbrev=False, **settings)
    options = command_options(command)
    for section, description in SECTIONS.items():
        chosen = [option for option in options if option.section == section]
        if chosen:
            heading = parser.add_argument_group(section, description or None)
            for option in chosen:
                heading.add_argument(*option.flags, **option.argparse_settings())
    return parser


# The commands whose options docs/cli.md's table shows, and the options it leaves to the page's section on
# anytime prediction (predict --prefixes with --budget or --groups).
README_COMMANDS = ("train", "evaluate", "predict")
README_ELSEWHERE = ("prefixes", "groups", "budget")


def readme_table() -> str:
    """The option table of docs/cli.md (of ``README_COMMANDS``), one row per option with README text, listing the
    options it shows together. ``{NAME}`` in a row's text stands for option NAME's default.

    >>> print(readme_table().splitlines()[2])
    | `--input PATTERN` | file pattern (glob) of examples, any Beam file system; `.gz` files are read as gzip; `-`: standard input |
    """
    rows = ["| option | meaning |", "| --- | --- |"]
    for option in TABLE:
        if option.readme is None:
            continue
        shown = [option] + [OPTIONS[name] for name in option.readme_with]
        text = option.readme.replace("{epochs}", str(_config_default("expansions") + 1))
        for other in OPTIONS.values():
            text = text.replace("{" + other.name + "}", _text(other.default))
        text = text.replace("{default}", _text(option.default))
        if option.config is not None:
            text = text.replace("{config_default}", _text(_config_default(option.config)))
        rows.append(f"| {', '.join(f'`{usage}`' for o in shown for usage in _usages(o))} | {text} |")
    return "\n".join(rows)


def _usages(option: Option) -> list[str]:
    """``--name VALUE``, ``--name {a,b}`` or ``--name`` (a flag); with a short alias, ``-X VALUE`` first."""
    if option.flag:
        value = ""
    elif option.choices is not None:
        value = f" {{{','.join(option.all_choices())}}}"
    else:
        value = f" {option.metavar or option.attribute.upper()}"
    return [f"{flag}{value}" for flag in ([option.short] if option.short else []) + [f"--{option.name}"]]


if __name__ == "__main__":  # python -m polybeam.pipelines.option_specs: docs/cli.md's table
    print(readme_table())
