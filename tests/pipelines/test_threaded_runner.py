"""``--direct_running_mode multi_threading``: the local runner's threaded workers send each element whole.

Beam's threaded workers flush their output every second from a timer thread, even mid-element; the
runner decoded a flushed window header and the learner's bytes after it as two elements, read a count
of 1.9 billion windows, and the job was OOM-killed (``polybeam.pipelines.launch.threaded_runner``;
``tests/transforms/test_thread_stress.py`` runs such jobs under load).
"""

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from polybeam.pipelines.launch import threaded_runner


def test_a_threaded_local_run_gets_workers_that_flush_only_between_elements():
    options = PipelineOptions(["--direct_running_mode", "multi_threading", "--direct_num_workers", "2"])
    runner = threaded_runner(options)
    assert isinstance(runner, FnApiRunner)
    # A negative limit: no timer, the size-based stream (Beam's own worker pool's setting).
    assert runner._default_environment.data_buffer_time_limit_ms < 0
    # The runner keeps the environment given (multi_threading would put Beam's default back); two workers.
    direct = options.view_as(DirectOptions)
    assert direct.direct_running_mode == "in_memory" and direct.direct_num_workers == 2


def test_other_runs_keep_their_runner():
    assert threaded_runner(PipelineOptions([])) is None
    assert threaded_runner(PipelineOptions(["--direct_running_mode", "multi_processing"])) is None
    assert (
        threaded_runner(PipelineOptions(["--runner", "PortableRunner", "--direct_running_mode", "multi_threading"]))
        is None
    )
