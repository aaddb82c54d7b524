"""Iterative parameter mixing: held-out loss of the averaged model against the number of workers.

``polybeam.transforms.train.Train`` distributes training as parameter mixing:
pass 1 is a CombineFn whose accumulator is a learner, so every bundle learns
its shard with a fresh learner (``make_learner(config)``), the partial
learners are compacted, pickled (the shuffle) and averaged by ``merge``
(weighted by the importance weight each saw this pass; apple's merge unites
the parents and freezes them). Each later pass starts every bundle from the
averaged state (``origin.copy().start_pass()``), learns its shard and averages
again. This script runs exactly that with the pure learners, no Beam, for N =
1, 2, 4, ..., 256 workers, each on an equal contiguous shard of one large
``PlantedPolynomial`` task (where apple beats a linear model), and measures
the held-out logistic loss and 0-1 error of the averaged model after 1, 2 and
5 passes, against N.

Settings (logistic loss, 18 bits, every other option polybeam's default):

* ``linear``: GSA steps (the default without a learning rate);
* ``apple``: ``expand="apple"``, GSA steps, with the expansion schedule Train
  gives pass 1: with one pass none is known, so each worker expands after
  1000, 2000, 4000, ... of its own examples; with P > 1 passes Train counts
  the examples and tells each learner what to space its 6 epochs over
  (``learner_total``): a lone learner all the data of all passes, each of N
  known workers its share of pass 1 (the merge then freezes the parents).
  (Before this was fixed, every worker spaced its epochs over all the data and
  the averaged model had no parents from N = 2-4 on.) Apple's figure after P
  passes comes from its own ``Train(passes=P)`` run, as the schedule depends on P;
* ``apple-shard`` (what-if, not what Train does): apple whose workers space
  their epochs over their own pass-1 shard (``make_learner(config,
  total=shard size)``), the paper's parallel form: each worker picks all its
  parents in pass 1. Two passes only: later passes expand every example over
  the union of all workers' parents, which makes them slow at large N;
* ``linear-adaptive`` and ``apple-adaptive``: the same with ``step="adaptive"``
  (VW's normalised AdaGrad, eta 1.0); apple-adaptive runs one pass only, to
  bound the run's time.

Costs recorded for every merge: the pickled bytes of each partial learner
(what the shuffle moves), the seconds to decode them and to merge them, the
peak resident memory the decode-and-merge added, and the pickled size of the
averaged state (the side input every worker of the next pass reads). A costs
section measures pickled learners after shards at 18 and 22 bits and the
merge of several 22-bit learners. The N = 1 runs are checked against one
learner trained the plain way (they must be identical).

Run: ``python benchmarks/bench_mixing.py [--examples 400000] [--test-examples 100000]
[--workers 1,2,...,256] [--passes 5] [--settings linear,apple,...] [--quick] [--results DIR]
[--render]``. Writes ``results/mixing.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import pickle
import sys
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import load_average, machine_info, markdown_table, write_report  # noqa: E402

from polybeam.datasets.synthetic import PlantedPolynomial  # noqa: E402
from polybeam.learners.batch import ExampleBatch  # noqa: E402
from polybeam.learners.config import LearnerConfig  # noqa: E402
from polybeam.learners.evaluation import Evaluation  # noqa: E402
from polybeam.learners.expansion import Expander  # noqa: E402
from polybeam.learners.linear import state_bytes  # noqa: E402
from polybeam.learners.polynomial import make_learner  # noqa: E402
from polybeam.transforms.train import learner_total  # noqa: E402

WORKERS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
REPORTED_PASSES = (1, 2, 5)
BITS = 18
# Rows per batch, as polybeam's readers emit them (4 MiB blocks of ~49-feature LIBSVM lines).
BATCH_ROWS = 4096
# Held-out rows expanded to count apple's features per example (enough for a stable mean).
EXPANSION_SAMPLE = 20_000
# The costs section: pickled learners after the shard of this many workers, at these bits.
SIZE_WORKERS = (256, 64, 8, 1)
SIZE_BITS = (18, 22)
MERGE_22_BITS = (8, 16)


@dataclasses.dataclass(frozen=True)
class Setting:
    """A learner configuration of the sweep.

    ``schedule``: ``"train"`` gives pass 1 the expansion schedule Train gives it
    (see the module docstring); ``"shard"`` spaces each worker's epochs over its
    own pass-1 shard. ``most_passes`` caps the passes run (None: all reported).
    """

    key: str
    label: str
    settings: dict
    schedule: str = "train"
    most_passes: int | None = None

    def config(self, passes: int) -> LearnerConfig:
        return LearnerConfig(loss="logistic", bits=BITS, passes=passes, **self.settings)

    @property
    def apple(self) -> bool:
        return self.settings.get("expand") == "apple"

    def run_passes(self, reported: tuple[int, ...]) -> list[int]:
        """The ``Train(passes=P)`` runs needed: one per reported P when the schedule depends on P, else the longest."""
        wanted = [p for p in reported if self.most_passes is None or p <= self.most_passes]
        if self.apple and self.schedule == "train":
            return wanted
        return wanted[-1:]


SETTINGS = (
    Setting("linear", "linear, GSA (default)", {}),
    Setting("apple", "apple, GSA (default), as Train runs it", {"expand": "apple", "apple_guard": False}),
    # Later passes expand every example over the union of all workers' parents (thousands at N = 256,
    # ~80 features per base feature): 2 passes keep the run within its budget.
    Setting(
        "apple-shard",
        "apple, GSA, epochs over each worker's pass-1 shard (what-if)",
        {"expand": "apple", "apple_guard": False},
        "shard",
        most_passes=2,
    ),
    Setting("linear-adaptive", "linear, adaptive steps", {"step": "adaptive"}),
    # With P > 1 passes it repeats linear-adaptive from N = 2 on (see schedule_notes): one pass only.
    Setting(
        "apple-adaptive",
        "apple, adaptive steps, as Train runs it",
        {"expand": "apple", "apple_guard": False, "step": "adaptive"},
        most_passes=1,
    ),
)
BY_KEY = {setting.key: setting for setting in SETTINGS}


# -- data -----------------------------------------------------------------------------------


def make_data(examples: int, test_examples: int, seed: int) -> tuple[ExampleBatch, ExampleBatch]:
    """The first ``examples`` rows of the task to train on, the next ``test_examples`` rows held out."""
    rows = PlantedPolynomial(seed=seed).generate(examples + test_examples)
    return rows.slice(0, examples).to_batch(BITS), rows.slice(examples, examples + test_examples).to_batch(BITS)


def shard_bounds(examples: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous, near-equal shards ``(start, stop)``, as a runner splits a file into bundles."""
    edges = np.linspace(0, examples, workers + 1).round().astype(int)
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def batches_of(data: ExampleBatch, start: int, stop: int):
    """Rows ``start:stop`` as the reader would emit them: views of ``BATCH_ROWS`` rows."""
    for first in range(start, stop, BATCH_ROWS):
        yield data.rows_between(first, min(first + BATCH_ROWS, stop))


def with_bits(batch: ExampleBatch, bits: int) -> ExampleBatch:
    """The same examples read with ``bits`` (feature indices stay their own slots)."""
    return dataclasses.replace(batch, bits=bits)


# -- one worker, the shuffle, the merge ---------------------------------------------------------


def first_pass_learner(setting: Setting, config: LearnerConfig, shard: int, total: int, workers: int = 1):
    """A bundle's fresh pass-1 accumulator, as TrainFn creates it and ``add_input`` tells it the count."""
    if setting.apple and setting.schedule == "shard":
        return make_learner(config, total=shard)
    learner = make_learner(config)
    if setting.apple and config.passes > 1:
        # Train pairs each batch with what its learner spaces the epochs over (_with_total_examples):
        # all passes for a lone learner, its share of pass 1 when the workers are known (as here).
        learner.expect(learner_total(total, config.passes, workers))
    return learner


def learn_shard(learner, data: ExampleBatch, start: int, stop: int):
    for batch in batches_of(data, start, stop):
        learner.learn(batch)
    return learner


def ship(learner) -> bytes:
    """A partial learner as the shuffle moves it: compacted, then pickled."""
    return pickle.dumps(learner.compact(), protocol=pickle.HIGHEST_PROTOCOL)


def merge_partials(blobs: list[bytes]):
    """Decode the shuffled partial learners and average them in one call, as ``merge_accumulators`` does.

    Returns the averaged learner and what it cost: seconds to decode and to
    merge, and the peak memory both allocated (all N decoded learners are held
    at once, as Beam hands them to one ``merge_accumulators`` call). The memory
    is counted with tracemalloc, which numpy reports its arrays to: resident
    memory would hide allocations that reuse pages freed earlier.
    """
    tracemalloc.start()
    started = time.perf_counter()
    learners = [pickle.loads(blob) for blob in blobs]
    decoded = time.perf_counter()
    merged = learners[0].merge(learners[1:])
    finished = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return merged, {"decode_seconds": decoded - started, "merge_seconds": finished - decoded, "merge_peak_bytes": peak}


# -- measuring a model --------------------------------------------------------------------------


def evaluate(learner, test: ExampleBatch) -> dict:
    """Held-out logistic loss, 0-1 error and AUC of the learner's model."""
    result = Evaluation.of(learner.to_model(), [test]).result()
    return {"loss": float(result["loss"]), "error": float(result["error"]), "auc": result["auc"]}


def expansion_cost(learner, test: ExampleBatch) -> dict:
    """Apple's parents and its expanded features per held-out example (what every later example costs)."""
    if not hasattr(learner, "parents"):
        return {}
    sample = test.rows_between(0, min(EXPANSION_SAMPLE, len(test)))
    config = learner.config
    expander = Expander(
        learner.parents,
        bits=config.bits,
        max_degree=config.max_degree,
        repeat_factors=config.repeat_factors,
        trace=False,
    )
    expanded = expander.expand(sample)
    return {
        "parents": len(learner.parents),
        "expanded_per_example": expanded.nnz / max(len(sample), 1),
        "base_per_example": sample.nnz / max(len(sample), 1),
    }


# -- the sweep -------------------------------------------------------------------------------


def learn_pass(setting: Setting, config: LearnerConfig, origin, bounds, train: ExampleBatch) -> tuple[list, dict]:
    """Every worker learns its shard (fresh in pass 1, from a copy of ``origin`` later) and ships its learner.

    Returns the shipped partial learners and ``{"learn_seconds", "parents_each", "first"}``,
    ``first`` being worker 0's learner before it was shipped (to evaluate it alone).
    """
    blobs, facts = [], {"learn_seconds": 0.0, "parents_each": [], "first": None}
    for start, stop in bounds:
        started = time.perf_counter()
        if origin is None:
            learner = first_pass_learner(setting, config, stop - start, len(train), len(bounds))
        else:
            learner = origin.copy().start_pass()
        learn_shard(learner, train, start, stop)
        facts["learn_seconds"] += time.perf_counter() - started
        if setting.apple:
            facts["parents_each"].append(len(learner.parents))
        blobs.append(ship(learner))
        facts["first"] = facts["first"] or learner
    return blobs, facts


def run_mixing(
    setting: Setting,
    passes: int,
    workers: int,
    train: ExampleBatch,
    test: ExampleBatch,
    evaluate_after: tuple[int, ...],
) -> dict:
    """Train(passes) on ``workers`` shards by parameter mixing; measurements after each pass in ``evaluate_after``.

    After pass 1 it also evaluates worker 0's learner alone (``alone_loss``,
    ``alone_error``): what one shard teaches without any averaging.
    """
    config = setting.config(passes)
    bounds = shard_bounds(len(train), workers)
    records, origin = [], None
    for number in range(1, passes + 1):
        blobs, facts = learn_pass(setting, config, origin, bounds, train)
        alone = evaluate(facts["first"], test) if number == 1 and workers > 1 else None
        origin, costs = merge_partials(blobs)
        sizes = [len(blob) for blob in blobs]
        record = {
            "pass": number,
            "learn_seconds": facts["learn_seconds"],
            "partial_bytes_mean": float(np.mean(sizes)),
            "partial_bytes_max": max(sizes),
            "shuffled_bytes": sum(sizes),
            "broadcast_bytes": len(pickle.dumps(origin.compact(), protocol=pickle.HIGHEST_PROTOCOL)),
            **costs,
        }
        if facts["parents_each"]:
            record["worker_parents_mean"] = float(np.mean(facts["parents_each"]))
        if number in evaluate_after or number == passes:
            record.update(evaluate(origin, test))
            record.update(expansion_cost(origin, test))
        alone = alone or (record if number == 1 and "loss" in record else None)
        if number == 1 and alone:
            record["alone_loss"], record["alone_error"] = alone["loss"], alone["error"]
        records.append(record)
    return {"setting": setting.key, "workers": workers, "passes": passes, "by_pass": records, "final": origin}


def single_learner(setting: Setting, passes: int, train: ExampleBatch):
    """The reference: one learner over all the data, trained the plain way, pass after pass."""
    config = setting.config(passes)
    learner = first_pass_learner(setting, config, len(train), len(train))
    for number in range(passes):
        if number:
            learner.start_pass()
        learn_shard(learner, train, 0, len(train))
    return learner


def same_learner(one, other) -> bool:
    """Whether two learners hold identical weights (and, for apple, identical parents)."""
    linear_one, linear_other = getattr(one, "linear", one), getattr(other, "linear", other)
    if getattr(one, "parents", None) != getattr(other, "parents", None):
        return False
    return bool(np.array_equal(linear_one.weights, linear_other.weights))


def sweep(settings, workers, reported, train, test, *, log=print) -> tuple[list[dict], list[dict]]:
    """Every setting x worker count x Train(passes) run; and the N = 1 checks against a single learner."""
    runs, checks = [], []
    for setting in settings:
        for passes in setting.run_passes(reported):
            for count in workers:
                started = time.perf_counter()
                run = run_mixing(setting, passes, count, train, test, reported)
                final = run.pop("final")
                run["seconds"] = time.perf_counter() - started
                runs.append(run)
                last = run["by_pass"][-1]
                log(
                    f"{setting.key:>15} passes={passes} N={count:>3}: loss {last['loss']:.4f} error {last['error']:.4f}"
                    + (f" parents {last['parents']}" if "parents" in last else "")
                    + f"  ({run['seconds']:.1f} s)"
                )
                if count == 1 and passes == setting.run_passes(reported)[-1]:
                    checks.append(
                        {
                            "setting": setting.key,
                            "passes": passes,
                            "identical": same_learner(final, single_learner(setting, passes, train)),
                        }
                    )
                del final
    return runs, checks


def warm_up(settings, train: ExampleBatch) -> None:
    """Compile (or load) every numba kernel the settings use, so that no timing includes it."""
    tiny = train.rows_between(0, min(3000, len(train)))
    for setting in settings:
        learner = make_learner(setting.config(1), total=len(tiny))
        learner.learn(tiny)
        merged = learner.copy().merge([learner.copy()])
        evaluate(merged, tiny)


# -- the costs section -------------------------------------------------------------------------


def learner_sizes(train: ExampleBatch, examples: int) -> list[dict]:
    """Pickled bytes of a compacted partial learner after one worker's shard, at 18 and 22 bits."""
    rows = []
    for bits in SIZE_BITS:
        data = with_bits(train, bits)
        for setting in (BY_KEY["linear"], BY_KEY["linear-adaptive"], BY_KEY["apple"]):
            config = setting.config(1).replace(bits=bits)
            for workers in SIZE_WORKERS:
                shard = examples // workers
                learner = learn_shard(first_pass_learner(setting, config, shard, examples), data, 0, shard)
                linear = getattr(learner, "linear", learner)
                rows.append(
                    {
                        "bits": bits,
                        "setting": setting.key,
                        "workers": workers,
                        "shard_examples": shard,
                        "pickled_bytes": len(ship(learner)),
                        "touched_slots": int(np.any(linear.raw_ != 0, axis=1).sum()),
                        "dense_state_bytes": dense_bytes(learner),
                        **({"parents": len(learner.parents)} if setting.apple else {}),
                    }
                )
    return rows


def dense_bytes(learner) -> int:
    """The dense memory a learner holds: ``state_bytes`` plus, for apple, the trace and base-slot arrays."""
    total = state_bytes(learner.config)
    if hasattr(learner, "expander"):
        total += learner.expander.slot_trace.nbytes + learner.base_slots.nbytes
    return total


def batch_bytes(train: ExampleBatch) -> dict:
    """Pickled bytes per example of a reader's batch: what a runner stores when later passes re-read the input."""
    batch = next(batches_of(train, 0, len(train)))
    size = len(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
    return {
        "rows": len(batch),
        "pickled_bytes": size,
        "bytes_per_example": size / len(batch),
        "nonzeros_per_example": batch.nnz / len(batch),
    }


def wide_merges(train: ExampleBatch, examples: int) -> list[dict]:
    """Decode and merge N learners of 2**22 slots (copies of one worker's shard learner): seconds and memory."""
    rows = []
    data = with_bits(train, 22)
    for setting in (BY_KEY["linear"], BY_KEY["apple"]):
        config = setting.config(1).replace(bits=22)
        for workers in MERGE_22_BITS:
            shard = examples // workers
            blob = ship(learn_shard(first_pass_learner(setting, config, shard, examples), data, 0, shard))
            _, costs = merge_partials([blob] * workers)
            rows.append({"bits": 22, "setting": setting.key, "workers": workers, "partial_bytes": len(blob), **costs})
    return rows


# -- summary, report, plot ------------------------------------------------------------------------


def figure(report: dict, setting: str, workers: int, passes: int, metric: str = "loss"):
    """The setting's ``metric`` after ``passes`` passes with ``workers`` workers (from its Train(passes) run)."""
    candidates = [r for r in report["runs"] if r["setting"] == setting and r["workers"] == workers]
    exact = [r for r in candidates if r["passes"] == passes]
    longer = sorted((r for r in candidates if r["passes"] > passes), key=lambda r: r["passes"])
    run = (exact or longer or [None])[0]
    if run is None:
        return None
    return run["by_pass"][passes - 1].get(metric)


def final_record(report: dict, setting: str, workers: int, passes: int) -> dict | None:
    for run in report["runs"]:
        if run["setting"] == setting and run["workers"] == workers and run["passes"] == passes:
            return run["by_pass"][-1]
    return None


def fmt(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return f"{value:.{digits}f}"


def megabytes(value) -> str:
    return "" if value is None else f"{value / 1e6:.2f}"


def passes_of(report: dict, setting: str) -> list[int]:
    """The reported pass counts the setting was run for."""
    longest = max((r["passes"] for r in report["runs"] if r["setting"] == setting), default=0)
    return [p for p in report["reported_passes"] if p <= longest]


def loss_table(report: dict, setting: str) -> str:
    """Held-out loss and error against N after each reported pass count, with the gap to N = 1."""
    passes_run = passes_of(report, setting)
    apple = BY_KEY[setting].apple
    header = ["N"]
    for passes in passes_run:
        header += [f"loss {passes}p", f"error {passes}p"]
    header += [f"gap {p}p" for p in dict.fromkeys([passes_run[0], passes_run[-1]])]
    header += ["one worker alone 1p"]
    if apple:
        header += [f"parents {p}p" for p in passes_run]
    rows = []
    for workers in report["workers"]:
        row = [workers]
        for passes in passes_run:
            row += [
                fmt(figure(report, setting, workers, passes)),
                fmt(figure(report, setting, workers, passes, "error")),
            ]
        row += [_gap(report, setting, workers, p) for p in dict.fromkeys([passes_run[0], passes_run[-1]])]
        row += [fmt(figure(report, setting, workers, 1, "alone_loss"))]
        if apple:
            row += [figure(report, setting, workers, passes, "parents") for passes in passes_run]
        rows.append(row)
    return markdown_table(header, rows)


def _gap(report: dict, setting: str, workers: int, passes: int) -> str:
    """Held-out loss minus the single learner's after the same passes."""
    mine, single = figure(report, setting, workers, passes), figure(report, setting, 1, passes)
    return "" if mine is None or single is None else f"{mine - single:+.4f}"


def cost_table(report: dict, setting: str) -> str:
    """Shuffle bytes, broadcast bytes, merge seconds and memory per N, from the setting's longest run."""
    longest = passes_of(report, setting)[-1]
    rows = []
    for workers in report["workers"]:
        run = next(
            (
                r
                for r in report["runs"]
                if r["setting"] == setting and r["workers"] == workers and r["passes"] == longest
            ),
            None,
        )
        if run is None:
            continue
        first, last = run["by_pass"][0], run["by_pass"][-1]
        later = [megabytes(last["partial_bytes_mean"]), f"{last['merge_seconds']:.3f}"] if longest > 1 else []
        rows.append(
            [
                workers,
                megabytes(first["partial_bytes_mean"]),
                megabytes(first["shuffled_bytes"]),
                megabytes(first["broadcast_bytes"]),
                f"{first['decode_seconds']:.3f}",
                f"{first['merge_seconds']:.3f}",
                megabytes(first["merge_peak_bytes"]),
                *later,
                f"{sum(p['learn_seconds'] for p in run['by_pass']) / len(run['by_pass']):.2f}",
            ]
        )
    header = ["N", "partial MB", "shuffled MB", "broadcast MB", "decode s", "merge s", "merge peak MB"]
    if longest > 1:
        header += [f"partial MB (pass {longest})", f"merge s (pass {longest})"]
    return markdown_table(header + ["learn s per pass (all workers)"], rows)


def size_table(report: dict) -> str:
    rows = [
        [
            r["bits"],
            r["setting"],
            r["workers"],
            f"{r['shard_examples']:,}",
            f"{r['touched_slots']:,}",
            r.get("parents", ""),
            megabytes(r["pickled_bytes"]),
            megabytes(r["dense_state_bytes"]),
        ]
        for r in report["costs"]["sizes"]
    ]
    return markdown_table(
        ["bits", "learner", "shard of N", "shard examples", "touched slots", "parents", "pickled MB", "dense state MB"],
        rows,
    )


def wide_merge_table(report: dict) -> str:
    rows = [
        [
            r["bits"],
            r["setting"],
            r["workers"],
            megabytes(r["partial_bytes"]),
            f"{r['decode_seconds']:.2f}",
            f"{r['merge_seconds']:.2f}",
            megabytes(r["merge_peak_bytes"]),
        ]
        for r in report["costs"]["wide_merges"]
    ]
    return markdown_table(["bits", "learner", "N", "partial MB", "decode s", "merge s", "peak MB"], rows)


def findings(report: dict) -> list[str]:
    """A few sentences, computed from the figures, on what averaging loses and what later passes recover."""
    lines = []
    most = max(report["workers"])
    for setting in report["settings"]:
        key = setting["key"]
        passes_run = passes_of(report, key)
        first, last = passes_run[0], passes_run[-1]
        single = [figure(report, key, 1, p) for p in (first, last)]
        wide = [figure(report, key, most, p) for p in (first, last)]
        if None in single or None in wide:
            continue
        # Apple as Train runs it: each pass count is its own run (its schedule depends on P), so the
        # passes after the first do not continue the one-pass model and "recovered" would mislead.
        same_run = not (BY_KEY[key].apple and BY_KEY[key].schedule == "train")
        recovered = _recovered(single[0], wide[0], wide[-1]) if same_run and last > first else ""
        later = f" and {single[-1]:.4f} after {last}" if last > first else ""
        wide_later = (
            f" and {wide[-1]:.4f} after {last} ({wide[-1] - single[-1]:+.4f} to the single learner "
            f"after {last}){recovered}"
            if last > first
            else ""
        )
        lines.append(
            f"- **{setting['label']}**: the single learner's held-out loss is {single[0]:.4f} after {first} "
            f"pass{'es' if first > 1 else ''}{later}; averaging {most} workers gives {wide[0]:.4f} after {first} "
            f"({wide[0] - single[0]:+.4f}){wide_later}."
        )
        crossing = _workers_within(report, key, first, 0.01)
        alone = figure(report, key, most, first, "alone_loss")
        if crossing is not None and alone is not None:
            nearer = "one worker alone" if abs(wide[0] - alone) < abs(wide[0] - single[0]) else "the single learner"
            lines.append(
                f"  One-shot averaging stays within 0.01 of the single learner's loss up to N = {crossing} (shards of "
                f"{report['data']['examples'] // crossing:,} examples); at N = {most} the average "
                f"({wide[0]:.4f}) lies between one worker's learner alone ({alone:.4f}) and the single learner "
                f"over all the data ({single[0]:.4f}), nearer {nearer}."
            )
    return lines + merge_findings(report)


def merge_findings(report: dict) -> list[str]:
    """Seconds and memory of the pass-1 merge (decode + merge, one call) at a few N, for each setting run."""
    shown = [n for n in (8, 64, 256) if n in report["workers"]]
    if not shown:
        return []
    parts = []
    for setting in report["settings"]:
        longest = passes_of(report, setting["key"])[-1]
        cells = []
        for workers in shown:
            run = next(
                (
                    r
                    for r in report["runs"]
                    if r["setting"] == setting["key"] and r["workers"] == workers and r["passes"] == longest
                ),
                None,
            )
            if run:
                merge = run["by_pass"][-1] if longest > 1 else run["by_pass"][0]
                first = run["by_pass"][0]
                cells.append(
                    f"N = {workers}: {first['decode_seconds'] + first['merge_seconds']:.2f} s, "
                    f"{first['merge_peak_bytes'] / 1e6:.0f} MB"
                    + (
                        f" (pass {longest}: {merge['decode_seconds'] + merge['merge_seconds']:.2f} s)"
                        if longest > 1
                        else ""
                    )
                )
        parts.append(f"{setting['key']} {'; '.join(cells)}")
    return [
        f"- **Merge cost** (decode N pickled partial learners of 2^{BITS} slots and average them in one call, "
        "as `merge_accumulators` does; pass 1, seconds and peak memory): " + ". ".join(parts) + "."
    ]


def schedule_notes(report: dict) -> list[str]:
    """Where apple as Train runs it ends with no parents at all (see the explanation below the list)."""
    lines = []
    for setting in report["settings"]:
        if not (BY_KEY[setting["key"]].apple and setting["schedule"] == "train"):
            continue
        for passes in report["reported_passes"]:
            records = {n: final_record(report, setting["key"], n, passes) for n in report["workers"]}
            empty = [str(n) for n, record in records.items() if record and record.get("parents") == 0]
            if empty:
                same = all(
                    figure(report, "linear" if "step" not in setting["settings"] else "linear-adaptive", int(n), passes)
                    == figure(report, setting["key"], int(n), passes)
                    for n in empty
                )
                lines.append(
                    f"- **{setting['label']}, Train(passes={passes})**: the averaged model has no parents "
                    f"at all for N = {', '.join(empty)}: it is a linear model"
                    + (" (its held-out loss equals the linear learner's exactly)." if same else ".")
                )
    if lines:
        lines.append(
            "  Why: a worker ends only the epochs that fit in what it sees before the pass-1 merge freezes "
            "the parents (`PolynomialLearner.merge`); see `learner_total` in `polybeam/transforms/train.py`."
        )
    return lines


def _recovered(single_first: float, wide_first: float, wide_last: float) -> str:
    lost = wide_first - single_first
    if lost <= 1e-4:
        return ""
    return (
        f"; the passes after the first win back {100 * (wide_first - wide_last) / lost:.0f}% of what one-shot "
        "averaging lost against the single learner's first pass"
    )


def _workers_within(report: dict, setting: str, passes: int, margin: float) -> int | None:
    single = figure(report, setting, 1, passes)
    within = None
    for workers in report["workers"]:
        value = figure(report, setting, workers, passes)
        if value is None or single is None or value - single > margin:
            break
        within = workers
    return within


COST_CAPTION = (
    "Costs of the longest run: partial MB, the mean pickled partial learner of pass 1 (shuffled MB: all of them); "
    "broadcast MB, the pickled average after pass 1 (the side input of pass 2); decode s, merge s and merge peak "
    "MB, the pass-1 merge (tracemalloc peak while all N are decoded and averaged); then the same for the last "
    "pass; learn s: all workers' learning per pass, one after the other (in later passes including each "
    "worker's copy of the averaged state)."
)


def render(report: dict) -> str:
    """The markdown summary (rewritable from ``mixing.json`` alone)."""
    data = report["data"]
    machine = report["machine"]
    lines = [
        "# Iterative parameter mixing: held-out loss against the number of workers",
        "",
        f"Measured {report['started']} by `benchmarks/bench_mixing.py` on {machine['cpus']} CPUs "
        f"(load average {report['load_average_start']} at the start, {report['load_average_end']} at the end; "
        "a shared machine, so seconds are indicative). "
        f"Task: `PlantedPolynomial(seed={data['seed']})`, {data['examples']:,} training examples "
        f"({data['base_per_example']:.1f} binary non-zeros each, 100,000 features), {data['test_examples']:,} "
        f"held-out examples from the rows after them; logistic loss, {BITS} bits, batches of {BATCH_ROWS} rows. "
        f"Each of N workers learns an equal contiguous shard; pass 1 starts fresh learners and averages them "
        "(apple unites and freezes the parents), later passes copy the average, learn and average again, "
        "exactly as `Train` does (see the script's docstring). Full run: "
        f"{report['elapsed_seconds'] / 60:.1f} minutes.",
        "",
        "## Findings",
        "",
        *findings(report),
        *schedule_notes(report),
        "",
        "N = 1 is the single learner: "
        + ", ".join(
            f"{c['setting']} ({c['passes']} pass{'es' if c['passes'] > 1 else ''}) "
            f"{'identical' if c['identical'] else 'DIFFERENT'}"
            for c in report["checks"]
        )
        + " to one learner trained the plain way.",
        "",
    ]
    for setting in report["settings"]:
        key = setting["key"]
        passes_run = passes_of(report, key)
        lines += [
            f"## {setting['label']}",
            "",
            f"Held-out logistic loss and 0-1 error after "
            f"{', '.join(map(str, passes_run))} pass{'es' if passes_run[-1] > 1 else ''}; "
            "gap: loss minus the single learner's (N = 1) after the same passes; one worker alone: worker 0's "
            "learner after its pass-1 shard, before any averaging."
            + (
                " Apple's figure after P passes is the final model of its own Train(passes=P) run; parents: the "
                "united parents of the averaged model."
                if BY_KEY[key].apple
                else ""
            ),
            "",
            loss_table(report, key),
            "",
            COST_CAPTION,
            "",
            cost_table(report, key),
            "",
        ]
    if report.get("costs"):
        lines += [
            "## Pickled partial learners and wide merges",
            "",
            "A compacted learner pickles its touched slots (weights, feature scales, AdaGrad sums, slot numbers), "
            "or every slot's values without slot numbers once that is smaller; apple also pickles its expander's "
            "trace (8 bytes per traced slot, and its slot number, or 8 bytes per slot once half are traced) and its "
            "base slots (their numbers, or a byte per slot). Shard of N: one worker's pass-1 shard when the data is "
            "split N ways (apple with Train's one-pass schedule).",
            "",
            size_table(report),
            "",
            "Decoding and merging N partial learners of 2^22 slots at once (copies of one worker's learner):",
            "",
            wide_merge_table(report),
            "",
            "A reader's batch of {rows} rows ({nonzeros_per_example:.1f} non-zeros each) pickles to {bytes_per_example:.0f} "
            "bytes per example.".format(**report["costs"]["batch"]),
            "",
        ]
    return "\n".join(lines)


def plot(report: dict, folder: str) -> str | None:
    """Held-out loss against N (log2 axis), one line per pass count, one panel per setting."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = report["settings"]
    columns = min(3, len(settings))
    rows = -(-len(settings) // columns)
    figure_, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.4 * rows), squeeze=False, sharey=True)
    # The single linear learner after one pass: the bar a polynomial model has to clear.
    linear_single = figure(report, "linear", 1, 1)
    colours = {1: "tab:red", 2: "tab:orange", 5: "tab:blue"}
    for axis, setting in zip(axes.flat, settings):
        for passes in passes_of(report, setting["key"]):
            values = [figure(report, setting["key"], n, passes) for n in report["workers"]]
            axis.plot(
                report["workers"],
                [np.nan if v is None else v for v in values],
                marker="o",
                markersize=3,
                color=colours.get(passes),
                label=f"after {passes} pass{'es' if passes > 1 else ''}",
            )
        if linear_single is not None:
            axis.axhline(linear_single, color="grey", linestyle=":", linewidth=1, label="one linear learner, 1 pass")
        axis.set_xscale("log", base=2)
        axis.set_xticks(report["workers"])
        axis.set_xticklabels([str(n) for n in report["workers"]], fontsize=7)
        axis.set_title(setting["label"], fontsize=8)
        axis.set_xlabel("workers N", fontsize=8)
        axis.set_ylabel("held-out log loss", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    for axis in list(axes.flat)[len(settings) :]:
        axis.set_visible(False)
    figure_.suptitle(f"Parameter mixing on PlantedPolynomial ({report['data']['examples']:,} examples)", fontsize=10)
    figure_.tight_layout()
    path = os.path.join(folder, "mixing.png")
    figure_.savefig(path, dpi=90)
    plt.close(figure_)
    return path


def finish(report: dict, results: str) -> dict:
    """Write mixing.json, mixing.md and mixing.png; print the summary."""
    text = render(report)
    write_report(results, "mixing", report, text)
    report["plot"] = plot(report, results)
    print(text)
    return report


# -- main -----------------------------------------------------------------------------------------


def parse_list(text: str, cast=int) -> tuple:
    return tuple(cast(item) for item in text.split(",") if item)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=400_000, help="training examples (default 400,000)")
    parser.add_argument("--test-examples", type=int, default=100_000, help="held-out examples (default 100,000)")
    parser.add_argument("--workers", default=",".join(map(str, WORKERS)), help="comma-separated worker counts")
    parser.add_argument(
        "--passes", default=",".join(map(str, REPORTED_PASSES)), help="reported pass counts (default 1,2,5)"
    )
    parser.add_argument("--settings", default=",".join(s.key for s in SETTINGS), help="comma-separated setting keys")
    parser.add_argument("--seed", type=int, default=0, help="PlantedPolynomial seed")
    parser.add_argument("--no-costs", action="store_true", help="skip the 18/22-bit size and wide-merge section")
    parser.add_argument(
        "--quick", action="store_true", help="a check in seconds: 20k examples, N up to 8, 2 passes, linear and apple"
    )
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--render", action="store_true", help="only rewrite mixing.md and mixing.png from mixing.json")
    args = parser.parse_args(argv)

    if args.render:
        with open(os.path.join(args.results, "mixing.json")) as handle:
            return finish(json.load(handle), args.results)
    if args.quick:
        args.examples, args.test_examples = min(args.examples, 20_000), min(args.test_examples, 5_000)
        args.workers, args.passes, args.settings, args.no_costs = "1,2,4,8", "1,2", "linear,apple", True
    unknown = set(parse_list(args.settings, str)) - set(BY_KEY)
    if unknown:
        parser.error(f"unknown settings {sorted(unknown)}; choose from {', '.join(BY_KEY)}")
    settings = [BY_KEY[key] for key in parse_list(args.settings, str)]
    workers, reported = parse_list(args.workers), tuple(sorted(parse_list(args.passes)))
    if min(workers) < 1 or max(workers) > args.examples:
        parser.error("worker counts must lie between 1 and the number of examples")

    started = time.perf_counter()
    report = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine_info(),
        "load_average_start": load_average(),
        "workers": list(workers),
        "reported_passes": list(reported),
        "settings": [dataclasses.asdict(s) for s in settings],
    }
    train, test = make_data(args.examples, args.test_examples, args.seed)
    report["data"] = {
        "task": "PlantedPolynomial",
        "seed": args.seed,
        "examples": len(train),
        "test_examples": len(test),
        "base_per_example": train.nnz / len(train),
        "generate_seconds": time.perf_counter() - started,
    }
    warm_up(settings, train)
    report["runs"], report["checks"] = sweep(settings, workers, reported, train, test)
    if not args.no_costs:
        report["costs"] = {
            "sizes": learner_sizes(train, args.examples),
            "wide_merges": wide_merges(train, args.examples),
            "batch": batch_bytes(train),
        }
    report["load_average_end"] = load_average()
    report["elapsed_seconds"] = time.perf_counter() - started
    return finish(report, args.results)


if __name__ == "__main__":
    main()
