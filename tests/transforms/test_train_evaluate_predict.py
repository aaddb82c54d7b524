import pickle

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from polybeam import datasets
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.holdout import training_count
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import ModelFileError
from polybeam.transforms.evaluate import Evaluate
from polybeam.transforms.model_io import ReadModel, WriteModel, read_model, write_model
from polybeam.transforms.predict import PREDICTION_HEADER, Predict, ScoredBatch, WritePredictions
from polybeam.transforms.train import MergeLearnersFn, Train, TrainFn

RUNNER = "FnApiRunner"


@pytest.fixture(scope="module")
def spam():
    """Bundled spam in 23 batches of 200 examples (as readers would emit them)."""
    batch = datasets.load("spam")
    return [batch.take(np.arange(start, min(start + 200, len(batch)))) for start in range(0, len(batch), 200)]


_COLLECTED: list = []


def _collect(element):
    # Module-level, so the pickled DoFn refers to this very list; the
    # FnApiRunner runs bundles in this process.
    _COLLECTED.append(element)


def run_collect(build):
    """Run a pipeline and return the elements of the PCollection ``build(p)`` returns."""
    _COLLECTED.clear()
    with beam.Pipeline(runner=RUNNER) as p:
        build(p) | beam.Map(_collect)
    found = list(_COLLECTED)
    _COLLECTED.clear()
    return found


def test_train_fn_follows_the_lifted_combine_protocol(spam):
    config = LearnerConfig(loss="logistic")
    fn = TrainFn(config)
    # Two bundles learn into partial accumulators, which are compacted and
    # shipped (pickled) before the merge, as a lifted combine does.
    partials = []
    for bundle in (spam[:10], spam[10:]):
        accumulator = fn.create_accumulator()
        for batch in bundle:
            accumulator = fn.add_input(accumulator, batch)
        partials.append(pickle.loads(pickle.dumps(fn.compact(accumulator))))
    model = fn.extract_output(fn.merge_accumulators(iter(partials)))

    a = LinearLearner(config).fit(spam[:10])
    b = LinearLearner(config).fit(spam[10:])
    expected = a.merge([b]).to_model()
    np.testing.assert_allclose(model.dense_weights, expected.dense_weights, rtol=1e-12)
    assert model.metadata["examples"] == 4601


def test_merge_learners_fn_with_no_input_gives_an_untrained_model():
    fn = MergeLearnersFn(LearnerConfig())
    model = fn.extract_output(fn.create_accumulator())
    assert model.nonzero == 0


@pytest.mark.parametrize("step", ["adaptive", "gsa"])
def test_train_pipeline_learns_spam(spam, step):
    (model,) = run_collect(lambda p: p | beam.Create(spam) | Train(loss="logistic", step=step))
    assert model.metadata["examples"] == 4601
    assert 0 < model.metadata["progressive_loss"] < 0.4
    metrics = Evaluation.of(model, spam).result()
    # Measured: adaptive 0.09, GSA 0.14 (its last iterate still moves with a non-vanishing step).
    assert metrics["error"] < 0.15 and metrics["auc"] > 0.93


@pytest.mark.slow
def test_multiple_passes_average_and_record_each_pass(spam):
    release = Train(loss="logistic", passes=3, small_holdout="release")
    (model,) = run_collect(lambda p: p | beam.Create(spam) | release)
    passes = model.metadata["passes"]
    # Pass 1 holds one in ten out; too few to judge passes by, so (released) passes 2 and 3 learn every example.
    learned = sum(training_count(batch, LearnerConfig(passes=3)) for batch in spam)
    assert [p["examples"] for p in passes] == [learned, 4601, 4601] and 4000 < learned < 4300
    assert passes[-1]["loss"] < passes[0]["loss"]


@pytest.mark.slow
def test_apple_over_several_passes_spaces_its_epochs_over_the_counted_examples(spam):
    apple = Train(loss="squared", passes=2, expand="apple", alpha=0.5, small_holdout="release")
    (model,) = run_collect(lambda p: p | beam.Create(spam) | apple)
    # The examples learned (all but the held-out tenth) x 2 passes in 6 equal epochs, whatever the batches
    # (one bundle on this runner; the holdout released, as too small to judge by).
    total = 2 * sum(training_count(batch, LearnerConfig(passes=2)) for batch in spam)
    assert [stage["examples"] for stage in model.metadata["stages"]] == [total * k // 6 for k in range(1, 6)]
    assert len(model.expansion.parents) == sum(stage["added"] for stage in model.metadata["stages"])


def test_per_key_apple_counts_each_keys_examples(spam):
    def half(batch):
        return np.arange(len(batch)) % 2 == 0

    # No holdout: a key whose best pass was the first would end with the first pass's stages only.
    models = dict(
        run_collect(
            lambda p: (
                p | beam.Create(spam) | Train(loss="squared", passes=2, expand="apple", key=half, holdout_period=0)
            )
        )
    )
    for model in models.values():
        total = 2 * model.metadata["passes"][0]["examples"]
        assert [stage["examples"] for stage in model.metadata["stages"]] == [total * k // 6 for k in range(1, 6)]


def test_per_key_training_gives_one_model_per_key(spam):
    def parity(batch):  # key each example by whether feature 1 is present
        return np.array([1 in batch.row(i)[0] for i in range(len(batch))])

    models = dict(run_collect(lambda p: p | beam.Create(spam) | Train(loss="logistic", key=parity)))
    assert set(models) == {False, True}
    total = sum(model.metadata["examples"] for model in models.values())
    assert total == 4601
    with_feature = sum(int(parity(b).sum()) for b in spam)
    assert models[True].metadata["examples"] == with_feature


def test_evaluate_pipeline_matches_in_memory_evaluation(spam):
    model = LinearLearner(LearnerConfig(loss="logistic")).fit(spam[:15]).to_model()
    (metrics,) = run_collect(lambda p: p | beam.Create(spam[15:]) | Evaluate(model))
    expected = Evaluation.of(model, spam[15:]).result()
    assert metrics["examples"] == expected["examples"] == sum(len(b) for b in spam[15:])
    for key in ("loss", "error", "auc", "mse"):
        assert metrics[key] == pytest.approx(expected[key], rel=1e-12)


def test_evaluate_reports_mse_as_error_for_regression():
    batch = ExampleBatch.from_rows([(2.5, {1: 1.0}), (0.5, {2: 1.0}), (1.5, {1: 1.0, 2: 1.0})] * 30)
    model = LinearLearner(LearnerConfig(loss="squared")).fit(batch).to_model()
    metrics = Evaluation.of(model, [batch]).result()
    assert metrics["auc"] is None
    assert metrics["error"] == metrics["mse"] < 0.05


def test_auc_is_exact_with_ties_and_weights():
    evaluation = Evaluation("logistic")
    evaluation.add(np.array([1, -1, 1, -1, 1.0]), np.array([0.3, 0.3, 0.9, -2.0, -3.0]), np.array([1, 1, 2, 1, 1.0]))
    # Pairs (weight): pos 0.3 vs neg 0.3 tie -> 0.5; pos 0.3 > neg -2 -> 1; pos 0.9 (w2) beats both -> 2 + 2;
    # pos -3 loses both -> 0. Total 5.5 of 4 * 2 = 8.
    assert evaluation.auc() == pytest.approx(5.5 / 8)


def test_evaluation_merge_equals_one_pass_even_with_many_pending_scores():
    rng = np.random.default_rng(0)
    labels = rng.choice([-1.0, 1.0], size=200_000)
    margins = labels * 0.5 + rng.normal(size=200_000)
    whole = Evaluation("logistic").add(labels, margins)
    parts = [Evaluation("logistic").add(labels[i::7], margins[i::7]) for i in range(7)]
    merged = parts[0].merge(parts[1:])
    assert merged.result() == pytest.approx(whole.result())


def test_predict_and_write_predictions(tmp_path, spam):
    model = LinearLearner(LearnerConfig(loss="logistic")).fit(spam).to_model()
    prefix = str(tmp_path / "predictions")
    with beam.Pipeline(runner=RUNNER) as p:
        scored = p | beam.Create(spam[:3]) | Predict(model)
        scored | WritePredictions(prefix, num_shards=1)
        assert_that(scored | beam.Map(lambda s: len(s.predictions)), equal_to([200, 200, 200]))
    (path,) = tmp_path.glob("predictions*")
    lines = path.read_text().splitlines()
    assert lines[0] == PREDICTION_HEADER
    assert len(lines) == 601
    probabilities = np.array([float(line.split("\t")[0]) for line in lines[1:]])
    assert np.all((probabilities >= 0) & (probabilities <= 1))


def test_scored_batch_text_has_one_line_per_example():
    scored = ScoredBatch(
        np.array([0.25, 1.0]), np.array([1.0, -1.0]), "f.txt", np.array([0, 17]), np.array(["a", None], dtype=object)
    )
    assert scored.to_text() == "0.25\t1\tf.txt\t0\ta\n1\t-1\tf.txt\t17\t"


def test_scored_batches_of_a_kind_write_their_columns_and_empty_missing_labels():
    probabilities = ScoredBatch(
        np.array([[0.25, 0.75]]), np.array([np.nan]), "f", np.array([3]), None, kind="probability"
    )
    assert probabilities.to_text() == "0.25\t0.75\t\tf\t3\t"
    labels = ScoredBatch(np.array(["no", "y\tes"], dtype=object), np.array([0.0, np.nan]), "f", np.array([0, 9]), None)
    assert labels.to_text() == "no\t0\tf\t0\t\ny es\t\tf\t9\t"


@pytest.mark.slow
def test_write_predictions_publishes_one_file_named_as_asked_or_shards_after_its_inputs(tmp_path, spam):
    model = LinearLearner(LearnerConfig(loss="logistic")).fit(spam[:3]).to_model()
    with beam.Pipeline(runner=RUNNER) as p:
        scored = p | beam.Create(spam[:3]) | Predict(model, predictions="score")
        done = p | "Done" >> beam.Create([1])
        one = scored | "One" >> WritePredictions(str(tmp_path / "one.tsv"), after=(done,))
        shards = scored | "Shards" >> WritePredictions(str(tmp_path / "sh"), num_shards=2)
        assert_that(one, equal_to([str(tmp_path / "one.tsv")]), label="OneName")
        assert_that(shards, equal_to([str(tmp_path / f"sh-0000{i}-of-00002") for i in range(2)]), label="Names")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["one.tsv", "sh-00000-of-00002", "sh-00001-of-00002"]
    header, *lines = (tmp_path / "one.tsv").read_text().splitlines()
    assert header == PREDICTION_HEADER and len(lines) == 600
    written = sorted(float(line.split("\t")[0]) for line in lines)
    margins = np.sort(np.concatenate([model.margins(batch) for batch in spam[:3]]))
    np.testing.assert_allclose(written, margins, rtol=1e-8)  # (written with 9 significant digits)


def test_a_retried_publish_finds_its_files_published(tmp_path):
    from polybeam.transforms.predict import _publish

    staging = tmp_path / "p.polybeam-tmp-x"
    staging.mkdir()
    (staging / "part").write_text("h\n1\n")
    for _ in range(2):  # (a runner may run the step again)
        assert _publish([str(staging / "part")], str(staging), str(tmp_path / "p"), True) == [str(tmp_path / "p")]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p"] and (tmp_path / "p").read_text() == "h\n1\n"


def test_model_files_round_trip_and_bad_files_are_refused(tmp_path, spam):
    model = LinearLearner(LearnerConfig(loss="logistic")).fit(spam[:2]).to_model()
    path = str(tmp_path / "m.model")
    write_model(model, path)
    assert read_model(path).nonzero == model.nonzero

    data = (tmp_path / "m.model").read_bytes()
    (tmp_path / "short.model").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated"):
        read_model(str(tmp_path / "short.model"))
    flipped = bytearray(data)
    flipped[-40] ^= 0xFF
    (tmp_path / "flipped.model").write_bytes(bytes(flipped))
    with pytest.raises(ModelFileError, match="checksum"):
        read_model(str(tmp_path / "flipped.model"))
    newer = bytearray(data)
    newer[15] = 99  # the format version follows the signature
    (tmp_path / "newer.model").write_bytes(bytes(newer))
    with pytest.raises(ModelFileError, match="newer than this polybeam"):
        read_model(str(tmp_path / "newer.model"))
    (tmp_path / "text.model").write_text("hello")
    with pytest.raises(ModelFileError, match="not a polybeam model file"):
        read_model(str(tmp_path / "text.model"))
    with pytest.raises(ModelFileError, match="cannot read"):
        read_model(str(tmp_path / "missing.model"))


@pytest.mark.slow
def test_write_and_read_model_inside_pipelines(tmp_path, spam):
    path = str(tmp_path / "pipeline.model")
    with beam.Pipeline(runner=RUNNER) as p:
        p | beam.Create(spam) | Train(loss="logistic", step="adaptive") | WriteModel(path)
    (metrics,) = run_collect(lambda p: p | beam.Create(spam) | Evaluate(p | ReadModel(path)))
    assert metrics["error"] < 0.1


def test_per_key_predict_and_evaluate_use_each_keys_model(spam):
    def by_capitals(batch):  # key each example by whether its longest capital run (feature 56) is long
        dense = batch.to_csr()[:, 56].toarray().ravel()
        return np.where(dense > 10, "long", "short")

    def build(p):
        batches = p | beam.Create(spam)
        models = batches | "Train" >> Train(loss="logistic", key=by_capitals)
        metrics = batches | "Evaluate" >> Evaluate(models, key=by_capitals)
        scored = batches | "Predict" >> Predict(models, key=by_capitals)
        counts = (
            scored | "Sizes" >> beam.Map(lambda s: (s.key, len(s.predictions))) | "Count" >> beam.CombinePerKey(sum)
        )
        tagged = (
            metrics | "TagMetrics" >> beam.Map(lambda kv: ("metrics", kv)),
            counts | "TagCounts" >> beam.Map(lambda kv: ("count", kv)),
        )
        return tagged | beam.Flatten()

    found = run_collect(build)
    metrics = dict(kv for kind, kv in found if kind == "metrics")
    counts = dict(kv for kind, kv in found if kind == "count")
    expected = {key: 0 for key in ("long", "short")}
    for batch in spam:
        for key in by_capitals(batch):
            expected[key] += 1
    assert counts == expected
    assert {key: m["examples"] for key, m in metrics.items()} == expected
    assert all(m["error"] < 0.2 for m in metrics.values())


@pytest.mark.slow
def test_training_across_worker_processes_matches_the_task(tmp_path, spam):
    # Two SDK worker processes: learners are pickled between processes, bundles
    # learn separately and are averaged.
    from apache_beam.options.pipeline_options import PipelineOptions

    path = str(tmp_path / "multi.model")
    options = PipelineOptions(runner=RUNNER, direct_num_workers=2, direct_running_mode="multi_processing")
    with beam.Pipeline(options=options) as p:
        p | beam.Create(spam) | Train(loss="logistic", passes=2) | WriteModel(path)
    model = read_model(path)
    # Too few held out to judge by: the first pass's record says so, and the input, gathered from both
    # processes, has its passes chosen by cross-validation over every example and learned again.
    chosen = model.metadata["holdout"]["cross_validation"]
    assert chosen["examples"] == 4601 and [entry["examples"] for entry in model.metadata["passes"]][:1] == [4601]
    assert Evaluation.of(model, spam).result()["error"] < 0.12
