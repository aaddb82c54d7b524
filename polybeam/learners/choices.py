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
# Greedy step averaging aims each example's greedy step at this probability of
# the true class (the GSA paper's and Fregata's p_hat).
DEFAULT_GSA_TARGET = 0.95
# Weights live in 2**bits hashed slots.
MIN_BITS = 1
MAX_BITS = 30
DEFAULT_BITS = 18
