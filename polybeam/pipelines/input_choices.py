"""What a training job decides about its input before launching: how its labels are read, and whether a
LIBSVM input numbers its features from 0.

The options leave them open: a user who trains ``--loss logistic`` on labels 1 and 2, on yes/no, or
softmax on class numbers 0 ... K-1, or on LIBSVM written by scikit-learn's ``dump_svmlight_file``, means
the obvious reading, and polybeam takes it (as scikit-learn's estimators do with ``classes_`` and
``load_svmlight_file(zero_based="auto")``). The decision rests on a sample of the input (the start and the
end of a few files, :mod:`polybeam.transforms.samples`), is printed, recorded in the model (its input
contract: class names and ``zero_based``) and in the report; a record the sample did not foresee is
refused by the read (see :mod:`polybeam.formats.labels`), so the job then fails saying what to pass,
never learns from a part of the classes. Labels that cannot be read without being told how (three values
for a binary loss, words and numbers mixed) fail here, before launching.
"""

from __future__ import annotations

from dataclasses import dataclass

from polybeam.formats.input_settings import InputSettings
from polybeam.formats.labels import LabelEncodingError
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.errors import OptionError
from polybeam.transforms.samples import InputSample, decide

# How the options that settle the labels are spelled, for the messages.
LABEL_FLAGS = (
    "--class-names NEGATIVE,POSITIVE (or, for more classes, --loss softmax --classes K or --class-names A,B,C)"
)


@dataclass(frozen=True)
class InputChoices:
    """The job's settings once decided: ``config`` (with the class names found), ``settings`` (how the input
    is read) and ``notes``, a line for each decision taken."""

    config: LearnerConfig
    settings: InputSettings
    notes: tuple[str, ...] = ()


def settle_scoring_input(
    pattern: str, settings: InputSettings, model: InputSettings | None, *, zero_based_given: bool
) -> tuple[InputSettings, tuple[str, ...]]:
    """How a model fitted on a matrix (scikit-learn) reads LIBSVM input: numbered from 0 or from 1, as the
    file itself shows (see ``InputSettings.matrix_columns``); ``(settings, notes)``."""
    if settings.format != "libsvm" or model is None or not model.matrix_columns or zero_based_given:
        return settings, ()
    sample = InputSample.of(pattern, settings.reader("any"))
    zero = sum(sample.fmt.zero_index_lines(piece.data) for piece in sample.pieces)
    largest = max((sample.fmt.largest_index(piece.data) for piece in sample.pieces), default=0)
    columns = model.matrix_columns
    if zero and largest >= columns:
        raise OptionError(
            f"{pattern} holds feature indices from 0 to {largest}: more features than the {columns} columns the "
            "model was fitted on"
        )
    if zero:
        return settings.replace(zero_based=True), ("input: LIBSVM feature indices count from 0 (an index 0 seen)",)
    if largest >= columns:
        return settings.replace(zero_based=False), (
            f"input: LIBSVM feature indices count from 1 (index {largest} seen)",
        )
    return settings.replace(zero_based=False), (
        f"input: LIBSVM feature indices read as counting from 1 (neither 0 nor {columns} seen; --zero-based if the "
        "file counts from 0, as scikit-learn's dump_svmlight_file writes by default)",
    )


def settle_input(
    pattern: str, config: LearnerConfig, settings: InputSettings, *, zero_based_given: bool
) -> InputChoices:
    """Decide how to read a training input from a sample of it (see the module docstring).

    ``zero_based_given``: ``--zero-based`` was passed (nothing to detect).
    """
    sample = InputSample.of(pattern, settings.reader("any"))
    try:
        decided = decide(
            sample,
            config.label_kind,
            config.classes,
            config.class_names,
            detect_zero_based=not zero_based_given and not settings.options.get("zero_based"),
        )
    except LabelEncodingError as error:
        raise OptionError(f"{error}: pass {LABEL_FLAGS}") from None
    notes = []
    if decided.zero_based:
        settings = settings.replace(zero_based=True)
        notes.append(f"{decided.notes[0]}: read as with --zero-based")
    if decided.names:
        config = config.replace(class_names=decided.names)
        settings = settings.replace(class_names=decided.names, classes=config.classes)
        notes.append(f"{decided.notes[-1]} (as with --class-names {','.join(decided.names)})")
    return InputChoices(config, settings, tuple(notes))
