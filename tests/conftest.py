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
# marked with its folder's name and `slow`, so `-m "not slow"` leaves them out of a quick run. Under
# pytest-xdist (`-n 2 --dist loadgroup`, as CI runs) these folders run on one worker (see
# pytest_xdist_make_scheduler): their session fixtures (a worker pool, job services, a Flink cluster) start
# once, and their plans of runs go on beside the other worker's tests.
SLOW_FOLDERS = {"portable": pytest.mark.portable, "engines": pytest.mark.engines}


def pytest_collection_modifyitems(config, items):
    """Mark the tests of the slow folders (and every test marked `subprocess`) as `slow`."""
    for item in items:
        folder = item.path.parent.name if item.path.parent.parent.name == "tests" else None
        if folder in SLOW_FOLDERS:
            item.add_marker(SLOW_FOLDERS[folder])
        if folder in SLOW_FOLDERS or item.get_closest_marker("subprocess"):
            item.add_marker(pytest.mark.slow)


def slow_folder_of(nodeid: str) -> str | None:
    """The slow folder a test's node id lies in (``tests/engines/...`` -> ``engines``), else None.

    >>> slow_folder_of("tests/engines/test_engine_suite.py::test_training[flink-cluster-linear]")
    'engines'
    >>> slow_folder_of("tests/test_doors.py::test_every_training_door") is None
    True
    """
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in SLOW_FOLDERS else None


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: the tests of the slow folders go to one worker, one folder after the other, and
    the other tests one by one to whichever worker is free. Each suite's runs use both cores on their own
    (an engine, its job server and SDK workers beside the in-process reference): two suites at once
    oversubscribe the machine. (xdist's own ``loadgroup`` reads ``xdist_group`` marks through the node
    id, which pytest 9 no longer lets it rewrite: the marks are ignored.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SlowFolderScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            # Other tests go one by one: xdist hands the worker that takes the slow folders a second unit
            # at the start (scopes sorted by size), which it runs after them; a whole file there (tried)
            # lengthened the run's longest worker by minutes.
            return "slow folders" if slow_folder_of(nodeid) else nodeid

    return SlowFolderScheduling(config, log)


def pytest_sessionfinish(session):
    """On an xdist worker: hand the suites' end-of-session lines to the controller."""
    from tests.portable.cluster import SUMMARIES

    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["suite_summaries"] = {title: list(lines) for title, lines in SUMMARIES.items() if lines}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """On the xdist controller: take a worker's suite lines (printed by pytest_terminal_summary)."""
    from tests.portable.cluster import summary

    for title, lines in getattr(node, "workeroutput", {}).get("suite_summaries", {}).items():
        summary(title).extend(lines)


def pytest_terminal_summary(terminalreporter):
    from tests.portable.cluster import write_summaries

    write_summaries(terminalreporter)
