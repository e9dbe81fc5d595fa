"""Module-level ``__getattr__`` that imports a package's public names on first use, and old module
paths that still lead to a module that moved."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import importlib
from typing import Any


def lazy_getattr(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package`` that imports ``exports[name]`` when ``name`` is first read.

    The value is stored in ``namespace`` (the package's ``globals()``), so later reads are plain
    lookups that never reach ``__getattr__`` again.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
