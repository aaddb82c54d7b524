"""Every door agrees: the same generated table through each way into polybeam gives the same model and
the same predictions, or the same refusal.

Training doors: ``polybeam train`` on the table as CSV, Parquet, JSON Lines, Avro and (when it is all numbers) LIBSVM;
``ReadExamples | Train`` from Python; the scikit-learn estimators fitted on the pandas frame. Scoring doors:
each model's own (the estimator's ``decision_function``), RunInference on dicts and on ``beam.Row``, and
mappings read through the model's columns (Beam YAML's and RunInference's reading). Tables hold numeric
columns with missing values, text columns with missing values, and labels in each encoding users write:
-1/+1, 0/1, 1/2, no/yes, classes from 0, class words, real values.
"""

import json
import math

import apache_beam as beam
import numpy as np
import pandas as pd
import pytest
from apache_beam.ml.inference.base import RunInference
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from polybeam.learners.model import Model
from polybeam.pipelines.cli import main
from polybeam.sklearn import PolybeamClassifier, PolybeamRegressor
from polybeam.transforms import ReadExamples, Train, WriteModel
from polybeam.transforms.inference import PolybeamModelHandler, mappings_batch
from tests.transforms.test_inference import collect

pytestmark = pytest.mark.slow

# (label kind, the labels as users write them, loss, classes)
ENCODINGS = {
    "plus-minus": ("binary", [-1, 1], "logistic", 0),
    "zero-one": ("binary", [0, 1], "logistic", 0),
    "one-two": ("binary", [1, 2], "logistic", 0),
    "no-yes": ("binary", ["no", "yes"], "logistic", 0),
    "from-zero": ("multiclass", [0, 1, 2], "softmax", 3),
    "words": ("multiclass", ["cat", "dog", "emu"], "softmax", 3),
    "real": ("real", None, "squared", 0),
    "quantile": ("real", None, "quantile", 0),
    "counts": ("count", None, "poisson", 0),
}
# A loss's own number, given at every door.
LOSS_SETTINGS = {"quantile": {"quantile_tau": 0.8}}
COLOURS = ["red", "green", "blue", "dark red"]


@st.composite
def tables(draw):
    """A frame of 40-90 rows: 1-3 numeric columns, 0-2 text columns, missing values, a label column ``y``."""
    rows = draw(st.integers(40, 90))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    numeric = draw(st.integers(1, 3))
    text = draw(st.integers(0, 2))
    encoding = draw(st.sampled_from(sorted(ENCODINGS)))
    frame = {}
    for j in range(numeric):
        values = np.round(rng.normal(3.0 * j, 1.0 + j, rows), 3)
        values[rng.random(rows) < 0.15] = np.nan
        frame[f"x{j}"] = values
    for j in range(text):
        values = rng.choice(COLOURS, rows).astype(object)
        values[rng.random(rows) < 0.1] = None
        frame[f"c{j}"] = values
    signal = np.nan_to_num(frame["x0"] - 0.0) + (rng.random(rows) - 0.5)
    kind, labels, _, _ = ENCODINGS[encoding]
    if kind == "real":
        y = np.round(2.0 * signal + 1.0, 4)
    elif kind == "count":
        y = rng.poisson(np.exp(np.clip(0.3 * signal, -3.0, 3.0))).astype(float)
    else:
        ranks = np.argsort(np.argsort(signal)) * len(labels) // rows
        y = np.array(labels, dtype=object)[ranks]
    return pd.DataFrame(frame).assign(y=pd.Series(list(y), name="y")), encoding


def cli(*argv) -> tuple[int, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in argv])
    return code, out.getvalue() + err.getvalue()


def train_options(frame, encoding) -> list:
    kind, _, loss, classes = ENCODINGS[encoding]
    options = ["--loss", loss] + (["--classes", classes] if classes else [])
    for name, value in LOSS_SETTINGS.get(loss, {}).items():
        options += [f"--{name.replace('_', '-')}", value]
    return options + ["--quiet"]


def train_doors(frame: pd.DataFrame, encoding: str, folder) -> dict[str, Model]:
    """A model per training door (a door that refuses gives its one-line message instead)."""
    kind, _, loss, classes = ENCODINGS[encoding]
    text = [column for column in frame.columns if column.startswith("c")]
    models = {}
    csv = folder / "table.csv"
    frame.to_csv(csv, index=False)
    categorical = ["--categorical-columns", ",".join(text)] if text else []
    code, said = cli("train", "--input", csv, "--format", "csv", "--label-column", "y", *categorical,
                     *train_options(frame, encoding), "--model", folder / "csv.model")  # fmt: skip
    models["cli csv"] = Model.load(str(folder / "csv.model")) if code == 0 else said.strip().splitlines()[-1]
    parquet = folder / "table.parquet"
    frame.to_parquet(parquet, index=False)
    code, said = cli("train", "--input", parquet, "--format", "parquet", "--label-column", "y",
                     *train_options(frame, encoding), "--model", folder / "parquet.model")  # fmt: skip
    models["cli parquet"] = Model.load(str(folder / "parquet.model")) if code == 0 else said.strip().splitlines()[-1]
    jsonl = folder / "table.jsonl"  # (a missing value is null; text is text, a category by its type)
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in json_rows(frame)))
    code, said = cli("train", "--input", jsonl, "--format", "jsonl", "--label-column", "y",
                     *train_options(frame, encoding), "--model", folder / "jsonl.model")  # fmt: skip
    models["cli jsonl"] = Model.load(str(folder / "jsonl.model")) if code == 0 else said.strip().splitlines()[-1]
    avro = folder / "table.avro"  # (typed by its schema: a missing value is null, text a string)
    write_avro(frame, avro)
    code, said = cli("train", "--input", avro, "--format", "avro", "--label-column", "y",
                     *train_options(frame, encoding), "--model", folder / "avro.model")  # fmt: skip
    models["cli avro"] = Model.load(str(folder / "avro.model")) if code == 0 else said.strip().splitlines()[-1]
    with beam.Pipeline(runner="FnApiRunner") as p:
        read = p | ReadExamples(
            str(csv), format="csv", label_column="y", categorical_columns=tuple(text), labels=kind,
            **({"classes": classes} if classes else {}),
        )  # fmt: skip
        settings = {**({"classes": classes} if classes else {}), **LOSS_SETTINGS.get(loss, {})}
        read | Train(loss=loss, **settings) | WriteModel(str(folder / "py.model"))
    models["python"] = Model.load(str(folder / "py.model"))
    numbers = [column for column in frame.columns if column.startswith("x")]
    if not text and (kind != "multiclass" or encoding == "from-zero"):
        if all(isinstance(label, (int, float, np.integer, np.floating)) for label in frame["y"]):
            libsvm = folder / "table.libsvm"  # (features numbered 1, 2, ... in column order; missing: j:nan)
            values, labels = frame[numbers].to_numpy(dtype=float), frame["y"].astype(float)
            libsvm.write_text("".join(  # (scikit-learn's dump_svmlight_file takes no NaN)
                " ".join([repr(float(label))] + [f"{j + 1}:{float(value)!r}" for j, value in enumerate(row) if value != 0]) + "\n"
                for label, row in zip(labels, values)))  # fmt: skip
            code, said = cli("train", "--input", libsvm, *train_options(frame, encoding), "--model",
                             folder / "libsvm.model")  # fmt: skip
            models["cli libsvm"] = Model.load(str(folder / "libsvm.model")) if code == 0 else said.strip()
    features = frame.drop(columns="y")
    in_order = {"shuffle": False} if "shuffle" in PolybeamClassifier().get_params() else {}  # the file's order
    if kind in ("real", "count"):
        estimator = PolybeamRegressor(loss=loss, **LOSS_SETTINGS.get(loss, {}), **in_order)
        estimator.fit(features, frame["y"].astype(float))
    else:
        estimator = PolybeamClassifier(loss=loss, **in_order).fit(features, frame["y"])
    models["sklearn"] = estimator
    return models


def json_rows(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as JSON objects hold them: NaN and None as null, NumPy numbers as numbers."""

    def plain(value):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value.item() if isinstance(value, np.generic) else value

    return [{name: plain(value) for name, value in row.items()} for row in frame.to_dict("records")]


def write_avro(frame: pd.DataFrame, path) -> None:
    """The frame as an Avro file whose schema types each column by its values (long, double or string, nullable)."""
    import fastavro

    rows = json_rows(frame)

    def avro_type(name):
        kinds = {type(row[name]) for row in rows if row[name] is not None}
        kind = "string" if str in kinds else "double" if float in kinds else "long"
        return ["null", kind]

    fields = [{"name": name, "type": avro_type(name)} for name in frame.columns]
    with open(path, "wb") as sink:
        fastavro.writer(sink, {"type": "record", "name": "Table", "fields": fields}, rows)


def scores(model, frame: pd.DataFrame) -> np.ndarray:
    """A model's raw scores of the frame's rows, through the dict door (the estimator: its own)."""
    features = frame.drop(columns="y")
    if isinstance(model, PolybeamClassifier):
        return model.decision_function(features)  # (its own door: scikit-learn's validation and reading)
    if isinstance(model, PolybeamRegressor):
        return model.model_.margins(model._batch(features))  # (predict clamps to the labels' range)
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in
            features.to_dict("records")]  # fmt: skip
    if (model.input or {}).get("format") == "libsvm":  # LIBSVM's features by number: x0 is 1, x1 is 2, ...
        rows = [{int(name[1:]) + 1: value for name, value in row.items()} for row in rows]
    return model.margins(mappings_batch(model, rows))


# (no shrinking: each example trains five models; the failing table itself is printed)
@settings(
    max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)
@given(table=tables())
@example(table=(pd.DataFrame({"x0": [1.0, 2.0, np.nan, 4.0] * 10, "c0": ["red", None, "blue", "red"] * 10,
                              "y": [1, 2, 1, 2] * 10}), "one-two"))  # fmt: skip
@example(table=(pd.DataFrame({"x0": [1.5, -2.0, np.nan, 4.0] * 10, "x1": [0.5, np.nan, 3.0, 1.0] * 10,
                              "y": [0, 1, 1, 0] * 10}), "zero-one"))  # fmt: skip
@example(table=(pd.DataFrame({"x0": [1.5, -2.0, np.nan, 4.0, 0.5] * 10, "c0": ["red", None, "blue", "red", "blue"] * 10,
                              "y": [3.5, -1.0, 0.25, 7.0, 2.0] * 10}), "quantile"))  # fmt: skip
@example(table=(pd.DataFrame({"x0": [1.5, -2.0, np.nan, 4.0, 0.5] * 10, "x1": [0.5, np.nan, 3.0, 1.0, 2.0] * 10,
                              "y": [3.0, 0.0, 1.0, 7.0, 2.0] * 10}), "counts"))  # fmt: skip
def test_every_training_door_gives_the_same_model_and_predictions(table, tmp_path_factory):
    frame, encoding = table
    folder = tmp_path_factory.mktemp("doors")
    models = train_doors(frame, encoding, folder)
    refusals = {door: model for door, model in models.items() if isinstance(model, str)}
    assert not refusals, refusals
    reference = scores(models["cli csv"], frame)
    for door, model in models.items():
        assert np.allclose(scores(model, frame), reference, rtol=0, atol=1e-9), door
    names = {door: tuple(getattr(model, "model_", model).config.class_names) for door, model in models.items()}
    assert len(set(names.values())) == 1, names
    # The estimator's saved model, scored by the command line on the table's CSV: the CSV model's metrics.
    saved = folder / "sklearn.model"
    models["sklearn"].model_.save(str(saved))
    metrics = {}
    for door, path in (("sklearn", saved), ("cli csv", folder / "csv.model")):
        code, said = cli("evaluate", "--input", folder / "table.csv", "--model", path)
        assert code == 0, said
        metrics[door] = json.loads(said.strip().splitlines()[-1])
    for name in ("examples", "loss", "error", "mse", "mae", "coverage"):
        assert metrics["sklearn"].get(name) == pytest.approx(metrics["cli csv"].get(name), abs=1e-9), name


def test_a_table_whose_labels_need_telling_is_refused_at_every_door(tmp_path):
    frame = pd.DataFrame({"x0": np.arange(30.0), "y": [1, 2, 3] * 10})
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    code, said = cli("train", "--input", csv, "--format", "csv", "--label-column", "y", "--loss", "logistic",
                     "--model", tmp_path / "m.model")  # fmt: skip
    assert code == 2 and "the labels hold 3 values (1, 2, 3)" in said
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    code, said = cli("train", "--input", tmp_path / "t.parquet", "--format", "parquet", "--label-column", "y",
                     "--loss", "logistic", "--model", tmp_path / "m.model")  # fmt: skip
    assert code == 2 and "the labels hold 3 values (1, 2, 3)" in said
    with pytest.raises(ValueError, match=r"the labels hold 3 values \(1, 2, 3\)"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | ReadExamples(str(csv), format="csv", label_column="y", labels="binary")


def test_a_csv_whose_first_line_is_a_record_is_refused_at_every_door(tmp_path):
    """A header is expected by default: a first line of numbers only is a record, and every door that reads
    the file refuses it with the same words (it used to become the column names, the record lost)."""
    frame = pd.DataFrame({"y": [1, -1] * 15, "x0": np.arange(30.0)})
    headed, numbers = tmp_path / "headed.csv", tmp_path / "numbers.csv"
    frame.to_csv(headed, index=False)
    frame.to_csv(numbers, index=False, header=False)
    said_once = "its first line looks like a record, not a header (every field a number: 1,0.0)"
    code, said = cli(
        "train", "--input", numbers, "--format", "csv", "--loss", "logistic", "--model", tmp_path / "n.model"
    )
    assert code == 2 and said_once in said
    assert cli("train", "--input", headed, "--format", "csv", "--label-column", "y", "--loss", "logistic",
               "--model", tmp_path / "m.model")[0] == 0  # fmt: skip
    for command, more in (("predict", ("--output", tmp_path / "p.txt")), ("evaluate", ())):
        code, said = cli(command, "--input", numbers, "--model", tmp_path / "m.model", *more)
        assert code != 0 and said_once in said, (command, said)
    with pytest.raises(Exception, match=r"its first line looks like a record, not a header"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | ReadExamples(str(numbers), format="csv", labels="binary")
    code, said = cli("train", "--input", numbers, "--format", "csv", "--no-csv-header", "--loss", "logistic",
                     "--model", tmp_path / "k.model")  # fmt: skip
    assert code == 0 and "records read 30 = examples 30" in said


def test_run_inference_on_dicts_and_rows_scores_as_the_cli_model_reads_its_file(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "x0": np.round(rng.normal(0, 1, 60), 3),
            "c0": rng.choice(COLOURS, 60).astype(object),
            "y": rng.choice(["no", "yes"], 60),
        }
    )
    frame.loc[::7, "x0"] = np.nan
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    model_path = tmp_path / "m.model"
    code, said = cli("train", "--input", csv, "--format", "csv", "--label-column", "y", "--categorical-columns",
                     "c0", "--loss", "logistic", "--model", model_path, "--quiet")  # fmt: skip
    assert code == 0, said
    model = Model.load(str(model_path))
    expected = scores(model, frame)
    features = frame.drop(columns="y")
    dicts = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in
             features.to_dict("records")]  # fmt: skip
    from_dicts, from_rows, labels = [], [], []
    with beam.Pipeline(runner="FnApiRunner") as p:
        handler = PolybeamModelHandler(str(model_path), output="score")
        collect(p | "Dicts" >> beam.Create(dicts) | "ScoreDicts" >> RunInference(handler), from_dicts)
        rows = p | "Rows" >> beam.Create([beam.Row(x0=d["x0"], c0=d["c0"]) for d in dicts])
        as_dicts = rows | beam.Map(lambda row: row._asdict())
        collect(as_dicts | "ScoreRows" >> RunInference(handler), from_rows)
        labelled = PolybeamModelHandler(str(model_path), output="label")
        collect(p | "LabelDicts" >> beam.Create(dicts) | "Label" >> RunInference(labelled), labels)

    def in_order(results):
        by_example = {json.dumps(r.example, sort_keys=True, default=str): r.inference for r in results}
        return [by_example[json.dumps(d, sort_keys=True, default=str)] for d in dicts]

    for results in (from_dicts, from_rows):
        assert np.allclose(in_order(results), expected, rtol=0, atol=1e-9)
    # A label through RunInference is the label `predict --predictions label` writes for the same rows.
    unlabelled = tmp_path / "new.csv"
    features.to_csv(unlabelled, index=False)
    written = tmp_path / "labels.tsv"
    code, said = cli("predict", "--input", unlabelled, "--model", model_path, "--output", written,
                     "--predictions", "label", "--quiet")  # fmt: skip
    assert code == 0, said
    header, *lines = written.read_text().splitlines()
    column = header.split("\t").index("prediction")
    by_row = {int(line.split("\t")[header.split("\t").index("row")]): line.split("\t")[column] for line in lines}
    assert in_order(labels) == [by_row[row] for row in sorted(by_row)]
    assert set(in_order(labels)) <= {"no", "yes"}


YAML_SCORES = """
pipeline:
  transforms:
    - name: Read
      type: ReadFromCsv
      config:
        path: "{{ rows }}"
    - name: Score
      type: PolybeamRunInference
      input: Read
      config:
        model: "{{ model }}"
        output: score
    - name: Write
      type: WriteToJson
      input: Score
      config:
        path: "{{ out }}/scored"
providers:
  - include: "{{ providers }}"
"""


@pytest.mark.subprocess
def test_beam_yaml_rows_score_as_the_cli_model_reads_its_file(tmp_path):
    pytest.importorskip("docstring_parser", reason="Beam YAML needs apache-beam[yaml] (polybeam's test extra has it)")
    import glob

    from tests.pipelines.test_beam_yaml import run_yaml

    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "x0": np.round(rng.normal(0, 1, 50), 3),
            "x1": np.round(rng.normal(5, 2, 50), 3),
            "c0": rng.choice(COLOURS, 50),
            "y": rng.choice([1, 2], 50),
        }
    )
    frame.loc[::6, "x1"] = np.nan
    frame.to_csv(tmp_path / "train.csv", index=False)
    model_path = tmp_path / "m.model"
    code, said = cli("train", "--input", tmp_path / "train.csv", "--format", "csv", "--label-column", "y",
                     "--categorical-columns", "c0", "--loss", "logistic", "--model", model_path, "--quiet")  # fmt: skip
    assert code == 0, said
    frame.drop(columns="y").to_csv(tmp_path / "rows.csv", index=False)
    pipeline = tmp_path / "score.yaml"
    pipeline.write_text(YAML_SCORES)
    done = run_yaml(
        str(pipeline), {"rows": str(tmp_path / "rows.csv"), "model": str(model_path), "out": str(tmp_path)}, tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scored = [json.loads(line) for path in glob.glob(str(tmp_path / "scored*")) for line in open(path)]
    expected = scores(Model.load(str(model_path)), frame)
    by_row = {(row["x0"], row["c0"]): row["inference"] for row in scored}
    got = [by_row[(x0, c0)] for x0, c0 in zip(frame["x0"], frame["c0"])]
    assert np.allclose(got, expected, rtol=0, atol=1e-9)


def _noisy_table(tmp_path, rows: int = 300):
    """Two signals among 60 rare 0/1 columns of noise, which a high rate overfits, as a CSV file."""
    rng = np.random.default_rng(3)
    x = np.hstack([np.round(rng.normal(size=(rows, 2)), 3), (rng.random(size=(rows, 60)) < 0.1).astype(float)])
    signal = x[:, 0] - x[:, 1] + 1.5 * rng.normal(size=rows)
    frame = pd.DataFrame({**{f"x{j}": x[:, j] for j in range(62)}, "y": np.where(signal > 0, "yes", "no")})
    csv = tmp_path / "table.csv"
    frame.to_csv(csv, index=False)
    return frame, csv


def _models_of_passes(tmp_path, csv, settings: dict) -> tuple[dict, str]:
    """``({door: Model}, the last command's output)``: the passes of ``settings`` on ``csv`` from the command
    line in memory and streamed, and from Python's Train streamed and in memory."""
    flags = [f"--{name.replace('_', '-')}" for name in settings]
    options = [value for pair in zip(flags, map(str, settings.values())) for value in pair]
    common = ["train", "--input", csv, "--format", "csv", "--label-column", "y", "--loss", "logistic", *options]
    models = {}
    for mode in ("auto", "off"):
        code, said = cli(*common, "--in-memory", mode, "--model", tmp_path / f"{mode}.model")
        assert code == 0, said
        models[f"cli {mode}"] = Model.load(str(tmp_path / f"{mode}.model"))
    for in_memory in (False, True):
        path = str(tmp_path / f"py{in_memory}.model")
        with beam.Pipeline(runner="FnApiRunner") as p:
            read = p | ReadExamples(str(csv), format="csv", label_column="y", labels="binary")
            read | Train(loss="logistic", in_memory=in_memory, **settings) | WriteModel(path)
        models[f"python{' in memory' if in_memory else ''}"] = Model.load(path)
    return models, said


def _agree(models: dict, frame) -> None:
    records = {door: model.metadata["holdout"] for door, model in models.items()}
    for door, record in records.items():
        assert record == records["cli auto"], door
    reference = scores(models["cli auto"], frame)
    for door, model in models.items():
        assert np.allclose(scores(model, frame), reference, rtol=0, atol=1e-9), door


def test_passes_that_restart_at_a_lower_rate_agree_at_every_door(tmp_path):
    """The restart schedule (a run of passes without a better holdout loss starts learning again at half
    the rate) gives one model whether the passes run in memory, streamed, or through Python's Train."""
    frame, csv = _noisy_table(tmp_path)
    settings = {"passes": 8, "holdout_min_examples": 0, "early_terminate": 1, "learning_rate": 8.0}
    models, said = _models_of_passes(tmp_path, csv, settings)
    assert models["cli auto"].metadata["holdout"]["restarts"] >= 1
    assert "started again at rate 4" in said
    _agree(models, frame)


def test_a_small_inputs_cross_validated_passes_agree_at_every_door(tmp_path):
    """300 rows hold out too few to judge passes by: the passes are chosen by cross-validation and learned
    again, one model whether in memory, streamed (the input gathered once the first pass shows it is
    small) or through Python's Train. (The estimators place a frame's rows by their index, not by file
    and line, so their folds differ: see the closing note.)"""
    frame, csv = _noisy_table(tmp_path)
    models, said = _models_of_passes(tmp_path, csv, {"passes": 8, "early_terminate": 1, "learning_rate": 8.0})
    chosen = models["cli auto"].metadata["holdout"]["cross_validation"]
    assert chosen["examples"] == 300 and "10-fold cross-validation over 300 examples" in said
    _agree(models, frame)


def test_passes_and_the_finishing_stage_agree_at_every_door(tmp_path):
    """Several passes and the L-BFGS stage: the command line keeps a small input in memory (and streams
    it with --in-memory off), Python's Train streams it; one model, the stage judging on the examples
    every door held out alike. (The estimators hold out other rows: a frame's rows have no file and line
    to place them by, so with passes they learn another model; see the closing note.)"""
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=(400, 2)) * [1.0, 30.0] + [0.0, 100.0], 3)
    signal = x[:, 0] + 0.05 * (x[:, 1] - 100.0) + rng.normal(size=400)
    frame = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": np.where(signal > 0, "yes", "no")})
    csv = tmp_path / "table.csv"
    frame.to_csv(csv, index=False)
    settings = {"passes": 3, "lbfgs_passes": 4, "holdout_min_examples": 0}
    flags = [f"--{name.replace('_', '-')}" for name in settings]
    options = [value for pair in zip(flags, map(str, settings.values())) for value in pair]
    common = ["train", "--input", csv, "--format", "csv", "--label-column", "y", "--loss", "logistic", *options]
    models, reports = {}, {}
    for mode in ("auto", "off"):
        code, said = cli(*common, "--in-memory", mode, "--model", tmp_path / f"{mode}.model")
        assert code == 0, said
        models[f"cli {mode}"] = Model.load(str(tmp_path / f"{mode}.model"))
        reports[mode] = json.loads((tmp_path / f"{mode}.model.report.json").read_text())
    assert reports["auto"]["in_memory"] and not reports["off"]["in_memory"]
    with beam.Pipeline(runner="FnApiRunner") as p:
        read = p | ReadExamples(str(csv), format="csv", label_column="y", labels="binary")
        read | Train(loss="logistic", **settings) | WriteModel(str(tmp_path / "py.model"))
    models["python"] = Model.load(str(tmp_path / "py.model"))
    kept = {door: getattr(model, "model_", model).metadata["lbfgs"]["kept"] for door, model in models.items()}
    assert len(set(kept.values())) == 1 and reports["auto"]["lbfgs"]["evaluations"] == 4, kept
    reference = scores(models["cli auto"], frame)
    for door, model in models.items():
        assert np.allclose(scores(model, frame), reference, rtol=0, atol=1e-9), door


def test_per_key_models_score_alike_through_the_cli_run_inference_and_their_own_model(tmp_path):
    # Keys of 3 to 14 rows (those of at most 10 learn as a table, the others with a learner each), numbers with
    # missing values and a text column: predict by shards, PerKeyModelHandler and each key's own model agree.
    from polybeam.transforms.inference import PerKeyModelHandler
    from polybeam.transforms.keyed_files import KeyedFolder

    rng = np.random.default_rng(11)
    keys = np.repeat([f"k{k}" for k in range(30)], rng.integers(3, 15, size=30))
    rng.shuffle(keys)
    n = len(keys)
    frame = pd.DataFrame(
        {
            "key": keys,
            "x0": np.round(rng.normal(2, 1, n), 3),
            "c0": rng.choice(COLOURS, n).astype(object),
            "y": rng.choice(["no", "yes"], n),
        }
    )
    frame.loc[::6, "x0"] = np.nan
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    folder = tmp_path / "models"
    code, said = cli("train", "--input", csv, "--format", "csv", "--label-column", "y", "--categorical-columns",
                     "c0", "--key", "column:key", "--loss", "logistic", "--model", folder, "--quiet")  # fmt: skip
    assert code == 0, said
    written = tmp_path / "scores.tsv"
    code, said = cli("predict", "--input", csv, "--model", folder, "--output", written, "--predictions", "score",
                     "--quiet")  # fmt: skip
    assert code == 0, said
    header, *lines = written.read_text().splitlines()
    columns = header.split("\t")
    cells = [line.split("\t") for line in lines]
    by_offset = {int(c[columns.index("row")]): float(c[columns.index("prediction")]) for c in cells}
    from_cli = [by_offset[offset] for offset in sorted(by_offset)]  # (rows in file order)
    library = KeyedFolder(str(folder))
    own = np.array([scores(library.model(key), frame.iloc[[row]].drop(columns="key"))[0] for row, key in
                    enumerate(keys)])  # fmt: skip
    features = frame.drop(columns=["y", "key"])
    dicts = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()} for row in
             features.to_dict("records")]  # fmt: skip
    results = []
    with beam.Pipeline(runner="FnApiRunner") as p:
        pairs = p | beam.Create(list(zip(keys.tolist(), dicts)))
        collect(pairs | RunInference(PerKeyModelHandler(str(folder), output="score")), results)
    by_example = {(key, json.dumps(r.example, sort_keys=True, default=str)): r.inference for key, r in results}
    from_handler = [by_example[(key, json.dumps(d, sort_keys=True, default=str))] for key, d in zip(keys, dicts)]
    np.testing.assert_allclose(from_cli, own, rtol=1e-8, atol=1e-9)  # (predict writes 9 significant digits)
    np.testing.assert_allclose(from_handler, own, rtol=1e-12, atol=1e-12)


def test_the_streaming_door_reads_and_scores_a_table_as_the_batch_door(tmp_path):
    """`train --watch` over a CSV (a header, a category, missing values, labels as words) gives the model one
    batch pass gives, and `evaluate` of its folder the batch model's metrics: its versions record how their
    input was read, as a batch model does."""
    from polybeam.engines import prism
    from polybeam.transforms import version_folder

    if not prism.fetched():
        pytest.skip("Prism is not built: polybeam engines fetch prism")
    rng = np.random.default_rng(11)
    x = rng.normal(size=(400, 2))
    x[rng.random(x.shape) < 0.1] = np.nan
    colour = rng.choice(COLOURS, size=400)
    margin = np.nan_to_num(x[:, 0]) - np.nan_to_num(x[:, 1]) + (colour == "red")
    frame = pd.DataFrame({"x0": x[:, 0], "c0": colour, "x1": x[:, 1], "y": np.where(margin > 0, "yes", "no")})
    incoming = tmp_path / "in"
    incoming.mkdir()
    frame.to_csv(incoming / "table.csv", index=False)
    reading = ["--format", "csv", "--label-column", "y", "--categorical-columns", "c0", "--loss", "logistic"]
    code, said = cli("train", "--input", incoming / "table.csv", *reading, "--model", tmp_path / "batch.model")
    assert code == 0, said
    code, said = cli("train", "--input", incoming / "*.csv", *reading, "--watch", "0.3", "--stop-after-idle", "2",
                     "--model", tmp_path / "stream")  # fmt: skip
    assert code == 0, said
    streamed, batch = (
        version_folder.read_version_model(str(tmp_path / "stream")),
        Model.load(str(tmp_path / "batch.model")),
    )
    assert streamed.config.class_names == batch.config.class_names == ("no", "yes")
    assert streamed.input == batch.input
    assert np.allclose(scores(streamed, frame), scores(batch, frame), rtol=0, atol=1e-12)
    metrics = {}
    for door, model in (("stream", tmp_path / "stream"), ("batch", tmp_path / "batch.model")):
        code, said = cli("evaluate", "--input", incoming / "table.csv", "--model", model)
        assert code == 0, said
        metrics[door] = json.loads(said.strip().splitlines()[-1])
    for name in ("examples", "loss", "error", "auc"):
        assert metrics["stream"][name] == pytest.approx(metrics["batch"][name], abs=1e-12), name
