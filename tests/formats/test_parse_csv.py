"""CSV parsing: columns, quoting, dead letters, configuration errors, and the reference parser."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from parsing_reference import assert_matches, expected_outcome, ref_csv, split_lines
from parsing_strategies import FUZZ_SETTINGS, PROPERTY_SETTINGS, csv_cases, multiclass_options

from polybeam.formats import CsvFormat
from polybeam.formats.records import InputFileError
from polybeam.learners.hashing import feature_slot, hash_string


def category_slot(column: str, value: str, seed: int = 0, bits: int = 18) -> int:
    return hash_string(value, hash_string(column, seed)) & ((1 << bits) - 1)


def test_reads_numeric_and_categorical_columns():
    data = b'y,size,color,w\n1,2.5,red,2\n0,,"dark, blue",\n-1,0,red,0.5\n'
    parsed = CsvFormat(label_column="y", weight_column="w", categorical_columns=("color",)).parse(data)
    batch = parsed.batch
    assert (parsed.records, parsed.skipped, len(batch), parsed.dead_letters) == (4, 1, 3, [])
    assert batch.labels.tolist() == [1.0, 0.0, -1.0]
    assert batch.weights.tolist() == [2.0, 1.0, 0.5]
    assert batch.indptr.tolist() == [0, 2, 4, 5]
    size, red, blue = feature_slot("size"), category_slot("color", "red"), category_slot("color", "dark, blue")
    assert batch.indices.tolist() == [size, red, size, blue, red]  # (an empty size: missing, the entry NaN)
    np.testing.assert_array_equal(batch.values, [2.5, 1.0, np.nan, 1.0, 1.0])
    assert batch.names == {size: "size", red: "color=red", blue: "color=dark, blue"}
    assert batch.row_ids.tolist() == [data.index(b"1,2.5"), data.index(b"0,,"), data.index(b"-1,0")]


def test_label_defaults_to_the_first_column_and_other_columns_are_numeric():
    batch = CsvFormat().parse(b"target,a,b\n3,1,2\n").batch
    assert batch.labels.tolist() == [3.0]
    assert batch.indices.tolist() == [feature_slot("a"), feature_slot("b")]


def test_quotes_escapes_and_padding():
    data = b'y, "a" ,b\n 1 , "2" , "x ""q"" , y" \r\n'
    parsed = CsvFormat(categorical_columns=("b",)).parse(data)
    assert parsed.dead_letters == []
    batch = parsed.batch
    assert batch.labels.tolist() == [1.0]
    assert batch.values.tolist() == [2.0, 1.0]
    assert batch.names[batch.indices[1]] == 'b=x "q" , y'


def test_ignored_columns_and_tab_delimiter():
    data = b"id\ty\tf\n7\t1\t0.5\n"
    batch = CsvFormat(delimiter="\t", label_column="y", ignore_columns=("id",)).parse(data).batch
    assert batch.indices.tolist() == [feature_slot("f")] and batch.values.tolist() == [0.5]


def test_without_header_columns_are_numbered():
    fmt = CsvFormat(has_header=False, label_column=2, categorical_columns=(0,))
    assert fmt.header_lines == 0
    parsed = fmt.parse(b"red,4,1\nblue,0,-1\n", offset=0)
    assert parsed.skipped == 0 and parsed.batch.labels.tolist() == [1.0, -1.0]
    red, blue = category_slot("1", "red"), category_slot("1", "blue")
    assert parsed.batch.names == {red: "1=red", feature_slot("2"): "2", blue: "1=blue"}


def test_later_blocks_need_the_header():
    fmt = CsvFormat(label_column="y")
    assert fmt.header_lines == 1
    block = b"1,2\n"
    parsed = fmt.parse(block, offset=100, first_line=7, header=b"x,y\n")
    assert parsed.skipped == 0 and parsed.batch.labels.tolist() == [2.0]
    assert parsed.batch.indices.tolist() == [feature_slot("x")]
    with pytest.raises(ValueError, match="header"):
        fmt.parse(block, offset=100)


def test_first_block_header_wins_even_when_header_is_passed():
    parsed = CsvFormat().parse(b"y,a\n1,2\n", header=b"y,a")
    assert parsed.skipped == 1 and len(parsed.batch) == 1


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"1,2", "expected 3 columns, found 2"),
        (b"1,2,3,4", "expected 3 columns, found 4"),
        (b'1,"2,3', "unbalanced double quote (a CSV record must fit on one line)"),
        (b'1,"2"x,3', "text after the closing double quote in column 'a': '\"2\"x'"),
        (b"1,abc,3", "column 'a': not a number: 'abc'"),
        (b"1, 2x ,3", "column 'a': not a number: ' 2x '"),
        (b"1,-Inf,3", "column 'a': non-finite value: '-Inf'"),  # (a NaN, NAN too, is a missing value)
        (b"1,2,1e999", "column 'b': non-finite value: '1e999'"),
        (b"x,2,3", "label column 'y': not a number: 'x'"),
        (b",2,3", "missing label"),
        (b"inf,2,3", "label must be a finite number"),
        (b'1,"2""",3', "column 'a': not a number: '\"2\"\"\"'"),
        (b"1,abc,3,4", "expected 3 columns, found 4"),  # the count is reported before a bad cell
    ],
)
def test_dead_letters_say_why(line, reason):
    data = b"y,a,b\n1,1,1\n" + line + b"\n0,0,0\n"
    parsed = CsvFormat().parse(data, source="c.csv")
    assert len(parsed.batch) == 2
    (letter,) = parsed.dead_letters
    assert (letter.reason, letter.line, letter.offset, letter.raw) == (reason, 3, 12, line.decode())


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"1,2,x", "weight column 'w': not a number: 'x'"),
        (b"1,2,-1", "weight column 'w': importance weight must be finite and >= 0, got '-1'"),
        (b"1,2,inf", "weight column 'w': importance weight must be finite and >= 0, got 'inf'"),
    ],
)
def test_weight_dead_letters(line, reason):
    parsed = CsvFormat(weight_column="w").parse(b"y,a,w\n" + line + b"\n1,2,\n")
    assert [letter.reason for letter in parsed.dead_letters] == [reason]
    assert parsed.batch.weights.tolist() == [1.0]


def test_missing_labels_are_kept_for_prediction():
    parsed = CsvFormat(labels="any").parse(b"y,a\n,1\n")
    assert len(parsed.batch) == 1 and np.isnan(parsed.batch.labels[0])


def test_blank_comment_and_header_only_blocks():
    parsed = CsvFormat().parse(b"y,a\n\n# note\n  \n")
    assert (parsed.records, parsed.skipped, len(parsed.batch)) == (4, 4, 0)
    assert CsvFormat().parse(b"").records == 0
    assert CsvFormat(has_header=False).parse(b"\n#x\n").skipped == 2


def test_unknown_first_line():
    parsed = CsvFormat().parse(b"1,2,3\n", offset=50, first_line=None, header=b"y,a")
    assert (parsed.dead_letters[0].line, parsed.dead_letters[0].offset) == (None, 50)


@pytest.mark.parametrize(
    "options, header, message",
    [
        ({"label_column": "target"}, b"y,a", "label_column 'target' is not a column"),
        ({"weight_column": 5}, b"y,a", "weight_column 5 is out of range"),
        ({"weight_column": "y"}, b"y,a", "the label and weight columns are the same"),
        ({"categorical_columns": ("y",)}, b"y,a", "cannot also be categorical or ignored"),
        ({"categorical_columns": ("a",), "ignore_columns": ("a",)}, b"y,a", "both categorical and ignored"),
        ({"categorical_columns": ("a",)}, b"y,a,a", "names 2 columns"),
        ({}, b"", "header line is empty"),
        ({}, b'y,"a', "unbalanced double quote"),
    ],
)
def test_configuration_errors_are_clear(options, header, message):
    with pytest.raises(ValueError, match=message):
        CsvFormat(**options).parse(b"1,2\n", offset=10, header=header)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"delimiter": ",,"}, "single ASCII character"),
        ({"delimiter": '"'}, "double quote"),
        ({"label_column": -1}, "0-based"),
        ({"categorical_columns": (1.5,)}, "header name"),
        ({"labels": "nope"}, "labels"),
    ],
)
def test_construction_errors(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        CsvFormat(**options)


def test_format_pickles_and_normalises_lists():
    fmt = CsvFormat(categorical_columns=["a", "b"], ignore_columns="c")
    assert fmt.categorical_columns == ("a", "b") and fmt.ignore_columns == ("c",)
    assert pickle.loads(pickle.dumps(fmt)) == fmt
    assert hash(fmt) == hash(pickle.loads(pickle.dumps(fmt)))


def test_bom_in_header_is_ignored():
    batch = CsvFormat(label_column="y").parse("\ufeffy,a\n1,2\n".encode()).batch
    assert batch.labels.tolist() == [1.0]


# -- missing values ------------------------------------------------------------------


def batch_arrays(batch) -> tuple:
    """A batch's arrays as lists, NaN as "nan" (equal to itself)."""

    def listed(array) -> list:
        return ["nan" if value != value else value for value in array.tolist()]

    return (
        listed(batch.labels),
        listed(batch.weights),
        batch.indptr.tolist(),
        batch.indices.tolist(),
        listed(batch.values),
        batch.names,
    )


@pytest.mark.parametrize("spelling", [b"NA", b"NaN", b"nan", b"?", b"#N/A", b"NULL", b"None", b'"NA"', b" NA "])
def test_missing_value_spellings_read_as_empty_cells(spelling):
    """NA, NaN, ?, ... (quoted or padded too) in a numeric, categorical, weight or ID cell: what an empty cell
    reads as, not a dead letter and not a category."""
    fmt = CsvFormat(label_column="y", weight_column="w", categorical_columns=("c",), id_column="id", labels="binary")
    template = b"id,y,x,c,w\n{m},1,{m},red,2\nr2,0,1.5,{m},{m}\nr3,1,{m},{m},0.5\n"
    spelled = fmt.parse(template.replace(b"{m}", spelling))
    empty = fmt.parse(template.replace(b"{m}", b""))
    assert spelled.dead_letters == [] and empty.dead_letters == []
    assert batch_arrays(spelled.batch) == batch_arrays(empty.batch)
    x, red = feature_slot("x"), category_slot("c", "red")  # (x missing: NaN; c missing: no category)
    assert batch_arrays(spelled.batch)[3:5] == ([x, red, x, x], ["nan", 1.0, 1.5, "nan"])
    assert spelled.batch.tags.tolist() == [None, "r2", "r3"]
    assert spelled.batch.weights.tolist() == [2.0, 1.0, 0.5]


def test_a_missing_label_is_a_dead_letter_in_training_and_kept_for_prediction():
    data = b"y,x\nNA,1\n?,2\n1,3\n"
    training = CsvFormat(labels="binary").parse(data)
    assert training.batch.labels.tolist() == [1.0]
    assert [(letter.line, letter.reason) for letter in training.dead_letters] == [
        (2, "missing label"),
        (3, "missing label"),
    ]
    prediction = CsvFormat(labels="any").parse(data).batch
    assert len(prediction) == 3 and np.isnan(prediction.labels[:2]).all()
    assert prediction.values.tolist() == [1.0, 2.0, 3.0]


def test_na_values_say_which_spellings_are_missing():
    data = b"y,x,c\n1,NA,NA\n0,-999,?\n"
    none = CsvFormat(categorical_columns=("c",), na_values=()).parse(data)
    assert [letter.reason for letter in none.dead_letters] == ["column 'x': not a number: 'NA'"]
    assert none.batch.names == {feature_slot("x"): "x", category_slot("c", "?"): "c=?"}  # "?" is a category
    sentinel = CsvFormat(categorical_columns=("c",), na_values=("-999", "?", "NA")).parse(data)
    assert sentinel.dead_letters == [] and sentinel.batch.indptr.tolist() == [0, 1, 2]  # x missing; c no category
    assert sentinel.batch.indices.tolist() == [feature_slot("x")] * 2 and np.isnan(sentinel.batch.values).all()
    assert CsvFormat(na_values=[" NA ", "", "NA"]).na_values == ("NA",)  # trimmed, no empty one, no repeats


def test_a_record_may_start_with_a_missing_value_spelled_with_a_hash():
    """#N/A first on a line (or after an empty first cell) is a missing value, not the start of a comment."""
    parsed = CsvFormat(label_column="y").parse(b"x,y\n#N/A,1\n# a comment\n#NA,0\n")
    assert (len(parsed.batch), parsed.skipped) == (2, 2) and parsed.batch.indptr.tolist() == [0, 1, 2]
    assert np.isnan(parsed.batch.values).all()
    tabbed = CsvFormat(label_column="y", delimiter="\t").parse(b"a\tx\ty\n\t#N/A\t1\n\t# not a value\t1\n")
    assert (len(tabbed.batch), tabbed.skipped) == (1, 2)


def test_a_category_that_is_blank_is_missing():
    batch = CsvFormat(categorical_columns=("c",)).parse(b'y,c\n1,"  "\n1,""\n1," x "\n').batch
    assert batch.indptr.tolist() == [0, 0, 0, 1] and batch.names == {category_slot("c", "x"): "c= x "}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"na_values": "NA"}, "not a single string"),
        ({"na_values": ("NA", 1)}, "must be strings"),
        ({"na_values": ("a\nb",)}, "line break"),
        (
            {"labels": "multiclass", "label_names": ("yes", "NA")},
            "label name 'NA' is also a spelling of a missing value",
        ),
    ],
)
def test_na_values_errors(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        CsvFormat(**options)
    if "label_names" in options:  # without NA among the spellings, "NA" may be a class
        parsed = CsvFormat(**options, na_values=("?",)).parse(b"y,x\nNA,1\n?,2\n")
        assert parsed.batch.labels.tolist() == [2.0] and parsed.dead_letters[0].reason == "missing label"


# -- class names ---------------------------------------------------------------------

ANIMALS = ("cat", "dog", 'say "hi"', " spaced ", "名前", "k15599")


def test_class_names_in_the_label_column():
    data = 'a,y\n1,dog\n2, cat \n3,"say ""hi"""\n4," spaced "\n5,名前\n6,3\n7,"dog"\n8,k15599\n'.encode()
    parsed = CsvFormat(label_column="y", labels="multiclass", label_names=ANIMALS).parse(data)
    assert parsed.dead_letters == []
    assert parsed.batch.labels.tolist() == [2.0, 1.0, 3.0, 4.0, 5.0, 3.0, 2.0, 6.0]
    assert parsed.batch.values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


@pytest.mark.parametrize(
    "cell, reason",
    [
        (b"cow", "label column 'y': unknown class label 'cow'; known classes are cat, dog, bird"),
        (b'" cat"', "label column 'y': unknown class label ' cat'; known classes are cat, dog, bird"),
        (b'"c""at"', "label column 'y': unknown class label 'c\"at'; known classes are cat, dog, bird"),
        (b"Dog", "label column 'y': unknown class label 'Dog'; known classes are cat, dog, bird"),
        (b"k97211", "label column 'y': unknown class label 'k97211'; known classes are cat, dog, bird"),
        (b"4", "label 4 is not a class of this task: the classes are cat, dog, bird"),
        (b"0", "label 0 is not a class of this task: the classes are cat, dog, bird"),
        (b"1.5", "label 1.5 is not a class of this task: the classes are cat, dog, bird"),
        (b"", "missing label"),
    ],
)
def test_class_label_dead_letters(cell, reason):
    data = b"a,y\n1,dog\n2," + cell + b"\n3,3\n"
    parsed = CsvFormat(label_column="y", labels="multiclass", label_names=("cat", "dog", "bird")).parse(data)
    assert parsed.batch.labels.tolist() == [2.0, 3.0]
    (letter,) = parsed.dead_letters
    assert (letter.reason, letter.line) == (reason, 3)


def test_unknown_class_is_reported_even_for_prediction_input():
    # Without a number or a name there is no label to keep; class bounds are not checked for "any".
    parsed = CsvFormat(labels="any", label_names=("cat", "dog")).parse(b"y,a\ncow,1\n7,2\n,3\ndog,4\n")
    assert parsed.batch.labels[[0, 2]].tolist() == [7.0, 2.0] and np.isnan(parsed.batch.labels[1])
    assert [letter.reason for letter in parsed.dead_letters] == [
        "label column 'y': unknown class label 'cow'; known classes are cat, dog"
    ]


def test_classes_bound_numeric_labels_without_names():
    parsed = CsvFormat(labels="multiclass", classes=2).parse(b"y,a\n1,1\n2,1\n3,1\ncat,1\n")
    assert parsed.batch.labels.tolist() == [1.0, 2.0]
    assert [letter.reason for letter in parsed.dead_letters] == [
        "label 3 is not a class of this task: the classes are 1 to 2",
        "label column 'y': not a number: 'cat'",
    ]


def test_class_names_in_later_blocks_and_without_header():
    fmt = CsvFormat(has_header=False, label_column=1, labels="multiclass", label_names=("cat", "dog"))
    parsed = fmt.parse(b"5,dog\n6,cat\n", offset=100, first_line=9, header=b"1,cat")
    assert parsed.batch.labels.tolist() == [2.0, 1.0] and parsed.batch.row_ids.tolist() == [100, 106]


# -- against the reference parser -------------------------------------------------


def format_for(spec: dict, options: dict) -> tuple[CsvFormat, list[str]]:
    """The CsvFormat a generated spec describes, and the column names it will see."""
    if spec["header"]:
        names = list(spec["names"])  # padded names are always quoted, so they keep their blanks
        refer = lambda i: names[i]  # noqa: E731
    else:
        names = [str(i + 1) for i in range(len(spec["names"]))]
        refer = lambda i: i  # noqa: E731
    kinds = spec["kinds"]
    weight = [i for i, k in enumerate(kinds) if k == "weight"]
    options = multiclass_options(options, spec["label_names"], options["classes"])
    fmt = CsvFormat(
        label_column=refer(kinds.index("label")),
        weight_column=refer(weight[0]) if weight else None,
        delimiter=spec["delimiter"],
        has_header=spec["header"],
        categorical_columns=tuple(refer(i) for i, k in enumerate(kinds) if k == "categorical"),
        ignore_columns=tuple(refer(i) for i, k in enumerate(kinds) if k == "ignore"),
        id_column=refer(kinds.index("id")) if "id" in kinds else None,
        **({} if spec.get("na_values") is None else {"na_values": spec["na_values"]}),
        **options,
    )
    return fmt, names


options = st.fixed_dictionaries(
    {
        "bits": st.sampled_from([3, 18]),
        "seed": st.integers(0, 2**32 - 1),
        "labels": st.sampled_from(["real", "any", "multiclass"]),
        "classes": st.sampled_from([0, 0, 3]),
    }
)


def check_against_reference(spec, data, options, *, offset=0, first_line=1, header=None):
    fmt, names = format_for(spec, options)
    parsed = fmt.parse(data, source="c", offset=offset, first_line=first_line, header=header)
    reference = ref_csv(
        data,
        names=names,
        kinds=spec["kinds"],
        bits=options["bits"],
        seed=options["seed"],
        delimiter=spec["delimiter"].encode(),
        header_first=spec["header"] and offset == 0,
        label_names=spec["label_names"],
        **({} if spec.get("na_values") is None else {"na_values": spec["na_values"]}),
    )
    examples = assert_matches(
        parsed,
        reference,
        labels=fmt.labels,
        source="c",
        offset=offset,
        first_line=first_line,
        exact_reasons=False,
        classes=fmt.classes,
        label_names=fmt.label_names,
    )
    expected_names = {}
    for line in examples:
        for slot, name in zip(line.slots, line.names):
            expected_names.setdefault(slot, name)
    assert (parsed.batch.names or {}) == expected_names
    return parsed, reference


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(csv_cases(), options, st.booleans())
def test_matches_reference_on_well_formed_blocks(case, options, later_block):
    spec, data = case
    header = None
    if later_block and spec["header"]:
        header, _, data = data.partition(b"\n")
    if not [line for _, line in split_lines(data)[1 if spec["header"] and not header else 0 :] if line.strip()]:
        return  # no records to learn the column count from
    offset = 1000 if later_block else 0
    parsed, reference = check_against_reference(spec, data, options, offset=offset, first_line=2, header=header)
    assert all(line.kind != "dead" or "unknown class label" in line.reason for line in reference), data


@PROPERTY_SETTINGS
@given(csv_cases(), options, st.booleans())
def test_an_id_column_is_each_examples_tag_and_never_a_feature(case, options, later_block):
    """Any ignored column of a generated block read as the ID column instead: the same examples, features and
    dead letters, and each example's ID is its cell's text (None when empty), like the reference's."""
    spec, data = case
    ignored = [i for i, kind in enumerate(spec["kinds"]) if kind == "ignore"]
    if not ignored:
        return
    spec = dict(spec, kinds=["id" if i == ignored[0] else kind for i, kind in enumerate(spec["kinds"])])
    header = None
    if later_block and spec["header"]:
        header, _, data = data.partition(b"\n")
    if not [line for _, line in split_lines(data)[1 if spec["header"] and not header else 0 :] if line.strip()]:
        return
    parsed, reference = check_against_reference(
        spec, data, options, offset=1000 if later_block else 0, first_line=2, header=header
    )
    fmt, _ = format_for(spec, options)
    kept = [
        line for line in expected_outcome(reference, fmt.labels, fmt.classes, fmt.label_names) if line.kind == "example"
    ]
    tags = [] if parsed.batch.tags is None else parsed.batch.tags.tolist()
    assert tags == [line.tag for line in kept]


def test_id_column_values_travel_with_their_examples():
    data = b'rid,y,colour,x\nr1,1,red,2\n,0,blue,3\n"r ""3""",1,,0\nr4,oops,red,1\n'
    fmt = CsvFormat(label_column="y", id_column="rid", categorical_columns=("colour",), labels="binary")
    parsed = fmt.parse(data)
    batch = parsed.batch
    assert batch.tags.tolist() == ["r1", None, 'r "3"']  # r4's label is a dead letter, its ID goes with it
    assert sorted(batch.names.values()) == ["colour=blue", "colour=red", "x"]  # the ID is no feature
    assert [letter.line for letter in parsed.dead_letters] == [5]
    assert batch.take([2, 0]).tags.tolist() == ['r "3"', "r1"]
    numbered = CsvFormat(has_header=False, label_column=1, id_column=0).parse(b"7,1,2\n8,0,3\n").batch
    assert numbered.tags.tolist() == ["7", "8"] and numbered.indices.tolist() == [feature_slot("3")] * 2


@pytest.mark.parametrize(
    "options",
    [
        {"id_column": "y"},
        {"id_column": "c", "categorical_columns": ("c",)},
        {"id_column": "c", "ignore_columns": ("c",)},
        {"id_column": "c", "key_column": "c"},
    ],
)
def test_the_id_column_has_no_other_role(options):
    with pytest.raises(ValueError, match="the ID column 'c'|the ID column 'y'"):
        CsvFormat(label_column="y", **options).parse(b"y,c,x\n1,a,2\n")


@pytest.mark.slow
@FUZZ_SETTINGS
@given(csv_cases(fuzz=True), options)
def test_fuzzed_input_never_raises_and_accounts_for_every_line(case, options):
    spec, data = case
    if not spec["header"]:
        # The column count comes from the first record, which fuzzing may break.
        spec = dict(spec, header=True)
        quoted = ('"' + name.replace('"', '""') + '"' for name in spec["names"])
        data = spec["delimiter"].join(quoted).encode() + b"\n" + data
    parsed, _ = check_against_reference(spec, data, options)
    assert parsed.records == len(split_lines(data))
    assert parsed.records == len(parsed.batch) + len(parsed.dead_letters) + parsed.skipped
    values = parsed.batch.values  # (NaN: a missing value)
    assert not np.isinf(values).any() and (values != 0).all()


def test_a_file_without_the_header_of_a_glob_says_its_first_line_is_a_record():
    """One file of a glob written without the header the others have: the error names the file, the column
    missing and that its first line is a record (was a ValueError a worker's traceback carried)."""
    fmt = CsvFormat(label_column="y")
    with pytest.raises(InputFileError) as refused:
        fmt.parse(b"1,1700536400,0.531,0.736\n0,1700540000,0.687,0.463\n", source="part-2.csv")
    assert str(refused.value) == (
        "part-2.csv: its first line looks like a record, not a header (every field a number: "
        "1,1700536400,0.531,0.736): every file of a CSV input must start with the same header line "
        "(--no-csv-header, has_header=False, if none has one)"
    )
    with pytest.raises(InputFileError) as refused:  # (a first line of mostly numbers: the column error says so)
        fmt.parse(b"1,1700536400,0.531,x\n0,1700540000,0.687,0.463\n", source="part-3.csv")
    assert str(refused.value) == (
        "part-3.csv: label_column 'y' is not a column; the columns are ['1', '1700536400', '0.531', 'x']; "
        "its first line looks like a record, not a header: every file of a CSV input must start with the same "
        "header line (--no-csv-header if none has one)"
    )
    with pytest.raises(
        InputFileError, match=r"^other.csv: label_column 'y' is not a column; the columns are \['a', 'b'\]$"
    ):
        fmt.parse(b"a,b\n1,2\n", source="other.csv")  # (a header of other names: nothing more to say)
