"""The input contract's findings, replayed: what a new user did at each door, and what polybeam does now.

Each finding that led to the input contract (docs/input-contract.md; CHANGELOG.md, "One input contract
from training to every scoring door") is run here as a user would run it, on scikit-learn's bundled data
(breast cancer, digits, iris; an 80/20 split, seed 0) and on generated short texts
(:class:`polybeam.datasets.synthetic.ShortTexts`): the ``polybeam`` command in this process (as the
console script runs it), the scikit-learn estimators, and the learners from Python. Each result says what
happened: the exit status, the error line, the held-out figures. "Before" quotes what the same steps did
before the contract.

Writes ``results/integrity.{json,md}``.

Run: ``python benchmarks/bench_integrity.py [--results DIR]`` (about two minutes; needs scikit-learn).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import machine_info, markdown_table, write_report  # noqa: E402

SEED = 0
# How the CSV files of the binary findings are read: label column y, logistic loss.
CSV_LOGISTIC = ("--format", "csv", "--label-column", "y", "--loss", "logistic")


class Scratch:
    """A folder of the runs' files."""

    def __init__(self, root: str):
        self.root = root

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def write(self, name: str, text: str) -> str:
        with open(self.path(name), "w") as handle:
            handle.write(text)
        return self.path(name)


def polybeam(*argv) -> dict:
    """``polybeam ARGV`` in this process: its exit status, its JSON report (or None) and its first error line."""
    from polybeam.pipelines.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(arg) for arg in argv])
        except SystemExit as stop:  # (argument errors end as argparse ends them)
            code = stop.code
    lines = out.getvalue().strip().splitlines()
    report = None
    if lines:
        with contextlib.suppress(ValueError):
            report = json.loads(lines[-1])
    lines = err.getvalue().splitlines()
    at = next((number for number, line in enumerate(lines) if "error:" in line), None)
    error = None if at is None else lines[at]
    if error is not None and error.endswith("the first reasons:") and at + 1 < len(lines):
        error += " " + lines[at + 1].strip()  # (an input refusal's first reason follows, indented)
    return {
        "status": code,
        "report": report,
        "error": error,
        "traceback": "Traceback" in err.getvalue(),
        "stdout": out.getvalue(),
    }


def split(frame, seed: int = SEED, test_share: float = 0.2):
    order = np.random.default_rng(seed).permutation(len(frame))
    cut = int(len(frame) * (1 - test_share))
    return frame.iloc[order[:cut]].reset_index(drop=True), frame.iloc[order[cut:]].reset_index(drop=True)


def metrics(result: dict) -> str:
    report = result["report"] or {}
    shown = [f"{name} {report[name]:.4f}" for name in ("loss", "error", "auc") if report.get(name) is not None]
    return ", ".join(shown)


def outcome(result: dict) -> str:
    """A command's ending in a few words: ``exit 0`` or ``exit N: the error line``."""
    text = f"exit {result['status']}"
    error = result["error"]
    if error:
        # (a long line keeps its start, what failed, and its end, what to do)
        text += f": `{error if len(error) <= 360 else error[:160] + ' ... ' + error[-200:]}`"
    if result["traceback"]:
        text += " (a traceback)"
    return text


def cancer_frame():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.rename(columns=lambda name: name.replace(" ", "_"))
    return frame.rename(columns={"target": "y"})


def finding_labels_one_two(scratch: Scratch) -> dict:
    """Binary CSV labels 1 and 2, ``--loss logistic``."""
    frame = cancer_frame()
    frame["y"] = np.where(frame["y"] == 0, 2, 1)  # malignant = 2 (37%)
    train, test = split(frame)
    train.to_csv(scratch.path("12_train.csv"), index=False)
    test.to_csv(scratch.path("12_test.csv"), index=False)
    model = scratch.path("12.model")
    trained = polybeam(
        "train",
        "--input",
        scratch.path("12_train.csv"),
        *CSV_LOGISTIC,
        "--model",
        model,
    )
    scored = polybeam("evaluate", "--input", scratch.path("12_test.csv"), "--model", model)
    report = trained["report"] or {}
    notes = "; ".join(report.get("input_notes") or ())
    return {
        "now": f"{outcome(trained)}, saying `{notes}`; {report.get('dead_letters')} dead letters; "
        f"evaluate: {metrics(scored)}",
    }


def finding_softmax_from_zero(scratch: Scratch) -> dict:
    """Softmax on labels 0..9 (``--classes 10``), and ``--class-names 0,1,...,9``."""
    from sklearn.datasets import load_digits

    digits = load_digits(as_frame=True)
    frame = digits.frame.rename(columns={"target": "y"})
    train, test = split(frame)
    train.to_csv(scratch.path("d_train.csv"), index=False)
    test.to_csv(scratch.path("d_test.csv"), index=False)
    model = scratch.path("d.model")
    common = ("--format", "csv", "--label-column", "y", "--loss", "softmax", "--classes", "10")
    trained = polybeam("train", "--input", scratch.path("d_train.csv"), *common, "--model", model)
    scored = polybeam("evaluate", "--input", scratch.path("d_test.csv"), "--model", model)
    named = polybeam(
        "train",
        "--input",
        scratch.path("d_train.csv"),
        *common,
        "--model",
        scratch.path("dn.model"),
        "--class-names",
        ",".join(str(k) for k in range(10)),
    )
    report = trained["report"] or {}
    return {
        "now": f"{outcome(trained)}; {report.get('dead_letters')} dead letters; evaluate: {metrics(scored)}; "
        f"--class-names 0,...,9: {outcome(named)}",
    }


def finding_zero_based_libsvm(scratch: Scratch) -> dict:
    """LIBSVM written by scikit-learn's ``dump_svmlight_file`` (indices from 0)."""
    from sklearn.datasets import dump_svmlight_file

    frame = cancer_frame()
    train, test = split(frame)
    for name, part in (("z_train", train), ("z_test", test)):
        labels = np.where(part["y"] == 1, 1, -1)
        dump_svmlight_file(part.drop(columns="y").to_numpy(), labels, scratch.path(f"{name}.libsvm"), zero_based=True)
    model = scratch.path("z.model")
    trained = polybeam("train", "--input", scratch.path("z_train.libsvm"), "--loss", "logistic", "--model", model)
    scored = polybeam("evaluate", "--input", scratch.path("z_test.libsvm"), "--model", model)
    report = trained["report"] or {}
    return {"now": f"{outcome(trained)}; {report.get('dead_letters')} dead letters; evaluate: {metrics(scored)}"}


def finding_frame_model_through_cli(scratch: Scratch) -> dict:
    """``PolybeamClassifier`` fitted on a DataFrame, saved, then ``polybeam evaluate --format csv``."""
    from polybeam.sklearn import PolybeamClassifier

    frame = cancer_frame()
    train, test = split(frame)
    classifier = PolybeamClassifier(random_state=0).fit(train.drop(columns="y"), train["y"])
    accuracy = classifier.score(test.drop(columns="y"), test["y"])
    model = scratch.path("sk.model")
    classifier.model_.save(model)
    test.to_csv(scratch.path("sk_test.csv"), index=False)
    scored = polybeam("evaluate", "--input", scratch.path("sk_test.csv"), "--format", "csv", "--model", model)
    return {"now": f"scikit-learn accuracy {accuracy:.4f} (error {1 - accuracy:.4f}); evaluate: {metrics(scored)}"}


def finding_huge_values(scratch: Scratch) -> dict:
    """A third of the rows carry a value 1e308 (and 1e200: finite, its square not)."""
    frame = cancer_frame()
    train, _ = split(frame)
    results = []
    for value in ("1e308", "1e200"):
        lines = ["y," + ",".join(train.columns.drop("y"))]
        for row, (_, record) in enumerate(train.iterrows()):
            cells = [f"{v:g}" for v in record.drop("y")]
            if row % 3 == 0:
                cells[0] = value
            lines.append(f"{int(record['y'])}," + ",".join(cells))
        path = scratch.write(f"huge_{value}.csv", "\n".join(lines) + "\n")
        trained = polybeam(
            "train",
            "--input",
            path,
            *CSV_LOGISTIC,
            "--model",
            scratch.path(f"huge_{value}.model"),
        )
        results.append(f"{value}: {outcome(trained)}")
    return {"now": "; ".join(results)}


def finding_missing_columns(scratch: Scratch) -> dict:
    """A scoring CSV that lacks 3 of the 30 training columns."""
    frame = cancer_frame()
    train, test = split(frame)
    train.to_csv(scratch.path("mc_train.csv"), index=False)
    model = scratch.path("mc.model")
    polybeam(
        "train",
        "--input",
        scratch.path("mc_train.csv"),
        *CSV_LOGISTIC,
        "--model",
        model,
    )
    full = polybeam("evaluate", "--input", _csv(scratch, "mc_test.csv", test), "--model", model)
    dropped = test.drop(columns=list(test.columns[[7, 13, 16]]))
    lacking = _csv(scratch, "mc_lacking.csv", dropped)
    refused = polybeam("evaluate", "--input", lacking, "--model", model)
    allowed = polybeam("evaluate", "--input", lacking, "--model", model, "--missing-columns", "allow")
    return {
        "now": f"all columns: {metrics(full)}; 3 lacking: {outcome(refused)}; "
        f"with --missing-columns allow: {metrics(allowed)}",
    }


def _csv(scratch: Scratch, name: str, frame) -> str:
    frame.to_csv(scratch.path(name), index=False)
    return scratch.path(name)


def finding_predict_unlabelled(scratch: Scratch) -> dict:
    """``predict`` on new, unlabelled CSV (the label column absent)."""
    frame = cancer_frame()
    train, test = split(frame)
    model = scratch.path("pu.model")
    polybeam(
        "train",
        "--input",
        _csv(scratch, "pu_train.csv", train),
        *CSV_LOGISTIC,
        "--model",
        model,
    )
    unlabelled = _csv(scratch, "pu_new.csv", test.drop(columns="y"))
    output = scratch.path("pu_predictions.tsv")
    predicted = polybeam("predict", "--input", unlabelled, "--model", model, "--output", output)
    written = sum(1 for _ in open(output)) - 1 if os.path.exists(output) else None
    report = predicted["report"] or {}
    return {
        "now": f"{outcome(predicted)}; {written} predictions in one file; read: {report.get('records')} records, "
        f"{report.get('examples')} examples, {report.get('dead_letters')} dead letters, {report.get('skipped')} "
        "skipped (the header)"
    }


def finding_parquet_strings(scratch: Scratch) -> dict:
    """Parquet with a string column that carries the signal, against the same table as CSV."""
    import pandas as pd

    rng = np.random.default_rng(SEED)
    n = 4000
    colour = rng.choice(["red", "green", "blue", "grey"], size=n)
    signal = np.select([colour == "red", colour == "green", colour == "blue"], [2.0, -2.0, 1.0], -1.0)
    noise = rng.normal(size=(n, 3))
    label = np.where(signal + 0.5 * noise[:, 0] + rng.logistic(size=n) * 0.3 > 0, 1, 0)
    frame = pd.DataFrame({"y": label, "colour": colour, "a": noise[:, 0], "b": noise[:, 1], "c": noise[:, 2]})
    frame.to_parquet(scratch.path("s.parquet"), index=False)
    csv = _csv(scratch, "s.csv", frame)
    common = ("--label-column", "y", "--loss", "logistic", "--categorical-columns", "colour")
    as_csv = polybeam("train", "--input", csv, "--format", "csv", *common, "--model", scratch.path("s_csv.model"))
    as_parquet = polybeam(
        "train",
        "--input",
        scratch.path("s.parquet"),
        "--format",
        "parquet",
        *common,
        "--model",
        scratch.path("s_parquet.model"),
    )

    def progressive(result):
        value = (result["report"] or {}).get("progressive_loss")
        return f"{value:.4f}" if value is not None else outcome(result)

    return {"now": f"progressive loss: Parquet {progressive(as_parquet)}, CSV {progressive(as_csv)}"}


def finding_sorted_estimator(scratch: Scratch) -> dict:
    """``PolybeamClassifier().fit`` on digits sorted by label, against SGDClassifier."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import SGDClassifier

    from polybeam.sklearn import PolybeamClassifier

    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(SEED).permutation(len(y))
    cut = int(len(y) * 0.8)
    train, test = order[:cut], order[cut:]
    by_label = train[np.argsort(y[train], kind="stable")]
    ours = PolybeamClassifier(random_state=0).fit(X[by_label], y[by_label]).score(X[test], y[test])
    unshuffled = PolybeamClassifier(shuffle=False).fit(X[by_label], y[by_label]).score(X[test], y[test])
    sgd = SGDClassifier(random_state=0).fit(X[by_label], y[by_label]).score(X[test], y[test])
    return {"now": f"accuracy {ours:.4f} (shuffle=False: {unshuffled:.4f}; SGDClassifier {sgd:.4f})"}


def finding_epoch_milliseconds(scratch: Scratch) -> dict:
    """``--timestamp column:ts --window fixed:1d`` with epoch milliseconds."""
    rng = np.random.default_rng(SEED)
    start = 1_700_000_000_000
    lines = ["y,ts,a,b"] + [
        f"{int(rng.random() > 0.5)},{start + i * 600_000},{rng.normal():.4f},{rng.normal():.4f}" for i in range(500)
    ]
    path = scratch.write("ms.csv", "\n".join(lines) + "\n")
    common = (
        "--input",
        path,
        *CSV_LOGISTIC,
        "--timestamp",
        "column:ts",
        "--window",
        "fixed:1d",
    )
    as_seconds = polybeam("train", *common, "--model", scratch.path("ms_models"))
    as_ms = polybeam("train", *common, "--timestamp-unit", "ms", "--model", scratch.path("ms_models_ok"))
    windows = len((as_ms["report"] or {}).get("windows") or ())
    return {"now": f"{outcome(as_seconds)}; with --timestamp-unit ms: {outcome(as_ms)}, {windows} windows' models"}


def finding_headerless_file(scratch: Scratch) -> dict:
    """A glob of CSV files, one without a header."""
    folder = scratch.path("glob")
    os.makedirs(folder, exist_ok=True)
    rows = [f"{i % 2},{i * 0.1:.1f},{i % 7}" for i in range(40)]
    with open(os.path.join(folder, "a.csv"), "w") as handle:
        handle.write("y,a,b\n" + "\n".join(rows[:20]) + "\n")
    with open(os.path.join(folder, "b.csv"), "w") as handle:
        handle.write("\n".join(rows[20:]) + "\n")
    result = polybeam(
        "train",
        "--input",
        os.path.join(folder, "*.csv"),
        *CSV_LOGISTIC,
        "--model",
        scratch.path("glob.model"),
    )
    return {"now": outcome(result)}


def finding_warm_start_other_format(scratch: Scratch) -> dict:
    """``--initial-model`` of a CSV-trained model, on LIBSVM input; and on CSV without repeating options."""
    frame = cancer_frame()
    train, _ = split(frame)
    csv = _csv(scratch, "w_train.csv", train)
    model = scratch.path("w.model")
    polybeam("train", "--input", csv, *CSV_LOGISTIC, "--model", model)
    libsvm = scratch.write(
        "w.libsvm",
        "".join(
            f"{'1' if y == 1 else '-1'} " + " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(row)) + "\n"
            for y, row in zip(train["y"], train.drop(columns="y").to_numpy())
        ),
    )
    other = polybeam("train", "--input", libsvm, "--initial-model", model, "--model", scratch.path("w2.model"))
    same = polybeam("train", "--input", csv, "--initial-model", model, "--model", scratch.path("w3.model"))
    report = same["report"] or {}
    return {
        "now": f"LIBSVM: {outcome(other)}; the CSV without options: {outcome(same)}, progressive loss "
        f"{report.get('progressive_loss', float('nan')):.4f}"
    }


def _text_log_loss(model, batch) -> float:
    return float(np.mean(np.logaddexp(0.0, -np.where(batch.labels > 0, 1.0, -1.0) * model.margins(batch))))


def finding_repeated_tokens(scratch: Scratch) -> dict:
    """VW text where a word repeats within an example in 3% of rows: held-out log loss (seeds 0-5)."""
    from polybeam.datasets.synthetic import ShortTexts
    from polybeam.formats.vw import VWFormat
    from polybeam.learners.config import LearnerConfig
    from polybeam.learners.polynomial import make_learner

    rows = []
    for seed in range(6):
        texts = ShortTexts.repeated_word(seed=seed)
        generated, _ = texts.generate()
        cut = len(generated) * 4 // 5
        train, test = (
            VWFormat(bits=18).parse(ShortTexts.to_vw(part), source="t").batch
            for part in (generated[:cut], generated[cut:])
        )
        losses = {}
        for center in (True, False):
            config = LearnerConfig(loss="logistic", bits=18, center=center)
            losses[center] = _text_log_loss(make_learner(config).learn(train).to_model(), test)
        rate = np.mean(train.labels > 0)
        base = float(-np.mean(np.where(test.labels > 0, np.log(rate), np.log(1 - rate))))
        rows.append((losses[True], losses[False], base))
    centred, plain, base = (float(np.mean(column)) for column in zip(*rows))
    worst = max(c - p for c, p, _ in rows)
    return {
        "now": f"held-out log loss {centred:.4f} (--no-center {plain:.4f}, base rate {base:.4f}; "
        f"worst seed centred - not {worst:+.4f})"
    }


def finding_per_key_short_texts(scratch: Scratch) -> dict:
    """Separate per-key models on ~1,500 keys of 1-19 short texts, against one global model."""
    from polybeam.datasets.synthetic import ShortTexts
    from polybeam.formats.vw import VWFormat
    from polybeam.learners.config import LearnerConfig
    from polybeam.learners.polynomial import make_learner

    def parse(part):
        return VWFormat(bits=18).parse(ShortTexts.to_vw(part), source="t").batch

    train, test = ShortTexts(keys=1500, seed=0).generate()
    by_key: dict = {}
    for key, line in train:
        by_key.setdefault(key, []).append((key, line))
    losses: dict = {True: [], False: [], "global": []}
    global_model = make_learner(LearnerConfig(loss="logistic", bits=18)).learn(parse(train)).to_model()
    for key, line in test:
        batch = parse([(key, line)])
        losses["global"].append(_text_log_loss(global_model, batch))
        for center in (True, False):
            config = LearnerConfig(loss="logistic", bits=18, center=center)
            model = make_learner(config, sparse=True).learn(parse(by_key[key])).to_model()
            losses[center].append(_text_log_loss(model, batch))
    mean = {name: float(np.mean(values)) for name, values in losses.items()}
    return {"now": f"per key {mean[True]:.4f} (--no-center {mean[False]:.4f}); one global model {mean['global']:.4f}"}


def finding_finishing_stage(scratch: Scratch) -> dict:
    """``--lbfgs-passes 5`` with the default L2, on breast cancer and iris: held-out accuracy."""
    from sklearn.datasets import load_iris

    results = []
    iris = load_iris(as_frame=True).frame.rename(columns=lambda name: name.replace(" ", "_").strip("()"))
    iris = iris.rename(columns={"target": "y"})
    for name, frame, loss in (
        ("breast cancer", cancer_frame(), ("--loss", "logistic")),
        ("iris", iris, ("--loss", "softmax", "--classes", "3")),
    ):
        train, test = split(frame)
        stem = name.replace(" ", "_")
        train_csv, test_csv = _csv(scratch, f"{stem}_train.csv", train), _csv(scratch, f"{stem}_test.csv", test)
        errors = []
        for extra in ((), ("--lbfgs-passes", "5")):
            model = scratch.path(f"{stem}{len(extra)}.model")
            polybeam(
                "train", "--input", train_csv, "--format", "csv", "--label-column", "y", *loss, *extra, "--model", model
            )
            trained = polybeam(
                "train", "--input", train_csv, "--format", "csv", "--label-column", "y", *loss, *extra, "--model", model
            )
            scored = polybeam("evaluate", "--input", test_csv, "--model", model)
            errors.append((scored["report"] or {}).get("error"))
        stage = (trained["report"] or {}).get("lbfgs") or {}
        kept = "the online model" if stage.get("kept") == "online" else f"L2 {stage.get('l2')}"
        results.append(
            f"{name}: accuracy {1 - errors[0]:.3f} -> {1 - errors[1]:.3f} with the finishing stage (it kept {kept}, "
            f"chosen on {stage.get('holdout_examples_weight', 0):.0f} held-out examples)"
        )
    return {"now": "; ".join(results)}


FINDINGS = (
    (
        "binary CSV labels 1 and 2, --loss logistic",
        "every 2 a dead letter, (ok), error 0, AUC null",
        finding_labels_one_two,
    ),
    (
        "softmax on labels 0..9 (--classes 10)",
        "every class-0 row dropped, (ok); --class-names 0,1,... refused",
        finding_softmax_from_zero,
    ),
    (
        "LIBSVM from dump_svmlight_file (0-based)",
        "272 of 5,000 rows dropped, features shifted, (ok)",
        finding_zero_based_libsvm,
    ),
    (
        "PolybeamClassifier on a DataFrame, saved, polybeam evaluate --format csv",
        "error 0.412, AUC 0.5 (scikit-learn 0.958)",
        finding_frame_model_through_cli,
    ),
    ("a third of the rows carry 1e308", "exit 0, bias NaN, error 0.5", finding_huge_values),
    ("scoring CSV lacks 3 of 30 columns", "error 0.050 -> 0.261, nothing said", finding_missing_columns),
    ("predict on new, unlabelled CSV", "refused, or the first feature taken as the label", finding_predict_unlabelled),
    (
        "Parquet with a string column carrying the signal",
        "column dropped silently: progressive loss 0.699 vs 0.200 as CSV",
        finding_parquet_strings,
    ),
    (
        "PolybeamClassifier().fit on digits sorted by label",
        "accuracy 0.100 (SGDClassifier 0.944)",
        finding_sorted_estimator,
    ),
    (
        "--timestamp column:ts --window fixed:1d, epoch milliseconds",
        "a 142-line traceback, a half-written folder",
        finding_epoch_milliseconds,
    ),
    ("a glob of CSVs, one without a header", "Beam tracebacks", finding_headerless_file),
    (
        "--initial-model of a CSV model on LIBSVM input",
        "accepted, progressive loss 4.36; options repeated by hand",
        finding_warm_start_other_format,
    ),
    (
        "VW text, a word repeated in 3% of rows",
        "log loss 0.548, worse than the base rate 0.513 (--no-center 0.520)",
        finding_repeated_tokens,
    ),
    ("per-key models of few short texts", "0.016 log loss worse than one global model", finding_per_key_short_texts),
    (
        "--lbfgs-passes 5 with the default L2",
        "breast cancer 0.956 -> 0.870, iris 0.921 -> 0.816",
        finding_finishing_stage,
    ),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=os.path.join(HERE, "results"), help="where integrity.{json,md} go")
    parser.add_argument("--only", default=None, help="comma-separated numbers of findings (1-based)")
    args = parser.parse_args(argv)
    chosen = {int(n) for n in args.only.split(",")} if args.only else None
    results = []
    with tempfile.TemporaryDirectory() as root:
        scratch = Scratch(root)
        for number, (what, before, run) in enumerate(FINDINGS, 1):
            if chosen and number not in chosen:
                continue
            found = run(scratch)
            found["now"] = found["now"].replace(root + os.sep, "")  # (the scratch folder's files by name)
            print(f"{number}. {what}: {found['now']}", flush=True)
            results.append({"finding": what, "before": before, **found})
    report = {"machine": machine_info(), "findings": results}
    if chosen:
        return 0
    markdown = "# The input contract's findings, replayed\n\n" + __doc__.split("\n\n")[1] + "\n\n"
    markdown += (
        markdown_table(("what the user did", "before", "now"), [(r["finding"], r["before"], r["now"]) for r in results])
        + "\n"
    )
    write_report(args.results, "integrity", report, markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
