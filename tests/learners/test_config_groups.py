"""LearnerConfig's groups: every setting is one group's (or the config's own), read and given by its flat
name as before; the groups hold their rules; files and pickles keep the flat settings in their order."""

from __future__ import annotations

import dataclasses
import json
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from polybeam.learners.config import GROUP_OF, SETTINGS_ORDER, LearnerConfig
from polybeam.learners.config_parts import GROUPS, ExpansionSettings, SparsitySettings, StepSettings
from polybeam.learners.setting_rules import Rule

CONFIG = LearnerConfig(loss="logistic", passes=3, gravity=1e-4, expand="apple", max_degree=3, lbfgs_passes=2)


def test_every_setting_lives_in_one_place_and_reads_by_its_flat_name():
    own = {field.name for field in dataclasses.fields(LearnerConfig)} - set(GROUPS)
    assert sorted(own | set(GROUP_OF)) == sorted(SETTINGS_ORDER)
    assert not own & set(GROUP_OF)
    for name, group in GROUP_OF.items():
        assert getattr(CONFIG, name) == getattr(getattr(CONFIG, group), name)
    assert list(CONFIG.to_dict()) == [name for name in SETTINGS_ORDER if name not in ("offset_prior", "quantile_tau")]
    assert CONFIG.truncation == SparsitySettings(sparsity="cumulative", gravity=1e-4)
    assert CONFIG.steps.step == "adaptive" and CONFIG.steps.learning_rate == 1.0  # the loss's defaults, filled in


def test_a_config_goes_through_files_pickles_and_replace_unchanged():
    assert LearnerConfig.from_dict(json.loads(json.dumps(CONFIG.to_dict()))) == CONFIG
    assert pickle.loads(pickle.dumps(CONFIG)) == CONFIG
    # A config pickled when the settings were one flat dataclass comes back grouped.
    flat = object.__new__(LearnerConfig)
    flat.__setstate__(CONFIG.to_dict())
    assert flat == CONFIG
    changed = dataclasses.replace(CONFIG, center=False, max_degree=4)
    assert (changed.center, changed.max_degree, changed.expand, changed.gravity) == (False, 4, "apple", 1e-4)
    assert CONFIG.replace(passes=2).holdout == CONFIG.holdout
    with pytest.raises(ValueError, match="max_degree must be a whole number from 1 to 32; got 40"):
        CONFIG.replace(max_degree=40)


def test_a_group_given_whole_is_changed_by_flat_settings():
    config = LearnerConfig(loss="logistic", expansion=ExpansionSettings(expand="quadratic"), repeat_factors=False)
    assert (config.expand, config.repeat_factors) == ("quadratic", False)
    config = LearnerConfig(steps=StepSettings(step="constant"), learning_rate=0.1)
    assert (config.step, config.learning_rate, config.scale_labels) == ("constant", 0.1, False)
    with pytest.raises(TypeError, match=r"unknown settings \['gravty'\]"):
        LearnerConfig(gravty=1.0)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"passes": 0}, "passes must be a whole number >= 1; got 0"),
        ({"passes": True}, "passes must be a whole number >= 1; got True"),
        ({"seed": 2**32}, r"seed must be an integer in \[0, 2\*\*32\); got 4294967296"),
        ({"l2": float("inf")}, "l2 must be a finite number; got inf"),
        ({"learning_rate": 0}, "learning_rate must be > 0; got 0"),
        ({"gsa_target": 1.0}, "gsa_target \\(p_hat\\) must lie strictly between 0.5 and 1; got 1.0"),
        ({"holdout_period": 1}, "holdout_period must be a whole number >= 2"),
        ({"examples_per_pass": 0}, r"examples_per_pass must be a whole number >= 1 \(or None\); got 0"),
        ({"expand": "quartic"}, "expand must be one of none, apple, quadratic, cubic; got 'quartic'"),
        ({"sparsity": "round", "gravity": 0.1}, "sparsity 'round' needs truncate_threshold"),
        ({"gravity": 0.1, "sparsity": "none"}, "gravity and truncate_threshold need a sparsity other than 'none'"),
        ({"step": "inverse"}, r"step 'inverse' \(1 / \(l2 \* \(t \+ 1\)\)\) needs l2 > 0"),
        ({"step": "gsa", "learning_rate": 0.5}, "step 'gsa' sets its own step sizes"),
        ({"loss": "poisson", "step": "gsa"}, "step 'gsa' \\(greedy step averaging\\) cannot learn poisson loss"),
        ({"loss": "hinge", "lbfgs_passes": 2}, "the L-BFGS finishing stage .* needs a differentiable loss"),
        ({"offset_prior": -1.0}, "offset_prior must be >= 0; got -1.0"),
    ],
)
def test_each_rule_refuses_with_its_message(settings, message):
    with pytest.raises(ValueError, match=message):
        LearnerConfig(**settings)


@given(st.one_of(st.integers(-5, 40), st.floats(allow_nan=True), st.booleans(), st.none(), st.text(max_size=2)))
def test_a_whole_number_rule_takes_exactly_the_integers_in_its_bounds(value):
    rule = Rule.whole(low=1, high=32, excluded=(7,))
    expected = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 32 and value != 7
    try:
        rule.check("x", value)
        taken = True
    except ValueError:
        taken = False
    assert taken == expected
    if expected:
        Rule.whole(low=1, high=32).check("x", np.int64(value))  # numpy's integers too
