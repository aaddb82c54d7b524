"""Holdout and early stopping (polybeam.learners.holdout): which examples are held out, how a pass is
judged, and that a learner ends exactly as its best pass left it."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import (
    HoldoutScore,
    PassSelection,
    holdout_progress_line,
    holdout_rows,
    record_pass,
    score_holdout,
    split_holdout,
    training_count,
)
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import holdout_line
from polybeam.learners.polynomial import PolynomialLearner, make_learner
from polybeam.learners.state_file import learner_from_bytes, learner_to_bytes
from polybeam.learners.warm_start import initial_learner, learner_from_model

BITS = 12


def noisy_logistic(seed: int, n: int = 400) -> ExampleBatch:
    """Five informative features among 20 random sparse ones per example, with label noise: more passes
    at a high rate overfit the sparse ones, so the holdout loss falls, then rises."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        features = {int(f): 1.0 for f in rng.choice(np.arange(10, 2000), size=20, replace=False)}
        for j in range(1, 6):
            features[j] = float(rng.normal())
        margin = sum(features[j] for j in range(1, 6))
        rows.append((1.0 if margin + 0.8 * rng.normal() > 0 else -1.0, features))
    # Rows as a reader numbers them, so that any split into batches holds out the same examples.
    batch = ExampleBatch.from_rows(rows, bits=BITS)
    return dataclasses.replace(batch, row_ids=np.arange(n, dtype=np.int64) * 100, source="noisy.libsvm")


def xor_task(seed: int, n: int = 3000) -> ExampleBatch:
    """The label is the product of two +-1 features: no linear model predicts it, apple's x1 * x2 does."""
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(n, 4))
    rows = [(a * b if rng.random() < 0.95 else -a * b, {1: a, 2: b, 3: c, 4: d}) for a, b, c, d in signs]
    return ExampleBatch.from_rows(rows, bits=BITS)


# -- which examples are held out ---------------------------------------------------------------------


def with_positions(n: int, row_ids, source: str | None) -> ExampleBatch:
    batch = ExampleBatch.from_rows([(0.0, {1: 1.0})] * n, bits=BITS)
    return ExampleBatch(
        batch.labels,
        batch.weights,
        batch.indptr,
        batch.indices,
        batch.values,
        bits=BITS,
        row_ids=np.asarray(row_ids, dtype=np.int64),
        source=source,
    )


@given(
    positions=st.lists(st.integers(0, 2**62), min_size=1, max_size=200, unique=True),
    cut=st.integers(0, 200),
    period=st.integers(2, 40),
    source=st.sampled_from([None, "a.libsvm", "gs://bucket/b.csv"]),
)
def test_an_example_is_held_out_or_not_whatever_batch_it_is_read_in(positions, cut, period, source):
    batch = with_positions(len(positions), positions, source)
    cut = min(cut, len(batch))
    whole = holdout_rows(batch, period)
    parts = np.concatenate(
        [holdout_rows(batch.rows_between(0, cut), period), holdout_rows(batch.rows_between(cut, len(batch)), period)]
    )
    assert (whole == parts).all()
    order = np.random.default_rng(len(positions)).permutation(len(batch))
    assert (holdout_rows(batch.take(order), period) == whole[order]).all()


@pytest.mark.parametrize("period", [2, 3, 10, 37])
def test_one_example_in_period_is_held_out(period):
    # Byte offsets of lines of similar length are far from uniform modulo small numbers: the hash is.
    for positions in (np.arange(50_000) * 40, np.arange(50_000)):
        held = holdout_rows(with_positions(len(positions), positions, "f.libsvm"), period)
        share, expected = held.mean(), 1.0 / period
        assert abs(share - expected) < 4 * math.sqrt(expected * (1 - expected) / len(positions))


def test_the_holdout_depends_on_the_file_and_the_seed_but_not_on_the_pass():
    batch = with_positions(2000, np.arange(2000) * 17, "a.libsvm")
    other = with_positions(2000, np.arange(2000) * 17, "b.libsvm")
    assert (holdout_rows(batch, 10) != holdout_rows(other, 10)).any()
    assert (holdout_rows(batch, 10, seed=1) != holdout_rows(batch, 10)).any()
    assert (holdout_rows(batch, 10) == holdout_rows(batch, 10)).all()


def test_one_pass_or_no_period_holds_nothing_out():
    batch = noisy_logistic(0, 100)
    for config in (
        LearnerConfig(loss="logistic", bits=BITS),
        LearnerConfig(loss="logistic", bits=BITS, passes=3, holdout_period=0),
    ):
        assert split_holdout(batch, config) == (batch, None)
        assert training_count(batch, config) == len(batch)
    config = LearnerConfig(loss="logistic", bits=BITS, passes=3, holdout_min_examples=0)
    learned, held = split_holdout(batch, config)
    assert len(learned) + len(held) == len(batch) == training_count(batch, config) + len(held)


# -- judging passes ------------------------------------------------------------------------------------


def reference_selection(losses, patience):
    """The plain rule: the best is the first lowest loss so far; stop once patience passes followed it."""
    best, best_loss = 0, math.inf
    for number, loss in enumerate(losses, 1):
        if loss < best_loss:
            best, best_loss = number, loss
        elif number - best >= patience:
            return best, number
    return best, None


@given(losses=st.lists(st.floats(0.0, 5.0), min_size=1, max_size=30), patience=st.integers(1, 5))
def test_pass_selection_follows_the_plain_rule(losses, patience):
    selection = PassSelection(patience)
    for number, loss in enumerate(losses, 1):
        selection.record(number, HoldoutScore(("linear",), np.array([loss * 4.0]), 4.0, 4))
        if selection.stopped:
            break
    best, stopped_at = reference_selection(losses, patience)
    assert selection.best_pass == best
    assert selection.stopped == (stopped_at is not None)
    assert selection.last_pass == (stopped_at or len(losses))


def test_a_pass_without_held_out_examples_counts_as_the_best():
    selection = PassSelection(1)
    selection.record(1, HoldoutScore(("linear",), np.array([2.0]), 4.0, 4))
    selection.record(2, HoldoutScore())
    assert selection.best_pass == 2 and not selection.stopped


def test_apple_wins_ties_and_the_lower_candidate_is_kept():
    selection = PassSelection(3)
    selection.record(1, HoldoutScore(("apple", "linear"), np.array([2.0, 2.0]), 4.0, 4))
    assert selection.best_kept == "apple"
    selection.record(2, HoldoutScore(("apple", "linear"), np.array([1.9, 1.0]), 4.0, 4))
    assert selection.best_kept == "linear" and selection.best_loss == 0.25


# -- fit: the best pass, exactly ------------------------------------------------------------------------


def test_fit_stops_early_and_ends_exactly_as_the_best_pass_left_it():
    batch = noisy_logistic(2)
    config = LearnerConfig(
        loss="logistic", bits=BITS, passes=12, holdout_min_examples=0, learning_rate=1.0, pass_schedule="constant"
    )
    learner = LinearLearner(config).fit(batch)
    selection = learner.selection_
    losses = [entry["holdout_loss"] for entry in selection.history]
    assert selection.stopped and 1 < selection.best_pass < len(losses) < 12
    assert len(losses) == selection.best_pass + config.early_terminate
    assert losses[selection.best_pass - 1] == min(losses)
    # The same learner, run by hand for the best pass's number of passes on the same examples.
    learned, held = split_holdout(batch, config)
    by_hand = LinearLearner(config)
    for number in range(selection.best_pass):
        if number:
            by_hand.start_pass()
        by_hand.learn(learned)
    np.testing.assert_array_equal(learner.weights, by_hand.weights)
    assert learner.to_model().metadata["passes"] == by_hand.to_model().metadata["passes"]
    assert score_holdout(by_hand, [batch]).means()["linear"] == pytest.approx(min(losses), rel=1e-12)
    holdout = learner.to_model().metadata["holdout"]
    assert holdout["best_pass"] == selection.best_pass and holdout["stopped_after"] == len(losses)
    assert [entry["holdout_loss"] for entry in holdout["passes"]] == losses


def test_held_out_examples_are_never_learned():
    # A task where every pass improves: with the holdout, the learner is the one that learned only
    # the other examples, pass after pass.
    batch = noisy_logistic(1)
    config = LearnerConfig(loss="logistic", bits=BITS, passes=4, holdout_min_examples=0, learning_rate=0.1)
    learner = LinearLearner(config).fit(batch)
    assert learner.selection_.best_pass == 4
    learned, _ = split_holdout(batch, config)
    plain = LinearLearner(config.replace(holdout_period=0)).fit(learned)
    np.testing.assert_array_equal(learner.weights, plain.weights)
    assert [p["examples"] for p in learner.to_model().metadata["passes"]] == [len(learned)] * 4


def test_a_later_pass_is_kept_when_the_last_is_worse_without_stopping():
    batch = noisy_logistic(2)
    config = LearnerConfig(
        loss="logistic", bits=BITS, passes=6, holdout_min_examples=0, learning_rate=1.0, early_terminate=5
    )
    # (centred throughout, as these passes were measured: centring's guard would go on uncentred here)
    learner = LinearLearner(config, centring_guard=False).fit(batch)
    selection = learner.selection_
    assert not selection.stopped and selection.best_pass == 4 and selection.last_pass == 6
    assert len(learner.passes_) + 1 == 4  # the learner is pass 4's


def test_the_record_and_its_snapshot_survive_a_state_file():
    batch = noisy_logistic(2)
    config = LearnerConfig(
        loss="logistic", bits=BITS, passes=12, holdout_min_examples=0, learning_rate=1.0, pass_schedule="constant"
    )
    learned, _ = split_holdout(batch, config)
    learner = LinearLearner(config, centring_guard=False)  # (as above)
    for number in range(1, 6):  # five passes, then saved: pass 4 is the best and its snapshot is kept
        if number > 1:
            learner.start_pass()
        learner.learn(learned)
        record_pass(learner, score_holdout(learner, [batch]), number)
    assert learner.selection_.best_pass == 4 and learner.selection_.snapshot is not None
    again = learner_from_bytes(learner_to_bytes(learner))
    assert again.selection_.history == learner.selection_.history
    for resumed in (learner, again):
        for number in (6, 7):
            resumed.start_pass()
            resumed.learn(learned)
            record_pass(resumed, score_holdout(resumed, [batch]), number)
    assert again.selection_.stopped and again.selection_.best_pass == 4
    np.testing.assert_array_equal(again.weights, learner.weights)
    np.testing.assert_array_equal(again.weights, LinearLearner(config, centring_guard=False).fit(batch).weights)


# -- the restart schedule: a lower rate from the beginning -------------------------------------------------


def restarting_config(**settings) -> LearnerConfig:
    return LearnerConfig(loss="logistic", bits=BITS, passes=20, holdout_min_examples=0, learning_rate=4.0, **settings)


def test_restarts_learn_from_the_beginning_at_half_the_rate_and_keep_the_best_pass_of_all():
    batch = noisy_logistic(2)
    config = restarting_config()
    learner = LinearLearner(config).fit(batch)
    history = learner.selection_.history
    rates = [entry["rate"] for entry in history]
    assert learner.selection_.restarts >= 2 and rates[0] == 4.0 and min(rates) <= 1.0
    # Each run at one rate ends after early_terminate passes without a better loss than the run's best.
    runs = [[entry for entry in history if entry["rate"] == rate] for rate in sorted(set(rates), reverse=True)]
    for run in runs[:-1]:
        losses = [entry["holdout_loss"] for entry in run]
        assert len(losses) - 1 - int(np.argmin(losses)) == config.early_terminate
        assert run[-1]["restart_rate"] == run[0]["rate"] / 2
    best = learner.selection_.best_pass
    assert history[best - 1]["holdout_loss"] == min(entry["holdout_loss"] for entry in history)
    # The learner is exactly a fresh learner at the best pass's rate, run for its place in its run.
    best_rate = history[best - 1]["rate"]
    place = sum(1 for entry in history[:best] if entry["rate"] == best_rate)
    learned, _ = split_holdout(batch, config)
    by_hand = LinearLearner(config.replace(learning_rate=best_rate))
    for number in range(place):
        if number:
            by_hand.start_pass()
        by_hand.learn(learned)
    np.testing.assert_array_equal(learner.weights, by_hand.weights)
    assert learner.config.learning_rate == best_rate
    # More passes at a lower rate beat the one rate's best pass on the holdout.
    constant = LinearLearner(config.replace(pass_schedule="constant")).fit(batch)
    assert learner.selection_.best_loss < constant.selection_.best_loss
    line = holdout_line(learner.to_model().metadata["holdout"])
    assert "started again at rate 2 after pass" in line


def judged_pass(learner, learned, batch, number: int, *, final: bool = False) -> None:
    """Pass ``number`` by hand, as ``fit`` runs it: learn ``learned`` (after closing the pass before, unless
    the learner starts afresh), then record its holdout score on ``batch``'s held-out examples."""
    if learner.examples_seen:
        learner.start_pass()
    learner.learn(learned)
    record_pass(learner, score_holdout(learner, [batch]), number, final=final)


def learned_until_restarts(config: LearnerConfig, batch, restarts: int) -> tuple[LinearLearner, int]:
    """A learner after the pass that restarted it the ``restarts``-th time, and that pass's number."""
    learned, _ = split_holdout(batch, config)
    learner, number = LinearLearner(config), 0
    while learner.selection_.restarts < restarts:
        number += 1
        judged_pass(learner, learned, batch, number)
    return learner, number


def test_a_restart_survives_a_state_file_and_goes_on_at_its_rate():
    batch = noisy_logistic(2)
    config = restarting_config()
    learned, _ = split_holdout(batch, config)
    learner, number = learned_until_restarts(config, batch, 1)
    assert learner.examples_seen == 0 and learner.config.learning_rate == 2.0
    again = learner_from_bytes(learner_to_bytes(learner))
    assert again.config.learning_rate == 2.0 and again.selection_.restarts == 1
    for resumed in (learner, again):
        for later in range(number + 1, 21):
            judged_pass(resumed, learned, batch, later, final=later == 20)
            if resumed.selection_.stopped:
                break
    assert again.selection_.history == learner.selection_.history
    np.testing.assert_array_equal(again.weights, learner.weights)
    np.testing.assert_array_equal(learner.weights, LinearLearner(config).fit(batch).weights)


def test_a_job_resumed_after_a_restart_goes_on_at_the_restarted_rate():
    config = restarting_config()
    learner, _ = learned_until_restarts(config, noisy_logistic(2), 2)
    # --resume reads the checkpoint with the job's own settings (its rate 4): the restarts' rate goes on.
    resumed = initial_learner(learner_to_bytes(learner), config, "checkpoint")
    assert resumed.config.learning_rate == 1.0 and resumed.kernel_settings.learning_rate == 1.0
    assert resumed.selection_.restarts == 2


def test_step_rules_without_a_rate_and_the_constant_schedule_never_restart():
    batch = noisy_logistic(2)
    for config in (
        restarting_config(pass_schedule="constant"),
        restarting_config().replace(step="gsa", learning_rate=None),
    ):
        learner = LinearLearner(config).fit(batch)
        assert learner.selection_.restarts == 0
        assert {entry.get("rate") for entry in learner.selection_.history} == {config.learning_rate}
        rate = "" if config.learning_rate is None else f" at rate {config.learning_rate:g}"
        assert "held-out examples; best: pass" in holdout_progress_line(learner.selection_)
        assert f"{rate} over " in holdout_progress_line(learner.selection_)
    # A warm start from a model file: a restart would start from nothing and drop the model.
    model = LinearLearner(restarting_config().replace(passes=1)).learn(batch).to_model()
    warm = learner_from_model(model, restarting_config()).fit(batch)
    assert warm.selection_.restarts == 0 and warm.selection_.stopped


# -- apple's guard on the holdout -------------------------------------------------------------------------


def test_apple_guard_keeps_the_products_the_holdout_prefers():
    batch = xor_task(0)
    config = LearnerConfig(
        loss="logistic", bits=BITS, passes=3, holdout_min_examples=0, expand="apple", repeat_factors=False
    )
    learner = PolynomialLearner(config).fit(batch)
    model = learner.to_model()
    guard = model.metadata["apple_guard"]
    assert guard["decided_on"] == "holdout" and guard["products_kept"]
    assert guard["holdout_loss"] < guard["linear_holdout_loss"]
    assert model.kind == "apple" and model.summary().startswith("polybeam apple model")
    _, held = split_holdout(batch, config)
    error = np.mean(np.sign(model.margins(held)) != held.labels)
    assert error < 0.1


def test_apple_guard_keeps_the_linear_model_the_holdout_prefers():
    # A linear task with noise: products only add variance; whichever the holdout prefers is kept.
    batch = noisy_logistic(2, n=600)
    config = LearnerConfig(
        loss="logistic", bits=BITS, passes=3, holdout_min_examples=0, expand="apple", learning_rate=0.5
    )
    learner = make_learner(config).fit(batch)
    model = learner.to_model()
    guard = model.metadata["apple_guard"]
    best = learner.selection_.history[learner.selection_.best_pass - 1]["losses"]
    assert guard["decided_on"] == "holdout"
    assert guard["products_kept"] == (best["apple"] <= best["linear"])
    assert model.kind == ("apple" if guard["products_kept"] else "linear")
    assert model.summary().startswith(f"polybeam {model.kind} model")
    assert np.isclose(
        score_holdout(learner, [batch]).means()["apple" if guard["products_kept"] else "linear"], min(best.values())
    )


def test_one_pass_guard_still_decides_on_progressive_loss():
    config = LearnerConfig(loss="logistic", bits=BITS, expand="apple", repeat_factors=False)
    model = PolynomialLearner(config).fit(xor_task(1)).to_model()
    assert model.metadata["apple_guard"]["decided_on"] == "progressive loss"
    assert "holdout" not in model.metadata


def test_too_few_held_out_examples_release_the_holdout_after_the_first_pass():
    # 400 examples hold out about 40, fewer than the default 1000: the first pass is scored, then every
    # later pass learns every example and the last pass is kept (no best pass, no early stop).
    batch = noisy_logistic(2)
    config = LearnerConfig(loss="logistic", bits=BITS, passes=6, learning_rate=1.0, small_holdout="release")
    learner = LinearLearner(config).fit(batch)
    selection = learner.selection_
    assert selection.released and not selection.stopped and [e["pass"] for e in selection.history] == [1]
    learned, _ = split_holdout(batch, config)
    by_hand = LinearLearner(config).learn(learned)
    for _ in range(5):
        by_hand.start_pass()
        by_hand.learn(batch)
    np.testing.assert_array_equal(learner.weights, by_hand.weights)
    holdout = learner.to_model().metadata["holdout"]
    assert holdout["released"] and holdout["best_pass"] is None
    assert [p["examples"] for p in learner.to_model().metadata["passes"]] == [len(learned)] + [len(batch)] * 5
    assert "fewer than 1000 to judge passes by" in learner.to_model().summary()


def test_a_released_holdout_leaves_apple_guard_to_the_progressive_loss():
    config = LearnerConfig(
        loss="logistic", bits=BITS, passes=3, expand="apple", repeat_factors=False, small_holdout="release"
    )
    model = PolynomialLearner(config).fit(xor_task(0)).to_model()
    assert model.metadata["holdout"]["released"]
    assert model.metadata["apple_guard"]["decided_on"] == "progressive loss"


# -- passes in a random order ------------------------------------------------------------------------------------


@pytest.mark.parametrize("expand", ["none", "apple"])
def test_a_shuffled_fit_judges_every_pass_on_the_same_examples(expand):
    from polybeam.learners.holdout import model_loss_sum, placed

    batch = dataclasses.replace(
        noisy_logistic(3, n=2000), row_ids=np.arange(2000) * 37, source="gs://bucket/part-0.libsvm"
    )
    config = LearnerConfig(loss="logistic", bits=BITS, passes=4, early_terminate=9, holdout_min_examples=0)
    config = config.replace(expand=expand)
    held = batch.take(holdout_rows(batch, config.holdout_period, config.seed))
    judged = []

    def after_pass(learner, number, learned):
        entry = learner.selection_.history[-1]
        models = learner.candidate_models()
        losses = {name: model_loss_sum(model, held) / len(held) for name, model in models.items()}
        judged.append((number, entry["examples"], entry["losses"], losses, learned["examples"]))

    orders = []
    for seed in (0, 1):
        judged.clear()
        make_learner(config).fit([batch], shuffle=np.random.RandomState(seed), after_pass=after_pass)
        assert [number for number, *_ in judged] == [1, 2, 3, 4]
        for _, examples, recorded, recomputed, learned in judged[:-1]:  # (the last pass may restore the best)
            assert examples == len(held) and learned == len(batch) - len(held)
            assert recorded == pytest.approx(recomputed, rel=1e-12)
        orders.append([entry[2] for entry in judged])
    assert orders[0] != orders[1]  # the passes learned in different orders
    # A placed batch (a shuffle buffer's) holds out the same examples, wherever they go.
    order = np.random.default_rng(0).permutation(len(batch))
    moved = placed(batch).take(order)
    period, seed = config.holdout_period, config.seed
    assert np.array_equal(holdout_rows(moved, period, seed), holdout_rows(batch, period, seed)[order])
