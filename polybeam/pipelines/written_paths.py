"""Where a command writes, checked before anything runs: into a folder that exists, under a name Beam can write.

Two rules, each a one-line refusal instead of a surprise:

* **The folder must exist.** ``--model runs/m.model`` writes into ``runs/``,
  which must be there, as Vowpal Wabbit's ``-f`` and scikit-learn's writers
  want it: a mistyped folder is refused, not created with every folder above
  it. What a command writes as a folder (``--model`` of a per-key or windowed
  train, ``--checkpoint-dir``, ``--output-dir``) is created, but not its
  parent. Cloud storage (``gs://...``) has no folders: only local paths are
  checked.
* **No pattern characters.** Beam's file systems read ``*``, ``?``, ``[`` and
  ``]`` in a path as a pattern when they finish writing a file (its sinks
  match their temporary files), so a file named ``m[1].model`` fails only
  after the job has run. Every path a job writes, including those named
  after another (the dead letters and report beside ``--model``), is checked.

>>> check_name("/runs/m[1].model", "--model")
Traceback (most recent call last):
...
polybeam.pipelines.errors.OptionError: --model /runs/m[1].model: Beam's file systems read *, ?, [ and ] in a path as a pattern, so a job cannot write there: choose a name without them
>>> check_folder_exists("/no/such/folder/m.model", "--model")
Traceback (most recent call last):
...
polybeam.pipelines.errors.OptionError: --model /no/such/folder/m.model: the folder /no/such/folder does not exist; create it first (polybeam creates no folders above what it writes)
"""

from __future__ import annotations

import os
import re

from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.errors import OptionError

PATTERN_CHARACTERS = re.compile(r"[*?\[\]]")
# The option behind each output a job names at launch (see polybeam.pipelines.launch.launch).
OUTPUT_FLAGS = {
    "model": "--model",
    "dead_letters": "--dead-letters",
    "report": "--report",
    "predictions": "--output",
    "prefixes": "--output",
    "skipped": "--skipped-output",
    "checkpoints": "--checkpoint-dir",
    "report_text": "--output-dir",
}


def _is_local(path: str) -> bool:
    return "://" not in path


def check_name(path: str, what: str, fix: str = "choose a name without them") -> None:
    """Refuse a path a job writes that Beam would read as a pattern (``what``: the option or file it is)."""
    if PATTERN_CHARACTERS.search(path):
        raise OptionError(
            f"{what} {path}: Beam's file systems read *, ?, [ and ] in a path as a pattern, so a job cannot "
            f"write there: {fix}"
        )


def check_folder_exists(path: str, what: str) -> None:
    """Refuse a local path whose folder does not exist (or is a file)."""
    if not path or not _is_local(path):
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(folder):
        return
    if os.path.exists(folder):
        raise OptionError(f"{what} {path}: {folder} is a file, not a folder")
    raise OptionError(
        f"{what} {path}: the folder {folder} does not exist; create it first (polybeam creates no folders above "
        "what it writes)"
    )


def written_options(command: str) -> list[specs.Option]:
    """The options of ``command`` that name what it writes (``--model`` of train, ``--output``, ...)."""
    return [
        option
        for option in specs.command_options(command)
        if option.path in ("write", "folder") or (option.path == "read" and command in option.written_by)
    ]


def writes_folder(option: specs.Option, settings, command: str) -> bool:
    """Whether ``command`` writes a folder at ``option`` (``--model`` of a per-key, windowed or streaming
    train)."""
    if option.path == "folder":
        return True
    if command == "train" and option.attribute == "model":
        return (
            bool(settings.window)
            or (bool(settings.key) and settings.key_model != "shared")
            or settings.watch is not None
        )
    return False


def check_kind(path: str, what: str, folder: bool) -> None:
    """Refuse a local path that is a file where a folder is written, or a folder where a file is."""
    if not _is_local(path):
        return
    if folder and os.path.isfile(path):
        raise OptionError(f"{what} {path} is a file; a folder goes there")
    if not folder and os.path.isdir(path):
        where = "give a prefix of the files to write, such as" if what == "--output" else "give a file in it, such as"
        raise OptionError(f"{what} {path} is a folder: {where} {os.path.join(path, 'name')}")


def check_given_outputs(settings, command: str) -> None:
    """Refuse, before anything runs, an output option of ``command`` given in ``settings`` (a JobSettings) whose
    folder does not exist, whose name Beam would read as a pattern, or that is a file where a folder is written
    (or the reverse)."""
    for option in written_options(command):
        value = getattr(settings, option.attribute, None)
        if option.attribute not in settings.given or not isinstance(value, str) or not value:
            continue
        flag = option.flags[0]
        check_name(value, flag)
        check_folder_exists(value, flag)
        check_kind(value, flag, writes_folder(option, settings, command))


def check_outputs(outputs: dict) -> None:
    """Refuse, at launch, a path the job writes (``outputs``: name -> path, or a prefix ending in ``*``) that Beam
    would read as a pattern, such as the dead letters named after a ``--model`` it reads; the message names the
    option that sets the path."""
    for name, path in outputs.items():
        if isinstance(path, str) and path:
            flag = OUTPUT_FLAGS.get(name, f"--{name.replace('_', '-')}")
            check_name(path.removesuffix("*"), f"the {name.replace('_', ' ')}", f"give {flag} a path without them")
