"""Labels as users write them, through the command line: 1/2, yes/no, classes from 0, LIBSVM from 0.

Each case was a silent wrong model before the input contract (the rows of a class became dead letters
under the allowance, or features shifted by one), on scikit-learn's bundled data written as users do.
"""

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_breast_cancer, load_digits

from polybeam.learners.model import Model
from tests.pipelines.commands import last_json, run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return X[order], y[order]


def write_csv(path, X, labels):
    with open(path, "w") as handle:
        handle.write("y," + ",".join(f"x{j}" for j in range(X.shape[1])) + "\n")
        for label, row in zip(labels, X):
            handle.write(f"{label}," + ",".join(repr(float(v)) for v in row) + "\n")
    return path


@pytest.mark.parametrize(
    "negative, positive",
    [(1, 2), ("no", "yes"), (0, 1), (-1, 1), ("benign", "malignant")],
)
def test_binary_labels_of_any_two_values_train_and_evaluate(tmp_path, capsys, cancer, negative, positive):
    X, y = cancer
    # 2 (or yes, malignant) for the minority class, as in the original finding (212 rows of 569)
    labels = [positive if label == 0 else negative for label in y]
    data = write_csv(tmp_path / "cancer.csv", X, labels)
    model = tmp_path / "m.model"
    code, out, err = run(capsys, "train", "--input", data, "--format", "csv", "--label-column", "y",
                         "--loss", "logistic", "--model", model, "--quiet")  # fmt: skip
    assert code == 0, err
    report = last_json(out)
    assert report["examples"] == 569 and report["dead_letters"] == 0
    names = Model.load(str(model)).config.class_names
    native = {negative, positive} <= {-1, 0, 1}
    assert names == (() if native else (str(negative), str(positive)))
    assert Model.load(str(model)).input["class_names"] == list(names)
    if not native:
        assert report["input_notes"] == [
            f"labels: {negative} is the negative class, {positive} the positive one "
            f"(as with --class-names {negative},{positive})"
        ]
    code, out, err = run(capsys, "evaluate", "--input", data, "--model", model)
    assert code == 0, err
    metrics = last_json(out)
    assert metrics["examples"] == 569 and metrics["error"] < 0.06 and metrics["auc"] > 0.98


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


def test_softmax_on_classes_from_zero_keeps_every_class(tmp_path, capsys, digits):
    X, y = digits
    data = write_csv(tmp_path / "digits.csv", X, y)
    model = tmp_path / "d.model"
    code, out, err = run(capsys, "train", "--input", data, "--format", "csv", "--label-column", "y",
                         "--loss", "softmax", "--classes", 10, "--model", model, "--quiet")  # fmt: skip
    assert code == 0, err
    report = last_json(out)
    assert report["examples"] == 1797 and report["dead_letters"] == 0
    assert Model.load(str(model)).config.class_names == tuple(str(i) for i in range(10))
    code, out, _ = run(capsys, "evaluate", "--input", data, "--model", model)
    assert last_json(out)["error"] < 0.08
    # Naming the classes from 0 says the same thing.
    named = tmp_path / "named.model"
    code, out, err = run(capsys, "train", "--input", data, "--format", "csv", "--label-column", "y",
                         "--loss", "softmax", "--class-names", ",".join(map(str, range(10))), "--model", named,
                         "--quiet")  # fmt: skip
    assert code == 0, err
    assert Model.load(str(named)).weights.tolist() == Model.load(str(model)).weights.tolist()


def test_libsvm_from_scikit_learn_counts_from_zero_and_gives_the_one_based_files_model(tmp_path, capsys, cancer):
    X, y = cancer
    zero, one = tmp_path / "zero.libsvm", tmp_path / "one.libsvm"
    dump_svmlight_file(X, 2 * y - 1, str(zero), zero_based=True)  # scikit-learn's default
    dump_svmlight_file(X, 2 * y - 1, str(one), zero_based=False)
    models = {}
    for name, path, flags in [("zero", zero, []), ("flagged", zero, ["--zero-based"]), ("one", one, [])]:
        models[name] = tmp_path / f"{name}.model"
        code, out, err = run(capsys, "train", "--input", path, "--loss", "logistic", "--model", models[name],
                             "--quiet", *flags)  # fmt: skip
        assert code == 0, err
        assert last_json(out)["dead_letters"] == 0
        if name == "zero":
            assert "LIBSVM feature indices count from 0" in last_json(out)["input_notes"][0]
    weights = {name: Model.load(str(path)).weights.tolist() for name, path in models.items()}
    assert weights["zero"] == weights["flagged"] == weights["one"]
    assert Model.load(str(models["zero"])).input["zero_based"] is True
    code, out, _ = run(capsys, "evaluate", "--input", zero, "--model", models["zero"])
    assert code == 0 and last_json(out)["error"] < 0.1


def test_a_class_the_sample_did_not_see_fails_the_job_and_writes_no_model(tmp_path, capsys):
    rng = np.random.default_rng(1)
    lines = [f"{rng.choice([-1, 1])} 1:{rng.random():.4f} 2:{rng.random():.4f}" for _ in range(30000)]
    for i in range(14000, 14100):  # far from the start and the end the launcher samples
        lines[i] = "2" + lines[i][lines[i].index(" ") :]
    data = tmp_path / "mixed.libsvm"
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.model"
    code, _, err = run(capsys, "train", "--input", data, "--loss", "logistic", "--model", model, "--quiet")
    assert code == 1
    assert err.startswith("polybeam train: error: 100 of 30000 records hold what this task cannot take")
    assert "label 2: 100 records, first at" in err and "--class-names NEGATIVE,POSITIVE" in err
    assert "Traceback" not in err and not model.exists()
    letters = [json.loads(line) for line in open(f"{model}.dead_letters.jsonl")]
    assert len(letters) == 100 and {letter["refused"] for letter in letters} == {"label 2"}


def test_labels_a_binary_loss_cannot_take_are_refused_before_launching(tmp_path, capsys, digits):
    X, y = digits
    data = write_csv(tmp_path / "digits.csv", X, y)
    code, _, err = run(capsys, "train", "--input", data, "--format", "csv", "--label-column", "y",
                       "--loss", "logistic", "--model", tmp_path / "m.model")  # fmt: skip
    assert code == 2
    assert err.startswith("polybeam train: error: the labels hold 10 values (0, 1, 2, 3, 4, 5, 6, 7, 8, 9")
    assert "--loss softmax --classes K" in err and len(err.strip().splitlines()) == 1


def test_a_warm_start_reads_its_input_as_its_model_did(tmp_path, capsys, cancer):
    X, y = cancer
    data = write_csv(tmp_path / "cancer.csv", X, np.where(y == 0, "yes", "no"))
    first = tmp_path / "first.model"
    code, _, err = run(capsys, "train", "--input", data, "--format", "csv", "--label-column", "y",
                       "--loss", "logistic", "--model", first, "--quiet")  # fmt: skip
    assert code == 0, err
    # Neither the loss nor the CSV options nor the class names are repeated: they come from the model.
    again = tmp_path / "again.model"
    code, out, err = run(capsys, "train", "--input", data, "--initial-model", first, "--model", again, "--quiet")
    assert code == 0, err
    model = Model.load(str(again))
    assert model.config.loss == "logistic" and model.config.class_names == ("no", "yes")
    assert model.input["format"] == "csv" and model.input["label_column"] == "y" and last_json(out)["examples"] == 569
    # LIBSVM lines cannot be what a model of CSV columns reads: refused before launching, in one line.
    libsvm = tmp_path / "cancer.libsvm"
    dump_svmlight_file(X, 2 * y - 1, str(libsvm), zero_based=False)
    code, _, err = run(capsys, "train", "--input", libsvm, "--initial-model", first, "--model", tmp_path / "x.model")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "these records look like LIBSVM" in err and "was trained on CSV input" in err
    # Contradicting the model's own settings is refused too, naming the difference.
    code, _, err = run(capsys, "train", "--input", data, "--initial-model", first, "--loss", "hinge",
                       "--model", tmp_path / "y.model")  # fmt: skip
    assert code == 2 and "loss is logistic there, hinge here" in err
