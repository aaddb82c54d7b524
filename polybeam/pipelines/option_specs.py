"""Every option of polybeam's commands, as plain argparse definitions that need no Beam.

Each ``add_*`` function adds one group of options to an ``argparse`` parser.
:mod:`polybeam.pipelines.options` wraps them in Beam ``PipelineOptions``
classes (so the same names work from Python, the command line and templates),
and ``polybeam COMMAND --help`` builds its parser from them directly, without
importing Apache Beam or the numba kernels, so help answers at once.

Every option has a hyphenated spelling for people (``--learning-rate``) and an
underscored one for templates and Beam habits (``--learning_rate``); both fill
the same attribute.

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_learner_options(parser)
>>> parser.parse_args(["--learning_rate", "0.1", "--loss", "logistic"]).learning_rate
0.1
>>> key_spec("column:store")
'column:store'
"""

from __future__ import annotations

import argparse

from polybeam.formats.acceptance import DEFAULT_MAX_DEAD_LETTER_FRACTION
from polybeam.learners.choices import (
    DEFAULT_BITS,
    DEFAULT_EARLY_TERMINATE,
    DEFAULT_GSA_TARGET,
    DEFAULT_HOLDOUT_MIN_EXAMPLES,
    DEFAULT_HOLDOUT_PERIOD,
    DEFAULT_OFFSET_PRIOR,
    EXPANSION_RULES,
    EXPANSIONS,
    KEY_MODELS,
    LOSSES,
    SPARSITY,
    STEP_RULES,
)

FORMATS = ("libsvm", "vw", "csv", "parquet")
# How --key names the key of an example: a VW tag, a feature of a VW namespace,
# a CSV/Parquet column, or the file the example came from.
KEY_KINDS = ("tag", "namespace", "column", "file")


def _add(parser, name: str, **kwargs) -> None:
    """Add ``--a-name`` with its ``--a_name`` twin."""
    spellings = [f"--{name}"]
    if "-" in name:
        spellings.append(f"--{name.replace('-', '_')}")
    parser.add_argument(*spellings, dest=name.replace("-", "_"), **kwargs)


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
    """Validate ``--key``: ``tag``, ``file``, ``namespace:NAME`` or ``column:NAME``."""
    kind, _, name = text.partition(":")
    if kind not in KEY_KINDS:
        raise argparse.ArgumentTypeError(
            f"--key must be tag, file, namespace:NAME or column:NAME, got {text!r}"
        )
    if kind in ("namespace", "column") and not name:
        raise argparse.ArgumentTypeError(f"--key {kind} needs a name: {kind}:NAME")
    if kind in ("tag", "file") and name:
        raise argparse.ArgumentTypeError(f"--key {kind} takes no name, got {text!r}")
    return text


# What --alpha means to polybeam timeliness (the learner options define the flag).
TIMELINESS_ALPHA_HELP = ("alpha of the alpha-stopping cost, in (0, 1], or auto: the paper's plateau rule "
                         "(default: auto)")  # fmt: skip


# What evaluate and predict do when an input option is not given.
AS_MODEL = "; evaluate/predict: as the model's input was read, unless given"


def add_input_options(parser) -> None:
    """Where examples come from and how to read them."""
    _add(parser, "input", help="file pattern of the examples (glob; local, gs://, s3://, ...; .gz is read as gzip)")
    # evaluate and predict read as the model's input was read (its format and columns, recorded in the
    # model) unless told otherwise, so these have no default of their own (None: not given).
    _add(parser, "format", choices=FORMATS, default=None,
         help="input format (default: libsvm; evaluate and predict: the format the model was trained on)")
    _add(parser, "label-column", default=None, help=f"CSV/Parquet: the label column (CSV default: the first column; Parquet: 'label'){AS_MODEL}")
    _add(parser, "weight-column", default=None, help=f"CSV/Parquet: a column of importance weights{AS_MODEL}")
    _add(parser, "categorical-columns", type=columns, default=None, help=f"CSV: comma-separated columns whose values are categories (feature 'column=value'){AS_MODEL}")
    _add(parser, "id-column", default=None,
         help="CSV/Parquet: a column of example IDs, not a feature; predict writes each example's ID in the "
              f"last column (named after it), as it writes VW's tags{AS_MODEL}")  # fmt: skip
    _add(parser, "ignore-columns", type=columns, default=None, help=f"CSV/Parquet: comma-separated columns that are not features{AS_MODEL}")
    _add(parser, "csv-delimiter", default=None, help=f"CSV: the field delimiter (default: ','){AS_MODEL}")
    _add(parser, "no-csv-header", action="store_true", default=False, help=f"CSV: files have no header line; columns are named 1, 2, ...{AS_MODEL}")
    _add(parser, "feature-names", action="store_true", default=False, help=f"VW: keep feature names for the model summary (costs parse time, like VW's --invert_hash){AS_MODEL}")
    _add(parser, "dead-letters", default=None, help="where to write records that could not be read (JSON lines); default: next to the model or output")
    _add(parser, "max-dead-letter-fraction", type=float, default=DEFAULT_MAX_DEAD_LETTER_FRACTION,
         help="fail the job when more than this share of the records (blank, comment and header lines aside) "
              f"cannot be read, showing the first reasons and the likely cause (default: {DEFAULT_MAX_DEAD_LETTER_FRACTION:g}, "
              "so that a wrong --format, which makes every record a dead letter, fails; 1 accepts any share). "
              "The dead letters are written in full either way")
    _add(parser, "allow-empty", action="store_true", default=False,
         help="accept an input that yields no example (by default such a job fails, since it most likely read "
              "the wrong files)")


def add_key_options(parser) -> None:
    """Per-key models."""
    _add(parser, "key", type=key_spec, default=None,
         help="train one model per key: tag (VW tag), namespace:NAME (the feature of VW namespace NAME, "
              "which is then not a feature), column:NAME (a CSV/Parquet column, then not a feature) or file "
              "(the input file); --model is then a directory of models with an index. evaluate/predict "
              "take the key from that index")  # fmt: skip
    _add(parser, "key-model", choices=KEY_MODELS, default="separate",
         help="train with --key: separate (one model per key, a directory) or shared (ONE model file: each "
              "key's prediction is shared weights plus the key's own offsets, learnt together from the key-"
              "crossed and plain copies of every feature in one hashed weight space; for few rows per key; "
              "a key it never trained gets the shared weights). evaluate/predict read it from the model")  # fmt: skip
    _add(parser, "offset-prior", type=float, default=None,
         help="--key-model shared: pull the keys' offsets toward zero by starting each one's AdaGrad sum as if this "
              f"many examples of unit gradient had come before (default: {DEFAULT_OFFSET_PRIOR:g}; 0: none); larger "
              "leans keys with few rows more on the shared weights")  # fmt: skip


def window_spec(text: str) -> str:
    """Validate ``--window``: ``fixed:SIZE`` or ``sliding:SIZE,PERIOD`` (sizes like 3600, 1h, 1d)."""
    from polybeam.learners.windows import parse_window  # (pure Python: no Beam, no kernels)

    try:
        parse_window(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def timestamp_spec(text: str) -> str:
    """Validate ``--timestamp``: ``column:NAME`` (a CSV/Parquet column of event times)."""
    kind, _, name = text.partition(":")
    if kind != "column" or not name:
        raise argparse.ArgumentTypeError(f"--timestamp must be column:NAME (the CSV/Parquet column of each "
                                         f"example's event time), got {text!r}")  # fmt: skip
    return text


def add_window_options(parser) -> None:
    """Models per event-time window (polybeam train)."""
    _add(parser, "window", type=window_spec, default=None,
         help="train one model per event-time window (per key with --key): fixed:SIZE or sliding:SIZE,PERIOD, "
              "sizes in seconds or with a unit s, m, h, d, w (fixed:1d, sliding:1d,6h); needs --timestamp. "
              "--model is then a folder of window-START-END.model files (per key: folders) with an index.json; "
              "evaluate scores each window's examples with that window's model")  # fmt: skip
    _add(parser, "timestamp", type=timestamp_spec, default=None,
         help="with --window: column:NAME, the CSV/Parquet column of each example's event time (seconds since "
              "the epoch, or ISO-8601 such as 2026-11-01T06:30:00Z), then not a feature; a record without a "
              "readable time is a dead letter")  # fmt: skip


def add_learner_options(parser) -> None:
    """How the learner learns (see polybeam.learners.config.LearnerConfig)."""
    _add(parser, "loss", choices=LOSSES, default="squared", help="loss function (default: squared); softmax needs --classes or --class-names")
    _add(parser, "step", choices=STEP_RULES, default=None, help="step size rule (default: adaptive, VW's normalised AdaGrad, at --learning-rate; gsa is greedy step averaging, the GSA paper's rule with no rate)")
    _add(parser, "learning-rate", type=float, default=None, help="base learning rate eta of adaptive/constant/decay (default: 1.0 for logistic, 2.0 for softmax, else 0.5)")
    _add(parser, "power-t", type=float, default=0.5, help="decay exponent of --step decay (default: 0.5, eta/sqrt(t))")
    _add(parser, "l2", type=float, default=0.0, help="L2 regularisation strength (default: 0)")
    _add(parser, "passes", type=int, default=1, help="passes over the data; workers average after each (default: 1). With more than one, a holdout scores every pass (see --holdout-period)")
    _add(parser, "holdout-period", type=int, default=DEFAULT_HOLDOUT_PERIOD,
         help="with --passes > 1: hold one example in this many out of training (chosen by a hash of where it sits in "
              "its file: the same examples in every pass, on every worker), score every pass's model on them, keep "
              "the best pass's model, and let apple's guard choose between products and the linear model by them "
              f"(default: {DEFAULT_HOLDOUT_PERIOD}, as VW's --holdout_period)")
    _add(parser, "holdout-off", action="store_true", default=False,
         help="with --passes > 1: hold nothing out; every pass learns every example and the last pass's model is "
              "written (VW's --holdout_off)")
    _add(parser, "holdout-min-examples", type=int, default=DEFAULT_HOLDOUT_MIN_EXAMPLES,
         help="with a holdout: judge passes only when the first pass held out at least this many examples (per "
              "key with --key); with fewer, they cannot tell passes apart and are worth more as training data, so "
              "every later pass learns every example and the last pass's model is written "
              f"(default: {DEFAULT_HOLDOUT_MIN_EXAMPLES}; 0 always judges)")
    _add(parser, "early-terminate", type=int, default=DEFAULT_EARLY_TERMINATE,
         help="with a holdout: stop after this many passes in a row without a lower holdout loss than the best "
              f"pass's (default: {DEFAULT_EARLY_TERMINATE}, as VW's --early_terminate)")
    _add(parser, "bits", type=int, default=DEFAULT_BITS, help=f"hash into 2**bits weights (1..30, default: {DEFAULT_BITS})")
    _add(parser, "seed", type=int, default=0, help="seed of feature hashing and of the learner's randomness (default: 0)")
    _add(parser, "no-bias", action="store_true", default=False, help="do not learn a bias weight")
    _add(parser, "no-center", action="store_true", default=False, help="learn on the raw features; by default the features every example has are centred online on their running means (the models are the same; learning is far better conditioned on unscaled numeric columns)")
    _add(parser, "no-scale-labels", action="store_true", default=False, help="squared loss with adaptive steps: VW's update exactly; by default the bias follows the labels' running mean and steps are in units of their running standard deviation, so that learning does not depend on the labels' offset or unit")
    _add(parser, "no-normalize", action="store_true", default=False, help="adaptive and gsa steps without per-feature scale normalisation")
    _add(parser, "plain-updates", action="store_true", default=False, help="plain gradient steps instead of importance-aware safe updates")
    _add(parser, "classes", type=int, default=0, help="softmax: number of classes (labels 1..K)")
    _add(parser, "class-names", type=columns, default=(), help="softmax: comma-separated class names; the i-th is class i (labels may be names)")
    _add(parser, "gsa-target", type=float, default=DEFAULT_GSA_TARGET, help=f"gsa: p_hat, the probability each greedy step aims the true class at (default: {DEFAULT_GSA_TARGET})")
    _add(parser, "gsa-exact", action="store_true", default=False, help="gsa with logistic loss: the exact greedy step (paper section 3.2) instead of eq. 16")
    _add(parser, "sparsity", choices=SPARSITY, default=None, help="cumulative (truncated gradient with a cumulative penalty, as VW's --l1: each weight's sum of steps truncated by all the pull it owed, so noise weights end at exactly 0; default when --gravity > 0), truncate (the paper's K/theta truncated gradient; default with --truncate-threshold), round (eq. 4), subgradient (eq. 5 baseline) or none")
    _add(parser, "gravity", type=float, default=0.0, help="truncated gradient's g: pull of small weights toward 0 (default: 0)")
    _add(parser, "truncate-every", type=int, default=1, help="K: truncate every K examples (default: 1)")
    _add(parser, "truncate-threshold", type=float, default=None, help="theta: only weights up to this size are truncated (default: infinity); rounding threshold of round/subgradient")
    _add(parser, "expand", choices=EXPANSIONS, default="none", help="polynomial features: apple (adaptive, stage-wise), quadratic or cubic (all pairs / triples), or none (default)")
    _add(parser, "alpha", type=number_or_auto, default=None, help="apple: each expansion adds (mean non-zeros per example)**alpha parent monomials (default: 1)")
    _add(parser, "expand-rule", choices=EXPANSION_RULES, default="weight", help="apple: pick parents by weight magnitude (default), the risk-consistent fallback rule, or the SSM residual heuristic")
    _add(parser, "max-degree", type=int, default=6, help="apple: largest degree of a product (default: 6)")
    _add(parser, "expansions", type=int, default=5, help="apple: how many times the feature set grows (default: 5)")
    _add(parser, "no-apple-guard", action="store_true", default=False, help="apple: keep the products even where they predicted worse than the same learner without them (by default apple learns that linear model alongside and writes the better: by their holdout loss with --passes > 1, else by their progressive loss since apple's last expansion)")
    _add(parser, "expand-after", type=int, default=1000, help="apple: first expansion after this many examples, then after twice as many each time (default: 1000)")
    _add(parser, "examples-per-pass", type=int, default=None, help="apple: number of training examples, when known: the 6 epochs are then equally spaced over them (counted by itself with --passes > 1; default: unknown, a stream)")
    _add(parser, "interactions", type=columns, default=(), help="quadratic/cubic: only products across these namespaces (first letters), like VW's -q/--cubic: e.g. ab,abc (VW text input)")
    _add(parser, "lbfgs-passes", type=int, default=0, help="after the online passes, this many passes of L-BFGS over the training data, warm-started from the averaged model, each summing the loss and gradient across workers (the terascale learner's finishing stage; logistic, squared or softmax loss; default: 0, none)")
    _add(parser, "lbfgs-l2", type=float, default=10.0, help="the L-BFGS stage's L2 penalty on the summed loss, lbfgs_l2/2 * ||w||^2 without the bias: scikit-learn's LogisticRegression(C=1/lbfgs_l2) (default: 10, chosen on benchmarks/results/averaging.md's data; tune it)")
    _add(parser, "no-repeat-factors", action="store_true", default=False, help="products never repeat a factor (x*x); for binary features")


def add_model_options(parser) -> None:
    """Where the model file is."""
    _add(parser, "model", default=None, help="path of the model file, or of the directory of per-key models (local, gs://, ...)")


def add_training_options(parser) -> None:
    """Warm starts, checkpoints and resuming (polybeam train)."""
    _add(parser, "initial-model", default=None,
         help="continue training from this model file (like VW's -i) or learner-state checkpoint (exact "
              "continuation); its loss, bits, seed, expansion and step rule must match this run's")  # fmt: skip
    _add(parser, "checkpoint-dir", default=None,
         help="where the learner state is saved after each pass (default with --passes > 1 or --resume: "
              "MODEL.checkpoints)")  # fmt: skip
    _add(parser, "resume", action="store_true", default=False,
         help="restart from the last complete pass saved in --checkpoint-dir (a fresh start if there is none)")
    # VW's -P: a short alias beside the two long spellings.
    parser.add_argument("-P", "--progress-every", "--progress_every", dest="progress_every", type=int,
                        default=0, metavar="N",
                        help="a progress line (and learning-curve point, in the model too) every N examples of "
                             "each learner's pass, as VW's -P N; default: 0, at doubling counts 1, 2, 4, 8, ...")
    _add(parser, "merge-fanout", type=int, default=None,
         help="average the workers' partial learners in a tree of merges with this fan-out instead of all at "
              "once on one worker (for jobs with thousands of bundles; see docs/scaling.md)")  # fmt: skip


def add_routing_options(parser) -> None:
    """What evaluate/predict do with an example whose key has no model."""
    _add(parser, "fallback-model", default=None,
         help="per-key models: score examples whose key has no model with this model file "
              "(default: such examples are dead letters)")  # fmt: skip


def add_output_options(parser) -> None:
    """Where results go."""
    _add(parser, "output", default=None, help="output path prefix")
    _add(parser, "num-shards", type=int, default=0, help="number of output files (default: 0, the runner decides)")


def add_run_options(parser) -> None:
    """How the launch behaves and where the job's report goes."""
    _add(parser, "no-wait", action="store_true", default=None,
         help="launch the job and return at once with its id and where its outputs and report will appear "
              "(default when run as a flex template's entry point); on the local runner the job runs on "
              "in a detached process")  # fmt: skip
    _add(parser, "report", default=None,
         help="where the job writes its JSON report (default: next to the model or output, e.g. "
              "MODEL.report.json)")  # fmt: skip
    _add(parser, "quiet", action="store_true", default=False,
         help="no progress lines: by default training prints one on stderr at 1, 2, 4, 8, ... examples of each "
              "learner's pass, or every -P N examples (examples, examples/s, pass, progressive loss), as VW does, "
              "but for per-key models (a line per key would drown the terminal); the figures are Beam metrics "
              "either way")  # fmt: skip


def add_sequence_options(parser) -> None:
    """Options of ``polybeam sequence``: feature groups, method, ridge."""
    from polybeam.selection.methods import METHODS  # names only: no SciPy, no kernels

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


def add_timeliness_options(parser) -> None:
    """Options of ``polybeam timeliness``."""
    _add(parser, "prefixes", type=columns, default=(), help="comma-separated prefix files (polybeam sequence --output), one per method")
    _add(parser, "reference", default=None, help="the prefix file whose training curve sets the stopping cost (default: the cs-g-omp one, else the first)")
    _add(parser, "plot", default=None, help="write a PNG of held-out explained variance against cost of every method (needs matplotlib: pip install polybeam[plot])")


def add_anytime_prediction_options(parser) -> None:
    """``polybeam predict --prefixes``: which prefix of an anytime model answers."""
    _add(parser, "budget", type=float, default=None,
         help="with --prefixes: the feature cost each prediction may spend; the longest prefix whose cumulative "
              "cost fits answers")  # fmt: skip


# What --prefixes and --groups mean to polybeam predict (the timeliness and sequence options define the flags).
PREDICT_PREFIXES_HELP = ("predict with the anytime prefixes of this file (polybeam sequence --output) instead of "
                         "--model; choose the prefix with --budget or --groups. Each line then ends with the "
                         "prefix's size and cost")  # fmt: skip
PREDICT_GROUPS_HELP = ("with --prefixes: the feature groups available (comma-separated names); the longest prefix "
                       "made of them only answers")  # fmt: skip


def add_demo_options(parser) -> None:
    """Options of ``polybeam demo``."""
    _add(parser, "output-dir", default="polybeam-demo", help="folder for the demo's data split, model and report (default: ./polybeam-demo)")


def command_parser(command: str, **settings) -> argparse.ArgumentParser:
    """The parser of ``polybeam COMMAND``'s own options (the ones ``--help`` lists; ``settings`` go to
    ``ArgumentParser``, e.g. its description)."""
    parser = argparse.ArgumentParser(prog=f"polybeam {command}", allow_abbrev=False, **settings)
    for add_options in COMMAND_OPTIONS[command]:
        add_options(parser)
    return parser


class Only:
    """The named flags of an option group (a command that shares a few of its options)."""

    def __init__(self, add_options, *flags: str, help: str | None = None):
        self.add_options = add_options
        self.flags = flags
        self.help = help

    def __call__(self, parser) -> None:
        full = argparse.ArgumentParser(add_help=False)
        self.add_options(full)
        for action in full._actions:
            if any(flag in action.option_strings for flag in self.flags):
                if self.help is not None:
                    action.help = self.help
                parser._add_action(action)


# The option groups of each command, in the order --help lists them.
COMMAND_OPTIONS = {
    "train": [add_input_options, add_key_options, add_window_options, add_learner_options, add_model_options,
              add_training_options, add_run_options],
    "evaluate": [add_input_options, add_key_options, add_model_options, add_routing_options, add_run_options],
    "predict": [add_input_options, add_key_options, add_model_options, add_routing_options,
                Only(add_timeliness_options, "--prefixes", help=PREDICT_PREFIXES_HELP),
                Only(add_sequence_options, "--groups", help=PREDICT_GROUPS_HELP), add_anytime_prediction_options,
                add_output_options, add_run_options],
    "demo": [add_demo_options, Only(add_run_options, "--no-wait")],
    "sequence": [add_input_options, Only(add_learner_options, "--bits", "--seed"), add_sequence_options,
                 Only(add_output_options, "--output", help="where to write the prefixes (JSON lines, one file)"),
                 add_run_options],
    "timeliness": [add_input_options, add_timeliness_options,
                   Only(add_learner_options, "--alpha", help=TIMELINESS_ALPHA_HELP), add_run_options],
    "inspect": [],
}  # fmt: skip

# The options each command cannot run without (a job without one fails fast saying so; templates mark
# them as required parameters).
REQUIRED_OPTIONS = {
    "train": ("input", "model"),
    "evaluate": ("input", "model"),
    "predict": ("input", "output"),
    "sequence": ("input", "groups", "output"),
    "timeliness": ("input", "prefixes"),
}

# Every option group, for telling "not an option" from "not an option of this command".
ALL_OPTIONS = (add_input_options, add_key_options, add_window_options, add_learner_options, add_model_options, add_training_options,
               add_routing_options, add_output_options, add_run_options, add_sequence_options,
               add_timeliness_options, add_anytime_prediction_options, add_demo_options)  # fmt: skip
