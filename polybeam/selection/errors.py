"""The selection package's error types, in a module of their own: the ``polybeam`` command names them
among the errors it reports in one line (see ``polybeam.pipelines.launch``) without importing SciPy."""


class AnytimeModelError(ValueError):
    """Prefix records that cannot make an anytime model, with what is wrong."""
