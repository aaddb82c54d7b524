"""Input settings of a model: the missing-value spellings and Parquet's categories are recorded, and records
written before they existed read their input as it was read then."""

from __future__ import annotations

import pyarrow as pa

from polybeam.formats import CsvFormat, ParquetFormat
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.missing import DEFAULT_NA_VALUES


def test_new_settings_are_recorded_and_read_back():
    csv = InputSettings.of(CsvFormat(label_column="y", na_values=("NA", "-999")))
    assert csv.to_dict()["na_values"] == ["NA", "-999"]
    assert InputSettings.from_dict(csv.to_dict()) == csv
    assert csv.reader(labels="any").na_values == ("NA", "-999")
    assert "--na-values NA,-999" in csv.flags()
    assert "--na-values" not in InputSettings.of(CsvFormat()).flags()  # (the default)
    assert "--na-values ''" in InputSettings.of(CsvFormat(na_values=())).flags()
    parquet = InputSettings.of(ParquetFormat(categorical_columns=("zip",)))
    record = parquet.to_dict()
    assert (record["categorical_columns"], record["infer_categorical"]) == (["zip"], True)
    assert InputSettings.from_dict(record).reader(labels="any").categorical_columns == ("zip",)
    assert "--categorical-columns zip" in parquet.flags()


def test_records_from_before_read_their_input_as_it_was_read():
    """A CSV model recorded before --na-values read "NA" as text: a dead letter in a numeric column, the
    category "NA" in a categorical one (which it may have learned a weight for); it still does. A Parquet
    model recorded before text columns were categories left them out; it still does."""
    old_csv = {"format": "csv", "label_column": "y", "categorical_columns": ["c"], "bits": 18, "seed": 0}
    reader = InputSettings.from_dict(old_csv).reader(labels="binary")
    assert reader.na_values == ()
    parsed = reader.parse(b"y,x,c\n1,NA,red\n0,2,NA\n")
    assert [letter.reason for letter in parsed.dead_letters] == ["column 'x': not a number: 'NA'"]
    assert sorted(parsed.batch.names.values()) == ["c=NA", "x"]
    new = InputSettings.from_dict({**old_csv, "na_values": list(DEFAULT_NA_VALUES)}).reader(labels="binary")
    assert new.parse(b"y,x,c\n1,NA,red\n0,2,NA\n").dead_letters == []
    old_parquet = {"format": "parquet", "label_column": "label", "bits": 18, "seed": 0}
    reader = InputSettings.from_dict(old_parquet).reader(labels="binary")
    assert reader.infer_categorical is False
    table = pa.table({"label": [1.0], "x": [2.0], "city": ["a"]})
    assert list(reader.parse_table(table).batch.names.values()) == ["x"]
    assert InputSettings("parquet").reader(labels="binary").parse_table(table).batch.indptr.tolist() == [0, 2]
