"""Beam PTransforms, DoFns and sources: the only part of polybeam that knows Beam."""

from polybeam.transforms.dead_letters import FillLineNumbers, LineIndex, WriteDeadLetters
from polybeam.transforms.read import (
    COUNTER_NAMESPACE,
    DEAD_LETTERS,
    EXAMPLES,
    ParseBlocks,
    ReadExamples,
    ReadParquetBatches,
    ReadResult,
)
from polybeam.transforms.sources import TextBlock, TextBlockSource

__all__ = [
    "COUNTER_NAMESPACE",
    "DEAD_LETTERS",
    "EXAMPLES",
    "FillLineNumbers",
    "LineIndex",
    "ParseBlocks",
    "ReadExamples",
    "ReadParquetBatches",
    "ReadResult",
    "TextBlock",
    "TextBlockSource",
    "WriteDeadLetters",
]
