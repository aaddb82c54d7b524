"""The errors of polybeam's commands that mean "fix how you asked", not "the job failed".

Both are ``ValueError``\\ s, so ``polybeam``'s command line answers them with exit
status 2 and one line on stderr; a job that ran and failed raises
:class:`polybeam.pipelines.launch.JobFailed` instead. This module imports
nothing, so any module of the package can raise them.

>>> issubclass(OptionError, ValueError) and issubclass(UsageError, ValueError)
True
"""


class OptionError(ValueError):
    """A missing or invalid option, with what to fix."""


class UsageError(ValueError):
    """Wrong command-line usage (an unknown option, or one the command does not take)."""
