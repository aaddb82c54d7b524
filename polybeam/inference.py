"""RunInference handlers for polybeam models and anytime prefixes (Beam's ``ModelHandler``).

>>> from polybeam.inference import PolybeamModelHandler, AnytimeModelHandler  # doctest: +SKIP

See :mod:`polybeam.transforms.inference`, where they are defined.
"""

from polybeam.transforms.inference import AnytimeModelHandler, InferenceError, PolybeamModelHandler

__all__ = ["AnytimeModelHandler", "InferenceError", "PolybeamModelHandler"]
