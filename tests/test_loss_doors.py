"""Quantile and Poisson loss through every door after training: evaluate's fitting metrics, predict,
RunInference on dicts and rows, Beam YAML (training, evaluating and scoring), and the same refusal of a
label the loss cannot take (a negative count) at the command line, in Python and in the estimator.

(``tests/test_doors.py`` trains both through every training door and checks the models agree.)
"""

import glob
import json
import math

import apache_beam as beam
import numpy as np
import pandas as pd
import pytest
from apache_beam.ml.inference.base import RunInference
from sklearn.datasets import load_diabetes

from polybeam.learners.model import Model
from polybeam.sklearn import PolybeamRegressor
from polybeam.transforms import ReadExamples, Train
from polybeam.transforms.inference import PolybeamModelHandler
from tests.test_doors import cli
from tests.transforms.test_inference import collect

pytestmark = pytest.mark.slow

LOSSES = {"quantile": ["--quantile-tau", "0.8"], "poisson": []}


def counts_table(rows: int = 400, seed: int = 0) -> pd.DataFrame:
    """Counts whose log-mean is linear in x0 and x1, with a text column and missing values (x0 is distinct in
    every row: it tells the rows apart in the doors' outputs)."""
    rng = np.random.default_rng(seed)
    x0, x1 = np.round(rng.permutation(np.linspace(-2.0, 2.0, rows)), 6), np.round(rng.normal(0, 1, rows), 3)
    colour = rng.choice(["red", "blue"], rows).astype(object)
    y = rng.poisson(np.exp(0.5 + 0.6 * x0 - 0.4 * x1 + 0.3 * (colour == "red")))
    frame = pd.DataFrame({"x0": x0, "x1": x1, "c0": colour, "y": y.astype(float)})
    frame.loc[::9, "x1"] = np.nan
    return frame


def trained(tmp_path, loss: str) -> tuple[pd.DataFrame, str]:
    frame = counts_table()
    frame.to_csv(tmp_path / "t.csv", index=False)
    model = tmp_path / f"{loss}.model"
    code, said = cli("train", "--input", tmp_path / "t.csv", "--format", "csv", "--label-column", "y",
                     "--categorical-columns", "c0", "--loss", loss, *LOSSES[loss], "--model", model, "--quiet")  # fmt: skip
    assert code == 0, said
    return frame, str(model)


def rows_of(frame: pd.DataFrame) -> list[dict]:
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.drop(columns="y").to_dict("records")
    ]


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_run_inference_and_predict_give_the_model_s_values(tmp_path, loss):
    frame, model_path = trained(tmp_path, loss)
    model = Model.load(model_path)
    dicts = rows_of(frame)
    values, labels, scores = [], [], []
    with beam.Pipeline(runner="FnApiRunner") as p:
        created = p | beam.Create(dicts)
        collect(created | "Value" >> RunInference(PolybeamModelHandler(model_path)), values)
        collect(created | "Label" >> RunInference(PolybeamModelHandler(model_path, output="label")), labels)
        collect(created | "Score" >> RunInference(PolybeamModelHandler(model_path, output="score")), scores)

    def in_order(results):
        by_example = {json.dumps(r.example, sort_keys=True): float(r.inference) for r in results}
        return np.array([by_example[json.dumps(d, sort_keys=True)] for d in dicts])

    score = in_order(scores)
    meta = model.metadata
    if loss == "poisson":  # the mean: exp of the score, never clamped
        expected = np.exp(score)
    else:  # the value, clamped to the training labels' range (and 0), as VW clamps it
        expected = np.clip(score, meta["label_min"], meta["label_max"])
    np.testing.assert_allclose(in_order(values), expected, rtol=1e-12)
    np.testing.assert_allclose(in_order(labels), expected, rtol=1e-12)
    # What predict writes for the same rows (8 significant digits).
    frame.drop(columns="y").to_csv(tmp_path / "new.csv", index=False)
    code, said = cli("predict", "--input", tmp_path / "new.csv", "--model", model_path, "--output",
                     tmp_path / "p.tsv", "--quiet")  # fmt: skip
    assert code == 0, said
    header, *lines = (tmp_path / "p.tsv").read_text().splitlines()
    column, row = header.split("\t").index("prediction"), header.split("\t").index("row")
    written = {int(line.split("\t")[row]): float(line.split("\t")[column]) for line in lines}
    np.testing.assert_allclose([written[r] for r in sorted(written)], expected, rtol=1e-7)
    # Probabilities are refused alike at predict and RunInference.
    code, said = cli("predict", "--input", tmp_path / "new.csv", "--model", model_path, "--output",
                     tmp_path / "q.tsv", "--predictions", "probability")  # fmt: skip
    assert code != 0 and "probabilities need a model of logistic or softmax loss" in said
    with pytest.raises(Exception, match="needs a logistic or softmax model"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create(dicts[:3]) | RunInference(PolybeamModelHandler(model_path, output="probability"))


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_a_negative_count_is_refused_alike_at_every_door(tmp_path, loss):
    frame = counts_table(rows=60)
    frame.loc[5, "y"] = -2.0
    frame.to_csv(tmp_path / "t.csv", index=False)
    code, said = cli("train", "--input", tmp_path / "t.csv", "--format", "csv", "--label-column", "y",
                     "--categorical-columns", "c0", "--loss", loss, *LOSSES[loss], "--model", tmp_path / "m.model")  # fmt: skip
    if loss == "quantile":  # any number is a quantile's label
        assert code == 0, said
        return
    # A refused record fails the job, as a label that is no class of the task does (never dropped as damage).
    assert code != 0 and "line 7: label -2 is not a count" in said
    assert "likely cause: the labels are not counts; for any number, --loss squared or quantile" in said
    (letter,) = [json.loads(line) for line in open(tmp_path / "m.model.dead_letters.jsonl")]
    assert letter["line"] == 7 and "label -2 is not a count" in letter["reason"]
    with pytest.raises(ValueError, match=r"y\[5\]: label -2 is not a count"):
        PolybeamRegressor(loss="poisson").fit(frame.drop(columns="y"), frame["y"])
    with pytest.raises(Exception, match="label -2 is not a count"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            read = p | ReadExamples(str(tmp_path / "t.csv"), format="csv", label_column="y",
                                    categorical_columns=("c0",), labels="count")  # fmt: skip
            _ = read.examples | Train(loss="poisson")


def test_quantile_loss_covers_its_quantile_on_held_out_data(tmp_path):
    # scikit-learn's diabetes data, the last fifth (89 rows) held out. evaluate's coverage (the share of held-out
    # labels at or below the prediction) and pinball loss, against scikit-learn's QuantileRegressor (the exact
    # linear-programming fit, unpenalised). Measured with 5 passes: coverage 0.124, 0.461, 0.865 and pinball
    # loss 9.19, 21.61, 9.53 at tau 0.1, 0.5, 0.9; QuantileRegressor's 0.124, 0.472, 0.888 and 9.52, 21.58, 9.10.
    from sklearn.linear_model import QuantileRegressor
    from sklearn.metrics import mean_pinball_loss

    X, y = load_diabetes(return_X_y=True)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
    split = int(0.8 * len(frame))
    frame[:split].to_csv(tmp_path / "train.csv", index=False)
    frame[split:].to_csv(tmp_path / "test.csv", index=False)
    for tau in (0.1, 0.5, 0.9):
        model = tmp_path / f"q{tau}.model"
        code, said = cli("train", "--input", tmp_path / "train.csv", "--format", "csv", "--label-column", "y",
                         "--loss", "quantile", "--quantile-tau", tau, "--passes", 5, "--model", model, "--quiet")  # fmt: skip
        assert code == 0, said
        code, said = cli("evaluate", "--input", tmp_path / "test.csv", "--model", model)
        assert code == 0, said
        assert "coverage" in said.splitlines()[1]  # (the summary line shows it)
        metrics = json.loads(said.strip().splitlines()[-1])
        peer = QuantileRegressor(quantile=tau, alpha=0.0, solver="highs").fit(X[:split], y[:split])
        peer_loss = mean_pinball_loss(y[split:], peer.predict(X[split:]), alpha=tau)
        assert abs(metrics["coverage"] - tau) < 0.07 and metrics["loss"] < 1.1 * peer_loss, (tau, metrics, peer_loss)


def test_poisson_loss_fits_counts_as_scikit_learn_does(tmp_path):
    # Counts with a log-linear mean: polybeam's held-out mean Poisson deviance (twice its loss) within 5% of
    # scikit-learn's PoissonRegressor (unpenalised) and far below predicting the mean count. Measured: 1.174
    # (5 passes; 1.167 with one), PoissonRegressor 1.164, the mean count 2.701.
    from sklearn.linear_model import PoissonRegressor
    from sklearn.metrics import mean_poisson_deviance

    train, test = counts_table(4000, seed=1), counts_table(1000, seed=2)
    encode = lambda f: pd.get_dummies(f.drop(columns="y"), columns=["c0"], dtype=float).fillna(0.0)  # noqa: E731
    peer = PoissonRegressor(alpha=0.0).fit(encode(train), train["y"])
    peer_deviance = mean_poisson_deviance(test["y"], peer.predict(encode(test)))
    mean_deviance = mean_poisson_deviance(test["y"], np.full(len(test), train["y"].mean()))
    ours = PolybeamRegressor(loss="poisson", passes=5, random_state=0).fit(train.drop(columns="y"), train["y"])
    deviance = mean_poisson_deviance(test["y"], ours.predict(test.drop(columns="y")))
    assert deviance < 1.05 * peer_deviance and deviance < 0.7 * mean_deviance, (deviance, peer_deviance, mean_deviance)


YAML = """
pipeline:
  transforms:
    - {name: Read, type: PolybeamReadExamples, config: {path: "{{ dir }}/t.csv", format: csv, label_column: y,
       categorical_columns: [c0], labels: "{{ labels }}"}}
    - {name: Train, type: PolybeamTrain, input: {examples: Read.examples, origin: Read.origin},
       config: {model: "{{ dir }}/yaml.model", loss: "{{ loss }}" {{ settings }}}}
    - {name: Evaluate, type: PolybeamEvaluate, input: {examples: Read.examples, model: Train.model}}
    - {name: WriteMetrics, type: WriteToJson, input: Evaluate.metrics, config: {path: "{{ dir }}/metrics"}}
    - {name: Rows, type: ReadFromCsv, config: {path: "{{ dir }}/rows.csv"}}
    - {name: Score, type: PolybeamRunInference, input: Rows, config: {model: "{{ dir }}/{{ loss }}.model"}}
    - {name: WriteScores, type: WriteToJson, input: Score, config: {path: "{{ dir }}/scored"}}
providers:
  - include: "{{ providers }}"
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_beam_yaml_trains_evaluates_and_scores_as_the_command_line(tmp_path, loss):
    pytest.importorskip("docstring_parser", reason="Beam YAML needs apache-beam[yaml] (polybeam's test extra has it)")
    from tests.pipelines.test_beam_yaml import run_yaml

    frame, model_path = trained(tmp_path, loss)
    frame.drop(columns="y").to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "p.yaml").write_text(YAML)
    settings = ", quantile_tau: 0.8" if loss == "quantile" else ""
    labels = "real" if loss == "quantile" else "count"
    variables = {"dir": str(tmp_path), "loss": loss, "settings": settings, "labels": labels}
    done = run_yaml(str(tmp_path / "p.yaml"), variables, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    ours, yaml_model = Model.load(model_path), Model.load(str(tmp_path / "yaml.model"))
    np.testing.assert_array_equal(yaml_model.dense_weights, ours.dense_weights)
    (metrics_file,) = glob.glob(str(tmp_path / "metrics*"))
    metrics = json.loads(open(metrics_file).read())
    code, said = cli("evaluate", "--input", tmp_path / "t.csv", "--model", model_path)
    assert code == 0, said
    expected = json.loads(said.strip().splitlines()[-1])
    # (WriteToJson writes 10 significant digits, and a NaN as null)
    for name in ("examples", "loss", "mse", "mae"):
        assert metrics[name] == pytest.approx(expected[name], rel=1e-9), name
    if loss == "quantile":
        assert metrics["coverage"] == pytest.approx(expected["coverage"], rel=1e-9)
    else:  # (a metric the loss does not report: NaN in the row's fixed fields)
        assert "coverage" not in expected and metrics["coverage"] is None
    scored = [json.loads(line) for path in glob.glob(str(tmp_path / "scored*")) for line in open(path)]
    by_row = {row["x0"]: row["inference"] for row in scored}
    got = [by_row[x0] for x0 in frame["x0"]]
    values = []
    with beam.Pipeline(runner="FnApiRunner") as p:
        collect(p | beam.Create(rows_of(frame)) | RunInference(PolybeamModelHandler(model_path)), values)
    by_dict = {r.example["x0"]: float(r.inference) for r in values}
    np.testing.assert_allclose(got, [by_dict[x0] for x0 in frame["x0"]], rtol=1e-9)
