"""Opt-in: train and evaluate on Flink or Spark, given a Beam job-server jar (this machine cannot download one).

Set ``POLYBEAM_FLINK_JOB_SERVER_JAR`` (e.g. ``beam-runners-flink-1.18-job-server-2.77.0.jar``)
and/or ``POLYBEAM_SPARK_JOB_SERVER_JAR`` (e.g. ``beam-runners-spark-3-job-server-2.77.0.jar``);
Java must be on PATH. The runner starts the job server from the jar with an
embedded local cluster (``--flink_master [local]``, ``--spark_master_url
local[2]``) and sends Python work to the suite's external worker pool, so the
workers are the same as in the other portable tests.

What must hold: read counts equal the in-process run's exactly; evaluating one
model file gives the in-process metrics (``compare.py`` tolerances). A model
trained on the cluster is not compared weight by weight: the cluster's runner
decides how the input is split into bundles, and polybeam averages per-bundle
learners; its held-out error must be within 0.02 of the in-process model's.
"""

from __future__ import annotations

import os

import pytest

from tests.portable.commands import polybeam
from tests.portable.compare import assert_close, normalised

pytestmark = pytest.mark.portable

RUNNERS = {
    "flink": ("POLYBEAM_FLINK_JOB_SERVER_JAR", lambda jar: [
        "--runner", "FlinkRunner", "--flink_job_server_jar", jar, "--flink_master", "[local]"]),
    "spark": ("POLYBEAM_SPARK_JOB_SERVER_JAR", lambda jar: [
        "--runner", "SparkRunner", "--spark_job_server_jar", jar, "--spark_master_url", "local[2]"]),
}  # fmt: skip
ERROR_TOLERANCE = 0.02
COUNTS = ("records", "examples", "dead_letters", "skipped", "reconciles")


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_train_and_evaluate_on_a_cluster_runner(request, runner):
    variable, options_for = RUNNERS[runner]
    jar = os.environ.get(variable)
    if not jar:
        pytest.skip(f"{runner}: set {variable} to a Beam {runner} job-server jar to run train/evaluate on {runner}")
    if not os.path.isfile(jar):
        pytest.fail(f"{variable}={jar} is not a file")
    cluster, data = request.getfixturevalue("portable_cluster"), request.getfixturevalue("portable_data")
    spam = data["spam"]
    options = {
        runner: [*options_for(jar), "--environment_type", "EXTERNAL", "--environment_config", cluster.pool.address],
        "in-process": [],
    }
    trained_in = {kind: cluster.job_dir(f"{runner}/train-{kind}") for kind in options}

    def run(kind, *args):
        return polybeam(args, options[kind], cwd=cluster.launcher_dir, env=cluster.launcher_env).report

    trained = {kind: run(kind, "train", "--input", spam.train, "--loss", "logistic", "--model", folder / "model")
               for kind, folder in trained_in.items()}  # fmt: skip
    assert {k: trained[runner][k] for k in COUNTS} == {k: trained["in-process"][k] for k in COUNTS}

    def evaluate(kind, model_of):
        """Evaluate the model trained by ``model_of`` on runner ``kind``; the report, its folder written as OUT."""
        out = cluster.job_dir(f"{runner}/evaluate-{model_of}-model-on-{kind}")
        report = run(kind, "evaluate", "--input", spam.test, "--model", trained_in[model_of] / "model",
                     "--report", out / "report.json", "--dead-letters", out / "dead_letters.jsonl")  # fmt: skip
        return normalised(report, str(out))

    # One model file (the in-process one), evaluated on both: the same metrics.
    in_process = evaluate("in-process", "in-process")
    assert_close(evaluate(runner, "in-process"), in_process)
    # The cluster's own model, evaluated in process: as good as the in-process model.
    cluster_model = evaluate("in-process", runner)
    assert cluster_model["examples"] == in_process["examples"]
    assert abs(cluster_model["error"] - in_process["error"]) <= ERROR_TOLERANCE
