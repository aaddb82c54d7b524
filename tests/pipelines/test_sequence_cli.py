"""``polybeam sequence`` and ``polybeam timeliness`` end to end on bundled spam, and their usage errors."""

from __future__ import annotations

import importlib.util
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from polybeam import datasets
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.pipelines.cli import main
from polybeam.selection.anytime import AnytimeModel
from polybeam.selection.timeliness import stopping_cost, timeliness

METHODS = ("cs-g-omp", "cs-g-fr")
PREFIX_KEYS = {"rank", "group", "cost", "cumulative_cost", "explained_variance", "weights", "intercept"}
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def run(*argv):
    """main() with its stdout and stderr captured (usable from module-scoped fixtures)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(arg) for arg in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def spam_split(tmp_path_factory):
    return datasets.write_split("spam", str(tmp_path_factory.mktemp("spam")))


@pytest.fixture(scope="module")
def sequenced(spam_split, tmp_path_factory):
    """Prefix files of both methods on the train split, and their timeliness on the test split."""
    train, test = spam_split
    folder = tmp_path_factory.mktemp("sequenced")
    reports, paths = {}, {}
    for method in METHODS:
        paths[method] = folder / f"{method}.jsonl"
        code, stdout, stderr = run(
            "sequence",
            "--input",
            train,
            "--groups",
            datasets.group_spec_path("spam"),
            "--method",
            method,
            "--output",
            paths[method],
        )
        assert code == 0, stderr
        reports[method] = last_json(stdout)
    plot = folder / "curves.png"
    code, stdout, stderr = run(
        "timeliness",
        "--input",
        test,
        "--prefixes",
        ",".join(str(paths[m]) for m in METHODS),
        "--alpha",
        "1",
        *(("--plot", plot) if HAS_MATPLOTLIB else ()),
    )
    assert code == 0, stderr
    return {"reports": reports, "paths": paths, "timeliness": last_json(stdout), "stdout": stdout, "plot": plot}


@pytest.mark.slow
def test_sequence_writes_the_prefixes_of_every_method(sequenced):
    spec = json.load(open(datasets.group_spec_path("spam")))
    costs = {group["name"]: float(group["cost"]) for group in spec["groups"]}
    for method in METHODS:
        report = sequenced["reports"][method]
        assert report["command"] == "sequence" and report["method"] == method
        assert (report["examples"], report["records"], report["dead_letters"]) == (3681, 3681, 0)
        assert report["groups"] == report["sequenced"] == 13 and report["skipped"] == []
        assert sorted(report["order"]) == sorted(costs)
        assert report["total_cost"] == pytest.approx(sum(costs.values())) == 44.0
        records = [json.loads(line) for line in open(sequenced["paths"][method])]
        assert all(PREFIX_KEYS <= set(record) for record in records)
        assert [r["rank"] for r in records] == list(range(1, 14))
        assert [r["group"] for r in records] == report["order"]
        assert [r["cost"] for r in records] == [costs[r["group"]] for r in records]
        assert [r["cumulative_cost"] for r in records] == pytest.approx(np.cumsum([r["cost"] for r in records]))
        assert all(r["method"] == method and r["examples"] == 3681 and r["seed"] == 0 for r in records)
        # A prefix holds the features of its groups: the weights grow with the prefix.
        sizes = [len(r["weights"]) for r in records]
        assert sizes[-1] == 57 and all(a < b for a, b in zip(sizes, sizes[1:]))
        explained = [r["explained_variance"] for r in records]
        assert all(later >= earlier - 1e-6 for earlier, later in zip(explained, explained[1:]))
        assert report["explained_variance"] == pytest.approx(explained[-1])
        assert 0.5 < explained[-1] < 0.6  # measured 0.5585: a linear model of the +-1 spam label


def test_timeliness_measures_both_methods_on_the_held_out_split(sequenced, spam_split):
    report = sequenced["timeliness"]
    assert {"alpha", "stopping_cost", "methods", "timeliness"} <= set(report)
    assert report["command"] == "timeliness" and report["examples"] == 920 and report["reference"] == "cs-g-omp"
    assert report["alpha"] == 1.0
    reference = AnytimeModel.load(str(sequenced["paths"]["cs-g-omp"]))
    assert report["stopping_cost"] == stopping_cost(*reference.curve(), alpha=1.0) == 44.0
    assert set(report["methods"]) == set(METHODS) == set(report["timeliness"])
    _, test = spam_split
    held_out = LibsvmFormat().parse(open(test, "rb").read()).batch
    sst = np.sum((held_out.labels - held_out.labels.mean()) ** 2)
    for method, entry in report["methods"].items():
        assert report["timeliness"][method] == entry["timeliness"]
        model = AnytimeModel.load(str(sequenced["paths"][method]))
        # The reported curve is every prefix's held-out 1 - SSE / SST, against cumulative cost.
        sse = np.sum((model.predict_prefixes(held_out) - held_out.labels[:, None]) ** 2, axis=0)
        costs = np.array([point[0] for point in entry["curve"]])
        values = np.array([point[1] for point in entry["curve"]])
        np.testing.assert_allclose(costs, model.curve()[0])
        np.testing.assert_allclose(values, 1 - sse / sst, rtol=1e-9, atol=1e-12)
        assert entry["timeliness"] == pytest.approx(timeliness(costs, values, stop=44.0), abs=1e-12)
        assert entry["training_timeliness"] == pytest.approx(timeliness(*model.curve(), stop=44.0), abs=1e-12)
        assert entry["oracle_timeliness"] >= entry["timeliness"] - 1e-12
        assert entry["order"] == [prefix["group"] for prefix in model.prefixes]
        # Measured on the default 80/20 split: 0.557 for every method (the full model is the same).
        assert entry["final_explained_variance"] >= 0.50
    # Measured 0.471 for cs-g-omp at alpha = 1.
    assert report["timeliness"]["cs-g-omp"] >= 0.43
    assert "alpha 1: stopping cost 44 (from cs-g-omp)" in sequenced["stdout"]


def test_timeliness_plots_the_curves(sequenced):
    pytest.importorskip("matplotlib")
    plot = sequenced["plot"]
    assert sequenced["timeliness"]["plot"] == str(plot)
    data = plot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000


@pytest.fixture(scope="module")
def partial_spec(tmp_path_factory):
    """The spam groups without "capitals" (features 55-57)."""
    spec = json.load(open(datasets.group_spec_path("spam")))
    spec["groups"] = [group for group in spec["groups"] if group["name"] != "capitals"]
    path = tmp_path_factory.mktemp("specs") / "partial.json"
    path.write_text(json.dumps(spec))
    return path


def test_features_no_group_names_fail_the_job_naming_them(tmp_path, spam_split, partial_spec):
    train, _ = spam_split
    code, _, stderr = run("sequence", "--input", train, "--groups", partial_spec, "--output", tmp_path / "p.jsonl")
    assert code == 2
    assert "polybeam sequence: error:" in stderr and "in no group" in stderr and "[55, 56, 57]" in stderr
    assert not (tmp_path / "p.jsonl").exists()


def test_a_default_group_gathers_the_features_no_group_names(tmp_path, spam_split, partial_spec):
    train, _ = spam_split
    output = tmp_path / "p.jsonl"
    code, stdout, stderr = run(
        "sequence",
        "--input",
        train,
        "--groups",
        partial_spec,
        "--output",
        output,
        "--default-group",
        "rest",
        "--default-group-cost",
        "2",
    )
    assert code == 0, stderr
    report = last_json(stdout)
    assert "rest" in report["order"] and report["groups"] == 13 and report["skipped"] == []
    assert report["total_cost"] == pytest.approx(44.0 - 5.0 + 2.0)
    (rest,) = [record for record in map(json.loads, open(output)) if record["group"] == "rest"]
    assert rest["cost"] == 2.0 and {"55", "56", "57"} <= set(rest["weights"])


def duplicate_input(tmp_path):
    """Examples whose feature 3 always equals feature 1, and groups a = {1}, b = {2}, copy = {3}."""
    rng = np.random.default_rng(1)
    lines = []
    for _ in range(200):
        a, b = rng.normal(size=2)
        lines.append(f"{a - b + 0.1 * rng.normal():.6f} 1:{a:.6f} 2:{b:.6f} 3:{a:.6f}\n")
    (tmp_path / "dup.libsvm").write_text("".join(lines))
    spec = {
        "groups": [
            {"name": "a", "features": [1], "cost": 1},
            {"name": "b", "features": [2], "cost": 1},
            {"name": "copy", "features": [3], "cost": 2},
        ]
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    return tmp_path / "dup.libsvm", tmp_path / "spec.json"


def test_a_duplicate_group_is_skipped_not_a_crash(tmp_path):
    data, spec = duplicate_input(tmp_path)
    output = tmp_path / "p.jsonl"
    code, stdout, stderr = run("sequence", "--input", data, "--groups", spec, "--output", output)
    assert code == 0, stderr
    report = last_json(stdout)
    assert report["order"] == ["a", "b"] and report["sequenced"] == 2 and report["groups"] == 3
    (skipped,) = report["skipped"]
    assert skipped["group"] == "copy" and "linear combinations" in skipped["reason"]
    assert [json.loads(line)["group"] for line in open(report["skipped_output"])] == ["copy"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sequence", "--input", "{train}", "--output", "{tmp}/p.jsonl"], "polybeam sequence needs --groups"),
        (["sequence", "--groups", "{spec}", "--output", "{tmp}/p.jsonl"], "polybeam sequence needs --input"),
        (["sequence", "--input", "{train}", "--groups", "{spec}"], "polybeam sequence needs --output"),
        (
            ["sequence", "--input", "{train}", "--groups", "{tmp}/none.json", "--output", "{tmp}/p.jsonl"],
            "cannot read the group specification",
        ),
        (
            [
                "sequence",
                "--input",
                "{train}",
                "--groups",
                "{spec}",
                "--output",
                "{tmp}/p.jsonl",
                "--memory-limit-mb",
                "0.001",
            ],
            "above the limit of",
        ),
        (
            ["sequence", "--input", "{train}", "--groups", "{spec}", "--output", "{tmp}/p.jsonl", "--ridge", "-1"],
            "--ridge must be a finite number >= 0",
        ),
        (
            ["sequence", "--input", "{train}", "--groups", "{spec}", "--output", "{tmp}/p.jsonl", "--prefixes", "x"],
            "--prefixes does not apply to polybeam sequence",
        ),
        (
            ["timeliness", "--input", "{train}", "--prefixes", "{prefixes}", "--alpha", "1.5"],
            "--alpha must be in (0, 1], got 1.5",
        ),
        (["timeliness", "--input", "{train}", "--prefixes", "{prefixes}", "--alpha", "0"], "--alpha must be in (0, 1]"),
        (["timeliness", "--input", "{train}"], "polybeam timeliness needs --prefixes"),
        (["timeliness", "--input", "{train}", "--prefixes", "{tmp}/bad.jsonl"], "bad.jsonl, line 2: not a JSON object"),
        (["timeliness", "--input", "{train}", "--prefixes", "{tmp}/empty.jsonl"], "prefix files without any prefix"),
        (
            ["timeliness", "--input", "{train}", "--prefixes", "{prefixes}", "--reference", "nope"],
            "--reference nope is not one of the --prefixes files",
        ),
    ],
)
def test_bad_usage_fails_before_any_pipeline_with_a_message(tmp_path, spam_split, sequenced, argv, message):
    train, _ = spam_split
    (tmp_path / "bad.jsonl").write_text(open(sequenced["paths"]["cs-g-omp"]).readline() + "{not json\n")
    (tmp_path / "empty.jsonl").write_text("\n")
    values = {
        "train": train,
        "tmp": tmp_path,
        "spec": datasets.group_spec_path("spam"),
        "prefixes": sequenced["paths"]["cs-g-omp"],
    }
    code, stdout, stderr = run(*[arg.format(**values) for arg in argv])
    assert code == 2
    assert message in stderr
    assert stdout == ""


def test_a_method_that_does_not_exist_is_refused_by_the_argument_parser(spam_split, tmp_path):
    train, _ = spam_split
    code, _, stderr = run(
        "sequence",
        "--input",
        train,
        "--groups",
        datasets.group_spec_path("spam"),
        "--method",
        "bogus",
        "--output",
        tmp_path / "p.jsonl",
    )
    assert code == 2
    assert "invalid choice: 'bogus'" in stderr and "cs-g-omp" in stderr and len(stderr.splitlines()) == 1


def test_the_memory_message_shows_a_need_above_the_limit(spam_split, tmp_path):
    train, _ = spam_split
    code, _, stderr = run(
        "sequence",
        "--input",
        train,
        "--groups",
        datasets.group_spec_path("spam"),
        "--output",
        tmp_path / "p.jsonl",
        "--memory-limit-mb",
        "0.001",
    )
    assert code == 2
    need, limit = (
        float(number) for number in re.search(r"need ([\d.]+) MiB, above the limit of ([\d.]+) MiB", stderr).groups()
    )
    assert need > limit


# -- polybeam predict --prefixes: anytime prediction from the command line ------------------------------


def prediction_rows(output):
    """The prediction files' rows (header checked), as lists of columns."""

    rows = []
    for path in [output]:  # (one file, named as asked)
        lines = open(path).read().splitlines()
        assert lines[0] == "prediction\tlabel\tsource\trow\ttag\tprefix\tcost"
        rows += [line.split("\t") for line in lines[1:]]
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("budget", [0.0, 5.0, 12.5, 1000.0])
def test_predict_with_a_budget_uses_the_longest_prefix_that_fits(sequenced, spam_split, tmp_path, budget):
    _, test = spam_split
    path = sequenced["paths"]["cs-g-omp"]
    output = tmp_path / "anytime"
    code, stdout, stderr = run("predict", "--input", test, "--prefixes", path, "--budget", budget, "--output", output)
    assert code == 0, stderr
    report = last_json(stdout)
    model = AnytimeModel.load(str(path))
    records = [json.loads(line) for line in open(path)]
    fits = [r for r in records if r["cumulative_cost"] <= budget]
    assert report["prefix"] == len(fits) and report["prefix_cost"] == (fits[-1]["cumulative_cost"] if fits else 0)
    assert report["prefix_groups"] == [r["group"] for r in fits]
    assert (report["examples"], report["dead_letters"], report["budget"]) == (920, 0, budget)
    rows = prediction_rows(output)
    assert len(rows) == 920 and {(int(r[5]), float(r[6])) for r in rows} == {(len(fits), report["prefix_cost"])}
    # The numbers are the prefix's own: the same examples through AnytimeModel in Python.
    batch = LibsvmFormat(bits=model.bits, labels="any").parse(open(test, "rb").read(), source=test).batch
    expected = model.predict(batch, prefix=len(fits))
    by_row = {int(r[3]): float(r[0]) for r in rows}
    got = np.array([by_row[int(row)] for row in batch.row_ids])
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-12)
    assert len(set(got.round(9))) > (1 if fits else 0)  # a prefix with groups predicts more than the mean


def test_predict_with_available_groups_stops_at_the_first_missing_one(sequenced, spam_split, tmp_path):
    _, test = spam_split
    path = sequenced["paths"]["cs-g-fr"]
    order = [json.loads(line)["group"] for line in open(path)]
    available = order[:3] + order[4:6]  # the 4th is missing: the prefix stops at 3 groups
    code, stdout, stderr = run(
        "predict", "--input", test, "--prefixes", path, "--groups", ",".join(available), "--output", tmp_path / "p"
    )
    assert code == 0, stderr
    report = last_json(stdout)
    assert report["prefix"] == 3 and report["prefix_groups"] == order[:3] and report["groups"] == available
    assert {int(r[5]) for r in prediction_rows(tmp_path / "p")} == {3}


@pytest.mark.parametrize(
    "extra, message",
    [
        ((), "needs one of --budget B or --groups a,b,c"),
        (("--budget", "3", "--groups", "a"), "needs one of --budget B or --groups a,b,c"),
        (("--budget", "-1"), "--budget must be a finite cost >= 0"),
        (("--groups", "no_such_group"), "no_such_group not in the prefixes"),
        (("--budget", "3", "--model", "m.model"), "--model and --prefixes exclude each other"),
        (("--budget", "3", "--predictions", "probability"), "an anytime prefix predicts values, not probabilities"),
    ],
)
def test_predict_with_prefixes_refuses_unclear_choices(sequenced, spam_split, tmp_path, extra, message):
    _, test = spam_split
    code, _, stderr = run(
        "predict", "--input", test, "--prefixes", sequenced["paths"]["cs-g-omp"], "--output", tmp_path / "p", *extra
    )
    assert code == 2 and message in stderr and "Traceback" not in stderr
