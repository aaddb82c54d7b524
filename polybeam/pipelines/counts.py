"""Reading a finished pipeline's counters: what was read, used, dead-lettered and skipped."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from apache_beam.metrics.metric import MetricsFilter

from polybeam.transforms.read import COUNTER_NAMESPACE


@dataclass(frozen=True)
class ReadCounts:
    """Records read and where each went; ``reconciles`` checks none was lost."""

    records: int = 0
    examples: int = 0
    dead_letters: int = 0
    skipped: int = 0

    @property
    def reconciles(self) -> bool:
        return self.records == self.examples + self.dead_letters + self.skipped

    def to_dict(self) -> dict:
        return {**asdict(self), "reconciles": self.reconciles}

    def describe(self) -> str:
        check = "ok" if self.reconciles else "MISMATCH"
        return (
            f"records read {self.records} = examples {self.examples} + dead letters {self.dead_letters} "
            f"+ skipped {self.skipped} ({check})"
        )


def _value(result) -> int:
    committed = getattr(result, "committed", None)
    return int(committed if committed is not None else result.attempted)


def read_counts(pipeline_result, step_prefix: str = "") -> ReadCounts:
    """Sum the reader counters of the steps whose name starts with ``step_prefix``."""
    found = pipeline_result.metrics().query(MetricsFilter().with_namespace(COUNTER_NAMESPACE))
    totals = {"records": 0, "examples": 0, "dead_letters": 0, "skipped": 0}
    for counter in found["counters"]:
        name = counter.key.metric.name
        if name in totals and counter.key.step.startswith(step_prefix):
            totals[name] += _value(counter)
    return ReadCounts(**totals)
