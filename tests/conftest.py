"""Test-wide settings.

Property tests run derandomized by default, so a CI run is reproducible: the
same examples every time. Set ``HYPOTHESIS_PROFILE=explore`` to search with
fresh random examples (and many more of them) when hunting for new failures;
add what it finds as ``@example`` cases.
"""

import os

import pytest
from hypothesis import settings

# No deadline: the first call of a numba kernel compiles it (or loads its cache).
settings.register_profile("repeatable", derandomize=True, deadline=None)
settings.register_profile("explore", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


# Folders whose every test runs a job on other processes (a worker pool, job services, an engine): each is
# marked with its folder's name and `slow`, so `-m "not slow"` leaves them out of a quick run.
SLOW_FOLDERS = {"portable": pytest.mark.portable, "engines": pytest.mark.engines}


def pytest_collection_modifyitems(config, items):
    """Mark the tests of the slow folders (and every test marked `subprocess`) as `slow`."""
    for item in items:
        folder = item.path.parent.name if item.path.parent.parent.name == "tests" else None
        if folder in SLOW_FOLDERS:
            item.add_marker(SLOW_FOLDERS[folder])
        if folder in SLOW_FOLDERS or item.get_closest_marker("subprocess"):
            item.add_marker(pytest.mark.slow)
