"""Scoring files held against a model's columns (polybeam.formats.scoring): missing feature columns refused
or read as empty cells (a numeric one the value NaN in every row, a categorical one no category), extra columns
left out, files without the label (or weight) column read without it, and header-less files told apart by their
number of columns."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polybeam.formats import CsvFormat, ParquetFormat
from polybeam.formats.records import InputFileError
from polybeam.formats.scoring import ScoringColumns, ScoringFormat
from polybeam.learners.hashing import feature_slot

COLUMNS = ("y", "w", "a", "b", "c", "d")
PREDICT = ("label", "weight")


def csv_text(columns, rows) -> bytes:
    return ("\n".join([",".join(columns)] + [",".join(map(str, row)) for row in rows]) + "\n").encode()


def features(batch) -> list[dict[int, float]]:
    """Each example's features, slot -> value (the order of a row's features aside; NaN, a missing value, as
    "nan", equal to itself)."""
    return [
        {int(slot): "nan" if value != value else float(value) for slot, value in zip(*batch.row(i))}
        for i in range(len(batch))
    ]


def reader(optional=PREDICT, missing="refuse", **options) -> ScoringFormat:
    model = ScoringColumns(COLUMNS, label="y", weight="w", optional=optional, missing=missing)
    return ScoringFormat(CsvFormat(label_column="y", weight_column="w", labels="any", **options), model)


# (columns of a scoring file, its rows as the model's columns' values: y, w, a, b, c, d)
ROWS = [(1, 2, 0.5, 1.5, 0, -3), (0, 1, 2, 0, 4, 1), (1, 0.5, -1, 1, 1, 1)]


def file_of(columns, rows=ROWS) -> bytes:
    """A CSV file with ``columns`` (the model's, in any order, with extra ones filled with 7)."""
    return csv_text(columns, [[row[COLUMNS.index(c)] if c in COLUMNS else 7 for c in columns] for row in rows])


def test_a_file_without_the_label_and_weight_columns_is_read_without_them():
    full = reader().parse(file_of(COLUMNS)).batch
    bare = reader().parse(file_of(("a", "b", "c", "d"))).batch
    assert np.isnan(bare.labels).all() and (bare.weights == 1).all()
    assert features(bare) == features(full)
    assert full.labels.tolist() == [1, 0, 1] and full.weights.tolist() == [2, 1, 0.5]


def test_evaluation_needs_the_label_column_and_says_so():
    with pytest.raises(InputFileError, match=r"new.csv: lacks the model's label column 'y' .*evaluate needs"):
        reader(optional=()).parse(file_of(("w", "a", "b", "c", "d")), source="new.csv")


def test_missing_feature_columns_are_refused_naming_them_or_read_as_empty_cells():
    partial = file_of(("y", "a", "d"))
    with pytest.raises(InputFileError, match=r"lacks 2 of the model's 4 feature columns: b, c \(.*--missing-col"):
        reader().parse(partial)
    allowed = reader(missing="allow").parse(partial).batch
    blanked = reader().parse(csv_text(COLUMNS, [(y, w, a, "", "", d) for y, w, a, _, _, d in ROWS])).batch
    assert features(allowed) == features(blanked) and allowed.labels.tolist() == blanked.labels.tolist()


def test_columns_the_model_never_saw_are_left_out_even_where_their_hash_meets_a_feature():
    # A name whose slot is the slot of feature "a": read as a feature, it would add to a's weight.
    clash = next(f"x{i}" for i in range(10**6) if feature_slot(f"x{i}") == feature_slot("a"))
    with_extra = reader().parse(file_of((*COLUMNS, clash, "other"))).batch
    assert features(with_extra) == features(reader().parse(file_of(COLUMNS)).batch)
    plain = CsvFormat(label_column="y", weight_column="w").parse(file_of((*COLUMNS, clash))).batch
    assert features(plain) != features(with_extra)  # (what reading every column does)


def test_headerless_files_are_told_apart_by_their_number_of_columns():
    names = tuple(str(i) for i in range(1, 6))  # label first, then four features
    model = ScoringColumns(names, label="1", header=False, optional=("label",))
    fmt = ScoringFormat(CsvFormat(has_header=False, labels="any"), model)
    labelled = fmt.parse(b"1,0.5,1.5,0,-3\n0,2,0,4,1\n").batch
    unlabelled = fmt.parse(b"0.5,1.5,0,-3\n2,0,4,1\n").batch
    assert labelled.labels.tolist() == [1, 0] and np.isnan(unlabelled.labels).all()
    assert features(unlabelled) == features(labelled)
    with pytest.raises(InputFileError, match=r"has 3 columns, but the model's rows had 5: .* 5 columns or 4 witho"):
        fmt.parse(b"1,2,3\n")
    evaluating = ScoringFormat(CsvFormat(has_header=False), ScoringColumns(names, label="1", header=False))
    with pytest.raises(InputFileError, match="one fewer than the model's 5: the label column, it seems; evaluate"):
        evaluating.parse(b"0.5,1.5,0,-3\n")


def test_a_headerless_file_one_column_short_of_a_label_and_a_weight_is_ambiguous():
    names = ("1", "2", "3", "4")
    model = ScoringColumns(names, label="1", weight="4", header=False, optional=PREDICT)
    fmt = ScoringFormat(CsvFormat(has_header=False, weight_column=3, labels="any"), model)
    with pytest.raises(InputFileError, match=r"cannot be told whether the label column \(1\) or the weight column"):
        fmt.parse(b"1,2,3\n")
    both_absent = fmt.parse(b"2,3\n").batch  # (two fewer: neither, unambiguously)
    assert np.isnan(both_absent.labels).all() and both_absent.weights.tolist() == [1.0]
    assert features(both_absent) == features(fmt.parse(b"1,2,3,0.5\n").batch)


def test_positions_follow_their_columns_when_the_label_is_absent():
    # Header-less, label third, the first column categorical and the second ignored, all by position.
    names = ("1", "2", "3", "4")
    model = ScoringColumns(names, label="3", roles=("2",), header=False, optional=("label",))
    fmt = ScoringFormat(
        CsvFormat(has_header=False, label_column=2, categorical_columns=(0,), ignore_columns=(1,), labels="any"),
        model,
    )
    labelled = fmt.parse(b"red,9,1,0.5\n").batch
    unlabelled = fmt.parse(b"red,9,0.5\n").batch
    assert features(unlabelled) == features(labelled) and labelled.labels.tolist() == [1.0]


def test_parquet_tables_are_held_against_the_models_columns():
    model = ScoringColumns(("label", "a", "b"), label="label", optional=PREDICT)
    fmt = ScoringFormat(ParquetFormat(labels="any"), model)
    assert hasattr(fmt, "parse_table") and not hasattr(reader(), "parse_table")
    full = fmt.parse_table(pa.table({"label": [1.0], "a": [2.0], "b": [3.0]})).batch
    bare = fmt.parse_table(pa.table({"b": [3.0], "a": [2.0], "new": [5.0]})).batch
    assert features(bare) == features(full) and np.isnan(bare.labels).all()
    with pytest.raises(InputFileError, match="t.parquet: lacks 1 of the model's 2 feature columns: b"):
        fmt.parse_table(pa.table({"a": [2.0]}), source="t.parquet")


def test_an_empty_file_has_no_columns_to_hold_against_the_model():
    for fmt in (
        reader(),
        ScoringFormat(CsvFormat(has_header=False), ScoringColumns(("1", "2"), label="1", header=False)),
    ):
        parsed = fmt.parse(b"")
        assert (parsed.records, len(parsed.batch), parsed.dead_letters) == (0, 0, [])


def test_a_parquet_files_bytes_are_held_against_the_models_columns_too():
    import io

    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"a": [1.0]}), sink)
    model = ScoringColumns(("label", "a", "b"), label="label", optional=("label",))
    fmt = ScoringFormat(ParquetFormat(labels="any"), model)
    with pytest.raises(InputFileError, match="lacks 1 of the model's 2 feature columns: b"):
        fmt.parse(sink.getvalue())


def test_a_scoring_format_pickles_for_the_workers():
    fmt = reader(missing="allow")
    again = pickle.loads(pickle.dumps(fmt))
    assert features(again.parse(file_of(("a", "b"))).batch) == features(fmt.parse(file_of(("a", "b"))).batch)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="missing_columns must be one of refuse, allow"):
        ScoringColumns(COLUMNS, missing="ignore")
    with pytest.raises(ValueError, match="'z' is not one of the model's columns"):
        ScoringColumns(COLUMNS, label="z")
    with pytest.raises(ValueError, match="scoring columns apply to input of named columns, not"):
        from polybeam.formats import LibsvmFormat

        ScoringFormat(LibsvmFormat(), ScoringColumns(COLUMNS))


values = st.one_of(st.just(""), st.integers(-5, 5).map(str), st.floats(-1e3, 1e3, allow_nan=False).map(repr))


@settings(max_examples=60)
@given(
    rows=st.lists(st.lists(values, min_size=4, max_size=4), min_size=1, max_size=6),
    dropped=st.sets(st.sampled_from("abcd")),
    extra=st.lists(st.sampled_from(["e", "f", "g"]), unique=True),
    order=st.randoms(use_true_random=False),
)
def test_any_absent_columns_read_as_empty_cells_and_any_extra_columns_change_nothing(rows, dropped, extra, order):
    """With missing="allow", a file without some feature columns, in any order, with columns the model never
    saw, reads as the model's whole file with those columns' cells empty."""
    names = ["y", "a", "b", "c", "d"]
    full = [["1", *row] for row in rows]
    blanked = [[cell if names[j] not in dropped else "" for j, cell in enumerate(row)] for row in full]
    kept = [name for name in names if name not in dropped] + extra
    order.shuffle(kept)
    scoring = [[row[names.index(c)] if c in names else "3" for c in kept] for row in full]
    model = ScoringColumns(tuple(names), label="y", optional=("label",), missing="allow")
    fmt = ScoringFormat(CsvFormat(label_column="y", labels="any"), model)
    got = fmt.parse(csv_text(kept, scoring)).batch
    expected = CsvFormat(label_column="y", labels="any").parse(csv_text(names, blanked)).batch
    assert features(got) == features(expected)
    assert np.array_equal(got.labels, expected.labels, equal_nan=True)
