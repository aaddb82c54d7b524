"""The learning kernels' one interface: a KernelSettings record of one numba type for every configuration,
built once per learner and read alike by the binary and the softmax kernel."""

import itertools

import numba
import numpy as np
import pytest

from polybeam.learners import kernels, sparsity
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.choices import LOSSES, SPARSITY, STEP_RULES
from polybeam.learners.config import LearnerConfig
from polybeam.learners.kernel_settings import KernelSettings
from polybeam.learners.linear import LinearLearner
from polybeam.learners.loss_specs import loss_spec
from polybeam.learners.softmax import learn_batch_softmax

BITS = 6


def every_config():
    """A config per loss x step rule x sparsity rule, and some given Python ints where floats are meant."""
    for loss, step, rule in itertools.product(LOSSES, STEP_RULES, SPARSITY):
        if step == "gsa" and not loss_spec(loss).greedy:
            continue
        classes = {"classes": 3} if loss == "softmax" else {}
        extra = {"quantile_tau": 0.25} if loss == "quantile" else {}
        extra.update({"l2": 1e-3} if step == "inverse" else {})
        if rule != "none":
            extra.update(gravity=1e-3, truncate_every=2)
        if rule in ("round", "subgradient"):
            extra["truncate_threshold"] = 0.5
        yield LearnerConfig(loss=loss, step=step, sparsity=rule, bits=BITS, **classes, **extra)
    ints = dict(learning_rate=1, power_t=1, l2=0, gravity=1, truncate_every=3, truncate_threshold=2)
    yield LearnerConfig(loss="logistic", bits=BITS, normalized=False, safe_updates=False, **ints)


def test_every_configuration_gives_settings_of_one_numba_type():
    # One type: each kernel compiles once, whatever the learner's configuration.
    types = {numba.typeof(KernelSettings.from_config(config)) for config in every_config()}
    assert len(types) == 1


@pytest.mark.parametrize("config", list(every_config())[:: len(STEP_RULES) + 1])
def test_settings_carry_the_configuration_as_codes_and_numbers(config):
    settings = KernelSettings.from_config(config)
    spec = loss_spec(config.loss)
    assert settings.loss == spec.code and settings.loss_parameter == config.loss_parameter
    assert settings.binary_labels == (spec.labels == "binary") and settings.clamps == spec.clamps
    assert settings.step == kernels.STEP_RULE_CODES[config.step]
    assert settings.sparsity == sparsity.SPARSITY_CODES[config.sparsity]
    assert settings.learning_rate == (config.learning_rate or 0.0)
    assert settings.threshold == config.threshold
    same = (
        "power_t",
        "l2",
        "bias",
        "normalized",
        "safe_updates",
        "gravity",
        "truncate_every",
        "gsa_target",
        "gsa_exact",
        "scale_labels",
    )
    assert [getattr(settings, name) for name in same] == [getattr(config, name) for name in same]


def test_a_learner_builds_its_settings_once_and_a_copy_rebuilds_them():
    learner = LinearLearner(LearnerConfig(loss="logistic", bits=BITS, gravity=0.01))
    settings = learner.kernel_settings
    learner.learn(ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 5, bits=BITS))
    assert learner.kernel_settings is settings
    assert learner.copy().kernel_settings == settings


def test_both_kernels_take_the_same_arguments_and_learn_as_the_learner_does():
    batch = ExampleBatch.from_rows([(1.0, {1: 1.0, 3: 0.5}), (2.0, {2: 1.0}), (3.0, {1: -1.0})] * 4, bits=BITS)
    softmax = LearnerConfig(loss="softmax", classes=3, bits=BITS, gravity=0.01, center=False)
    squared = LearnerConfig(loss="squared", bits=BITS, gravity=0.01, center=False)
    for config in (softmax, squared):
        learner = LinearLearner(config)
        raw, sums, scales, synced = (
            np.zeros_like(array)
            for array in (learner.raw_, learner.sum_sq_grad_, learner.feature_scale_, learner.synced_)
        )
        stats = kernels.new_stats()
        arrays = (batch.labels, batch.weights, batch.indptr, batch.indices, batch.values)
        settings = learner.kernel_settings
        if config is softmax:
            learn_batch_softmax(*arrays, raw, sums, scales, synced, stats, settings)
        else:  # one output: 1-d weights and sums, views of the 2-d arrays
            kernels.learn_batch(*arrays, raw.reshape(-1), sums.reshape(-1), scales, synced, stats, settings)
        learner.learn(batch)
        np.testing.assert_array_equal(raw, learner.raw_)
        np.testing.assert_array_equal(stats, learner.stats_)
        assert stats[kernels.LIFETIME_EXAMPLES] == len(batch)
