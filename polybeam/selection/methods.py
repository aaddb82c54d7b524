"""The sequencing methods' names: a module with no imports, so that option parsing need not load SciPy.

>>> METHODS[0]
'cs-g-omp'
"""

METHODS = ("cs-g-omp", "cs-g-fr", "doubling", "no-whiten", "single", "g-omp", "sparse")
# Methods that score features one by one, or are the paper's unwhitened comparison, work unwhitened.
UNWHITENED = ("no-whiten", "single")
