"""RunInference handlers for polybeam models and anytime prefixes (Beam's ``ModelHandler``).

>>> from polybeam.inference import PolybeamModelHandler, PerKeyModelHandler, keyed_model_handler  # doctest: +SKIP

See :mod:`polybeam.transforms.inference`, where they are defined.
"""

from polybeam.transforms.inference import (
    AnytimeModelHandler,
    InferenceError,
    PerKeyModelHandler,
    PolybeamModelHandler,
    keyed_model_handler,
)

__all__ = ["AnytimeModelHandler", "InferenceError", "PerKeyModelHandler", "PolybeamModelHandler", "keyed_model_handler"]
