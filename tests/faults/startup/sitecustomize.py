"""Turns polybeam's fault hooks on in a process started with this folder on its PYTHONPATH and
POLYBEAM_FAULT set (``tests.faults.hooks.environment`` gives such variables): Python's ``site``
imports ``sitecustomize`` when the interpreter starts, before the process's own code runs.

A ``sitecustomize`` that this one hides (later on the path, e.g. the distribution's) runs after it.
"""

import os
import sys

if __name__ == "sitecustomize":  # (not when pytest imports the file as tests.faults.startup.sitecustomize)
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))
    if os.environ.get("POLYBEAM_FAULT"):
        root = os.path.dirname(os.path.dirname(here))  # the project: its tests package holds the hooks
        root = os.path.dirname(root)
        if root not in sys.path:
            sys.path.append(root)
        try:
            from tests.faults import hooks

            hooks.activate()
        except Exception as error:  # site would print one line and go on: a worker whose faults never fire
            raise SystemExit(f"polybeam's fault hooks failed to start ({__file__}): {error!r}") from error
    hidden = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [path for path in sys.path if path and os.path.realpath(path) != here]
    )
    if hidden is not None and hidden.loader is not None:
        hidden.loader.exec_module(importlib.util.module_from_spec(hidden))
