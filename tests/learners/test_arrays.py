"""Matrices as example batches (polybeam.learners.arrays): NumPy, SciPy sparse and pandas give the same batch, column
j is LIBSVM index j + 1 and never the bias slot, NaN and zero are absent features; learners fit (X, y)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import sparse

from polybeam import datasets
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.learners.arrays import as_batch, batch_from_arrays, column_slots, training_batches
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.evaluation import Evaluation
from polybeam.learners.hashing import BIAS_SLOT, libsvm_slot
from polybeam.learners.linear import LinearLearner
from polybeam.learners.polynomial import PolynomialLearner

try:  # pandas inputs are tested when pandas is there (the test extra installs it)
    import pandas as pd
except ImportError:
    pd = None
needs_pandas = pytest.mark.skipif(pd is None, reason="pandas is not installed")

# Values as matrices hold them: mostly zeros, some NaN (missing), small and large numbers.
CELLS = st.one_of(st.just(0.0), st.just(np.nan), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
MATRICES = hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=12), elements=CELLS)


def same(a: ExampleBatch, b: ExampleBatch) -> bool:
    return all(
        np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True)
        for name in ("labels", "weights", "indptr", "indices", "values")
    )


@settings(max_examples=200)
@given(MATRICES, st.integers(1, 30))
def test_dense_sparse_and_pandas_give_the_same_batch(matrix, bits):
    labels = np.arange(matrix.shape[0], dtype=float)
    dense = batch_from_arrays(matrix, labels, bits=bits)
    with np.errstate(invalid="ignore"):
        for other in [
            sparse.csr_matrix(matrix),
            sparse.csc_array(matrix),
            sparse.coo_matrix(matrix),
            *([pd.DataFrame(matrix)] if pd else []),
        ] + ([matrix.tolist()] if len(matrix) else []):
            assert same(batch_from_arrays(other, labels, bits=bits), dense)


@settings(max_examples=200)
@given(MATRICES)
def test_a_batch_holds_the_non_zero_entries_at_column_plus_one_missing_ones_as_nan(matrix):
    batch = batch_from_arrays(matrix, bits=18)
    present = matrix != 0  # (NaN, a missing value, is an entry)
    assert batch.nnz == present.sum() and np.isnan(batch.labels).all()
    back = batch.to_csr()[:, 1 : matrix.shape[1] + 1].toarray()
    np.testing.assert_array_equal(back, np.where(present, matrix, 0.0))
    assert batch.nnz == 0 or batch.indices.min() >= 1


@settings(max_examples=200)
@given(st.integers(1, 12), st.integers(0, 5000), st.integers(0, 2**32 - 1))
def test_no_column_ever_lands_on_the_bias_slot(bits, columns, seed):
    slots = column_slots(columns, bits=bits, seed=seed)
    assert not (slots == BIAS_SLOT).any()
    assert ((slots >= 1) & (slots < 1 << bits)).all()
    # Apart from the bias, a column's slot is the LIBSVM reader's for index column + 1.
    expected = [libsvm_slot(column + 1, bits, seed) for column in range(columns)]
    assert all(
        slot == want or (want == BIAS_SLOT and slot == (1 << bits) - 1) for slot, want in zip(slots.tolist(), expected)
    )


@settings(max_examples=100)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=8),
        elements=st.one_of(st.just(0.0), st.floats(-100, 100).map(lambda v: round(v, 3))),
    )
)
def test_a_matrix_is_its_libsvm_file(matrix):
    lines = [
        " ".join(["1"] + [f"{j + 1}:{float(value)!r}" for j, value in enumerate(row) if value != 0]) for row in matrix
    ]
    parsed = LibsvmFormat(bits=18).parse(("\n".join(lines) + "\n").encode()).batch
    assert same(batch_from_arrays(matrix, np.ones(len(matrix)), bits=18), parsed)


def test_bad_matrices_fail_saying_what_to_fix():
    with pytest.raises(ValueError, match=r"row 1, column 2 is inf: features must be finite and within \+-3.4e\+38"):
        batch_from_arrays(np.array([[1.0, 0, 0], [0, 0, np.inf]]), bits=10)
    with pytest.raises(ValueError, match="2-d matrix"):
        batch_from_arrays(np.ones(3), bits=10)
    with pytest.raises(ValueError, match="labels must hold one number per example: 2 of them"):
        batch_from_arrays(np.ones((2, 2)), [1, 2, 3], bits=10)
    with pytest.raises(ValueError, match="weights must be numbers >= 0"):
        batch_from_arrays(np.ones((2, 2)), [1, 2], weights=[1, -1], bits=10)
    with pytest.raises(TypeError, match=r"give \(X, y\) as one tuple, fit\(\(X, y\)\)"):
        training_batches(np.eye(2), bits=10)
    with pytest.raises(TypeError, match=r"passes must be a whole number >= 1; got ndarray"):
        LinearLearner().fit(np.eye(2), np.ones(2))
    with pytest.raises(TypeError, match="expected an ExampleBatch or a matrix"):
        as_batch({"a": 1}, bits=10)


@needs_pandas
def test_a_frame_of_named_columns_is_a_table_read_as_csv_reads_it():
    from polybeam.formats.csv import CsvFormat

    frame = pd.DataFrame(
        {
            "age": pd.array([30, None, 50], dtype="Int64"),
            "smoker": [True, False, True],
            "colour": ["red", None, " blue "],
            "zip": pd.Categorical(["10115", "10115", ""]),
        }
    )
    batch = batch_from_arrays(frame, pd.Series([1.0, -1.0, 1.0]), bits=18)
    csv = CsvFormat(label_column="y", categorical_columns=("colour", "zip"), labels="real").parse(
        b"y,age,smoker,colour,zip\n1,30,1,red,10115\n-1,,0,,10115\n1,50,1, blue ,\n"
    )
    assert batch.indptr.tolist() == csv.batch.indptr.tolist()
    assert batch.indices.tolist() == csv.batch.indices.tolist()
    np.testing.assert_array_equal(batch.values, csv.batch.values)  # (the missing age: NaN in both)
    assert batch.names == csv.batch.names
    model = LinearLearner(LearnerConfig(loss="logistic")).fit((frame, [1, -1, 1])).to_model()
    assert {model.feature_name(slot) for slot in model.slots} >= {"(bias)", "age", "smoker"}
    # Unnamed columns (pandas' default labels) are a matrix, by position.
    assert batch_from_arrays(pd.DataFrame(np.eye(2)), bits=18).indices.tolist() == [1, 2]


# -- what this changed for users: breast cancer, batch_from_arrays, fit((X, y)) -------------------------------------------


def test_breast_cancer_from_arrays_learns_instead_of_predicting_the_bias():
    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    learner = LinearLearner(LearnerConfig(loss="logistic")).fit((X_train, 2 * y_train - 1))
    # Column 0 in the bias slot gave every prediction 1.0 and AUC 0.5; measured now: AUC 0.996.
    assert roc_auc_score(y_test, learner.predict(X_test)) > 0.99
    from_matrix = batch_from_arrays(sparse.csr_matrix(X_test), 2 * y_test - 1, bits=18)
    assert np.array_equal(learner.predict(from_matrix), learner.predict(X_test))
    assert BIAS_SLOT not in from_matrix.indices


@pytest.mark.parametrize("expand", ["none", "apple"])
def test_fit_on_a_matrix_is_fit_on_the_libsvm_file(expand):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(datasets.path("spam"))
    # No holdout: a file's rows are held out by their byte offsets, a matrix's by their row numbers.
    config = LearnerConfig(loss="logistic", passes=2, expand=expand, holdout_period=0)
    learner = PolynomialLearner if expand != "none" else LinearLearner
    from_file = learner(config).fit(datasets.load("spam")).to_model()
    in_parts = [(X[:2000], y[:2000]), (X[2000:], y[2000:])]
    frames = [(pd.DataFrame(X.toarray()), pd.Series(y))] if pd else []
    for data in [(X, y), (X.toarray(), y), *frames, in_parts]:
        from_matrix = learner(config).fit(data).to_model()
        assert np.array_equal(from_matrix.slots, from_file.slots)
        assert np.allclose(from_matrix.weights, from_file.weights)
    assert Evaluation.of(from_file, [as_batch(X, bits=18).with_labels(y)]).result()["examples"] == len(y)
