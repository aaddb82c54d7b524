"""The default steps (issue 22): squared loss learns whatever the labels' offset, unit and noise; hinge
loss averages its noise out; the greedy step averaging they replaced stays selectable and keeps the
noise floor that was the cause."""

import numpy as np
import pytest

from polybeam.learners import kernels
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.model import Model
from polybeam.learners.warm_start import learner_from_model

BITS = 8


def unscaled_rows(seed, n, r_squared, noise="normal"):
    """``n`` rows of 6 numeric columns with their own means and units (a year, a price, a share, ...)
    and a categorical one (one-hot), labelled by a linear signal of unit variance plus noise that
    leaves ``r_squared`` of the variance to the signal; ``noise="counts"``: right-skewed noise with
    many small values and a long tail, as counts have."""
    rng = np.random.default_rng(seed)
    means = np.array([2000.0, 5e4, 0.3, 40.0, 0.0, 7.0])
    spreads = np.array([5.0, 2e4, 0.1, 12.0, 1.0, 0.01])
    standard = rng.normal(size=(n, len(means)))
    levels = rng.integers(0, 5, size=n)
    signal = standard @ rng.normal(size=len(means)) + rng.normal(size=5)[levels]
    signal = (signal - signal.mean()) / signal.std()
    if noise == "counts":
        errors = rng.gamma(0.3, size=n)
    else:
        errors = rng.normal(size=n)
    errors = (errors - errors.mean()) / errors.std()
    labels = signal + np.sqrt((1 - r_squared) / r_squared) * errors
    values = means + spreads * standard
    rows = [
        (float(labels[i]), {**{j + 1: float(values[i, j]) for j in range(len(means))}, 10 + int(levels[i]): 1.0})
        for i in range(n)
    ]
    return rows, values, levels, labels


def least_squares_relative_mse(values, levels, labels, train):
    """The batch optimum's held-out MSE over the labels' variance (ordinary least squares)."""
    design = np.column_stack([values, np.eye(5)[levels]])
    coefficients, *_ = np.linalg.lstsq(design[train], labels[train], rcond=None)
    test = ~train
    return float(np.mean((design[test] @ coefficients - labels[test]) ** 2) / np.var(labels[test]))


def learned_relative_mse(rows, train, passes=1, **settings):
    batch = ExampleBatch.from_rows([r for r, keep in zip(rows, train) if keep], bits=BITS)
    test = ExampleBatch.from_rows([r for r, keep in zip(rows, train) if not keep], bits=BITS)
    learner = LinearLearner(LearnerConfig(bits=BITS, **settings))
    for number in range(passes):
        if number:
            learner.start_pass()
        learner.learn(batch)
    predictions = learner.to_model().predict(test)
    return float(np.mean((predictions - test.labels) ** 2) / np.var(test.labels))


@pytest.mark.parametrize("noise", ["normal", "counts"])
def test_the_squared_default_averages_out_the_noise_that_greedy_steps_keep(noise):
    # Greedy step averaging's squared-loss step is the mean of 1 / x.x whatever the residual: each
    # example moves its prediction most of the way to its label, one pass or twenty, and on noisy
    # labels that is worse than predicting the mean. The default's steps shrink as AdaGrad's do.
    rows, values, levels, labels = unscaled_rows(0, 4000, r_squared=0.2, noise=noise)
    train = np.arange(len(rows)) < 3200
    best = least_squares_relative_mse(values, levels, labels, train)
    default, twenty = learned_relative_mse(rows, train), learned_relative_mse(rows, train, passes=20)
    # (GSA: 2.45 and 0.92 here, one pass or twenty; 1.05 on counts before centring's raw rows: its first
    # examples' greedy steps no longer see all-zero centred values)
    assert learned_relative_mse(rows, train, step="gsa") > default + 0.05
    assert learned_relative_mse(rows, train, passes=20, step="gsa") > twenty + 0.05
    assert default < best + 0.02
    assert twenty < best + 0.01


def test_squared_loss_learns_the_same_in_any_unit_of_the_labels():
    rows, *_ = unscaled_rows(1, 500, r_squared=0.5)
    batch = ExampleBatch.from_rows(rows, bits=BITS)
    thousandfold = batch.with_labels(batch.labels * 1000.0)
    models = [LinearLearner(LearnerConfig(bits=BITS)).learn(b).to_model() for b in (batch, thousandfold)]
    np.testing.assert_allclose(models[1].predict(batch), 1000.0 * models[0].predict(batch), rtol=1e-9)
    # Unscaled, AdaGrad's steps move each weight by about eta whatever the labels' size: it learns
    # next to nothing of labels a thousand times larger (relative MSE about 1, scaled: 0.5).
    plain = LinearLearner(LearnerConfig(bits=BITS, scale_labels=False)).learn(thousandfold).to_model()
    variance = np.var(thousandfold.labels)
    assert np.mean((plain.predict(batch) - thousandfold.labels) ** 2) > 0.9 * variance
    assert np.mean((models[1].predict(batch) - thousandfold.labels) ** 2) < 0.6 * variance


def test_an_offset_of_the_labels_moves_the_bias_not_the_learning():
    rows, values, levels, labels = unscaled_rows(2, 3000, r_squared=0.5)
    train = np.arange(len(rows)) < 2400
    offset = [(label + 1e6, features) for label, features in rows]
    assert learned_relative_mse(offset, train) == pytest.approx(learned_relative_mse(rows, train), abs=0.01)
    # Without it the bias would need millions of steps of about eta to get there.
    assert learned_relative_mse(offset, train, scale_labels=False) > 100


def test_the_bias_follows_the_labels_running_mean():
    learner = LinearLearner(LearnerConfig(bits=BITS)).learn(ExampleBatch.from_rows([(1000.0, {})] * 3, bits=BITS))
    assert learner.weights[0] == 1000.0 and learner.progressive_loss == pytest.approx(1000.0**2 / 3)
    learner.learn(ExampleBatch.from_rows([(1002.0, {}), (998.0, {})] * 50, bits=BITS))
    assert learner.label_moments() == pytest.approx((103.0, 1000.0, 400.0 / 103.0))
    # Then adaptive steps of about eta times the labels' spread learn what the mean leaves.
    assert abs(learner.weights[0] - 1000.0) < 2.0
    stats = kernels.new_stats()
    assert kernels.count_label(stats, 5.0, 2.0) == (5.0, 0.0)  # importance-weighted
    assert kernels.count_label(stats, 8.0, 1.0) == pytest.approx((1.0, np.sqrt(2.0)))


def test_a_learner_started_from_a_model_goes_on_from_its_labels_moments(tmp_path):
    rows, *_ = unscaled_rows(3, 400, r_squared=0.5)
    shifted = [(label * 10 + 5e4, features) for label, features in rows]
    trained = LinearLearner(LearnerConfig(bits=BITS)).learn(ExampleBatch.from_rows(shifted[:300], bits=BITS))
    path = str(tmp_path / "m.model")
    trained.to_model().save(path)
    model = Model.load(path)
    more = ExampleBatch.from_rows(shifted[300:], bits=BITS)
    continued = learner_from_model(model, trained.config).learn(more)
    weight, mean, _ = continued.label_moments()
    assert weight == pytest.approx(400.0) and mean == pytest.approx(np.mean([r[0] for r in shifted]))
    # It goes on learning the same function: its first label does not move the bias by its 5e4.
    assert continued.progressive_loss < 3 * np.var(more.labels)
    assert np.mean((continued.to_model().predict(more) - more.labels) ** 2) < np.var(more.labels)


def test_hinge_loss_defaults_to_adaptive_steps_which_average_out_label_noise():
    # Greedy steps fit every example that violates the margin the whole way to it; with noisy labels
    # a share always does, and the mean step never shrinks (the same cause as squared loss's).
    rows, values, levels, labels = unscaled_rows(4, 5000, r_squared=0.5)
    binary = [(1.0 if label > 0 else -1.0, features) for label, features in rows]
    train, test = (ExampleBatch.from_rows(part, bits=BITS) for part in (binary[:4000], binary[4000:]))

    def error(**settings):
        model = LinearLearner(LearnerConfig(loss="hinge", bits=BITS, **settings)).learn(train).to_model()
        return float(np.mean((model.margins(test) > 0) != (test.labels > 0)))

    assert LearnerConfig(loss="hinge").step == "adaptive"
    assert error() < error(step="gsa") - 0.03
    logistic = LinearLearner(LearnerConfig(loss="logistic", bits=BITS)).learn(train).to_model()
    assert error() < float(np.mean((logistic.margins(test) > 0) != (test.labels > 0))) + 0.02


def test_scale_labels_is_for_squared_loss():
    assert LearnerConfig().scale_labels and LearnerConfig(learning_rate=0.1).scale_labels
    assert not LearnerConfig(step="gsa").scale_labels and not LearnerConfig(loss="logistic").scale_labels
    assert LearnerConfig(loss="quantile").scale_labels and not LearnerConfig(loss="poisson").scale_labels
    with pytest.raises(ValueError, match="scale_labels is for squared and quantile loss"):
        LearnerConfig(loss="logistic", scale_labels=True)


def test_a_state_learned_without_scale_labels_goes_on_with_it_without_a_jump():
    from polybeam.learners.warm_start import continue_learner

    rows, *_ = unscaled_rows(5, 400, r_squared=0.5)
    shifted = [(label + 5e4, features) for label, features in rows]
    plain = LearnerConfig(bits=BITS, scale_labels=False, learning_rate=0.5)
    learner = LinearLearner(plain).learn(ExampleBatch.from_rows(shifted[:300], bits=BITS))
    bias = learner.weights[0]
    continued = continue_learner(learner, plain.replace(scale_labels=True))
    assert continued.label_moments()[0] == 300.0  # the examples it learned, at the middle of their range
    continued.learn(ExampleBatch.from_rows(shifted[300:301], bits=BITS))
    assert abs(continued.weights[0] - bias) < 0.01 * 5e4  # not the whole label, as a mean from nothing would
