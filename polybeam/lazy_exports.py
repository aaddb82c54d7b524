"""Package names imported on first use (PEP 562), so that importing a package loads only what is used.

>>> import types
>>> package = types.ModuleType("demo")
>>> package.__getattr__, package.__dir__ = lazy_exports("json", {"JSONEncoder": "encoder"}, vars(package))
>>> package.__getattr__("JSONEncoder")().encode([1])
'[1]'
>>> "JSONEncoder" in vars(package)  # kept: the next lookup is a plain attribute
True
"""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """``(__getattr__, __dir__)`` for ``package``, whose public names ``exports`` maps to their modules.

    A name, once looked up, is kept in ``namespace`` (the package's globals), so
    later lookups do not come back here.
    """

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
