"""The names of polybeam's settings and their defaults, with no imports but the loss table.

They live apart from :mod:`polybeam.learners.config` (which needs numpy and
numba) so that ``polybeam COMMAND --help`` can list every choice without
loading the kernels or Apache Beam. The losses and what each needs are the
table in :mod:`polybeam.learners.loss_specs` (itself free of imports).

>>> "logistic" in LOSSES and DEFAULT_BITS == 18
True
"""

from polybeam.learners.loss_specs import LOSS_SPECS, LOSSES  # noqa: F401  (re-exported)

STEP_RULES = ("constant", "decay", "inverse", "adaptive", "gsa")
SPARSITY = ("none", "cumulative", "truncate", "round", "subgradient")
EXPANSIONS = ("none", "apple", "quadratic", "cubic")
EXPANSION_RULES = ("weight", "fallback", "ssm")
# What a prediction written by predict is (learners/predictions.py): the class or value, the probability of
# each class, or the raw score (margin).
PREDICTION_KINDS = ("label", "probability", "score")
# What evaluate/predict do with a CSV/Parquet file that lacks some of the model's feature columns
# (formats/scoring.py): refuse it, naming them, or read each as missing in every row.
MISSING_COLUMNS = ("refuse", "allow")
# With a key: one model per key, or one shared model of shared weights plus per-key offsets (learners/multitask.py).
KEY_MODELS = ("separate", "shared")
# A shared per-key model's prior on its offsets' AdaGrad sums, in examples of unit gradient at the feature's
# largest magnitude. Chosen on draws 0 and 1 of benchmarks/bench_shared_keys.py's data (5, 20 and 50 rows per
# key, logistic; 20 rows squared) from 0, 0.01, 0.03, 0.1, 0.3: 0.03 helped most with 5 rows per key (error
# 0.1517 -> 0.1465, 0.1527 -> 0.1488), a little with 20 (0.1387 -> 0.1375, 0.1383 -> 0.1363) and 50 (0.1250 ->
# 0.1244), and squared loss (MSE 10.33 -> 10.31); the benchmark reports fresh draws (2 and 3).
DEFAULT_OFFSET_PRIOR = 0.03
# The step rule when neither a rule nor a learning rate is given: VW's normalised
# AdaGrad at a fixed rate (config.DEFAULT_LEARNING_RATES) for every loss. For
# squared loss its steps are in units of the labels' running spread and the bias
# follows their running mean (config.LearnerConfig.scale_labels), so the rate
# means the same on counts and on house prices. Greedy step averaging
# (``step="gsa"``, the paper's rule for every loss) steps with the mean of
# steps that would each fit one example: for squared loss 1 / x.x whatever the
# residual, for hinge loss the whole way to the margin on every example that
# violates it, and on noisy labels that mean never shrinks, so the noise is
# never averaged out (a constant-step LMS: relative MSE about 1.46 (1 - R^2),
# worse than predicting the mean below R^2 = 0.32, and no better after 20
# passes). On logistic and softmax loss its one scalar step is bounded by the
# most active directions and too small for the rest, where per-feature rates
# are not (benchmarks/results/suite.md, issue 11; squared and hinge loss:
# benchmarks/results/squared_default.md, issue 22).
DEFAULT_STEP_RULES = {name: spec.default_step for name, spec in LOSS_SPECS.items()}
# Greedy step averaging aims each example's greedy step at this probability of
# the true class (the GSA paper's and Fregata's p_hat).
DEFAULT_GSA_TARGET = 0.95
# Weights live in 2**bits hashed slots.
MIN_BITS = 1
MAX_BITS = 30
DEFAULT_BITS = 18

# With several passes, one example in this many is held out to score each pass (VW's --holdout_period), and
# training stops after this many passes without a better holdout loss (VW's --early_terminate).
DEFAULT_HOLDOUT_PERIOD = 10
DEFAULT_EARLY_TERMINATE = 3
# Fewer held-out examples than this cannot tell passes apart (the standard error of their mean loss is then
# several percent of it, more than later passes change it) and are worth more as training data: a learner
# whose first pass held out fewer learns every example from its second pass on and keeps its last pass.
DEFAULT_HOLDOUT_MIN_EXAMPLES = 1000
# What several passes do when the holdout says a pass did no better (polybeam.learners.holdout): ``restart``
# learning from the start at RESTART_RATE_FACTOR times the rate, or go on at one ``constant`` rate.
PASS_SCHEDULES = ("restart", "constant")
DEFAULT_PASS_SCHEDULE = "restart"
RESTART_RATE_FACTOR = 0.5
# What several passes do when the first pass held out fewer than holdout_min_examples (a small input):
# ``cross-validate`` chooses the rate and the passes on every example's loss, each learned by a learner of the
# other folds, then learns them again on every example (polybeam.learners.fitting); ``release`` learns every
# example from the second pass on, at one rate, and keeps the last pass.
SMALL_HOLDOUT_RULES = ("cross-validate", "release")
DEFAULT_SMALL_HOLDOUT = "cross-validate"
# The folds of that cross-validation: 10 chose better than 5 on the suite's small tasks (fewer tasks worse
# than the passes it replaced; benchmarks/results/pass_schedule.md).
CROSS_VALIDATION_FOLDS = 10
# The step rules whose learning rate a restart can lower (gsa and inverse take none).
RATED_STEP_RULES = ("adaptive", "constant", "decay")
