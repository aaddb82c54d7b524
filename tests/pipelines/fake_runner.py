"""A runner named by its dotted path (``--runner tests.pipelines.fake_runner.FakeRunner``) with an option
of its own (``--fake_runner_flag``), as a third-party runner package would have.

It runs the pipeline on Beam's FnApiRunner and, when ``--fake_runner_flag`` names a file, writes there
the options it ran with, so a test in another process can see that it ran and with what.
"""

from __future__ import annotations

import json

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner


class FakeRunnerOptions(PipelineOptions):
    """The runner's own option, known to Beam once this module is imported."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--fake_runner_flag", default=None, help="a file where the runner notes that it ran")


class FakeRunner(FnApiRunner):
    def run_pipeline(self, pipeline, options):
        flag = options.view_as(FakeRunnerOptions).fake_runner_flag
        if flag:
            with open(flag, "w") as handle:
                json.dump({"runner": type(self).__name__, "fake_runner_flag": flag}, handle)
        return super().run_pipeline(pipeline, options)
