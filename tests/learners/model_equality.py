"""Two models alike in everything a model file or a shard of per-key models keeps."""

from __future__ import annotations

import json

import numpy as np

from polybeam.learners.model import Model


def assert_same_model(got: Model, expected: Model, *, tolerance: float = 1e-12) -> None:
    """``got`` has ``expected``'s slots, weights (to ``tolerance``), value ranges, fills and metadata (a
    learning curve aside: per-key models keep none)."""
    np.testing.assert_array_equal(got.slots, expected.slots)
    np.testing.assert_allclose(got.weights, expected.weights, rtol=tolerance, atol=tolerance)
    for name in ("clip_low", "clip_high", "fill_slots", "fill_values", "fill_indicated"):
        mine, theirs = getattr(got, name), getattr(expected, name)
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            np.testing.assert_allclose(mine, theirs, rtol=tolerance, atol=tolerance, err_msg=name)
    kept = {name: value for name, value in expected.metadata.items() if name != "learning_curve"}
    mine = {name: value for name, value in got.metadata.items() if name != "learning_curve"}
    assert json.loads(json.dumps(mine, default=str)) == json.loads(json.dumps(kept, default=str))
