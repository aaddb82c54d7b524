"""polybeam: scalable nonlinear online learning as an Apache Beam plugin.

The pure learning code lives in :mod:`polybeam.learners` (and
:mod:`polybeam.selection`); the Beam transforms in :mod:`polybeam.transforms`;
the runnable pipelines and the ``polybeam`` command in :mod:`polybeam.pipelines`.
"""

__version__ = "0.1.0"
