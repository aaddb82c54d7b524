"""Compile every numba kernel polybeam's commands use, so that later processes load them: ``python -m polybeam.warm``.

Building the wheel runs this against the build tree, so the package ships its
compiled kernels (see :mod:`polybeam.learners.kernel_cache`) and the first
``polybeam`` run after ``pip install .`` compiles nothing. Run it yourself to
re-warm an installation whose cache does not fit this machine (another CPU,
another numba): ``python -m polybeam.warm``.

A kernel's compiled code is cached per signature (argument types, including
array layout and read-only-ness), so the warm-up runs the same public code the
pipelines run, on tiny data, rather than calling kernels directly: every
parser (LIBSVM, VW with feature names and namespaces, CSV, Parquet), every loss
x step rule x sparsity rule (linear and softmax), apple with each parent rule,
quadratic and cubic expansion, prediction and evaluation (also of models read
back from their file format and of objects that went through pickle, as Beam
moves them), the feature-group sequencing methods and the anytime models, and
the dataset generators. No Beam: it needs numpy, numba, scipy and pyarrow only.

>>> list(EXERCISES)
['pickled', 'learners', 'expansions', 'selection', 'datasets']
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import pickle
import sys
import time
from collections.abc import Callable

import numpy as np

from polybeam.learners.loss_specs import LOSS_SPECS

# Tiny inputs in every shape the readers accept: labels of each kind, comments,
# blank lines, a bad record (a dead letter), hashed and direct indices.
LIBSVM_TEXT = (
    b"1 1:0.5 3:1 7:-2.25 # a comment\n"
    b"-1 qid:3 2:1e-3 5:4\n"
    b"\n"
    b"# a whole-line comment\n"
    b"1 1:1 300000:2 4:0.25\n"
    b"0 2:1 6:NaN\n"
    b"-1 3:2 5:1 9:0.5\n"
)
LIBSVM_MULTICLASS = b"1 1:1 2:0.5\n2 3:1 4:2\n3 1:0.25 5:1\n2 2:1\n"
VW_TEXT = (
    b"1 2 'first |a x:1 y:0.5 |b:2 z 12 |c w:-1\n"
    b"-1 'second |a x y:2 |b q:3 |c v\n"
    b"\n"
    b"1 |a y:1 |b z:0.5 12:1 |c w\n"
    b"-1 0.5 |a x:2 |b q |c v:0.25 u\n"
    b"oops |a x:1\n"
)
VW_NAMED_CLASSES = b"cat |a x:1 y:0.5 |b z\ndog |a y |b q:2\nbird 2 'tag |a x |b z:1\n"
CSV_TEXT = (
    b'label,weight,height,colour,"note, quoted",count\n'
    b'1,1.0,1.5,red,"a ""b""",3\n'
    b"-1,2.0,0.25,blue,plain,0\n"
    b"1,0.5,2,red,,7\n"
    b"-1,1,1e-3,green,x,oops\n"
    b'1,NA,?,NaN,"NA",#N/A\n'
)
CSV_NAMED_CLASSES = b"kind;size;colour\ncat;1.5;red\ndog;0.5;blue\nbird;2;red\n"
CSV_NO_HEADER = b"1,0.5,2\n-1,1.5,0\n1,2,1\n"

# Every loss of the table: numba compiles a kernel once per argument types, but each loss takes its own
# Python paths (settings, predictions, evaluation) too.
LOSSES = tuple(LOSS_SPECS)
STEPS = ("gsa", "adaptive", "constant", "decay", "inverse")
SPARSITY = ("none", "cumulative", "truncate", "round", "subgradient")
BITS = 10


def _roundtrip(value):
    # Beam moves elements, accumulators and side inputs between stages and workers
    # by pickling them: their arrays come back as fresh (writable) copies.
    return pickle.loads(pickle.dumps(value))


def _parse(fmt, data: bytes, *, header: bytes | None = None):
    # Blocks read by the pipelines are bytes (read-only to numba); Python callers may
    # pass a bytearray, a memoryview or an array, which compile as writable arrays.
    fmt.parse(bytearray(data), source="warm", offset=0, first_line=1, header=header)
    return fmt.parse(data, source="warm", offset=0, first_line=1, header=header).batch


def _text_formats() -> dict[str, list]:
    """Batches of every text format and label kind, by the label kind they suit."""
    from polybeam.formats import make_format, parse_number
    from polybeam.formats.classes import class_names
    from polybeam.formats.text import decode_spans

    # The Python helpers of the parsing kernels (tests, docs, label checks).
    for text in ("1.5", b"-2e-3", "nan", "inf"):
        parse_number(text)
    for name in ("dog", b"cow", "2"):
        class_names(("cat", "dog")).class_of(name)
    decode_spans(np.frombuffer(b"red,green", np.uint8), np.array([0, 4]), np.array([3, 9]))
    batches: dict[str, list] = {"real": [], "binary": [], "multiclass": []}
    for kind in ("real", "binary", "any"):
        batch = _parse(make_format("libsvm", bits=BITS, labels=kind), LIBSVM_TEXT)
        batches["real" if kind == "real" else "binary"].append(batch)
    multiclass = make_format("libsvm", bits=BITS, labels="multiclass", classes=3)
    batches["multiclass"].append(_parse(multiclass, LIBSVM_MULTICLASS))
    for names, kind in itertools.product((False, True), ("real", "binary", "any")):
        fmt = make_format("vw", bits=BITS, labels=kind, feature_names=names, seed=7 if names else 0)
        batches["real" if kind == "real" else "binary"].append(_parse(fmt, VW_TEXT))
    for names in (False, True):
        fmt = make_format("vw", bits=BITS, labels="multiclass", label_names=("cat", "dog", "bird"), feature_names=names)
        batches["multiclass"].append(_parse(fmt, VW_NAMED_CLASSES))
    header, body = CSV_TEXT.split(b"\n", 1)
    for kind in ("real", "binary", "any"):
        fmt = make_format(
            "csv",
            bits=BITS,
            labels=kind,
            label_column="label",
            weight_column="weight",
            categorical_columns=("colour", "note, quoted"),
        )
        batches["real" if kind == "real" else "binary"].append(_parse(fmt, body, header=header))
    # Per-key models (--key namespace:NAME / column:NAME) read each example's key from the text.
    _parse(make_format("vw", bits=BITS, labels="binary", key_namespace="c"), VW_TEXT)
    keyed = make_format("csv", bits=BITS, labels="binary", label_column="label", key_column="colour")
    _parse(keyed, body, header=header)
    header, body = CSV_NAMED_CLASSES.split(b"\n", 1)
    fmt = make_format(
        "csv",
        bits=BITS,
        labels="multiclass",
        label_names=("cat", "dog", "bird"),
        delimiter=";",
        categorical_columns=("colour",),
    )
    batches["multiclass"].append(_parse(fmt, body, header=header))
    batches["binary"].append(_parse(make_format("csv", bits=BITS, labels="binary", has_header=False), CSV_NO_HEADER))
    return batches


def _parquet_batches() -> dict[str, list]:
    """Batches read from Parquet files: sparse (indices/values) and named numeric columns, named labels."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from polybeam.formats import make_format

    sparse = pa.table(
        {
            "label": [1.0, -1.0, 1.0],
            "weight": [1.0, 2.0, 0.5],
            "indices": [[1, 3], [2, 400000], []],
            "values": [[0.5, 1.0], [2.0, -1.0], []],
        }
    )
    named = pa.table(
        {
            "label": ["cat", "dog", "bird"],
            "size": [1.5, 0.5, float("nan")],
            "count": [1, 0, 3],
            "colour": ["red", None, "blue"],
            "kind": pa.array(["a", "b", "a"]).dictionary_encode(),
        }
    )
    batches: dict[str, list] = {"real": [], "binary": [], "multiclass": []}
    for table, options, kind in (
        (sparse, dict(labels="binary", weight_column="weight"), "binary"),
        (sparse, dict(labels="real"), "real"),
        (named, dict(labels="multiclass", label_names=("cat", "dog", "bird")), "multiclass"),
        (named, dict(labels="any", label_names=("cat", "dog", "bird")), None),
        (sparse, dict(labels="binary", key_column="weight"), None),
    ):
        fmt = make_format("parquet", bits=BITS, **options)
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        whole = fmt.parse(buffer.getvalue(), source="warm.parquet").batch
        # The pipeline reads a file by record batches (parse_table of a RecordBatch).
        for record_batch in table.to_batches():
            part = fmt.parse_table(record_batch, source="warm.parquet", first_row=0).batch
            if kind is not None:
                batches[kind].append(part)
        if kind is not None:
            batches[kind].append(whole)
    return batches


def _all_batches() -> dict[str, list]:
    batches = _text_formats()
    for kind, more in _parquet_batches().items():
        batches[kind].extend(more)
    return batches


def _classes(loss: str) -> dict:
    """The classes a warm-up task of ``loss`` has (three for K classes, else none to give)."""
    return {"classes": 3} if LOSS_SPECS[loss].labels == "multiclass" else {}


def _label_batches(loss: str) -> str:
    """The warm-up batches (by label kind) a loss learns from: counts from real labels (their signs do not
    matter to compiling)."""
    return {"count": "real"}.get(LOSS_SPECS[loss].labels, LOSS_SPECS[loss].labels)


def _configs(loss: str) -> list:
    """A LearnerConfig per step rule x sparsity rule (and the boolean switches) for ``loss``."""
    from polybeam.learners.config import LearnerConfig

    classes = _classes(loss)
    configs = []
    for step, sparsity in itertools.product(STEPS, SPARSITY):
        if step == "gsa" and not LOSS_SPECS[loss].greedy:
            continue
        settings = dict(loss=loss, step=step, bits=BITS, sparsity=sparsity, **classes)
        if step == "inverse":
            settings["l2"] = 1e-3
        if sparsity != "none":
            settings.update(gravity=1e-3, truncate_every=2)
        if sparsity in ("round", "subgradient"):
            settings["truncate_threshold"] = 1e-3
        configs.append(LearnerConfig(**settings))
    configs.append(LearnerConfig(loss=loss, bits=BITS, normalized=False, safe_updates=False, l2=1e-4, **classes))
    configs.append(LearnerConfig(loss=loss, bits=BITS, step="adaptive", normalized=False, passes=2, **classes))
    if loss == "logistic":
        configs.append(LearnerConfig(loss=loss, bits=BITS, gsa_exact=True, gsa_target=0.9))
    return configs


def _use_model(model, batches) -> None:
    """Predict and evaluate as the commands do, with the model as trained, pickled and read from its file."""
    from polybeam.learners.evaluation import Evaluation
    from polybeam.learners.model import Model

    for each in (model, _roundtrip(model), Model.from_bytes(model.to_bytes())):
        partials = []
        for batch in batches:
            each.predict(batch)
            partials.append(Evaluation.for_model(each).add_batch(each, batch).compact())
        if partials:
            partials[0].merge(partials[1:]).result()
        each.summary_dict(top=5)


def _train(config, batches) -> None:
    """Train as Train does: in the background, merged across 'workers', over passes; then use the model."""
    from polybeam.learners.background import BackgroundLearner
    from polybeam.learners.polynomial import make_learner

    total = sum(len(batch) for batch in batches) * config.passes
    workers = []
    for part in (batches[::2], batches[1::2]):
        background = BackgroundLearner(make_learner(config))
        for batch in part:
            background.learn(batch, total)
        workers.append(_roundtrip(background.settle().compact()))
    learner = workers[0].merge(workers[1:])
    for _ in range(1, config.passes):
        later = [_roundtrip(learner).copy().start_pass() for _ in range(2)]
        for worker, batch in zip(itertools.cycle(later), batches):
            worker.learn(batch)
        learner = later[0].merge([worker.compact() for worker in later[1:]])
    learner.predict(batches[0])
    _use_model(learner.to_model({"input_format": "warm"}), batches)


def warm_learners(batches: dict[str, list]) -> None:
    """Every loss x step rule x sparsity rule, on every format's batches of a suitable label kind; per-key
    (sparse) learners and the shared per-key model's key crossing of each loss's default."""
    from polybeam.learners.config import LearnerConfig
    from polybeam.learners.multitask import cross_batch, key_hashes
    from polybeam.learners.polynomial import make_learner

    for loss in LOSSES:
        kind = _label_batches(loss)
        for config in _configs(loss):
            _train(config, batches[kind])
        config = LearnerConfig(loss=loss, bits=BITS, **_classes(loss))
        learners = [make_learner(config, sparse=True).learn(batch) for batch in batches[kind][:2]]
        learners[0].merge(learners[1:]).to_model()
        first = batches[kind][0]
        cross_batch(first, key_hashes([str(row % 3) for row in range(len(first))]), bits=BITS)
        _warm_key_table(config, batches[kind])
        _warm_finishing(config, batches[kind])


def _warm_finishing(config, batches: list) -> None:
    """The L-BFGS finishing stage's sums (a smooth loss's), after a pass averaged from two learners."""
    from polybeam.learners import lbfgs
    from polybeam.learners.fitting import train_passes
    from polybeam.learners.loss_specs import loss_spec
    from polybeam.learners.polynomial import make_learner

    if not loss_spec(config.loss).finishing:
        return
    model = train_passes(make_learner(config), batches, 1, learners=2).to_model()
    lbfgs.finish(model, batches, 2, period=2)


def _warm_key_table(config, batches: list) -> None:
    """Keys of few rows learned as a table and scored by it (every format's slots and values)."""
    from polybeam.learners.key_scoring import ScoringTable, scorable
    from polybeam.learners.key_table import learns_as_table, train_table

    if not learns_as_table(config):
        return
    for batch in batches:
        if not len(batch):
            continue
        bounds = np.append(np.arange(0, len(batch), 2), len(batch))  # keys of two rows (the last maybe one)
        table = train_table(config, batch, bounds, list(range(len(bounds) - 1)))
        models = [model for _, model in table if scorable(model)]
        ScoringTable.from_key_table(table).margins(batch, np.arange(len(batch)) % len(table))
        if models:
            ScoringTable.from_models(config, models).margins(batch, np.zeros(len(batch), dtype=np.int64))


def warm_expansions(batches: dict[str, list]) -> None:
    """apple (each parent rule, with and without repeated factors, with truncation), quadratic and cubic."""
    from polybeam.learners.config import LearnerConfig

    apple = dict(expand="apple", expand_after=2, expansions=3, max_degree=3)
    for loss in LOSSES:
        kind = _label_batches(loss)
        classes = _classes(loss)
        configs = [
            *(
                LearnerConfig(loss=loss, bits=BITS, expand_rule=rule, **apple, **classes)
                for rule in ("weight", "fallback", "ssm")
            ),
            LearnerConfig(loss=loss, bits=BITS, repeat_factors=False, gravity=1e-3, passes=2, **apple, **classes),
            LearnerConfig(loss=loss, bits=BITS, step="adaptive", examples_per_pass=8, **apple, **classes),
            LearnerConfig(loss=loss, bits=BITS, expand="quadratic", **classes),
            LearnerConfig(loss=loss, bits=BITS, expand="cubic", repeat_factors=False, **classes),
        ]
        for config in configs:
            _train(config, batches[kind])
    # VW namespaces: only products across the named namespaces (-q / --cubic).
    vw = [batch for batch in batches["binary"] if batch.namespaces is not None]
    for expand, interactions in (("quadratic", ("ab",)), ("cubic", ("abc",)), ("quadratic", ("ab", "ac"))):
        _train(LearnerConfig(loss="logistic", bits=BITS, expand=expand, interactions=interactions), vw)


def warm_selection(batches: dict[str, list]) -> None:
    """Gram statistics (sparse and dense products), every sequencing method, anytime models, timeliness."""
    from scipy import sparse as scipy_sparse

    from polybeam.learners.batch import ExampleBatch
    from polybeam.selection.anytime import AnytimeModel, prefix_records
    from polybeam.selection.groups import GroupSpec
    from polybeam.selection.sequencing import METHODS
    from polybeam.selection.statistics import GramStatistics
    from polybeam.selection.timeliness import HeldOutCurve, oracle_curve, plateau_alpha, stopping_cost, timeliness

    rng = np.random.default_rng(0)
    features = 12
    dense = rng.normal(size=(60, features))
    dense[:, 11] = dense[:, 0] + dense[:, 1]  # a redundant feature: a group gets skipped
    dense[:, 10] = 1.0  # a constant feature
    labels = dense[:, :4] @ np.array([1.0, -0.5, 0.25, 2.0]) + 0.1 * rng.normal(size=len(dense))
    sparse = dense * (rng.random(dense.shape) < 0.3)
    spec = GroupSpec.from_json(
        {
            "groups": [
                {"name": "a", "features": ["1-2"], "cost": 1.0},
                {"name": "b", "features": [3, 4], "cost": 2.5},
                {"name": "c", "features": ["5-8"], "cost": 0.5},
                {"name": "d", "features": [9, "10-11"], "cost": 4.0},
                {"name": "e", "features": [12], "cost": 1.5},
            ]
        },
        bits=BITS,
    )
    for matrix in (dense, sparse):
        csr = scipy_sparse.csr_matrix(np.hstack([np.zeros((len(matrix), 1)), matrix]))
        batch = ExampleBatch(
            labels=labels,
            weights=np.ones(len(labels)),
            indptr=csr.indptr.astype(np.int64),
            indices=csr.indices.astype(np.int32),
            values=csr.data.astype(np.float64),
            bits=BITS,
        )
        halves = [batch.rows_between(0, 30), batch.rows_between(30, 60)]
        parts = [GramStatistics.for_columns(spec.slots, bits=BITS).add(half) for half in halves]
        statistics = _roundtrip(parts[0]).merge([_roundtrip(part) for part in parts[1:]])
        models = {}
        for method in METHODS:
            for whiten, standardize in ((None, True), (False, False)):
                records = prefix_records(
                    spec, statistics, method=method, ridge=1e-6, whiten=whiten, standardize=standardize, lasso_points=5
                )
                models[method] = AnytimeModel(records)
        for model in models.values():
            model = _roundtrip(model)
            model.predict(batch, budget=3.0)
            model.predict(batch, groups=["a", "c"])
            model.predict(batch)
            curve = HeldOutCurve.of(model.predict_prefixes(batch), batch.labels, batch.weights).merge([])
            costs, values = model.curve()
            held_out = curve.explained_variance()
            if len(costs):
                stop = stopping_cost(costs, values, alpha=plateau_alpha(costs, values))
                timeliness(costs, held_out, stop=stop)
                timeliness(*oracle_curve(costs, held_out), stop=stop)
    # A parsed file's batches, with a default group for the features no group names (--default-group).
    small = GroupSpec.from_json(
        {"groups": [{"name": "low", "features": ["1-4"], "cost": 1}, {"name": "high", "features": ["5-9"], "cost": 2}]},
        bits=BITS,
    )
    for batch in batches["real"][:2]:
        resolved = small.with_default(np.unique(batch.indices).tolist(), name="rest", cost=1.0)
        statistics = GramStatistics.for_columns(resolved.slots, bits=BITS).add(batch)
        prefix_records(resolved, statistics, method="cs-g-omp", ridge=1e-6)
        json.dumps(resolved.to_dict())


def warm_datasets(batches: dict[str, list]) -> None:
    """The bundled datasets' reader and the synthetic generators (benchmarks, tests)."""
    from polybeam.datasets import load
    from polybeam.datasets.grouped import GroupedRegression, format_libsvm
    from polybeam.datasets.synthetic import PlantedPolynomial

    load("spam")
    task = PlantedPolynomial(features=50, nonzeros=4, seed=1)
    examples = task.generate(20)
    examples.to_libsvm()
    examples.to_vw()
    examples.to_batch(BITS, monomials=task.planted.monomials[:2])
    problem = GroupedRegression(groups=4, group_size=2, informative=2, redundant=1, seed=1)
    X, y = problem.generate(10)
    format_libsvm(X, y)


def warm_pickled(batches: dict[str, list]) -> None:
    """Add the batches as the learners see them after Beam moved them (pickled)."""
    for kind in batches:
        batches[kind] = batches[kind] + [_roundtrip(batch) for batch in batches[kind]]


# Each exercise takes the parsed batches (by label kind); "pickled" first: it adds to them.
EXERCISES: dict[str, Callable[[dict], None]] = {
    "pickled": warm_pickled,
    "learners": warm_learners,
    "expansions": warm_expansions,
    "selection": warm_selection,
    "datasets": warm_datasets,
}


def warm(*, log: Callable[[str], None] | None = None) -> dict[str, float]:
    """Run every exercise (compiling each kernel, or loading it from the cache); seconds per exercise."""
    timings = {}
    started = time.perf_counter()
    batches = _all_batches()
    timings["parsing"] = time.perf_counter() - started
    if log is not None:
        log(f"polybeam.warm: parsing in {timings['parsing']:.1f} s")
    for name, exercise in EXERCISES.items():
        started = time.perf_counter()
        exercise(batches)
        timings[name] = time.perf_counter() - started
        if log is not None:
            log(f"polybeam.warm: {name} in {timings[name]:.1f} s")
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m polybeam.warm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    parser.add_argument(
        "--expect-package", metavar="DIR", help="fail unless polybeam is imported from DIR (a wheel's build tree)"
    )
    args = parser.parse_args(argv)
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr))
    import polybeam

    package = os.path.dirname(os.path.abspath(polybeam.__file__))
    if args.expect_package and package != os.path.abspath(args.expect_package):
        print(f"polybeam.warm: polybeam is imported from {package}, not {args.expect_package}", file=sys.stderr)
        return 2
    timings = warm(log=log)
    if log is not None:
        log(f"polybeam.warm: kernels ready in {sum(timings.values()):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
