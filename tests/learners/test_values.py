"""Values no learner can take are refused the same way at every door, and no model that is not finite is
ever written (polybeam.learners.values)."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats.csv import CsvFormat
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.formats.mappings import MappingError, batch_from_mappings
from polybeam.formats.parquet import ParquetFormat
from polybeam.formats.vw import VWFormat
from polybeam.learners.arrays import batch_from_arrays
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.learners.missing import has_missing
from polybeam.learners.model import Model
from polybeam.learners.polynomial import make_learner
from polybeam.learners.values import LARGEST_VALUE, NonFiniteModel, first_unlearnable, unlearnable

TOO_LARGE = "feature value beyond +-3.4e+38"


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


@pytest.mark.parametrize("value", [1e308, -1e155, 3.5e38])
def test_every_parser_makes_a_value_whose_square_overflows_a_dead_letter_with_its_reason(value):
    # A third of the rows at 1e308: the bias turned NaN and `evaluate` said error 0.5, exit 0 (issue 31).
    text = f"{value!r}"
    parsed = {
        "libsvm": LibsvmFormat(bits=10).parse(f"1 1:0.5\n-1 2:{text}\n".encode(), source="s"),
        "vw": VWFormat(bits=10).parse(f"1 |f a:0.5\n-1 |f b:{text}\n".encode(), source="s"),
        "csv": CsvFormat(bits=10).parse(f"y,a,b\n1,0.5,0\n-1,0,{text}\n".encode(), source="s"),
        "parquet": ParquetFormat(bits=10).parse(
            parquet_bytes(pa.table({"label": [1.0, -1.0], "a": [0.5, 0.0], "b": [0.0, value]})), source="s"
        ),
    }
    for door, result in parsed.items():
        assert len(result.batch) == 1 and len(result.dead_letters) == 1, door
        assert TOO_LARGE in result.dead_letters[0].reason, (door, result.dead_letters[0].reason)


def test_the_other_doors_refuse_it_in_one_line():
    with pytest.raises(ValueError, match=r"within \+-3.4e\+38"):
        batch_from_arrays(np.array([[1.0, 1e200]]), np.array([1.0]), bits=10)
    with pytest.raises(MappingError, match=TOO_LARGE.replace("+", r"\+")):
        batch_from_mappings([{"a": 1.0, "b": -1e300}], bits=10)
    batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1e200})], bits=10)
    for config in (LearnerConfig(loss="logistic", bits=10), LearnerConfig(loss="logistic", bits=10, expand="apple")):
        with pytest.raises(ValueError, match=r"example 1 has the feature value 1e\+200"):
            make_learner(config).learn(batch)


def test_the_bound_itself_is_learned_and_every_statistic_stays_finite():
    rows = [(1.0 if i % 2 else -1.0, {1: LARGEST_VALUE * (1 if i % 3 else -1), 2: 1.0}) for i in range(300)]
    learner = make_learner(LearnerConfig(loss="logistic", bits=8, expand="apple", expand_after=20))
    model = learner.learn(ExampleBatch.from_rows(rows, bits=8)).to_model()
    assert np.isfinite(model.dense_weights).all() and np.isfinite(learner.progressive_loss)


def test_a_model_that_is_not_finite_is_never_written():
    model = Model(LearnerConfig(bits=4), slots=np.array([0, 3]), weights=np.array([0.5, np.nan]))
    with pytest.raises(NonFiniteModel, match="1 of 2 weights are not finite"):
        model.to_bytes()


def test_a_learner_whose_state_overflowed_fails_naming_the_likely_cause():
    rng = np.random.default_rng(0)
    rows = [(1e200 * rng.normal(), {1: rng.normal()}) for _ in range(50)]
    learner = LinearLearner(LearnerConfig(loss="squared", bits=8)).learn(ExampleBatch.from_rows(rows, bits=8))
    with pytest.raises(NonFiniteModel, match=r"no model is written; likely cause: labels as large as"):
        learner.to_model()


_VALUES = st.lists(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True, width=64),
        st.sampled_from([3.4e38, 3.5e38, -1e300, float("nan"), 0.0]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.booleans())
def test_the_compiled_check_finds_the_first_value_numpys_masks_find(values, missing_ok):
    """The learners' one-pass check and missing-value scan, against the numpy masks they replaced."""
    values = np.array(values, dtype=np.float64)
    indptr = np.array([0, len(values) // 2, len(values)])
    bad = unlearnable(values) & ~(np.isnan(values) if missing_ok else np.zeros(len(values), dtype=bool))
    found = first_unlearnable(indptr, values, missing_ok=missing_ok)
    if not bad.any():
        assert found is None
    else:
        entry = int(np.argmax(bad))
        assert found[0] == int(np.searchsorted(indptr, entry, side="right") - 1)
        assert found[1] == values[entry] or (np.isnan(found[1]) and np.isnan(values[entry]))
    batch = ExampleBatch(
        labels=np.zeros(2),
        weights=np.ones(2),
        indptr=indptr,
        indices=np.arange(len(values), dtype=np.int32),
        values=values,
    )
    assert has_missing(batch) == bool(np.isnan(values).any())
