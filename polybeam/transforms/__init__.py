"""Beam PTransforms, DoFns and sources: the only part of polybeam that knows Beam.

The names below are imported on first use (PEP 562), so that a job that
trains does not load the feature-group sequencing (and SciPy) it never runs.
"""

from __future__ import annotations

from polybeam.lazy_exports import lazy_exports

# Public name -> the module that defines it.
_EXPORTS = {
    "FillLineNumbers": "dead_letters",
    "LineIndex": "dead_letters",
    "WriteDeadLetters": "dead_letters",
    "Evaluate": "evaluate",
    "EvaluationFn": "evaluate",
    "GramStatisticsFn": "group_statistics",
    "GroupStatistics": "group_statistics",
    "ReadModel": "model_io",
    "WriteModel": "model_io",
    "read_model": "model_io",
    "write_model": "model_io",
    "Predict": "predict",
    "ScoredBatch": "predict",
    "WritePredictions": "predict",
    "COUNTER_NAMESPACE": "read",
    "COUNTS": "read",
    "DEAD_LETTERS": "read",
    "EXAMPLES": "read",
    "ParseBlocks": "read",
    "ParseLines": "lines",
    "ReadExamples": "read",
    "ReadTableFiles": "read",
    "ReadResult": "read",
    "SumCounts": "read",
    "ApplyAnytime": "sequence",
    "EvaluateAnytime": "sequence",
    "SequenceGroups": "sequence",
    "WritePrefixes": "sequence",
    "TextBlock": "sources",
    "TextBlockSource": "sources",
    "MergeLearnersFn": "train",
    "Train": "train",
    "TrainFn": "train",
    "ReadLearners": "checkpoints",
    "WriteCheckpoint": "checkpoints",
    "ModelLibrary": "routing",
    "RouteByKey": "routing",
    "WriteKeyedModels": "routing",
    "KeyedFolder": "keyed_files",
    "KeyShard": "key_shards",
    "ParsedKeys": "keys",
    "WriteReport": "report",
    "NoteWorkers": "workers",
    "CheckInput": "input_check",
    "InputPolicy": "input_check",
    "InputRejected": "input_check",
    "RecordOrigin": "provenance",
    "CrossKeys": "shared_keys",
    "RecordTrainedKeys": "shared_keys",
    "SharedModel": "shared_keys",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
