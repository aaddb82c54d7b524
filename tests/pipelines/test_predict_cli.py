"""``polybeam predict`` as users expect it, end to end on the bundled spam data written as CSV (and Parquet,
and the satellite data for softmax): new rows without their label column, files lacking some of the model's
columns refused (or read as missing on request), columns the model never saw left out, a read summary, one
output file named as asked (or shards on request), ``-`` for standard input and output, and a choice of
label, probability or raw score."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from polybeam import datasets
from polybeam.learners.hashing import feature_slot
from polybeam.pipelines.cli import main
from tests.pipelines.commands import last_json, run

pytestmark = pytest.mark.slow  # (every test runs polybeam jobs)

FEATURES = [f"f{j}" for j in range(1, 58)]
# Three of spam's strongest features ('remove', '$' and the longest capital run): a file without them is
# another task.
DROPPED = ["f7", "f53", "f56"]


def read_predictions(path) -> tuple[list[str], list[list[str]]]:
    header, *lines = open(path).read().splitlines()
    return header.split("\t"), [line.split("\t") for line in lines]


def shard(path) -> str:
    """The one file ``--num-shards 1`` writes for ``--output path`` (the tests of what is predicted ask for it,
    so that they show their own finding whatever the output's name)."""
    return f"{path}-00000-of-00001"


def first_column(path) -> list[str]:
    return [row[0] for row in read_predictions(shard(path))[1]]


def write_csv(path, columns, rows, header=True):
    lines = ([",".join(columns)] if header else []) + [",".join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def spam(tmp_path_factory):
    """Spam as CSV (label ``y`` first, features f1..f57): 3000 rows to train, 600 to score, in several
    shapes, and the models trained on them."""
    folder = tmp_path_factory.mktemp("spam_csv")
    batch = datasets.load("spam")
    dense = batch.to_csr()[:, 1:58].toarray()
    labels = (batch.labels > 0).astype(int)
    cells = [[str(labels[i])] + [f"{v:g}" for v in dense[i]] for i in range(3600)]
    columns = ["y", *FEATURES]
    train, test = cells[:3000], cells[3000:]
    paths = {
        "train": write_csv(folder / "train.csv", columns, train),
        "test": write_csv(folder / "test.csv", columns, test),
        "unlabelled": write_csv(folder / "unlabelled.csv", FEATURES, [row[1:] for row in test]),
        "headerless_train": write_csv(folder / "h_train.csv", columns, train, header=False),
        "headerless_test": write_csv(folder / "h_test.csv", columns, test, header=False),
        "headerless_unlabelled": write_csv(folder / "h_unlabelled.csv", FEATURES, [r[1:] for r in test], header=False),
    }
    kept = [j for j, name in enumerate(columns) if name not in DROPPED]
    paths["missing"] = write_csv(
        folder / "missing.csv", [columns[j] for j in kept], [[r[j] for j in kept] for r in test]
    )
    blanked = [[cell if columns[j] not in DROPPED else "" for j, cell in enumerate(row)] for row in test]
    paths["blanked"] = write_csv(folder / "blanked.csv", columns, blanked)
    table = {name: dense[:, j] for j, name in enumerate(FEATURES)}
    for name, rows in (("train", slice(0, 3000)), ("test", slice(3000, 3600))):
        pq.write_table(
            pa.table({"label": labels[rows], **{k: v[rows] for k, v in table.items()}}), folder / f"{name}.parquet"
        )
    models = {
        "default": ["--input", paths["train"], "--format", "csv"],  # the label is the first column, by default
        "headerless": ["--input", paths["headerless_train"], "--format", "csv", "--no-csv-header"],
        "parquet": ["--input", folder / "train.parquet", "--format", "parquet"],
    }
    for name, flags in models.items():
        model = folder / f"{name}.model"
        assert main([str(f) for f in ["train", *flags, "--loss", "logistic", "--model", model, "--quiet"]]) == 0
        paths[f"{name}_model"] = model
    return {"folder": folder, **paths}


def predict(capsys, spam, model, input, output, *flags):
    flags = flags if "--num-shards" in flags else (*flags, "--num-shards", "1")
    return run(capsys, "predict", "--input", input, "--model", spam[f"{model}_model"], "--output", output, *flags)


def test_new_rows_without_the_label_column_are_predicted_as_the_labelled_ones(spam, tmp_path, capsys):
    code, _, err = predict(capsys, spam, "default", spam["test"], tmp_path / "labelled.tsv")
    assert code == 0, err
    code, _, err = predict(capsys, spam, "default", spam["unlabelled"], tmp_path / "new.tsv")
    assert code == 0, err
    assert first_column(tmp_path / "new.tsv") == first_column(tmp_path / "labelled.tsv")
    header, rows = read_predictions(shard(tmp_path / "new.tsv"))
    assert header[:2] == ["prediction", "label"] and {row[1] for row in rows} == {""}  # no label: an empty cell
    assert {row[1] for row in read_predictions(shard(tmp_path / "labelled.tsv"))[1]} == {"0", "1"}


def test_a_named_label_column_may_be_absent_when_predicting_but_not_when_given_or_evaluating(spam, tmp_path, capsys):
    model = spam["folder"] / "named.model"
    flags = ["--format", "csv", "--label-column", "y", "--loss", "logistic", "--quiet"]
    assert run(capsys, "train", "--input", spam["train"], *flags, "--model", model)[0] == 0
    flags = ["--model", model, "--output", tmp_path / "p", "--num-shards", "1"]
    code, _, err = run(capsys, "predict", "--input", spam["unlabelled"], *flags)
    assert code == 0, err
    assert len(read_predictions(shard(tmp_path / "p"))[1]) == 600
    for command in (["evaluate"], ["predict", "--label-column", "y", "--output", tmp_path / "q"]):
        code, out, err = run(capsys, *command, "--input", spam["unlabelled"], "--model", model)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "'y'" in err and "Traceback" not in err


def test_evaluate_refuses_rows_without_the_default_label_column_naming_it(spam, capsys):
    code, out, err = run(capsys, "evaluate", "--input", spam["unlabelled"], "--model", spam["default_model"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "unlabelled.csv: lacks the model's label column 'y' (its columns: f1, f2," in err
    assert "evaluate needs the labels (predict reads files without them)" in err


def test_headerless_rows_are_told_labelled_or_not_by_their_number_of_columns(spam, tmp_path, capsys):
    assert predict(capsys, spam, "headerless", spam["headerless_test"], tmp_path / "a.tsv")[0] == 0
    assert predict(capsys, spam, "headerless", spam["headerless_unlabelled"], tmp_path / "b.tsv")[0] == 0
    assert first_column(tmp_path / "b.tsv") == first_column(tmp_path / "a.tsv")
    short = write_csv(tmp_path / "short.csv", [], [["1", "2", "3"]], header=False)
    code, _, err = predict(capsys, spam, "headerless", short, tmp_path / "c.tsv")
    assert code == 2 and err.count("\n") == 1
    assert "has 3 columns, but the model's rows had 58: " in err and "58 columns or 57 without the label" in err
    code, _, err = run(
        capsys, "evaluate", "--input", spam["headerless_unlabelled"], "--model", spam["headerless_model"]
    )
    assert code == 2 and "has 57 columns, one fewer than the model's 58: the label column, it seems" in err


def test_files_lacking_model_columns_are_refused_naming_them_unless_allowed(spam, tmp_path, capsys):
    for command in (["predict", "--output", tmp_path / "p.tsv"], ["evaluate"]):
        code, out, err = run(capsys, *command, "--input", spam["missing"], "--model", spam["default_model"])
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "missing.csv: lacks 3 of the model's 57 feature columns: f7, f53, f56 (" in err
        assert "--missing-columns allow" in err
    assert not (tmp_path / "p.tsv").exists()
    # Allowed: each absent column is missing in every row, as an empty cell.
    code, _, err = predict(capsys, spam, "default", spam["missing"], tmp_path / "m.tsv", "--missing-columns", "allow")
    assert code == 0, err
    assert predict(capsys, spam, "default", spam["blanked"], tmp_path / "b.tsv")[0] == 0
    assert first_column(tmp_path / "m.tsv") == first_column(tmp_path / "b.tsv")
    # What the refusal saves a user from: the same rows scored without the three columns (each at its
    # training mean) are another model's predictions (measured: 247 of the 600 probabilities move by more
    # than 0.05, 23 by more than 0.2).
    assert predict(capsys, spam, "default", spam["test"], tmp_path / "w.tsv")[0] == 0
    with_them, without = first_column(tmp_path / "w.tsv"), first_column(tmp_path / "m.tsv")
    moved = [abs(float(a) - float(b)) for a, b in zip(with_them, without)]
    assert len(moved) == 600 and sum(m > 0.05 for m in moved) > 150 and sum(m > 0.2 for m in moved) > 10


def test_columns_the_model_never_saw_never_change_a_prediction(spam, tmp_path, capsys):
    # A column whose name hashes to the slot of f53 (a strong feature): read as a feature, it would add to it.
    clash = next(f"new{i}" for i in range(10**6) if feature_slot(f"new{i}") == feature_slot("f53"))
    header, *rows = spam["test"].read_text().splitlines()
    extra = tmp_path / "extra.csv"
    extra.write_text("\n".join([f"{header},{clash}"] + [f"{row},5" for row in rows]) + "\n")
    assert predict(capsys, spam, "default", spam["test"], tmp_path / "a.tsv")[0] == 0
    assert predict(capsys, spam, "default", extra, tmp_path / "b.tsv")[0] == 0
    assert first_column(tmp_path / "b.tsv") == first_column(tmp_path / "a.tsv")


def test_parquet_rows_are_held_against_the_models_columns(spam, tmp_path, capsys):
    test = pq.read_table(spam["folder"] / "test.parquet")
    pq.write_table(test.drop_columns(["label"]), tmp_path / "new.parquet")
    pq.write_table(test.drop_columns(["label", "f53"]), tmp_path / "lacking.parquet")
    assert predict(capsys, spam, "parquet", spam["folder"] / "test.parquet", tmp_path / "a.tsv")[0] == 0
    assert predict(capsys, spam, "parquet", tmp_path / "new.parquet", tmp_path / "b.tsv")[0] == 0
    assert first_column(tmp_path / "b.tsv") == first_column(tmp_path / "a.tsv")
    code, _, err = predict(capsys, spam, "parquet", tmp_path / "lacking.parquet", tmp_path / "c.tsv")
    assert code == 2 and "lacking.parquet: lacks 1 of the model's 57 feature columns: f53 (" in err


def test_predict_prints_a_read_summary_like_train(spam, tmp_path, capsys):
    code, out, _ = predict(capsys, spam, "default", spam["test"], tmp_path / "p.tsv")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "read: records read 601 = examples 600 + dead letters 0 + skipped 1 (ok)"
    assert lines[1] == f"predicted 600 of 600 examples (probability) with {spam['default_model']}"
    assert lines[2] == f"predictions written to {shard(tmp_path / 'p.tsv')}"


def test_predict_says_how_many_examples_of_unseen_keys_went_unpredicted(spam, tmp_path, capsys):
    header, *rows = spam["test"].read_text().splitlines()
    keyed = tmp_path / "keyed.csv"
    keyed.write_text("\n".join([f"{header},k"] + [f"{row},{'abc'[i % 3]}" for i, row in enumerate(rows)]) + "\n")
    new = tmp_path / "new.csv"
    keys = ["abc"[i % 3] if i < 30 else f"z{i % 4}" for i in range(70)]
    new.write_text("\n".join([f"{header},k"] + [f"{row},{key}" for row, key in zip(rows, keys)]) + "\n")
    folder = tmp_path / "per_key"
    flags = ["--format", "csv", "--key", "column:k", "--loss", "logistic", "--quiet"]
    assert run(capsys, "train", "--input", keyed, *flags, "--model", folder)[0] == 0
    flags = ["--model", folder, "--output", tmp_path / "p.tsv", "--num-shards", "1"]
    code, out, err = run(capsys, "predict", "--input", new, *flags)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "read: records read 71 = examples 70 + dead letters 0 + skipped 1 (ok)"
    assert lines[1] == f"predicted 30 of 70 examples (probability) with {folder}"
    assert lines[2].startswith("40 of 70 examples unpredicted: their key has no model (--fallback-model")
    assert len(read_predictions(shard(tmp_path / "p.tsv"))[1]) == 30


def test_one_output_file_named_as_asked_or_shards_on_request(spam, tmp_path, capsys):
    model = spam["default_model"]
    one = tmp_path / "one" / "preds.tsv"
    one.parent.mkdir()
    (tmp_path / "two").mkdir()
    code, out, _ = run(capsys, "predict", "--input", spam["test"], "--model", model, "--output", one)
    assert code == 0 and last_json(out)["prediction_files"] == [str(one)]
    assert sorted(os.listdir(one.parent)) == ["preds.tsv", "preds.tsv.dead_letters.jsonl", "preds.tsv.report.json"]
    assert len(read_predictions(one)[1]) == 600
    two = tmp_path / "two" / "preds"
    code, out, _ = run(
        capsys, "predict", "--input", spam["test"], "--model", model, "--output", two, "--num-shards", "2"
    )
    shards = [f"{two}-0000{i}-of-00002" for i in range(2)]
    assert code == 0 and last_json(out)["prediction_files"] == shards
    assert sum(len(read_predictions(path)[1]) for path in shards) == 600


def test_a_refused_predict_leaves_no_predictions(spam, tmp_path, capsys):
    header, *rows = spam["unlabelled"].read_text().splitlines()
    dirty = tmp_path / "dirty.csv"
    dirty.write_text("\n".join([header] + [row if i % 4 else "oops," + row[5:] for i, row in enumerate(rows)]) + "\n")
    code, _, err = run(
        capsys, "predict", "--input", dirty, "--model", spam["default_model"], "--output", tmp_path / "p"
    )
    assert code == 1 and "150 of 600 records (25%) are dead letters" in err
    assert sorted(os.listdir(tmp_path)) == ["dirty.csv", "p.dead_letters.jsonl", "p.report.json"]
    assert json.loads((tmp_path / "p.report.json").read_text())["failed"]


@pytest.mark.subprocess
def test_standard_input_to_standard_output(spam, tmp_path, capsys):
    assert predict(capsys, spam, "default", spam["unlabelled"], tmp_path / "file.tsv")[0] == 0
    made = sorted(os.listdir(tmp_path))
    command = [sys.executable, "-m", "polybeam.pipelines.cli", "predict", "--input", "-", "--output", "-"]
    done = subprocess.run(
        [*command, "--model", str(spam["default_model"])],
        input=spam["unlabelled"].read_bytes(),
        capture_output=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    header, *lines = done.stdout.decode().splitlines()
    assert header == "prediction\tlabel\tsource\trow\ttag" and len(lines) == 600
    assert {line.split("\t")[2] for line in lines} == {"<stdin>"}
    assert [line.split("\t")[0] for line in lines] == first_column(tmp_path / "file.tsv")
    told = done.stderr.decode().splitlines()
    assert "read: records read 601 = examples 600 + dead letters 0 + skipped 1 (ok)" in told
    assert "predictions written to standard output" in told and json.loads(told[-1])["output"] == "-"
    assert sorted(os.listdir(tmp_path)) == made  # (nothing written beside)


def test_standard_streams_need_the_local_runner_and_a_wait(spam, capsys):
    model = spam["default_model"]
    for flags, said in (
        (["--runner", "PortableRunner", "--job_endpoint", "localhost:1"], "--output - needs the local runner"),
        (["--no-wait"], "--input - and --output - cannot be used with --no-wait"),
    ):
        inputs = ["--input", spam["test"]] if "PortableRunner" in flags else ["--input", "-"]
        code, out, err = run(capsys, "predict", *inputs, "--model", model, "--output", "-", *flags)
        assert code == 2 and out == "" and err.count("\n") == 1 and said in err, err


def test_predictions_are_the_label_the_probability_or_the_score(spam, tmp_path, capsys):
    outputs = {}
    for kind in ("label", "probability", "score"):
        code, out, err = predict(capsys, spam, "default", spam["test"], tmp_path / kind, "--predictions", kind)
        assert code == 0 and last_json(out)["predictions"] == kind, err
        outputs[kind] = first_column(tmp_path / kind)
    probability = np.array(outputs["probability"], dtype=float)
    score = np.array(outputs["score"], dtype=float)
    np.testing.assert_allclose(1 / (1 + np.exp(-score)), probability, rtol=1e-7, atol=1e-12)
    # Labels 0 and 1 are the loss's own (recorded without names): the classes are written as -1 and 1.
    assert outputs["label"] == ["1" if s > 0 else "-1" for s in score]
    assert predict(capsys, spam, "default", spam["test"], tmp_path / "default")[0] == 0
    assert first_column(tmp_path / "default") == outputs["probability"]  # (logistic's default, as before)
    # Labels the model names (here no and yes): the classes by their names, in both columns.
    named = {}
    for name in ("train", "test"):
        header, *rows = spam[name].read_text().splitlines()
        words = [("yes" if row[0] == "1" else "no") + row[1:] for row in rows]
        named[name] = write_csv(tmp_path / f"named_{name}.csv", header.split(","), [w.split(",") for w in words])
    model = tmp_path / "named.model"
    assert (
        run(capsys, "train", "--input", named["train"], "--format", "csv", "--loss", "logistic", "--model", model)[0]
        == 0
    )
    flags = ["--model", model, "--output", tmp_path / "named", "--predictions", "label", "--num-shards", "1"]
    assert run(capsys, "predict", "--input", named["test"], *flags)[0] == 0
    rows = read_predictions(shard(tmp_path / "named"))[1]
    assert {row[0] for row in rows} == {row[1] for row in rows} == {"no", "yes"}
    assert [row[0] for row in rows] == ["yes" if label == "1" else "no" for label in outputs["label"]]


def test_softmax_probabilities_and_scores_have_a_column_per_class(tmp_path, capsys):
    batch = datasets.load("satellite")
    dense = batch.to_csr()[:, 1:37].toarray()
    names = ["red", "cotton", "grey", "damp", "veg", "vdamp"]
    columns = ["soil", *(f"p{j}" for j in range(36))]
    cells = [[names[int(label) - 1]] + [f"{v:g}" for v in row] for label, row in zip(batch.labels, dense)]
    train = write_csv(tmp_path / "train.csv", columns, cells[:1500])
    new = write_csv(tmp_path / "new.csv", columns[1:], [row[1:] for row in cells[1500:1700]])
    model = tmp_path / "soil.model"
    flags = ["--format", "csv", "--loss", "softmax", "--class-names", ",".join(names), "--quiet"]
    assert run(capsys, "train", "--input", train, *flags, "--model", model)[0] == 0
    got = {}
    for kind in ("label", "probability", "score"):
        code, _, err = run(
            capsys,
            "predict",
            "--input",
            new,
            "--model",
            model,
            "--output",
            tmp_path / kind,
            "--predictions",
            kind,
            "--num-shards",
            "1",
        )
        assert code == 0, err
        got[kind] = read_predictions(shard(tmp_path / kind))
    header, rows = got["probability"]
    assert header == [f"probability:{name}" for name in names] + ["label", "source", "row", "tag"]
    probabilities = np.array([row[:6] for row in rows], dtype=float)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-7)
    scores = np.array([row[:6] for row in got["score"][1]], dtype=float)
    assert got["score"][0][:6] == [f"score:{name}" for name in names]
    labels = [row[0] for row in got["label"][1]]
    assert labels == [names[k] for k in probabilities.argmax(axis=1)] == [names[k] for k in scores.argmax(axis=1)]
    assert (
        run(capsys, "predict", "--input", new, "--model", model, "--output", tmp_path / "d", "--num-shards", "1")[0]
        == 0
    )
    assert first_column(tmp_path / "d") == labels  # (softmax's default: the class, as before)
    assert np.mean([label == row[0] for label, row in zip(labels, cells[1500:1700])]) > 0.8


def test_probabilities_of_a_model_without_them_are_refused(spam, tmp_path, capsys):
    model = tmp_path / "squared.model"
    flags = ["--input", spam["train"], "--format", "csv", "--loss", "squared", "--quiet"]
    assert run(capsys, "train", *flags, "--model", model)[0] == 0
    code, out, err = run(
        capsys,
        "predict",
        "--input",
        spam["test"],
        "--model",
        model,
        "--output",
        tmp_path / "p",
        "--predictions",
        "probability",
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--predictions probability: probabilities need a model of logistic or softmax loss" in err
