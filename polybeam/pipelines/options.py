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

from polybeam.learners.config import (
    DEFAULT_GSA_TARGET,
    EXPANSION_RULES,
    EXPANSIONS,
    LOSSES,
    SPARSITY,
    STEPS,
    LearnerConfig,
)
from polybeam.learners.hashing import DEFAULT_BITS

FORMATS = ("libsvm", "vw", "csv", "parquet")
# The local runner that needs no network (the DirectRunner name first tries to
# download the Prism runner).
DEFAULT_RUNNER = "FnApiRunner"


def _add(parser, name: str, **kwargs) -> None:
    """Add ``--a-name`` with its ``--a_name`` twin."""
    spellings = [f"--{name}"]
    if "-" in name:
        spellings.append(f"--{name.replace('-', '_')}")
    parser.add_argument(*spellings, dest=name.replace("-", "_"), **kwargs)


def _number_or_auto(text: str) -> float | str:
    """--alpha: a number, or "auto" (timeliness: the plateau rule). One flag serves both commands
    because Beam parses every options class together, so two classes cannot both define it."""
    if text.strip().lower() == "auto":
        return "auto"
    return float(text)


# What --alpha means to polybeam timeliness (LearnerOptions defines the flag).
TIMELINESS_ALPHA_HELP = ("alpha of the alpha-stopping cost, in (0, 1], or auto: the paper's plateau rule "
                         "(default: auto)")  # fmt: skip


def _columns(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


class InputOptions(PipelineOptions):
    """Where examples come from and how to read them."""

    @classmethod
    def _add_argparse_args(cls, parser):
        _add(parser, "input", help="file pattern of the examples (glob; local, gs://, s3://, ...; .gz is read as gzip)")
        _add(parser, "format", choices=FORMATS, default="libsvm", help="input format (default: libsvm)")
        _add(parser, "label-column", default=None, help="CSV/Parquet: the label column (CSV default: the first column; Parquet: 'label')")
        _add(parser, "weight-column", default=None, help="CSV/Parquet: a column of importance weights")
        _add(parser, "categorical-columns", type=_columns, default=(), help="CSV: comma-separated columns whose values are categories (feature 'column=value')")
        _add(parser, "csv-delimiter", default=",", help="CSV: the field delimiter (default: ',')")
        _add(parser, "no-csv-header", action="store_true", default=False, help="CSV: files have no header line; columns are named 1, 2, ...")
        _add(parser, "feature-names", action="store_true", default=False, help="VW: keep feature names for the model summary (costs parse time, like VW's --invert_hash)")
        _add(parser, "dead-letters", default=None, help="where to write records that could not be read (JSON lines); default: next to the model or output")


class LearnerOptions(PipelineOptions):
    """How the learner learns (see polybeam.learners.config.LearnerConfig)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        _add(parser, "loss", choices=LOSSES, default="squared", help="loss function (default: squared); softmax needs --classes or --class-names")
        _add(parser, "step", choices=STEPS, default=None, help="step size rule (default: gsa, greedy step averaging, when no --learning-rate is given; adaptive, VW's normalised AdaGrad, otherwise)")
        _add(parser, "learning-rate", type=float, default=None, help="base learning rate eta of adaptive/constant/decay (default: 1.0 for logistic, else 0.5)")
        _add(parser, "power-t", type=float, default=0.5, help="decay exponent of --step decay (default: 0.5, eta/sqrt(t))")
        _add(parser, "l2", type=float, default=0.0, help="L2 regularisation strength (default: 0)")
        _add(parser, "passes", type=int, default=1, help="passes over the data; workers average after each (default: 1)")
        _add(parser, "bits", type=int, default=DEFAULT_BITS, help=f"hash into 2**bits weights (1..30, default: {DEFAULT_BITS})")
        _add(parser, "seed", type=int, default=0, help="seed of feature hashing and of the learner's randomness (default: 0)")
        _add(parser, "no-bias", action="store_true", default=False, help="do not learn a bias weight")
        _add(parser, "no-normalize", action="store_true", default=False, help="adaptive and gsa steps without per-feature scale normalisation")
        _add(parser, "plain-updates", action="store_true", default=False, help="plain gradient steps instead of importance-aware safe updates")
        _add(parser, "classes", type=int, default=0, help="softmax: number of classes (labels 1..K)")
        _add(parser, "class-names", type=_columns, default=(), help="softmax: comma-separated class names; the i-th is class i (labels may be names)")
        _add(parser, "gsa-target", type=float, default=DEFAULT_GSA_TARGET, help=f"gsa: p_hat, the probability each greedy step aims the true class at (default: {DEFAULT_GSA_TARGET})")
        _add(parser, "gsa-exact", action="store_true", default=False, help="gsa with logistic loss: the exact greedy step (paper section 3.2) instead of eq. 16")
        _add(parser, "sparsity", choices=SPARSITY, default=None, help="truncate (truncated gradient; default when --gravity > 0), round (eq. 4), subgradient (eq. 5 baseline) or none")
        _add(parser, "gravity", type=float, default=0.0, help="truncated gradient's g: pull of small weights toward 0 (default: 0)")
        _add(parser, "truncate-every", type=int, default=1, help="K: truncate every K examples (default: 1)")
        _add(parser, "truncate-threshold", type=float, default=None, help="theta: only weights up to this size are truncated (default: infinity); rounding threshold of round/subgradient")
        _add(parser, "expand", choices=EXPANSIONS, default="none", help="polynomial features: apple (adaptive, stage-wise), quadratic or cubic (all pairs / triples), or none (default)")
        _add(parser, "alpha", type=_number_or_auto, default=None, help="apple: each expansion adds (mean non-zeros per example)**alpha parent monomials (default: 1)")
        _add(parser, "expand-rule", choices=EXPANSION_RULES, default="weight", help="apple: pick parents by weight magnitude (default), the risk-consistent fallback rule, or the SSM residual heuristic")
        _add(parser, "max-degree", type=int, default=6, help="apple: largest degree of a product (default: 6)")
        _add(parser, "expansions", type=int, default=5, help="apple: how many times the feature set grows (default: 5)")
        _add(parser, "expand-after", type=int, default=1000, help="apple: first expansion after this many examples, then after twice as many each time (default: 1000)")
        _add(parser, "examples-per-pass", type=int, default=None, help="apple: number of training examples, when known: the 6 epochs are then equally spaced over them (counted by itself with --passes > 1; default: unknown, a stream)")
        _add(parser, "interactions", type=_columns, default=(), help="quadratic/cubic: only products across these namespaces (first letters), like VW's -q/--cubic: e.g. ab,abc (VW text input)")
        _add(parser, "no-repeat-factors", action="store_true", default=False, help="products never repeat a factor (x*x); for binary features")


class ModelOptions(PipelineOptions):
    """Where the model file is."""

    @classmethod
    def _add_argparse_args(cls, parser):
        _add(parser, "model", default=None, help="path of the model file (local, gs://, ...)")


class OutputOptions(PipelineOptions):
    """Where results go."""

    @classmethod
    def _add_argparse_args(cls, parser):
        _add(parser, "output", default=None, help="output path prefix")
        _add(parser, "num-shards", type=int, default=0, help="number of output files (default: 0, the runner decides)")


class SequenceOptions(PipelineOptions):
    """Options of ``polybeam sequence``: feature groups, method, ridge."""

    @classmethod
    def _add_argparse_args(cls, parser):
        from polybeam.selection.sequencing import METHODS

        _add(parser, "groups", default=None, help='group specification JSON: {"groups": [{"name": ..., "features": [1, "3-48", "name"], "cost": 2.5}, ...]}')
        _add(parser, "method", choices=METHODS, default="cs-g-omp", help="sequencing method (default: cs-g-omp)")
        _add(parser, "ridge", type=float, default=1e-6, help="ridge lambda of every prefix model, on the standardised problem (default: 1e-6)")
        _add(parser, "no-whiten", action="store_true", default=False, help="do not whiten groups (individually standardised features; no-whiten and single never whiten)")
        _add(parser, "no-standardize", action="store_true", default=False, help="neither centre nor scale features and response")
        _add(parser, "default-group", default=None, help="name of a group for features the specification does not name (default: such features fail the job)")
        _add(parser, "default-group-cost", type=float, default=1.0, help="cost of --default-group (default: 1)")
        _add(parser, "memory-limit-mb", type=float, default=2048, help="refuse Gram statistics above this size per worker, in MiB (default: 2048)")
        _add(parser, "minimum-cost", type=float, default=None, help="doubling: c_min, the most the first group may cost (default: the cheapest group's cost)")
        _add(parser, "lasso-points", type=int, default=100, help="sparse: points on the group lasso path (default: 100)")
        _add(parser, "skipped-output", default=None, help="where to write the skipped groups and reasons (JSON lines; default: OUTPUT.skipped.jsonl)")


class TimelinessOptions(PipelineOptions):
    """Options of ``polybeam timeliness``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        _add(parser, "prefixes", type=_columns, default=(), help="comma-separated prefix files (polybeam sequence --output), one per method")
        _add(parser, "reference", default=None, help="the prefix file whose training curve sets the stopping cost (default: the cs-g-omp one, else the first)")
        _add(parser, "plot", default=None, help="write a PNG of held-out explained variance against cost of every method (needs matplotlib: pip install polybeam[plot])")


class DemoOptions(PipelineOptions):
    """Options of ``polybeam demo``."""

    @classmethod
    def _add_argparse_args(cls, parser):
        _add(parser, "output-dir", default="polybeam-demo", help="folder for the demo's data split, model and report (default: ./polybeam-demo)")


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
        normalized=not learner.no_normalize,
        safe_updates=not learner.plain_updates,
        repeat_factors=not learner.no_repeat_factors,
    )


def format_options(options: PipelineOptions, config: LearnerConfig, *, labels: str | None = None) -> dict:
    """Keyword arguments for ``ReadExamples``: the input options plus what the learner needs
    (its bits and seed, the labels it accepts, its classes)."""
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
    return settings


def with_default_runner(options: PipelineOptions) -> PipelineOptions:
    """Use the local FnApiRunner unless the user chose a runner."""
    standard = options.view_as(StandardOptions)
    if not standard.runner:
        standard.runner = DEFAULT_RUNNER
    return options
