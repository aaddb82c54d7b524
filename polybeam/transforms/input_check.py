"""CheckInput: a job fails, in the job, when its read cannot be what the user meant.

The check (:class:`~polybeam.formats.acceptance.InputPolicy`) needs the
whole read's counts, so it runs on a worker once the read is done, and after
the dead letters are written (``after``), so that a failed job still leaves
every unreadable record behind. Steps that write results (models,
checkpoints, prefixes, the report) wait for its output, so a refused input
writes none of them. Before failing, it writes a report saying why
(``failed: true`` and ``error``) where the job's report goes, so that
someone who launched the job and left can read the reason there; a
launcher that waits turns that report into
:class:`~polybeam.formats.acceptance.InputRejected` with the same message.

>>> from polybeam.formats.acceptance import InputPolicy
>>> from polybeam.transforms.read import ReadExamples
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "x.csv")
>>> _ = open(path, "w").write("a,b,label\\n1,2,1\\n3,4,0\\n")
>>> try:
...     with beam.Pipeline(runner="FnApiRunner") as p:
...         read = p | ReadExamples(path, format="libsvm", check_input=False)  # the job checks it itself
...         _ = read | CheckInput(InputPolicy(format="libsvm"))
... except InputRejected as error:
...     print(str(error).splitlines()[0])
all 3 records (100%) are dead letters, more than --max-dead-letter-fraction 0.1 allows; the first reasons:
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.transforms.util import WaitOn

from polybeam.formats.acceptance import FIRST_REASONS, InputPolicy, InputRejected, Refusals, position
from polybeam.formats.records import DeadLetter, ReadCounts
from polybeam.transforms.files import write_json
from polybeam.transforms.provenance import provenance_record

__all__ = ["CheckInput", "InputPolicy", "InputRejected", "failure_report"]


def failure_report(facts: dict, counts: ReadCounts, letters: list[DeadLetter], message: str) -> dict:
    """The report of a job its input check failed (with its provenance, when ``facts`` hold its ``origin``)."""
    facts = dict(facts)
    known = facts.pop("origin", None)
    report = {
        **facts,
        **counts.to_dict(),
        "failed": True,
        "error": message,
        "first_dead_letters": [letter.__dict__ for letter in letters],
    }
    if known is not None:
        report["provenance"] = provenance_record(known, counts)
    return report


class CountRefusals(beam.CombineFn):
    """The refused records among dead letters, by what they hold (:class:`~polybeam.formats.acceptance.Refusals`)."""

    def create_accumulator(self) -> Refusals:
        return Refusals()

    def add_input(self, refusals: Refusals, letter: DeadLetter) -> Refusals:
        return refusals.add(letter) if letter.refused is not None else refusals

    def merge_accumulators(self, accumulators) -> Refusals:
        merged = Refusals()
        for refusals in accumulators:
            merged = merged.merge(refusals)
        return merged

    def extract_output(self, refusals: Refusals) -> Refusals:
        return refusals


def _check(
    counts: ReadCounts,
    letters: list[DeadLetter],
    refusals: Refusals,
    policy: InputPolicy,
    report: str | None,
    facts: dict,
) -> ReadCounts:
    message = policy.problem(counts, letters, refusals)
    if message is None:
        return counts
    if report is not None:
        write_json(report, failure_report(facts, counts, letters, message))
    raise InputRejected(message)


class CheckInput(beam.PTransform):
    """Fails the job when ``policy`` refuses the read; else emits its :class:`ReadCounts` (one element).

    Parameters
    ----------
    policy : InputPolicy
        What the job accepts (no example, the share of dead letters).
    report : str, optional
        Where the failure report goes (the job's report path).
    facts : dict, optional
        What the failure report says about the job (command, launch time, paths).
    after : sequence of PCollection
        What must be complete before the check runs (the written dead letters).

    The input is a :class:`~polybeam.transforms.read.ReadResult` (its
    ``counts`` and ``dead_letters``).
    """

    def __init__(self, policy: InputPolicy, *, report: str | None = None, facts: dict | None = None, after=()):
        super().__init__()
        self.policy = policy
        self.report = report
        self.facts = dict(facts or {})
        self.after = tuple(after)

    def expand(self, read):
        first = read.dead_letters | "FirstDeadLetters" >> beam.combiners.Top.Smallest(FIRST_REASONS, key=position)
        refused = read.dead_letters | "CountRefusals" >> beam.CombineGlobally(CountRefusals())
        counts = read.counts
        if self.after:
            counts = counts | "AfterDeadLetters" >> WaitOn(*self.after)
        return counts | "Check" >> beam.Map(
            _check,
            beam.pvalue.AsSingleton(first),
            beam.pvalue.AsSingleton(refused),
            self.policy,
            self.report,
            self.facts,
        )
