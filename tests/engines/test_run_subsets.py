"""An engine's subset of the suite's runs names runs the suite defines, and every run a kept run needs."""

from pathlib import Path

from tests.engines.runs import SUBSETS, define_runs


class Anything:
    """Stands for the suite's data files: every attribute is another, and each reads as a path."""

    def __getattr__(self, name):
        return self

    def __str__(self):
        return "/data"

    def __fspath__(self):
        return "/data"


class Recorder:
    """A plan that records the runs defined in it (and the runs each needs)."""

    def __init__(self):
        self.needs = {}

    def side_by_side(self, name, args_for, *, needs=(), **options):
        self.needs[name] = tuple(needs)

    def folder(self, name, kind="in-process"):
        return Path("/runs") / name / kind


def test_each_subset_names_defined_runs_and_keeps_what_they_need():
    every = Recorder()
    define_runs(every, Anything(), Recorder())
    for engine, names in SUBSETS.items():
        assert names <= set(every.needs), (engine, sorted(names - set(every.needs)))
        kept = Recorder()
        define_runs(kept, Anything(), Recorder(), only=names)
        assert set(kept.needs) == names
        assert all(set(needs) <= names for needs in kept.needs.values()), engine
