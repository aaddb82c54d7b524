"""A shared per-key model on few rows per key (issue 23 item 2): global, separate, shared, and a batch reference.

The protocol (fixed before anything was tuned; :mod:`polybeam.datasets.shared_keys`):
3,000 related keys, about 20 training rows each (1 + Poisson(19)), 20 standard
normal features; a key's true weights are shared weights N(0, 10**2 / 20) plus
its own offsets N(0, 4**2 / 20) (and an intercept offset); logistic labels.
Held out: 10 fresh rows of every key. Checked on other settings so as not to
tune to one: 5 and 50 rows per key, and squared loss (labels = score + N(0, 1)).

Each polybeam model is trained and evaluated by the command line, as a user
would (``python -m polybeam.pipelines.cli``), with default learner settings,
one pass:

* **global**: one model for all keys (``train`` without ``--key``);
* **separate**: ``--key column:key --key-model separate`` (one model per key);
* **shared**: ``--key column:key --key-model shared``;
* **batch MTL** (scikit-learn, the peer): ``LogisticRegression`` (``Ridge`` for
  squared loss) on the explicit design ``[x, x (x) onehot(key), onehot(key)]``,
  its L2 penalty chosen on 20% of the training rows held out (from
  ``--penalties``), then refit on all of them.

Held-out error (logistic) or MSE (squared), mean over ``--samples`` draws of
the data, from ``--first-sample`` (2: draws 0 and 1 chose the default offset
prior, ``choices.DEFAULT_OFFSET_PRIOR``, so they are not reported). The target: shared <= min(global, separate) - 0.01 (logistic, 20 rows).
Writes ``results/shared_keys.{json,md}``.

Run: ``python benchmarks/bench_shared_keys.py [--samples 2] [--results DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from polybeam.datasets.shared_keys import SharedKeysTask  # noqa: E402

# (name, loss, rows per key): the main setting first.
SETTINGS = [
    ("logistic, 20 rows/key", "logistic", 20),
    ("logistic, 5 rows/key", "logistic", 5),
    ("logistic, 50 rows/key", "logistic", 50),
    ("squared, 20 rows/key", "squared", 20),
]
# The shared model holds 3,000 keys x 21 offsets = 63,000 weights: 2**20 slots keep collisions rare. 20
# features need few slots, and separate per-key learners keep dense state (2**bits slots each, so at 20 bits
# 3,000 of them took 20 GB): global and separate get 12 bits (4,096 slots).
BITS = {"global": 12, "separate": 12, "shared": 20}


def cli(*args: str) -> dict:
    """Run a polybeam command; its report (the last line of its output)."""
    done = subprocess.run(
        [sys.executable, "-m", "polybeam.pipelines.cli", *args, "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(HERE)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"polybeam {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def polybeam_scores(folder: str, loss: str) -> dict:
    metric = "error" if loss == "logistic" else "mse"
    read = ["--format", "csv", "--label-column", "label"]
    scores, seconds = {}, {}
    for name, extra in [
        ("global", ["--ignore-columns", "key"]),
        ("separate", ["--key", "column:key", "--key-model", "separate"]),
        ("shared", ["--key", "column:key", "--key-model", "shared"]),
    ]:
        model = os.path.join(folder, f"{name}.model")
        started = time.perf_counter()
        cli(
            "train",
            "--input",
            os.path.join(folder, "train.csv"),
            *read,
            *extra,
            "--loss",
            loss,
            "--bits",
            str(BITS[name]),
            "--model",
            model,
        )
        seconds[name] = time.perf_counter() - started
        report = cli("evaluate", "--input", os.path.join(folder, "test.csv"), "--model", model)
        scores[name] = report[metric]
    return {"scores": scores, "train_seconds": seconds}


def design(values: np.ndarray, keys: np.ndarray, n_keys: int):
    """``[x, x (x) onehot(key), onehot(key)]`` as a sparse matrix."""
    from scipy import sparse

    n, features = values.shape
    own = np.hstack([values, np.ones((n, 1))])
    rows = np.repeat(np.arange(n), features + 1)
    columns = (keys[:, None] * (features + 1) + np.arange(features + 1)).ravel()
    crossed = sparse.csr_matrix((own.ravel(), (rows, columns)), shape=(n, n_keys * (features + 1)))
    return sparse.hstack([sparse.csr_matrix(values), crossed]).tocsr()


def batch_mtl(train, test, task: SharedKeysTask, penalties: list[float], seed: int) -> dict:
    """scikit-learn on the explicit multitask design, its penalty chosen on a validation split."""
    from sklearn.linear_model import LogisticRegression, Ridge

    index = lambda rows: np.array([int(k[3:]) for k in rows.keys])  # noqa: E731  ("key17" -> 17)
    x_train = design(np.round(train.values, 4), index(train), task.keys)
    x_test = design(np.round(test.values, 4), index(test), task.keys)
    y_train = train.labels
    fit = (
        (lambda penalty: LogisticRegression(C=1.0 / penalty, max_iter=3000))
        if task.loss == "logistic"
        else (lambda penalty: Ridge(alpha=penalty))
    )
    score = (
        (lambda model, x, y: float(np.mean(model.predict(x) != y)))
        if task.loss == "logistic"
        else (lambda model, x, y: float(np.mean((model.predict(x) - y) ** 2)))
    )
    validation = np.random.default_rng(seed).random(len(y_train)) < 0.2
    chosen = {
        penalty: score(
            fit(penalty).fit(x_train[~validation], y_train[~validation]), x_train[validation], y_train[validation]
        )
        for penalty in penalties
    }
    best = min(chosen, key=chosen.get)
    return {"score": score(fit(best).fit(x_train, y_train), x_test, test.labels), "penalty": best, "validation": chosen}


def run(samples: int, penalties: list[float], first_sample: int) -> list[dict]:
    results = []
    for name, loss, rows in SETTINGS:
        for sample in range(first_sample, first_sample + samples):
            task = SharedKeysTask(loss=loss)
            train, test = task.generate(rows_per_key=rows, test_rows_per_key=10, sample=sample)
            with tempfile.TemporaryDirectory() as folder:
                with open(os.path.join(folder, "train.csv"), "wb") as handle:
                    handle.write(train.to_csv())
                with open(os.path.join(folder, "test.csv"), "wb") as handle:
                    handle.write(test.to_csv())
                measured = polybeam_scores(folder, loss)
            measured["scores"]["batch MTL"] = (mtl := batch_mtl(train, test, task, penalties, sample))["score"]
            result = {
                "setting": name,
                "loss": loss,
                "rows_per_key": rows,
                "sample": sample,
                "train_rows": len(train.labels),
                "test_rows": len(test.labels),
                **measured,
                "mtl_penalty": mtl["penalty"],
                "mtl_validation": mtl["validation"],
            }
            print(json.dumps(result), flush=True)
            results.append(result)
    return results


def summary(results: list[dict]) -> list[dict]:
    rows = []
    for name, loss, _ in SETTINGS:
        mine = [r for r in results if r["setting"] == name]
        mean = {model: float(np.mean([r["scores"][model] for r in mine])) for model in mine[0]["scores"]}
        margin = min(mean["global"], mean["separate"]) - mean["shared"]
        rows.append(
            {
                "setting": name,
                "metric": "error" if loss == "logistic" else "mse",
                "samples": len(mine),
                **mean,
                "shared_margin": margin,
            }
        )
    return rows


def markdown(rows: list[dict], samples: int, penalties: list[float], seconds: float) -> str:
    lines = [
        "# A shared per-key model on few rows per key (issue 23 item 2)",
        "",
        "Written by `benchmarks/bench_shared_keys.py` (protocol in its docstring and in "
        "`polybeam/datasets/shared_keys.py`): 3,000 keys, 20 features, a key's weights = shared + its own "
        "offset; held out: 10 fresh rows per key. polybeam models by the command line with default settings, "
        f"one pass, bits {BITS}; batch MTL = scikit-learn on `[x, x (x) onehot(key), onehot(key)]`, its L2 "
        f"penalty chosen from {penalties} on a 20% validation split. Mean of {samples} draw(s) of the data "
        "(not the draws 0 and 1 that chose the offset prior's default); "
        f"the whole run took {seconds:.0f} s.",
        "",
        "| setting | metric | global | separate | shared | batch MTL | min(global, separate) - shared |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['setting']} | {row['metric']} | {row['global']:.4f} | {row['separate']:.4f} | "
            f"{row['shared']:.4f} | {row['batch MTL']:.4f} | {row['shared_margin']:+.4f} |"
        )
    main = rows[0]
    verdict = "met" if main["shared_margin"] >= 0.01 else "NOT met"
    lines += [
        "",
        f"Target (logistic, 20 rows per key): shared <= min(global, separate) - 0.01: **{verdict}** "
        f"(margin {main['shared_margin']:+.4f}).",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2)
    # Draws 0 and 1 chose the offset prior's default (choices.DEFAULT_OFFSET_PRIOR): report others.
    parser.add_argument("--first-sample", type=int, default=2)
    parser.add_argument("--penalties", type=float, nargs="+", default=[1.0, 3.0, 10.0, 30.0])
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run(args.samples, args.penalties, args.first_sample)
    rows = summary(results)
    seconds = time.perf_counter() - started
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "shared_keys.json"), "w") as handle:
        json.dump(
            {
                "summary": rows,
                "runs": results,
                "samples": args.samples,
                "penalties": args.penalties,
                "seconds": seconds,
            },
            handle,
            indent=1,
        )
    text = markdown(rows, args.samples, args.penalties, seconds)
    with open(os.path.join(args.results, "shared_keys.md"), "w") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
