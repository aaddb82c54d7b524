"""PolynomialLearner: epochs end at exact example counts, parents grow by s_k, prediction expands as training."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from scipy import sparse

from polybeam.learners import kernels
from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.expansion import Expansion, expand_all_products
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import Model
from polybeam.learners.monomials import Monomial
from polybeam.learners.polynomial import PolynomialLearner, make_learner

BITS = 14


def apple(total=None, **settings):
    return PolynomialLearner(LearnerConfig(loss="squared", bits=BITS, expand="apple", **settings), total=total)


def pairs_task(n: int, seed: int = 0, p: float = 0.5) -> ExampleBatch:
    """Six binary features; y = x1 XOR x2 (as +-1): 2 (x1 + x2 - 2 x1 x2) - 1 needs the product x1*x2.

    With ``p`` != 0.5 (the probability of x1 = 1 and of x2 = 1) x1 and x2 also
    have main effects, the signal apple's weight heuristic follows; with 0.5 they
    have none, and only luck makes them parents.
    """
    rng = np.random.default_rng(seed)
    x = rng.random((n, 6)) < np.array([p, p, 0.5, 0.5, 0.5, 0.5])
    rows = [(2.0 * float(r[0] != r[1]) - 1.0, {i + 1: 1.0 for i in np.flatnonzero(r)}) for r in x]
    return ExampleBatch.from_rows(rows, bits=BITS)


@pytest.mark.parametrize("batch_rows", [1, 7, 500, 6000])
def test_epochs_end_at_the_same_examples_whatever_the_batches(batch_rows):
    data = pairs_task(6000)
    learner = apple(total=len(data), alpha=0.5)
    for start in range(0, len(data), batch_rows):
        learner.learn(data.take(np.arange(start, min(start + batch_rows, len(data)))))
    assert [stage["examples"] for stage in learner.stages_done] == [1000, 2000, 3000, 4000, 5000]
    reference = apple(total=len(data), alpha=0.5).learn(data)
    assert learner.parents == reference.parents
    assert learner.progressive_loss == pytest.approx(reference.progressive_loss, rel=1e-9)


def test_parents_grow_by_mean_nonzeros_to_the_alpha():
    data = pairs_task(3000)
    learner = apple(total=len(data), alpha=1.0, expansions=2)
    learner.learn(data)
    mean_nonzeros = data.nnz / len(data)
    assert [stage["size"] for stage in learner.stages_done] == [round(mean_nonzeros)] * 2
    assert len(learner.parents) == sum(stage["added"] for stage in learner.stages_done)
    assert len(set(learner.parents)) == len(learner.parents)


def test_the_planted_pair_is_found_and_learned():
    data = pairs_task(20000, p=0.6)
    learner = apple(total=len(data), step="adaptive", learning_rate=0.5, alpha=0.5, repeat_factors=False)
    learner.learn(data)
    assert Monomial.of([1]) in learner.parents or Monomial.of([2]) in learner.parents
    test = pairs_task(2000, seed=1, p=0.6)
    # XOR is beyond a linear model, even with clamping (its error is measured below); not beyond apple.
    expanded_error = np.mean((np.clip(learner.linear.margins(learner.expander.expand(test)), -1, 1) - test.labels) ** 2)
    linear = LinearLearner(learner.config.replace(expand="none")).fit(data)
    linear_error = np.mean((np.clip(linear.margins(test), -1, 1) - test.labels) ** 2)
    assert linear_error > 0.9
    assert expanded_error < 0.05


def test_a_stream_expands_after_doubling_counts():
    learner = apple(expand_after=100, expansions=3)
    learner.learn(pairs_task(1000))
    assert [stage["examples"] for stage in learner.stages_done] == [100, 200, 400]


def test_a_given_example_count_spaces_the_epochs_over_all_passes():
    learner = apple(examples_per_pass=600, passes=2, alpha=0.5)
    assert learner.schedule.boundaries() == [200, 400, 600, 800, 1000]
    streaming = apple(expand_after=100, expansions=2)
    assert streaming.expect(600).schedule.boundaries() == [200, 400]  # 3 epochs of 200
    assert apple().learn(pairs_task(10)).expect(600).schedule.total is None  # too late: already learning


def test_bad_settings_fail_fast():
    with pytest.raises(ValueError, match="examples_per_pass"):
        apple(examples_per_pass=0)
    with pytest.raises(ValueError, match="alpha"):
        apple(alpha=-1.0)
    with pytest.raises(ValueError, match="expand_rule"):
        apple(expand_rule="biggest")
    with pytest.raises(ValueError, match="needs an expansion"):
        PolynomialLearner(LearnerConfig(bits=BITS))


def planted_monomial_task(n: int, noise: float, seed: int = 1):
    """Section 2.3's example: d = 100 binary features, P(x_i = 1) = 1/2, y = one hidden monomial of degree 4."""
    rng = np.random.default_rng(seed)
    hidden = Monomial.of([4, 17, 42, 88])
    x = rng.random((n, 100)) < 0.5
    labels = x[:, [f - 1 for f in hidden.factors]].all(axis=1) + noise * rng.standard_normal(n)
    matrix = sparse.csr_matrix(x.astype(float))  # column j: feature j + 1 (batch_from_arrays)
    return hidden, batch_from_arrays(matrix, labels.astype(float), bits=18)


@pytest.mark.parametrize("n, noise", [(20000, 0.0), (50000, 0.3)])
def test_apple_finds_a_planted_degree_4_monomial(n, noise):
    # The paper's argument is about sparse regression: the heaviest monomials are the hidden
    # one's largest sub-monomials. Truncated gradient makes the regression sparse; polybeam's
    # defaults (GSA steps) need no learning rate.
    hidden, data = planted_monomial_task(n, noise)
    config = LearnerConfig(loss="squared", bits=18, gravity=0.01, expand="apple", alpha=0.25, repeat_factors=False)
    learner = PolynomialLearner(config, total=n)
    learner.learn(data)
    weights = learner.linear.weights
    heaviest = int(np.argmax(np.abs(weights)))
    assert learner.monomial_of(heaviest) == hidden
    assert len(learner.stages_done) == 5
    # O(d |M|) monomials with a weight, not the d^|M| of all degree-4 products.
    assert np.count_nonzero(weights) <= 5 * 100 * 4


def test_the_model_file_records_the_expansion_and_predicts_as_training(tmp_path):
    data, test = pairs_task(6000), pairs_task(500, seed=2)
    learner = apple(total=len(data), alpha=0.5, repeat_factors=False)
    learner.learn(data)
    model = learner.to_model()
    path = str(tmp_path / "apple.model")
    model.save(path)
    loaded = Model.load(path)
    assert loaded.expansion == model.expansion and loaded.expansion.parents == tuple(learner.parents)
    expected = learner.linear.margins(learner.expander.expand(test))
    assert loaded.margins(test) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    # Products are named by their factors, with their degree.
    products = [entry for entry in loaded.top_weights(50) if entry["degree"] == 2]
    assert products and all("*" in entry["name"] for entry in products)
    assert "expansion: apple" in loaded.summary()
    # Every weighted product is named exactly as the learner traced it.
    for slot in model.monomials:
        assert Monomial.of(loaded.monomials[slot]) == learner.monomial_of(slot)
    assert loaded.monomials == model.monomials and len(model.monomials) > 0


def test_version_3_model_files_with_factors_in_the_header_still_load(tmp_path):
    import hashlib
    import json
    import struct

    from polybeam.learners.model import MAGIC

    model = apple(total=3000, alpha=0.5, repeat_factors=False).learn(pairs_task(3000)).to_model()
    header = json.dumps(
        {
            "config": model.config.to_dict(),
            "metadata": {},
            "names": {},
            "expansion": model.expansion.to_dict(),
            "monomials": {str(k): list(v) for k, v in model.monomials.items()},
            "arrays": {"slots": ["<i8", [len(model.slots)]], "weights": ["<f8", [len(model.weights)]]},
        }
    ).encode()
    body = MAGIC + struct.pack("<IQ", 3, len(header)) + header + model.slots.tobytes() + model.weights.tobytes()
    loaded = Model.from_bytes(body + hashlib.sha256(body).digest())
    assert loaded.monomials == model.monomials
    test = pairs_task(200, seed=4)
    assert loaded.margins(test) == pytest.approx(model.margins(test))


def test_quadratic_models_expand_every_pair():
    data = pairs_task(4000)
    expanded, _ = expand_all_products(data, 2, repeat_factors=False)
    linear = LinearLearner(LearnerConfig(loss="squared", bits=BITS)).fit(expanded)
    model = dataclasses.replace(linear.to_model(), expansion=Expansion("quadratic", repeat_factors=False))
    restored = Model.from_bytes(model.to_bytes())
    assert restored.margins(data) == pytest.approx(linear.margins(expanded))


def test_merging_unites_parents_keeps_traces_and_freezes():
    data = pairs_task(12000)
    halves = [data.take(np.arange(0, 6000)), data.take(np.arange(6000, 12000))]
    learners = [apple(total=6000, alpha=0.5, repeat_factors=False).learn(half) for half in halves]
    named = [
        {slot: learner.monomial_of(slot) for slot in np.flatnonzero(learner.expander.slot_trace != -1)}
        for learner in learners
    ]
    merged = learners[0].copy().merge([learners[1].copy()])
    assert set(merged.parents) == set(learners[0].parents) | set(learners[1].parents)
    for slot, monomial in {**named[1], **named[0]}.items():
        assert merged.monomial_of(slot) == monomial
    assert merged.examples_seen == 12000
    stages = len(merged.stages_done)
    merged.start_pass().learn(data)
    assert len(merged.stages_done) == stages  # frozen: no further expansion
    test = pairs_task(1000, seed=3)
    error = np.mean((np.clip(merged.to_model().margins(test), -1, 1) - test.labels) ** 2)
    assert error < 0.1


@pytest.mark.parametrize("kind", ["quadratic", "cubic"])
def test_all_products_learners_learn_xor_and_save_their_expansion(kind):
    data, test = pairs_task(6000), pairs_task(1000, seed=4)
    config = LearnerConfig(loss="squared", bits=BITS, expand=kind, repeat_factors=False)
    learner = PolynomialLearner(config).learn(data)
    assert learner.stages_done == [] and learner.parents == []
    model = Model.from_bytes(learner.to_model().to_bytes())
    assert model.expansion.kind == kind and model.config.expand == kind
    error = np.mean((np.clip(model.margins(test), -1, 1) - test.labels) ** 2)
    assert error < 0.1
    # Products are named by their traced factors, with their degree.
    top = {entry["name"]: entry["degree"] for entry in model.top_weights(3)}
    assert top.get("w1*w2") == 2, top
    if kind == "cubic":
        assert any(Monomial.of(factors).degree == 3 for factors in model.monomials.values())
    for slot, factors in model.monomials.items():
        assert Monomial.of(factors).slot(BITS) == slot  # the trace holds the product last written there


def test_products_are_unnamed_when_their_factors_do_not_fit_the_trace():
    learner = PolynomialLearner(LearnerConfig(loss="squared", bits=22, expand="cubic"))
    assert len(learner.product_trace) == 0  # 3 factors of 23 bits exceed 63
    data = pairs_task(50)
    learner.learn(dataclasses.replace(data, bits=22))
    assert len(learner.to_model().monomials) == 0


@pytest.mark.parametrize("loss", ["logistic", "hinge", "softmax"])
@pytest.mark.parametrize("step", ["gsa", "adaptive"])
def test_apple_learns_xor_with_every_loss_and_step(loss, step):
    # x1 and x2 on with probability 0.6: a main effect for apple to follow; the best linear
    # classifier errs on the (0, 0) cell (16%).
    data, test = pairs_task(20000, p=0.6), pairs_task(2000, seed=3, p=0.6)
    extra = {"classes": 2} if loss == "softmax" else {}
    if loss == "softmax":  # classes 1 / 2 instead of -1 / +1
        data, test = (dataclasses.replace(b, labels=(b.labels > 0) + 1.0) for b in (data, test))
    rate = {"learning_rate": 0.5} if step == "adaptive" else {}
    config = LearnerConfig(
        loss=loss, bits=BITS, step=step, expand="apple", alpha=0.5, repeat_factors=False, **rate, **extra
    )
    model = PolynomialLearner(config, total=len(data)).learn(data).to_model()
    linear = LinearLearner(config.replace(expand="none")).fit(data).to_model()

    def accuracy(m):
        if loss == "softmax":
            return np.mean(m.predict_classes(test) == test.labels)
        return np.mean(np.sign(m.margins(test)) == test.labels)

    assert accuracy(linear) < 0.87 and accuracy(model) > 0.97, (accuracy(linear), accuracy(model))


def test_merged_parents_do_not_depend_on_the_merge_order():
    """Parallel apple unites the workers' parents; the union is canonical, so models are byte-identical
    whatever order the runner merges partial learners in."""
    rng = np.random.default_rng(4)
    rows = [
        (float(x[0] * x[1] + x[2] * x[3]) * 2 - 1, {i + 1: 1.0 for i in np.flatnonzero(x)})
        for x in rng.random((6000, 10)) < 0.5
    ]
    batch = ExampleBatch.from_rows(rows, bits=12)
    config = LearnerConfig(loss="squared", bits=12, expand="apple", repeat_factors=False)
    parts = [batch.rows_between(i * 2000, (i + 1) * 2000) for i in range(3)]

    def merged(order):
        learners = [make_learner(config, total=2000).learn(parts[i]) for i in order]
        return learners[0].merge(learners[1:]).to_model()

    first, second = merged([0, 1, 2]), merged([2, 0, 1])
    assert first.expansion.parents == second.expansion.parents
    assert len(set(first.expansion.parents)) == len(first.expansion.parents) > 0
    assert np.array_equal(first.slots, second.slots) and np.allclose(first.weights, second.weights)
    assert dict(first.monomials) == dict(second.monomials)


@pytest.mark.parametrize("bits", [4, BITS])
def test_pickled_state_continues_exactly_whether_saved_dense_or_sparse(bits):
    def task(n, seed):  # features 1..6 fit every table
        return dataclasses.replace(pairs_task(n, seed=seed, p=0.6), bits=bits)

    config = LearnerConfig(loss="squared", bits=bits, expand="apple", alpha=0.5, expand_after=200, expansions=3)
    learner = PolynomialLearner(config).learn(task(1500, 0))
    state = learner.__getstate__()
    # A 16-slot table is mostly touched: kept whole; a 2^14 one is not: kept as its touched slots.
    assert (state["linear"]["slots"] is None) == (bits == 4)
    clone = pickle.loads(pickle.dumps(learner))
    assert clone.parents == learner.parents
    np.testing.assert_array_equal(clone.expander.slot_trace, learner.expander.slot_trace)
    np.testing.assert_array_equal(clone.base_slots, learner.base_slots)
    more = task(700, 1)
    np.testing.assert_array_equal(clone.learn(more).linear.weights, learner.learn(more).linear.weights)
    assert clone.progressive_loss == learner.progressive_loss


def test_an_epoch_ending_with_the_data_adds_no_parents_that_could_not_be_learned():
    data = pairs_task(1001, p=0.6)
    ends_on_a_boundary = apple(expand_after=250, expansions=3).learn(data.take(np.arange(1000)))
    # Epochs end after 250, 500 and 1000 examples; the last one ends with the data.
    assert [stage["examples"] for stage in ends_on_a_boundary.stages_done] == [250, 500]
    assert ends_on_a_boundary.grow_pending
    assert ends_on_a_boundary.to_model().expansion.parents == tuple(ends_on_a_boundary.parents)
    # One more example and the growth happens, from the state the boundary left: as in one run.
    continued = pickle.loads(pickle.dumps(ends_on_a_boundary)).learn(data.take(np.arange(1000, 1001)))
    whole = apple(expand_after=250, expansions=3).learn(data)
    assert [stage["examples"] for stage in continued.stages_done] == [250, 500, 1000]
    assert continued.parents == whole.parents
    np.testing.assert_array_equal(continued.linear.weights, whole.linear.weights)


def test_gsa_mean_step_restarts_at_each_expansion():
    # A greedy step is about 1 / (x . x); after an expansion x . x grows with the products,
    # so GSA's mean counts only the greedy steps since the last expansion. Squared loss:
    # every example with features adds one greedy step of weight 1.
    hidden, data = planted_monomial_task(1200, 0.1)
    config = LearnerConfig(loss="squared", bits=18, step="gsa", expand="apple", alpha=0.5, repeat_factors=False)
    learner = PolynomialLearner(config, total=1200).learn(data)
    assert [stage["examples"] for stage in learner.stages_done] == [200, 400, 600, 800, 1000]
    assert learner.linear.stats_[kernels.GREEDY_WEIGHT] == 200
    after_expansions = learner.linear.greedy_step
    linear = LinearLearner(config.replace(expand="none")).learn(data).greedy_step
    assert after_expansions < linear  # the products' larger x . x: smaller greedy steps
    # Merging counts each learner's steps since its restart once.
    other = PolynomialLearner(config, total=1200).learn(data)
    learner.merge([other])
    assert learner.linear.stats_[kernels.GREEDY_WEIGHT] == 400


# -- apple's guard: the same learner without products, on the same examples ---------------------


def test_apple_keeps_its_products_where_they_predict_better():
    learner = make_learner(LearnerConfig(loss="logistic", bits=BITS, expand="apple"), total=4000)
    model = learner.learn(pairs_task(4000)).to_model()
    guard = model.metadata["apple_guard"]
    # Measured: progressive loss 0.23 with the products, 0.70 without (XOR needs x1*x2).
    assert guard["products_kept"] and guard["progressive_loss"] < 0.5 < guard["linear_progressive_loss"]
    assert model.expansion.parents and model.monomials


def test_apple_gives_its_linear_model_where_the_products_did_not_pay(tmp_path):
    from tests.learners.test_state_file import linear_batch

    config = LearnerConfig(loss="logistic", bits=12, expand="apple")
    learner = make_learner(config, total=600).learn(linear_batch(600))
    model = learner.to_model()
    guard = model.metadata["apple_guard"]
    # Measured on 600 examples of a linear task: 1.07 with products (they diverge), 0.38 without.
    assert not guard["products_kept"] and guard["linear_progressive_loss"] < guard["progressive_loss"]
    assert model.expansion.kind == "apple" and model.expansion.parents == () and not model.monomials
    linear = learner.shadow.to_model()
    np.testing.assert_array_equal(model.dense_weights, linear.dense_weights)
    test = linear_batch(200, seed=9)
    again = Model.from_bytes(model.to_bytes())
    np.testing.assert_allclose(again.margins(test), linear.margins(test), rtol=1e-12)
    assert model.config == config  # still an apple model: a warm start may go on growing it


def test_the_guard_is_merged_saved_and_dropped_by_a_warm_start_from_a_model():
    from polybeam.learners.warm_start import learner_from_model

    config = LearnerConfig(loss="logistic", bits=BITS, expand="apple")
    first = make_learner(config, total=2000).learn(pairs_task(2000, seed=1))
    second = make_learner(config, total=2000).learn(pairs_task(2000, seed=2))
    shadows = first.shadow.copy().merge([second.shadow.copy()])
    merged = first.copy().merge([second.copy()])
    np.testing.assert_array_equal(merged.shadow.weights, shadows.weights)
    assert merged.products_paid()
    restored = PolynomialLearner.__new__(PolynomialLearner)
    restored.__setstate__(pickle.loads(pickle.dumps(merged.__getstate__())))
    np.testing.assert_array_equal(restored.shadow.weights, merged.shadow.weights)
    warm = learner_from_model(merged.to_model(), config)
    assert warm.shadow is None and warm.products_paid()


def test_inspect_says_what_the_guard_kept():
    from tests.learners.test_state_file import linear_batch

    learner = make_learner(LearnerConfig(loss="logistic", bits=12, expand="apple"), total=600).learn(linear_batch(600))
    summary = learner.to_model().summary()
    assert "apple guard: kept the linear model (apple's products did not pay)" in summary
    assert learner.to_model().summary_dict()["apple_guard"]["products_kept"] is False
