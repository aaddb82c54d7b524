"""The names of polybeam's settings and their defaults, with no imports.

They live apart from :mod:`polybeam.learners.config` (which needs numpy and
numba) so that ``polybeam COMMAND --help`` can list every choice without
loading the kernels or Apache Beam.

>>> "logistic" in LOSSES and DEFAULT_BITS == 18
True
"""

LOSSES = ("squared", "logistic", "hinge", "softmax")
STEPS = ("constant", "decay", "inverse", "adaptive", "gsa")
SPARSITY = ("none", "cumulative", "truncate", "round", "subgradient")
EXPANSIONS = ("none", "apple", "quadratic", "cubic")
EXPANSION_RULES = ("weight", "fallback", "ssm")
# The step rule when neither a rule nor a learning rate is given. Greedy step
# averaging keeps regression (squared) and hinge loss free of any rate. For
# logistic and softmax loss the default is VW's normalised AdaGrad at a fixed
# rate (config.DEFAULT_LEARNING_RATES, chosen on the bundled data sets): GSA takes one scalar step for every
# feature, and on uncentred, unscaled or sparse one-hot features that step is
# bounded by the most active directions and too small for the rest, where
# per-feature rates are not (benchmarks/results/suite.md: within 0.005 of VW at
# its validation-chosen rate on 23 of 28 classification tasks instead of 16).
# ``step="gsa"`` is the paper's rule for every loss.
DEFAULT_STEPS = {"squared": "gsa", "hinge": "gsa", "logistic": "adaptive", "softmax": "adaptive"}
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
