"""Progress lines at doubling counts (or every -P N examples) on stderr (--quiet silences them), the same figures as
Beam metrics (the latest progressive loss as a gauge), and ``polybeam plot`` for a model and for prefix files."""

from __future__ import annotations

import importlib.util
import json
import re

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.metrics.metric import MetricsFilter

from polybeam import datasets
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.holdout import training_count
from polybeam.pipelines.cli import main
from polybeam.pipelines.option_specs import command_parser
from polybeam.pipelines.plots import learning_curve_points, weight_degrees
from polybeam.transforms.model_io import WriteModel, read_model
from polybeam.transforms.progress import NAMESPACE, line
from polybeam.transforms.train import Train

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
PROGRESS = re.compile(
    r"^polybeam\[\d+\] pass (\d+) +(\d+) examples +(?:\d+|-) ex/s  progressive loss ([\d.]+)  "
    r"since last ([\d.]+)  non-zero (\d+)$"
)


@pytest.fixture(scope="module")
def spam_split(tmp_path_factory):
    return datasets.write_split("spam", str(tmp_path_factory.mktemp("spam")))


@pytest.mark.slow
def test_training_prints_vw_like_progress_at_doubling_counts(tmp_path, capsys, spam_split):
    train, _ = spam_split
    model = tmp_path / "m.model"
    # (--small-holdout release: every example in pass 2; by default cross-validation chooses the passes)
    release = ["--small-holdout", "release"]
    assert (
        main(["train", "--input", train, "--loss", "logistic", "--passes", "2", "--model", str(model), *release]) == 0
    )
    err = capsys.readouterr().err
    holdout = [text for text in err.splitlines() if text.startswith("polybeam[") and " held out" in text]
    lines = [PROGRESS.match(text) for text in err.splitlines() if text.startswith("polybeam[") and text not in holdout]
    assert lines and all(lines)
    seen = [(int(m.group(1)), int(m.group(2))) for m in lines]
    assert seen == [(p, 2**k) for p in (1, 2) for k in range(12)]  # ~3300 examples learned a pass: 1 ... 2048
    # After the first pass, a line on its holdout: spam holds out too few to judge passes by.
    assert len(holdout) == 1 and "pass 1: " in holdout[0] and "fewer than 1000 to judge passes by" in holdout[0]
    # The lines are the model's curve.
    curve = read_model(str(model)).metadata["learning_curve"]
    assert [(p["pass"], p["examples"]) for p in curve] == seen
    assert [round(p["progressive_loss"], 6) for p in curve] == [float(m.group(3)) for m in lines]

    assert main(["train", "--input", train, "--loss", "logistic", "--model", str(model), "--quiet"]) == 0
    assert "polybeam[" not in capsys.readouterr().err


@pytest.mark.slow
def test_progress_every_n_examples_as_vw_minus_p(tmp_path, capsys, spam_split):
    train, _ = spam_split
    model = tmp_path / "m.model"
    assert (
        main(
            ["train", "--input", train, "--loss", "logistic", "--passes", "2", "-P", "1000", "--model", str(model)]
            + ["--small-holdout", "release"]
        )
        == 0
    )
    err = capsys.readouterr().err
    lines = [
        PROGRESS.match(text) for text in err.splitlines() if text.startswith("polybeam[") and "held out" not in text
    ]
    assert lines and all(lines)
    seen = [(int(m.group(1)), int(m.group(2))) for m in lines]
    # 3326 examples learned in pass 1 (a tenth held out), 3681 in pass 2 (too few held out to judge by).
    assert seen == [(p, n) for p in (1, 2) for n in (1000, 2000, 3000)]
    curve = read_model(str(model)).metadata["learning_curve"]
    assert [(p["pass"], p["examples"]) for p in curve] == seen
    assert [round(p["progressive_loss"], 6) for p in curve] == [float(m.group(3)) for m in lines]
    # The long spellings; a negative count is refused before the job starts.
    parser = command_parser("train")
    assert parser.parse_args(["--progress-every", "7"]).progress_every == 7
    assert parser.parse_args(["--progress_every=8"]).progress_every == 8
    assert parser.parse_args([]).progress_every == 0
    assert main(["train", "--input", train, "--model", str(model), "-P", "-3"]) == 2
    assert "progress_every must be 0" in capsys.readouterr().err


def test_the_latest_progressive_loss_is_a_gauge(tmp_path):
    batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0}), (1.0, {1: 1.0, 2: 1.0})] * 200, bits=10)
    path = tmp_path / "g.model"
    pipeline = beam.Pipeline("FnApiRunner")
    # (center=False: one learner, whose points are the ones reported; with centring its guard races an
    # uncentred learner, which reports nothing, and the model's curve is the winner's)
    models = pipeline | beam.Create([batch]) | Train(loss="logistic", bits=10, progress_every=250, center=False)
    models | WriteModel(str(path))
    result = pipeline.run()
    result.wait_until_finish()
    curve = read_model(str(path)).metadata["learning_curve"]
    assert [p["examples"] for p in curve] == [250, 500]
    metrics = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    gauges = [m for m in metrics["gauges"] if m.key.metric.name == "latest_progressive_loss_micros"]
    assert gauges
    latest = max((m.committed for m in gauges), key=lambda gauge: gauge.timestamp)
    # The last point's progressive loss, where the distribution holds every point's.
    assert latest.value == round(curve[-1]["progressive_loss"] * 1e6)
    (losses,) = [m.committed for m in metrics["distributions"] if m.key.metric.name == "progressive_loss_micros"]
    assert losses.count == 2 and losses.sum == sum(round(p["progressive_loss"] * 1e6) for p in curve)


def test_the_same_figures_are_beam_metrics():
    batch = ExampleBatch.from_rows([(1.0, {1: 1.0}), (-1.0, {2: 1.0})] * 300, bits=10)
    pipeline = beam.Pipeline("FnApiRunner")
    pipeline | beam.Create([batch, batch]) | Train(loss="logistic", bits=10, passes=2)
    result = pipeline.run()
    result.wait_until_finish()
    metrics = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    counters, distributions = {}, {}
    for m in metrics["counters"]:  # one result per step (pass 1's CombineFn, pass 2's DoFn)
        counters[m.key.metric.name] = counters.get(m.key.metric.name, 0) + m.committed
    for m in metrics["distributions"]:
        distributions.setdefault(m.key.metric.name, []).append(m.committed)
    # Pass 1 learned every example but the held-out tenth (by its row in its batch: the same in both batches);
    # so few cannot judge passes, so pass 2 learned every example.
    assert counters["learned_examples"] == 2 * training_count(batch, LearnerConfig(loss="logistic", passes=2)) + 1200
    losses = distributions["progressive_loss_micros"]
    assert sum(d.count for d in losses) >= 2 * 11  # a point at 1, 2, ..., 1024 of each pass at least
    assert 0 < min(d.min for d in losses) <= max(d.max for d in losses) <= 1_000_000
    assert max(d.max for d in distributions["nonzero_weights_at_doubling"]) == 3  # two features and the bias
    assert sum(d.count for d in distributions["examples_per_second"]) >= 1


def test_a_progress_line_says_what_is_unknown():
    text = line({"pass": 1, "examples": 1, "progressive_loss": None, "since_last": None, "nonzero": 0}, float("nan"))
    assert "progressive loss -" in text and "- ex/s" in text


def test_weights_by_degree_and_final_points(tmp_path, spam_split):
    train, _ = spam_split
    model_path = tmp_path / "apple.model"
    assert main(["train", "--input", train, "--expand", "apple", "--model", str(model_path), "--quiet"]) == 0
    model = read_model(str(model_path))
    degrees = weight_degrees(model)
    assert sum(entry["weights"] for entry in degrees.values()) == model.nonzero
    assert degrees[0]["weights"] == 1 and max(degrees) >= 2  # a bias, and products
    for degree, entry in degrees.items():
        if degree >= 2:
            assert entry["weights"] == sum(
                1 for slot in model.slots if len(model.monomials.get(int(slot), ())) == degree
            )
    points = learning_curve_points(model)
    assert points[-1].get("final") and points[-1]["examples"] == 3681
    assert points[-1]["progressive_loss"] == pytest.approx(model.metadata["progressive_loss"])


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="plots need matplotlib (polybeam[plot])")
def test_polybeam_plot_draws_a_model_and_anytime_curves(tmp_path, capsys, spam_split):
    train, test = spam_split
    model = tmp_path / "m.model"
    assert (
        main(["train", "--input", train, "--loss", "logistic", "--gravity", "0.001", "--model", str(model), "--quiet"])
        == 0
    )
    capsys.readouterr()
    assert main(["plot", "--model", str(model)]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    png = tmp_path / "m.model.learning.png"
    assert printed["plot"] == str(png) and printed["points"] == 12
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000

    prefixes = tmp_path / "omp.jsonl"
    assert (
        main(["sequence", "--input", train, "--groups", datasets.group_spec_path("spam"), "--output", str(prefixes)])
        == 0
    )
    capsys.readouterr()
    assert main(["plot", "--prefixes", str(prefixes), "--input", test, "--alpha", "1"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    anytime = tmp_path / "anytime.png"
    assert report["plot"] == str(anytime) and anytime.read_bytes()[:4] == b"\x89PNG"


def test_polybeam_plot_says_what_is_missing(tmp_path, capsys):
    assert main(["plot", "--prefixes", "a.jsonl"]) == 2
    assert "needs --input" in capsys.readouterr().err
    assert main(["plot", "--model", "m", "--prefixes", "a"]) == 2
    assert "argument --prefixes: not allowed with argument --model" in capsys.readouterr().err


def _overlaps(texts, renderer) -> list:
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text()]
    return [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1 :] if box.overlaps(other)]


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="plots need matplotlib (polybeam[plot])")
def test_passes_side_by_side_on_a_linear_axis_with_labels_that_do_not_overlap(tmp_path, spam_split):
    from polybeam.pipelines.plots import EARLY_SHARE, model_figure, pass_spans

    train, _ = spam_split
    path = tmp_path / "apple.model"
    assert (
        main(
            [
                "train",
                "--input",
                train,
                "--loss",
                "logistic",
                "--expand",
                "apple",
                "--passes",
                "3",
                "--holdout-off",
                "--model",
                str(path),
                "--quiet",
            ]
        )
        == 0
    )
    model = read_model(str(path))
    figure = model_figure(model, title="three passes")
    loss_axes, nonzero_axes, degree_axes = figure.axes
    assert loss_axes.get_xscale() == nonzero_axes.get_xscale() == "linear"
    # Each pass its own span of the axis, as wide as its examples, one after another.
    spans = pass_spans(learning_curve_points(model))
    assert spans == [(1, 0.0, 3681.0), (2, 3681.0, 7362.0), (3, 7362.0, 11043.0)]
    assert loss_axes.get_xlim() == (0.0, 11043.0)
    labels = [line.get_label() for line in loss_axes.lines]
    assert labels == [f"pass {n}: {what}" for n in (1, 2, 3) for what in ("progressive loss", "since last point")]
    for number, start, end in spans:
        (line,) = [line for line in loss_axes.lines if line.get_label() == f"pass {number}: progressive loss"]
        x = line.get_xdata()
        # From 1% of the pass on (the first points would stack at its start), up to its end.
        assert x.min() >= start + EARLY_SHARE * (end - start) and x.max() == end
        assert all(np.isfinite(line.get_ydata())) and loss_axes.get_ylim()[0] < min(line.get_ydata())
    assert len(nonzero_axes.lines) == 3
    names = [text for text in loss_axes.texts if text.get_text().startswith("pass ")]
    assert [text.get_text() for text in names] == ["pass 1", "pass 2", "pass 3"]
    renderer = figure.canvas.get_renderer()
    bar_labels = [text for text in degree_axes.texts if text.get_text().startswith("sum |w|")]
    assert len(bar_labels) == len(weight_degrees(model)) >= 3
    for texts in (names, bar_labels, degree_axes.get_xticklabels()):
        assert _overlaps(texts, renderer) == []
    inside = degree_axes.get_window_extent(renderer)
    for label in bar_labels:  # the axes' top was raised to hold them
        assert label.get_window_extent(renderer).y1 <= inside.y1
    png = tmp_path / "apple.png"
    figure.savefig(png, dpi=60)
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="plots need matplotlib (polybeam[plot])")
def test_crowded_labels_shrink_turn_and_thin_until_none_overlap():
    from polybeam.pipelines.plots import _pyplot, fit_labels

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(3, 2))
    bars = axes.bar([f"degree {d}" for d in range(14)], np.arange(1, 15))
    labels = axes.bar_label(bars, labels=[f"sum |w| {v:.3g}" for v in np.geomspace(1, 1e5, 14)], fontsize=9)
    renderer = figure.canvas.get_renderer()
    ticks = axes.get_xticklabels()
    assert _overlaps(labels, renderer) and _overlaps(ticks, renderer)
    fit_labels(figure, labels)
    fit_labels(figure, ticks)
    assert _overlaps(labels, renderer) == [] and _overlaps(ticks, renderer) == []
    assert {label.get_rotation() for label in labels} == {90.0}
    assert any(label.get_visible() for label in labels)
    plt.close(figure)
