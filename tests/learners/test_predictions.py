"""What predict writes for each kind of prediction (polybeam.learners.predictions), against plain formulas."""

from __future__ import annotations

import numpy as np
import pytest

from polybeam import datasets
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.predictions import (
    binary_labels,
    check_kind,
    model_values,
    prediction_columns,
    values_of,
)

MARGINS = np.array([-40.0, -1.5, 0.0, 1e-9, 2.0, 800.0])


def test_logistic_probability_score_and_label():
    config = LearnerConfig(loss="logistic")
    probability = values_of(config, MARGINS, "probability", binary=("0", "1"))
    np.testing.assert_allclose(probability, 1 / (1 + np.exp(-MARGINS)), rtol=1e-12, atol=1e-15)
    assert values_of(config, MARGINS, None, binary=("0", "1")).tolist() == probability.tolist()  # (the default)
    assert values_of(config, MARGINS, "score", binary=("0", "1")) is MARGINS
    labels = values_of(config, MARGINS, "label", binary=("no", "yes"))
    assert labels.tolist() == ["no", "no", "no", "yes", "yes", "yes"]  # positive above 0, as evaluate counts


def test_softmax_kinds_give_a_column_per_class_named_after_it():
    config = LearnerConfig(loss="softmax", class_names=("cat", "dog", "emu"))
    margins = np.array([[0.0, 2.0, 1.0], [5.0, -5.0, 0.0]])
    probability = values_of(config, margins, "probability", binary=("-1", "1"))
    expected = np.exp(margins) / np.exp(margins).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probability, expected, rtol=1e-12)
    assert values_of(config, margins, "label", binary=("-1", "1")).tolist() == ["dog", "cat"]
    assert prediction_columns(config, "score") == ("score:cat", "score:dog", "score:emu")
    unnamed = LearnerConfig(loss="softmax", classes=3)
    assert prediction_columns(unnamed, "probability") == ("probability:1", "probability:2", "probability:3")
    assert values_of(unnamed, margins, "label", binary=("-1", "1")).tolist() == ["2", "1"]


def test_squared_and_hinge_have_no_probabilities_and_their_labels_are_values_or_classes():
    squared = LearnerConfig(loss="squared")
    clamped = values_of(squared, np.array([-3.0, 0.5, 9.0]), "label", binary=("-1", "1"), label_range=(0, 5))
    assert clamped.tolist() == [0.0, 0.5, 5.0]
    assert values_of(squared, np.array([-3.0, 9.0]), "score", binary=("-1", "1")).tolist() == [-3.0, 9.0]
    hinge = LearnerConfig(loss="hinge")
    assert values_of(hinge, np.array([-0.5, 0.5]), "label", binary=("-1", "1")).tolist() == ["-1", "1"]
    assert check_kind(None, "hinge") == "score" and check_kind(None, "squared") == "label"
    for loss in ("squared", "hinge"):
        with pytest.raises(ValueError, match=f"probabilities need a model of logistic or softmax loss; .* {loss}"):
            check_kind("probability", loss)
    with pytest.raises(ValueError, match="predictions must be one of label, probability, score"):
        check_kind("class", "logistic")


def test_binary_labels_are_the_models_two_class_names_else_minus_one_and_one():
    assert binary_labels(LearnerConfig(loss="logistic", class_names=("no", "yes"))) == ("no", "yes")
    assert binary_labels(LearnerConfig(loss="hinge", class_names=("1", "2"))) == ("1", "2")
    assert binary_labels(LearnerConfig(loss="logistic")) == ("-1", "1")


@pytest.mark.slow
def test_a_models_values_are_its_predictions_and_margins():
    spam = datasets.load("spam").take(np.arange(600))
    model = LinearLearner(LearnerConfig(loss="logistic")).fit(spam).to_model()
    np.testing.assert_array_equal(model_values(model, spam, "probability"), model.predict(spam))
    np.testing.assert_array_equal(model_values(model, spam, "score"), model.margins(spam))
    labels = model_values(model, spam, "label")
    assert set(labels.tolist()) == {"-1", "1"}
    assert ((labels == "1") == (model.margins(spam) > 0)).all()
