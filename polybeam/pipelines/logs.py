"""What the ``polybeam`` command logs: warnings and errors, each said once and readably.

* Beam's warnings that say nothing to a polybeam user are dropped
  (:data:`NOISE`): Google Cloud's optional clients are missing (nothing here
  uses them); a local worker has no semi-persistent directory (it needs
  none); the running mode is ``in_memory`` with several workers (polybeam
  forks its own local workers, see :mod:`~polybeam.pipelines.forked_workers`);
  a sink deletes the file it rewrites (the dead letters of an earlier run).
* Local worker processes send their log to the runner, which logs each entry
  in the launcher as a whole ``LogEntry`` message (timestamp, thread, log
  location, ten lines each); it is shortened to ``worker: MESSAGE [step]``.
* Beam's six-line warning that it downloads a runner's job server or binary
  at run time is one line naming what it downloads.
* A refused input (:class:`~polybeam.formats.acceptance.InputRejected`), or
  a worker's error about an input or model file (``launch.USER_ERRORS``), is
  the command's own error message; the runner's logged traceback of it is
  dropped.

>>> record = logging.LogRecord("root", logging.WARNING, "", 0,
...     'severity: WARN\\nmessage: "disk is full"\\ntransform_id: "Write/Write"\\nthread: "T-1"\\n', (), None)
>>> readable(record), record.getMessage()
(True, 'worker: disk is full [Write/Write]')
"""

from __future__ import annotations

import logging
import re

_RELAYED = "severity: "
NOISE = (
    "apitools not found",
    "No semi_persistent_directory found",
    "direct_running_mode should be `multi_processing` or `multi_threading` instead of `in_memory`",
    "existing files in target path matching",
)


def _said_by_the_command(record: logging.LogRecord) -> bool:
    """A runner's log of an error the command says itself, in one line (see ``launch.USER_ERRORS``)."""
    from polybeam.formats.acceptance import InputRejected
    from polybeam.pipelines.launch import USER_ERROR_LINE, USER_ERRORS

    if record.exc_info and isinstance(record.exc_info[1], (InputRejected, *USER_ERRORS)):
        return True
    text = record.getMessage()  # a worker's traceback, relayed by a portable runner
    return "InputRejected: " in text or USER_ERROR_LINE.search(text) is not None


# Beam's warning before it downloads a jar or binary (apache_beam.utils.subprocess_server).
_DOWNLOADING = "Apache Beam is downloading dependencies from a public repository at runtime"
_DOWNLOAD_URL = re.compile(r"URL: (\S+)")


def _shorten_download(record: logging.LogRecord) -> None:
    found = _DOWNLOAD_URL.search(record.getMessage())
    what = found.group(1) if found else "a dependency"
    record.msg, record.args = f"Beam is downloading {what} at run time (pre-stage it to run offline)", ()


def _shorten_relayed(record: logging.LogRecord) -> None:
    """Turn a worker's relayed LogEntry text into ``worker: MESSAGE [step]``."""
    from apache_beam.portability.api import beam_fn_api_pb2
    from google.protobuf import text_format

    entry = beam_fn_api_pb2.LogEntry()
    try:
        text_format.Parse(record.getMessage(), entry)
    except text_format.ParseError:
        return
    step = f" [{entry.transform_id}]" if entry.transform_id else ""
    record.msg, record.args = f"worker: {entry.message}{step}", ()


def readable(record: logging.LogRecord) -> bool:
    """A handler filter: False for lines to drop; relayed worker entries are shortened in place."""
    text = record.getMessage()
    if any(noise in text for noise in NOISE) or _said_by_the_command(record):
        return False
    if record.name == "root" and text.startswith(_RELAYED):
        _shorten_relayed(record)
    elif _DOWNLOADING in text:
        _shorten_download(record)
    return True


def configure() -> None:
    """Warnings and errors on stderr, through :func:`readable`."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(readable)
