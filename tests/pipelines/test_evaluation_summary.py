"""``polybeam evaluate``'s lines before its JSON: per key (the spread over keys, the busiest keys), per window
(per key and window), and a regression's metrics (its error is its MSE, shown once)."""

from __future__ import annotations

from polybeam.pipelines.evaluation_summary import LISTED, describe_evaluation, metrics_text

COMMON = {"dead_letter_file": "d.jsonl", "report": "r.json", "wall_seconds": 2.0}


def metrics(examples: int, loss: float, error: float = 0.1, auc: float | None = 0.9) -> dict:
    return {"examples": examples, "loss": loss, "error": error, "auc": auc, "mse": loss / 3}


def test_per_key_lists_the_busiest_keys_and_the_spread_of_their_loss():
    keys = {f"k{i}": metrics(10 * (i + 1), 0.1 + i / 100) for i in range(LISTED + 5)}
    report = {
        **COMMON,
        **metrics(sum(m["examples"] for m in keys.values()), 0.2),
        "records": 1300,
        "examples": 1200,
        "dead_letters": 100,
        "skipped": 0,
        "examples_without_model": 100,
        "key": "column:store",
        "model": "folder",
        "keys": keys,
    }
    lines = describe_evaluation(report).splitlines()
    assert lines[0] == "read: records read 1300 = examples 1200 + dead letters 100 + skipped 0 (ok)"
    assert lines[1] == f"scored per key (column:store) with folder: {LISTED + 5} keys"
    assert lines[2].startswith("all keys together: 1200 examples  loss 0.2  error 0.1  AUC 0.9")
    assert lines[3] == "loss per key: min 0.1, median 0.17, max 0.24"
    assert lines[4] == f"the {LISTED} keys with the most examples:"
    listed = [line.split()[-1] for line in lines[6 : 6 + LISTED]]
    assert listed == [f"k{i}" for i in range(LISTED + 4, 4, -1)]  # most examples first
    assert "100 examples had no model for their key: dead letters" in lines


def test_per_key_and_window_lines_and_windows_without_a_model():
    windows = {"window-b": {"s0": metrics(30, 0.3), "s1": metrics(10, 0.5)}, "window-a": {"s0": metrics(5, 0.4)}}
    report = {
        **COMMON,
        **metrics(45, 0.35),
        "records": 50,
        "examples_read": 50,
        "dead_letters": 0,
        "skipped": 0,
        "key": "tag",
        "model": "kw",
        "window_spec": "fixed:86400",
        "windows": windows,
        "examples_without_model": {"window-c": 5},
    }
    lines = describe_evaluation(report).splitlines()
    assert lines[0] == "read: records read 50 = examples 50 + dead letters 0 + skipped 0 (ok)"
    assert lines[1].startswith("models per key and window (fixed:86400) in kw: 2 windows scored")
    assert lines[3] == "  window-a: 1 keys, 5 examples; loss per key min 0.4, median 0.4, max 0.4"
    assert lines[4] == "  window-b: 2 keys, 40 examples; loss per key min 0.3, median 0.4, max 0.5"
    assert lines[5] == "5 examples fell in windows without a model, not scored: window-c (5)"


def test_a_regression_shows_its_error_once_as_mse_and_an_empty_read_says_so():
    assert metrics_text({"examples": 3, "loss": 0.5, "error": 1.0, "auc": None, "mse": 1.0}) == "loss 0.5  MSE 1"
    assert (
        metrics_text({"examples": 3, "loss": 0.5, "error": 0.25, "auc": None, "mse": 0.1})
        == "loss 0.5  error 0.25  MSE 0.1"
    )  # softmax: an error rate, no AUC
    empty = {
        **COMMON,
        "examples": 0,
        "loss": None,
        "error": None,
        "auc": None,
        "mse": None,
        "records": 0,
        "dead_letters": 0,
        "skipped": 0,
        "model": "m",
    }
    assert "scored 0 examples with m: no examples" in describe_evaluation(empty)
