"""Test-wide settings.

Property tests run derandomized by default, so a CI run is reproducible: the
same examples every time. Set ``HYPOTHESIS_PROFILE=explore`` to search with
fresh random examples (and many more of them) when hunting for new failures;
add what it finds as ``@example`` cases.
"""

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
