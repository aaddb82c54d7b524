"""RunInference with polybeam's handlers on the local runner: every input form, every output, keyed and per-key
models, a model swap through the model-metadata side input, and anytime prefixes; the numbers are Predict's."""

from __future__ import annotations

import math
import time

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.ml.inference.base import KeyedModelHandler, KeyModelMapping, ModelMetadata, RunInference
from apache_beam.transforms import trigger, window

from polybeam import datasets
from polybeam.formats.csv import CsvFormat
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.formats.vw import VWFormat
from polybeam.inference import AnytimeModelHandler, InferenceError, PolybeamModelHandler
from polybeam.learners.config import LearnerConfig
from polybeam.learners.linear import LinearLearner
from polybeam.pipelines.cli import main
from polybeam.selection.anytime import AnytimeModel
from polybeam.transforms.read import ReadExamples

RUNNER = "FnApiRunner"


def libsvm_dict(line: str) -> dict:
    """A LIBSVM line's features as {index: value} (the label dropped)."""
    return {int(i): float(v) for i, v in (token.split(":") for token in line.split()[1:])}


# What pipelines emit: the local runner runs in this process, and a module's function is pickled by
# reference, so _keep reaches these very lists.
COLLECTED: dict[str, list] = {}


def _keep(element, name: str):
    COLLECTED[name].append(element)


def collect(pcoll, out: list) -> None:
    """Append ``pcoll``'s elements to ``out`` when the pipeline runs."""
    name = f"collected{len(COLLECTED)}"
    COLLECTED[name] = out
    pcoll | f"Collect{name}" >> beam.Map(_keep, name)


@pytest.fixture(scope="module")
def spam(tmp_path_factory):
    """Spam's split, a logistic model and one trained on the flipped labels, their parsed test batch."""
    folder = tmp_path_factory.mktemp("spam")
    train, test = datasets.write_split("spam", str(folder))
    batch = lambda path: LibsvmFormat(labels="any").parse(open(path, "rb").read(), source=path).batch  # noqa: E731
    train_batch, test_batch = batch(train), batch(test)
    models = {}
    for name, sign in (("a", 1.0), ("b", -1.0)):
        flipped = train_batch.with_labels(sign * train_batch.labels) if sign < 0 else train_batch
        model = LinearLearner(LearnerConfig(loss="logistic")).fit(flipped).to_model()
        models[name] = str(folder / f"{name}.model")
        model.save(models[name])
    lines = open(test).read().splitlines()
    return {
        "train": train,
        "test": test,
        "models": models,
        "batch": test_batch,
        "lines": lines,
        "dicts": [libsvm_dict(line) for line in lines],
    }


def model_of(path):
    from polybeam.transforms.model_io import read_model

    return read_model(path)


@pytest.mark.slow
def test_dicts_lines_and_batches_get_predicts_numbers(spam, tmp_path):
    path = spam["models"]["a"]
    expected = model_of(path).predict(spam["batch"])
    from_dicts, from_lines, from_batches = [], [], []
    with beam.Pipeline(RUNNER) as p:
        collect(p | "Dicts" >> beam.Create(spam["dicts"]) | "D" >> RunInference(PolybeamModelHandler(path)), from_dicts)
        collect(
            p
            | "Lines" >> beam.Create(spam["lines"])
            | "L" >> RunInference(PolybeamModelHandler(path, input_format="libsvm", max_batch_size=64)),
            from_lines,
        )
        collect(
            (p | ReadExamples(spam["test"], labels="any")).examples
            | "B" >> RunInference(PolybeamModelHandler(path, input_format="batch")),
            from_batches,
        )
    by_dict = {tuple(sorted(r.example.items())): r.inference for r in from_dicts}
    got = np.array([by_dict[tuple(sorted(d.items()))] for d in spam["dicts"]])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    by_line = {r.example: r.inference for r in from_lines}
    np.testing.assert_allclose([by_line[line] for line in spam["lines"]], expected, rtol=0, atol=1e-12)
    assert {r.model_id for r in from_lines} == {path}
    rows = {}
    for result in from_batches:
        assert len(result.inference) == len(result.example)
        rows.update(zip(result.example.row_ids.tolist(), result.inference.tolist()))
    np.testing.assert_allclose([rows[r] for r in spam["batch"].row_ids.tolist()], expected, rtol=0, atol=1e-12)

    # ... and they are what `polybeam predict` writes.
    assert main(["predict", "--input", spam["test"], "--model", path, "--output", str(tmp_path / "p")]) == 0
    written = {}
    for file in [tmp_path / "p"]:  # (one file, named as asked)
        for line in open(file).read().splitlines()[1:]:
            prediction, _, _, row, _ = line.split("\t")
            written[int(row)] = float(prediction)
    np.testing.assert_allclose([written[r] for r in spam["batch"].row_ids.tolist()], expected, rtol=1e-8)


def test_outputs_score_probability_and_label(spam):
    path = spam["models"]["a"]
    model = model_of(path)
    margins = model.margins(spam["batch"])
    results = {}
    with beam.Pipeline(RUNNER) as p:
        examples = p | beam.Create(list(enumerate(spam["dicts"][:200])))
        for output in ("score", "probability", "label"):
            collect(
                examples | output >> RunInference(KeyedModelHandler(PolybeamModelHandler(path, output=output))),
                results.setdefault(output, []),
            )

    def in_order(output):
        return [result.inference for _, result in sorted(results[output], key=lambda pair: pair[0])]

    np.testing.assert_allclose(in_order("score"), margins[:200], atol=1e-12)
    np.testing.assert_allclose(in_order("probability"), 1 / (1 + np.exp(-margins[:200])), atol=1e-12)
    assert in_order("label") == [1 if m >= 0 else -1 for m in margins[:200]]


def test_per_key_models_and_a_keyed_handler(spam):
    a, b = spam["models"]["a"], spam["models"]["b"]
    expected = {"a": model_of(a).predict(spam["batch"]), "b": model_of(b).predict(spam["batch"])}
    keyed = [("a" if i % 2 else "b", i) for i in range(len(spam["dicts"]))]
    per_key, one_model = [], []
    with beam.Pipeline(RUNNER) as p:
        examples = p | beam.Create(keyed) | beam.MapTuple(lambda key, i, dicts=spam["dicts"]: (key, (i, dicts[i])))
        mapping = KeyedModelHandler(
            [KeyModelMapping(["a"], PolybeamModelHandler(a)), KeyModelMapping(["b"], PolybeamModelHandler(b))]
        )
        collect(
            examples | "Unpack" >> beam.MapTuple(lambda key, pair: (key, pair[1])) | "PerKey" >> RunInference(mapping),
            per_key,
        )
        collect(
            examples
            | "Unpack2" >> beam.MapTuple(lambda key, pair: (key, pair[1]))
            | "OneModel" >> RunInference(KeyedModelHandler(PolybeamModelHandler(a))),
            one_model,
        )
    index_of = {tuple(sorted(d.items())): i for i, d in enumerate(spam["dicts"])}
    for key, result in per_key:
        i = index_of[tuple(sorted(result.example.items()))]
        assert result.inference == pytest.approx(expected[key][i], abs=1e-12)
        assert result.model_id == spam["models"][key]
    assert len(per_key) == len(one_model) == len(spam["dicts"])
    for _key, result in one_model:
        assert result.inference == pytest.approx(
            expected["a"][index_of[tuple(sorted(result.example.items()))]], abs=1e-12
        )


def test_the_model_is_swapped_mid_pipeline_through_the_side_input(spam):
    """As Beam's own side-input test does in batch: windows of examples, and a ModelMetadata per window."""
    a, b = spam["models"]["a"], spam["models"]["b"]
    predictions = {path: model_of(path).predict(spam["batch"]) for path in (a, b)}
    start = math.floor(time.time()) - 60
    interval = 10
    picks = [0, 1, 2, 3]  # one example per window
    main_input = [(start + interval * w + 1, picks[w]) for w in range(4)]
    side = [
        (start + 1, ModelMetadata(model_id="", model_name="default")),
        (start + interval + 1, ModelMetadata(model_id=b, model_name="b")),
        (start + 2 * interval + 1, ModelMetadata(model_id=a, model_name="a")),
        (start + 3 * interval + 1, ModelMetadata(model_id=b, model_name="b")),
    ]

    class Emit(beam.DoFn):
        def process(self, element):
            yield from element

    def windowed(pcoll, label):
        return (
            pcoll
            | f"{label}Stamp" >> beam.Map(lambda x: window.TimestampedValue(x[1], x[0]))
            | f"{label}Window"
            >> beam.WindowInto(window.FixedWindows(interval), accumulation_mode=trigger.AccumulationMode.DISCARDING)
            | f"{label}Key" >> beam.Map(lambda x: ("k", x))
            | f"{label}Group" >> beam.GroupByKey()
            | f"{label}Values" >> beam.Map(lambda x: x[1])
            | f"{label}Emit" >> beam.ParDo(Emit())
        )

    results = []
    with beam.Pipeline(RUNNER) as p:
        models = windowed(p | "Side" >> beam.Create(side), "Side")
        examples = windowed(p | "Main" >> beam.Create(main_input), "Main")
        keyed = examples | beam.Map(lambda i, dicts=spam["dicts"]: (i, dicts[i]))
        collect(keyed | RunInference(KeyedModelHandler(PolybeamModelHandler(a)), model_metadata_pcoll=models), results)
    got = {i: (result.model_id, result.inference) for i, result in results}
    assert [got[i][0] for i in picks] == [a, b, a, b]
    for i in picks:
        assert got[i][1] == pytest.approx(predictions[got[i][0]][i], abs=1e-12)
    assert predictions[a][1] != pytest.approx(predictions[b][1], abs=1e-3)  # the swap shows in the numbers


def test_vw_and_csv_lines_hash_as_their_readers(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    colours = rng.choice(["red", "blue", "green"], size=300)
    y = np.where(x[:, 0] - x[:, 1] + (colours == "red") > 0, 1, -1)
    vw_lines = [f"{label} | a:{r[0]:.6f} b:{r[1]:.6f} c:{r[2]:.6f} colour={c}" for label, r, c in zip(y, x, colours)]
    csv_lines = [f"{label},{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{c}" for label, r, c in zip(y, x, colours)]
    vw_batch = VWFormat(labels="any").parse("\n".join(vw_lines).encode() + b"\n").batch
    csv_format = CsvFormat(labels="any", categorical_columns=("colour",))
    csv_batch = csv_format.parse(("y,a,b,c,colour\n" + "\n".join(csv_lines) + "\n").encode()).batch
    paths = {}
    for name, batch in (("vw", vw_batch), ("csv", csv_batch)):
        paths[name] = str(tmp_path / f"{name}.model")
        LinearLearner(LearnerConfig(loss="logistic")).fit(batch).to_model().save(paths[name])
    dicts = [{"a": r[0], "b": r[1], "c": r[2], "colour": str(c)} for r, c in zip(x.round(6), colours)]
    got = {}
    with beam.Pipeline(RUNNER) as p:
        collect(
            p
            | "VW" >> beam.Create(vw_lines)
            | "RV" >> RunInference(PolybeamModelHandler(paths["vw"], input_format="vw")),
            got.setdefault("vw", []),
        )
        handler = PolybeamModelHandler(
            paths["csv"],
            input_format="csv",
            format_options={"columns": ["y", "a", "b", "c", "colour"], "categorical_columns": ["colour"]},
        )
        collect(p | "CSV" >> beam.Create(csv_lines) | "RC" >> RunInference(handler), got.setdefault("csv", []))
        collect(
            p
            | "Dicts" >> beam.Create(list(enumerate(dicts)))
            | "RD" >> RunInference(KeyedModelHandler(PolybeamModelHandler(paths["csv"]))),
            got.setdefault("dict", []),
        )
    vw_expected = model_of(paths["vw"]).predict(vw_batch)
    csv_expected = model_of(paths["csv"]).predict(csv_batch)
    np.testing.assert_allclose(
        [dict((r.example, r.inference) for r in got["vw"])[line] for line in vw_lines], vw_expected, atol=1e-12
    )
    np.testing.assert_allclose(
        [dict((r.example, r.inference) for r in got["csv"])[line] for line in csv_lines], csv_expected, atol=1e-12
    )
    # A mapping with the CSV's column names is the CSV row (a str value is a category).
    np.testing.assert_allclose(
        [r.inference for _, r in sorted(got["dict"], key=lambda pair: pair[0])], csv_expected, atol=1e-12
    )


def test_softmax_labels_are_class_names(tmp_path):
    rows = [(k, {k: 1.0, 9: 0.5}) for k in (1, 2, 3)] * 40
    from polybeam.learners.batch import ExampleBatch

    config = LearnerConfig(loss="softmax", class_names=("cat", "dog", "emu"))
    path = str(tmp_path / "s.model")
    LinearLearner(config).fit(ExampleBatch.from_rows(rows), passes=3).to_model().save(path)
    results = []
    with beam.Pipeline(RUNNER) as p:
        collect(
            p
            | beam.Create([{1: 1.0, 9: 0.5}, {3: 1.0, 9: 0.5}])
            | RunInference(PolybeamModelHandler(path, output="label")),
            results,
        )
    assert sorted((tuple(r.example), r.inference) for r in results) == [((1, 9), "cat"), ((3, 9), "emu")]


def test_what_cannot_be_scored_says_why(spam):
    with pytest.raises(ValueError, match="input_format must be one of"):
        PolybeamModelHandler(spam["models"]["a"], input_format="json")
    with pytest.raises(ValueError, match="output must be one of"):
        PolybeamModelHandler(spam["models"]["a"], output="odds")
    with pytest.raises(ValueError, match="needs format_options"):  # (a model may record its CSV header: on load)
        PolybeamModelHandler(spam["models"]["a"], input_format="csv", format_options={"delimiter": ";"}).load_model()
    handler = PolybeamModelHandler(spam["models"]["a"], input_format="libsvm")
    model = handler.load_model()
    with pytest.raises(InferenceError, match="example 1 .*missing label"):
        list(handler.run_inference(["1 3:1", "3:1 4:2"], model))
    with pytest.raises(InferenceError, match="feature 'x' has value"):
        list(PolybeamModelHandler(spam["models"]["a"]).run_inference([{"x": [1]}], model))
    squared = LinearLearner(LearnerConfig(loss="squared")).fit(spam["batch"]).to_model()
    with pytest.raises(InferenceError, match="needs a logistic or softmax model"):
        list(PolybeamModelHandler("x", output="probability").run_inference([{1: 1.0}], squared))
    with pytest.raises(ValueError, match="takes no inference_args"):
        handler.validate_inference_args({"budget": 3})


def test_bad_batches_go_to_the_dead_letters_with_exception_handling(spam):
    path = spam["models"]["a"]
    good, bad = [], []
    with beam.Pipeline(RUNNER) as p:
        main_output, failed = (
            p
            | beam.Create(["1 3:1 7:2", "not libsvm"])
            | RunInference(
                PolybeamModelHandler(path, input_format="libsvm", max_batch_size=1)
            ).with_exception_handling()
        )
        collect(main_output, good)
        collect(failed.failed_inferences, bad)
    assert len(good) == 1 and good[0].example == "1 3:1 7:2" and len(bad) == 1


@pytest.fixture(scope="module")
def prefixes(spam, tmp_path_factory):
    path = tmp_path_factory.mktemp("anytime") / "omp.jsonl"
    assert (
        main(
            ["sequence", "--input", spam["train"], "--groups", datasets.group_spec_path("spam"), "--output", str(path)]
        )
        == 0
    )
    return str(path)


def test_anytime_handler_picks_the_prefix_from_inference_args(spam, prefixes):
    model = AnytimeModel.load(prefixes)
    order = [prefix["group"] for prefix in model.prefixes]
    cases = {"budget": {"budget": 12.5}, "groups": {"groups": order[:2] + order[3:5]}, "all": None}
    results = {}
    with beam.Pipeline(RUNNER) as p:
        examples = p | beam.Create(list(enumerate(spam["dicts"][:100])))
        for name, args in cases.items():
            collect(
                examples | name >> RunInference(KeyedModelHandler(AnytimeModelHandler(prefixes)), inference_args=args),
                results.setdefault(name, []),
            )
    batch = spam["batch"]
    for name, args in cases.items():
        length = model.prefix_length(**(args or {}))
        expected = model.predict(batch, prefix=length)[:100]
        got = sorted(results[name], key=lambda pair: pair[0])
        np.testing.assert_allclose([r.inference for _, r in got], expected, atol=1e-12)
        assert {r.model_id for _, r in got} == {f"{prefixes}#prefix={length}"}
    assert model.prefix_length(groups=cases["groups"]["groups"]) == 2
    with pytest.raises(ValueError, match="budget or groups"):
        AnytimeModelHandler(prefixes).validate_inference_args({"cost": 3})


def test_an_example_of_two_lines_is_refused(spam):
    handler = PolybeamModelHandler(spam["models"]["a"], input_format="libsvm")
    model = handler.load_model()
    with pytest.raises(InferenceError, match="one line per example"):
        list(handler.run_inference(["1 3:1\n-1 4:1", "1 5:1"], model))
    assert len(list(handler.run_inference([b"1 3:1", "1 5:1"], model))) == 2  # bytes and str lines mixed


# -- a model that records its input: its handler reads as it was read, and results carry IDs -----------------


@pytest.fixture(scope="module")
def csv_model(tmp_path_factory):
    """A model ``polybeam train`` wrote from ';'-separated CSV (ID, ignored, categorical columns), its test rows and
    ``polybeam predict``'s numbers for them, by ID."""
    folder = tmp_path_factory.mktemp("csv")
    rows = [(f"r{i}", 1 if i % 3 else -1, "red" if i % 3 else "blue", i % 5, f"n{i}") for i in range(300)]
    lines = [";".join(map(str, row)) for row in rows]
    header = "rid;y;colour;size;notes\n"
    (folder / "train.csv").write_text(header + "\n".join(lines[:240]) + "\n")
    (folder / "test.csv").write_text(header + "\n".join(lines[240:]) + "\n")
    model = str(folder / "m.model")
    assert (
        main(
            [
                "train",
                "--input",
                str(folder / "train.csv"),
                "--format",
                "csv",
                "--csv-delimiter",
                ";",
                "--label-column",
                "y",
                "--categorical-columns",
                "colour",
                "--id-column",
                "rid",
                "--ignore-columns",
                "notes",
                "--loss",
                "logistic",
                "--model",
                model,
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "predict",
                "--input",
                str(folder / "test.csv"),
                "--model",
                model,
                "--output",
                str(folder / "p"),
                "--num-shards",
                "1",
            ]
        )
        == 0
    )
    predicted = {}
    for line in open(folder / "p-00000-of-00001").read().splitlines()[1:]:
        fields = line.split("\t")
        predicted[fields[4]] = float(fields[0])
    return {"model": model, "rows": rows[240:], "lines": lines[240:], "predicted": predicted}


@pytest.mark.slow
def test_a_recording_model_reads_csv_lines_and_whole_rows_as_it_was_trained(csv_model):
    """No format options: CSV lines (the model knows its delimiter and header), and mappings of whole rows (its
    label, ID and ignored columns are no features; numbers in its categorical column are categories), give
    ``polybeam predict``'s numbers, each result with its example's ID."""
    dicts = [dict(zip(["rid", "y", "colour", "size", "notes"], row)) for row in csv_model["rows"]]
    got = {"lines": [], "dicts": []}
    with beam.Pipeline(RUNNER) as p:
        collect(
            p
            | "Lines" >> beam.Create(csv_model["lines"])
            | "RL" >> RunInference(PolybeamModelHandler(csv_model["model"], input_format="csv")),
            got["lines"],
        )
        collect(
            p | "Dicts" >> beam.Create(dicts) | "RD" >> RunInference(PolybeamModelHandler(csv_model["model"])),
            got["dicts"],
        )
    for name, results in got.items():
        assert sorted(result.id for result in results) == sorted(csv_model["predicted"]), name
        for result in results:
            assert result.inference == pytest.approx(csv_model["predicted"][result.id], abs=1e-9), name
            example, _, model_id = result  # still a PredictionResult of three fields
            assert model_id == csv_model["model"]


def test_format_options_say_otherwise(csv_model):
    """An option given wins over the model's (here the ID column); ExampleBatch input gets its batch's IDs."""
    handler = PolybeamModelHandler(csv_model["model"], format_options={"id_column": "y"})
    model = handler.load_model()
    (result,) = handler.run_inference([{"rid": "r1", "y": 1, "colour": "red", "size": 2}], model)
    assert result.id == 1  # the mapping's own value
    batch = (
        CsvFormat(
            labels="any",
            delimiter=";",
            label_column="y",
            id_column="rid",
            categorical_columns=("colour",),
            ignore_columns=("notes",),
        )
        .parse(("rid;y;colour;size;notes\n" + "\n".join(csv_model["lines"]) + "\n").encode())
        .batch
    )
    batch_handler = PolybeamModelHandler(csv_model["model"], input_format="batch")
    (whole,) = batch_handler.run_inference([batch], batch_handler.load_model())
    assert whole.id.tolist() == [row[0] for row in csv_model["rows"]]
    np.testing.assert_allclose(whole.inference, [csv_model["predicted"][rid] for rid in whole.id], atol=1e-9)


def test_lines_the_model_cannot_know_fail_on_load_naming_its_format(csv_model):
    with pytest.raises(
        InferenceError,
        match=r"input_format='libsvm' cannot be the input of the model .*m\.model: it "
        r"was trained on csv input \(--format csv --label-column y",
    ):
        PolybeamModelHandler(csv_model["model"], input_format="libsvm").load_model()


def test_vw_tags_are_the_results_ids(tmp_path):
    lines = [f"{1 if i % 2 else -1} 'ex{i}|f a:{i % 2}" for i in range(40)]
    batch = VWFormat(labels="binary").parse("\n".join(lines).encode() + b"\n").batch
    path = str(tmp_path / "vw.model")
    LinearLearner(LearnerConfig(loss="logistic")).fit(batch).to_model().save(path)
    handler = PolybeamModelHandler(path, input_format="vw")
    results = handler.run_inference(lines[:3], handler.load_model())
    assert [result.id for result in results] == ["ex0", "ex1", "ex2"]
    assert "id='ex0'" in repr(results[0])


def test_format_options_that_cannot_apply_fail_at_construction(spam):
    with pytest.raises(ValueError, match=r"format_options \['delimiter'\] do not apply to mappings"):
        PolybeamModelHandler(spam["models"]["a"], format_options={"delimiter": ";"})
    with pytest.raises(ValueError, match="'columns' is for input_format='csv'"):
        PolybeamModelHandler(spam["models"]["a"], input_format="vw", format_options={"columns": ["a"]})


def test_mappings_are_read_as_the_models_training_input_was():
    """A row of any source (a YAML step's, a dict) scores like its CSV line: the model's label, ID and ignored
    columns are not features and its categorical columns' numbers are categories, as its training read them."""
    import dataclasses as dc

    from polybeam.formats.formats import make_format
    from polybeam.formats.input_settings import InputSettings
    from polybeam.learners.config import LearnerConfig
    from polybeam.learners.linear import LinearLearner
    from polybeam.transforms.inference import mappings_batch

    reader = make_format(
        "csv",
        label_column="y",
        categorical_columns=("size",),
        id_column="rid",
        ignore_columns=("notes",),
        labels="binary",
    )
    text = "rid,y,size,weight,notes\n" + "".join(
        f"r{i},{1 if i % 3 else -1},{i % 4},{i % 7 / 7},n{i}\n" for i in range(120)
    )
    batch = reader.parse(text.encode()).batch
    model = LinearLearner(LearnerConfig(loss="logistic")).fit([batch] * 5).to_model()
    model = dc.replace(model, metadata={**model.metadata, "input": InputSettings.of(reader).to_dict()})
    rows = [
        {"rid": f"r{i}", "y": 1, "size": i % 4, "weight": i % 7 / 7, "notes": f"n{i}", "extra": "x"} for i in range(120)
    ]
    scored = model.predict(mappings_batch(model, rows, ignore=("extra",)))
    np.testing.assert_allclose(scored, model.predict(batch), rtol=1e-12)
    # Without the model's record, the ID, label and notes would be features and the sizes numbers.
    unread = dc.replace(model, metadata={key: value for key, value in model.metadata.items() if key != "input"})
    assert not np.allclose(unread.predict(mappings_batch(unread, rows, ignore=("extra",))), scored)


@pytest.mark.slow
def test_keyed_model_handler_serves_the_keys_of_a_per_key_folder(tmp_path):
    from polybeam.datasets.per_key import PerKeyTask, write_per_key
    from polybeam.inference import PerKeyModelHandler, keyed_model_handler

    files = write_per_key(str(tmp_path), PerKeyTask(keys=3, features=4, seed=2), train_per_key=200, test_per_key=20)
    folder = str(tmp_path / "by_tag")
    assert (
        main(
            [
                "train",
                "--input",
                files["train_vw"],
                "--format",
                "vw",
                "--loss",
                "logistic",
                "--key",
                "tag",
                "--model",
                folder,
                "--quiet",
            ]
        )
        == 0
    )
    lines = open(files["test_vw"]).read().splitlines()
    pairs = [(line.split("'")[1].split()[0], line) for line in lines]  # (the VW tag, the line)
    keyed, per_key, two = [], [], []
    with beam.Pipeline(RUNNER) as p:
        examples = p | beam.Create(pairs)
        collect(examples | "Keyed" >> RunInference(keyed_model_handler(folder, input_format="vw")), keyed)
        collect(examples | "PerKey" >> RunInference(PerKeyModelHandler(folder, input_format="vw")), per_key)
        only = examples | beam.Filter(lambda pair: pair[0] in ("key0", "key2"))
        collect(
            only
            | "Two"
            >> RunInference(
                keyed_model_handler(
                    folder, ["key0", "key2"], input_format="vw", output="label", max_models_per_worker_hint=1
                )
            ),
            two,
        )
    # Beam's KeyedModelHandler scores every key with its own model, as PerKeyModelHandler does.
    by_line = {result.example: (key, float(result.inference), result.model_id) for key, result in per_key}
    assert len(keyed) == len(per_key) == len(pairs) == 60
    for key, result in keyed:
        assert (key, pytest.approx(float(result.inference), abs=1e-12), f"{folder}#{key}") == by_line[result.example]
        assert result.id == key  # the VW tag
    assert len(two) == 40 and {key for key, _ in two} == {"key0", "key2"}
    assert all((result.inference == 1) == (by_line[result.example][1] >= 0.5) for _, result in two)
    with pytest.raises(ValueError, match=r"no model for the keys \['nope'\]"):
        keyed_model_handler(folder, ["key1", "nope"])
    single = str(tmp_path / "one.model")
    assert main(["train", "--input", files["train_vw"], "--format", "vw", "--model", single, "--quiet"]) == 0
    with pytest.raises(FileNotFoundError, match="index.json"):
        keyed_model_handler(single)
    with pytest.raises(InferenceError, match="no model for key 'nope'"):
        PolybeamModelHandler(folder, key="nope").load_model()
