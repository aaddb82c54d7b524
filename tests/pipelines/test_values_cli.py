"""``polybeam train`` on values no learner can take: dead letters saying so, and never a model that is not
finite reported as a success (issue 31: a third of the rows at 1e308 gave exit 0, a NaN bias and an
``evaluate`` error of 0.5)."""

import numpy as np
import pytest

from polybeam.learners.model import Model
from tests.pipelines.test_cli import last_json, run


def write_rows(path, value, every=3, n=600, seed=0):
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        x = rng.normal(size=3)
        features = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
        if i % every == 0:
            features += f" 4:{value!r}"
        lines.append(f"{1 if x.sum() > 0 else -1} {features}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_a_third_of_the_rows_at_1e308_are_dead_letters_not_a_nan_model(tmp_path, capsys):
    data = write_rows(tmp_path / "big.libsvm", 1e308)
    code, _, stderr = run(capsys, "train", "--input", data, "--loss", "logistic", "--model", tmp_path / "m.model")
    assert code != 0 and "feature value beyond +-3.4e+38 (rescale it): '4:1e+308'" in stderr
    assert not (tmp_path / "m.model").exists()
    # Allowed to go on without them, the job learns from the other rows.
    code, stdout, stderr = run(
        capsys, "train", "--input", data, "--loss", "logistic", "--model", tmp_path / "m.model",
        "--max-dead-letter-fraction", "0.5",
    )  # fmt: skip
    assert code == 0, stderr
    report = last_json(stdout)
    assert report["dead_letters"] == 200 and report["examples"] == 400
    model = Model.load(str(tmp_path / "m.model"))
    assert np.isfinite(model.dense_weights).all()
    code, stdout, _ = run(capsys, "evaluate", "--input", write_rows(tmp_path / "t.libsvm", 1.0, seed=1),
                          "--model", tmp_path / "m.model")  # fmt: skip
    assert code == 0 and last_json(stdout)["error"] < 0.1


@pytest.mark.slow
def test_labels_whose_squares_overflow_fail_in_one_line_and_write_no_model(tmp_path, capsys):
    rng = np.random.default_rng(1)
    data = tmp_path / "labels.libsvm"
    data.write_text("".join(f"{1e200 * rng.normal()!r} 1:{rng.normal():.3f}\n" for _ in range(300)))
    code, _, stderr = run(capsys, "train", "--input", data, "--model", tmp_path / "m.model", "--quiet")
    assert code == 1 and not (tmp_path / "m.model").exists()
    (line,) = [line for line in stderr.splitlines() if line.strip()]
    assert "no model is written; likely cause: labels as large as" in line and "Traceback" not in stderr
