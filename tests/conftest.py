"""Test-wide settings.

Property tests run derandomized by default, so a CI run is reproducible: the
same examples every time. Set ``HYPOTHESIS_PROFILE=explore`` to search with
fresh random examples (and many more of them) when hunting for new failures;
add what it finds as ``@example`` cases.
"""

import os

from hypothesis import settings

# No deadline: the first call of a numba kernel compiles it (or loads its cache).
settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
