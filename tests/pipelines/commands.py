"""Running ``polybeam`` commands in process, as the console script does, for the CLI tests."""

from __future__ import annotations

import json

from polybeam.pipelines.cli import main


def run(capsys, *argv):
    """``polybeam ARGV`` in this process: ``(exit status, stdout, stderr)``."""
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def last_json(text):
    """The JSON report a command prints last."""
    return json.loads(text.strip().splitlines()[-1])
