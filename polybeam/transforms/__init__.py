"""Beam PTransforms, DoFns and sources: the only part of polybeam that knows Beam."""

from polybeam.transforms.dead_letters import FillLineNumbers, LineIndex, WriteDeadLetters
from polybeam.transforms.evaluate import Evaluate, EvaluationFn
from polybeam.transforms.group_statistics import GramStatisticsFn, GroupStatistics
from polybeam.transforms.model_io import ReadModel, WriteModel, read_model, write_model
from polybeam.transforms.predict import Predict, ScoredBatch, WritePredictions
from polybeam.transforms.read import (
    COUNTER_NAMESPACE,
    DEAD_LETTERS,
    EXAMPLES,
    ParseBlocks,
    ReadExamples,
    ReadParquetBatches,
    ReadResult,
)
from polybeam.transforms.sequence import ApplyAnytime, EvaluateAnytime, SequenceGroups, WritePrefixes
from polybeam.transforms.sources import TextBlock, TextBlockSource
from polybeam.transforms.train import MergeLearnersFn, Train, TrainFn

__all__ = [
    "ApplyAnytime",
    "EvaluateAnytime",
    "SequenceGroups",
    "WritePrefixes",
    "COUNTER_NAMESPACE",
    "DEAD_LETTERS",
    "EXAMPLES",
    "Evaluate",
    "EvaluationFn",
    "FillLineNumbers",
    "GramStatisticsFn",
    "GroupStatistics",
    "LineIndex",
    "MergeLearnersFn",
    "ParseBlocks",
    "Predict",
    "ReadExamples",
    "ReadModel",
    "ReadParquetBatches",
    "ReadResult",
    "ScoredBatch",
    "TextBlock",
    "TextBlockSource",
    "Train",
    "TrainFn",
    "WriteDeadLetters",
    "WriteModel",
    "WritePredictions",
    "read_model",
    "write_model",
]
