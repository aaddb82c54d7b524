"""WriteReport: the job itself writes its report, so nobody has to watch the launch.

On a cluster the launcher may exit right after submitting the job (a flex
template must), and its local disk is not the workers'. So every polybeam job
ends with a step, run by a worker, that gathers what the job produced (read
counts, the model's summary, metrics, written files) and writes one JSON
document to shared storage next to the job's output. A launcher that waits
reads that document back; one that does not tells where it will appear.

Each part of the report is a PCollection; the step sees each as the list of
its elements (a side input), so it runs once everything else has finished,
and ``build(parts)`` turns them into the report's dict.

>>> import json, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "report.json")
>>> def build(parts):
...     return {"numbers": sorted(parts["numbers"]), "total": sum(parts["numbers"])}
>>> with beam.Pipeline(runner="FnApiRunner") as p:
...     numbers = p | beam.Create([3, 1, 2])
...     _ = p | WriteReport(path, build, numbers=numbers)
>>> json.load(open(path))
{'numbers': [1, 2, 3], 'total': 6}
"""

from __future__ import annotations

import pickle
from collections.abc import Callable

import apache_beam as beam

from polybeam.transforms.files import write_json
from polybeam.transforms.windows import in_window

Build = Callable[[dict], dict]


def _write(path: str, build: Build, **parts) -> str:
    write_json(path, build({name: _unpacked(packed) for name, packed in parts.items()}))
    return path


def _unpacked(packed) -> list:
    return [element for blob in packed for element in pickle.loads(blob)]


class _PackBundle(beam.DoFn):
    """The elements of a bundle, by window, as one pickled list: a side input's elements are weighed
    object by object when a worker caches them, and a part of 100,000 keys' metrics is millions of
    objects (seconds) where a few byte strings are nothing."""

    def start_bundle(self):
        self._elements: dict = {}

    def process(self, element, window=beam.DoFn.WindowParam):
        self._elements.setdefault(window, []).append(element)

    def finish_bundle(self):
        for window, elements in self._elements.items():
            yield in_window(pickle.dumps(elements), window)
        self._elements = {}


class WriteReport(beam.PTransform):
    """Writes ``build(parts)`` as JSON to ``path`` once every part is computed; emits the path.

    Parameters
    ----------
    path : str
        Where the report goes (any Beam file system); written atomically.
    build : callable
        ``build(parts)`` gets a dict of lists (every element of each part)
        and returns the report's dict; it runs on a worker, so it must be
        picklable (a module-level function) and read no launcher files.
        NaN and infinity become null.
    **parts : PCollection
        The parts of the report, by name.
    """

    def __init__(self, path: str, build: Build, **parts):
        super().__init__()
        self.path = path
        self.build = build
        self.parts = parts

    def expand(self, pbegin):
        sides = {
            name: beam.pvalue.AsList(part | f"Pack{name}" >> beam.ParDo(_PackBundle()))
            for name, part in self.parts.items()
        }
        return (
            pbegin | "ReportPath" >> beam.Create([self.path]) | "WriteReport" >> beam.Map(_write, self.build, **sides)
        )
