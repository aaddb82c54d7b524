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
from polybeam.formats.labels import LabelEncodingError, infer_classes
from polybeam.learners.config import LearnerConfig
from polybeam.pipelines.errors import OptionError
from polybeam.transforms.samples import InputSample

# Below this share of sampled records that look like the format's own, the input is left to the job's checks.
OWN_FORMAT_SHARE = 0.5
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


def settle_input(
    pattern: str, config: LearnerConfig, settings: InputSettings, *, zero_based_given: bool
) -> InputChoices:
    """Decide how to read a training input from a sample of it (see the module docstring).

    ``zero_based_given``: ``--zero-based`` was passed (nothing to detect).
    """
    sample = InputSample.of(pattern, settings.reader("any"))
    notes = []
    if sample.own_format_share() < OWN_FORMAT_SHARE:  # the wrong format: the job's input check says which
        return InputChoices(config, settings)
    if settings.format == "libsvm" and not zero_based_given and not settings.options.get("zero_based"):
        lines = sum(sample.fmt.zero_index_lines(piece.data) for piece in sample.pieces)
        if lines:
            settings = settings.replace(zero_based=True)
            notes.append(
                f"input: LIBSVM feature indices count from 0 ({lines} sampled records hold an index 0): read as "
                "with --zero-based"
            )
    try:
        found = infer_classes(config.label_kind, config.classes, config.class_names, sample.label_texts())
    except LabelEncodingError as error:
        raise OptionError(f"{error}: pass {LABEL_FLAGS}") from None
    if found.names:
        config = config.replace(class_names=found.names)
        settings = settings.replace(class_names=found.names, classes=config.classes)
        notes.append(f"{found.note} (as with --class-names {','.join(found.names)})")
    return InputChoices(config, settings, tuple(notes))
