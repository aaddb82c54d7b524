"""Options of Beam's Java runners that polybeam's jobs need and Beam's Python SDK does not declare.

Beam's portable runners send the job server only the options some Python
``PipelineOptions`` class declares. Beam's Flink runner (Java
``FlinkPipelineOptions``) runs batch jobs with pipelined data exchanges by
default, and on a Flink cluster some of polybeam's jobs then never finish:
measured on a standalone cluster of two TaskManagers (one slot each),
``train --window sliding:1d,12h --key column:store --passes 2`` stopped with
60 of its 188 tasks done and none running, because pipelined regions that
wait on each other's blocking results can never be scheduled (Flink's
FLINK-10672 family; Beam documents ``BATCH_FORCED`` for such pipelines).
With ``--execution_mode_for_batch BATCH_FORCED`` every exchange is blocking
and the same job finishes. So polybeam declares the option, with that
default; other runners ignore it.

>>> from apache_beam.options.pipeline_options import PipelineOptions
>>> PipelineOptions([]).view_as(FlinkBatchOptions).execution_mode_for_batch
'BATCH_FORCED'
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

# Flink's org.apache.flink.api.common.ExecutionMode.
FLINK_EXECUTION_MODES = ("PIPELINED", "PIPELINED_FORCED", "BATCH", "BATCH_FORCED")


class FlinkBatchOptions(PipelineOptions):
    """``--execution_mode_for_batch``: how Beam's Flink runner exchanges data in batch jobs."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--execution_mode_for_batch",
            choices=FLINK_EXECUTION_MODES,
            default="BATCH_FORCED",
            help="Flink's data exchange in batch jobs (Beam's Flink runner; others ignore it). polybeam's default "
            "BATCH_FORCED makes every exchange blocking: with Flink's PIPELINED some jobs never finish on a cluster",
        )
