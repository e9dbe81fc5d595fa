"""Module-level ``__getattr__`` that imports a package's public names on first use, and old module
paths that still lead to a module that moved."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
import importlib
import sys
from typing import Any
import warnings


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


def moved_module(old: str, new: str) -> None:
    """Make the module at the old path ``old`` the module at ``new``, with a DeprecationWarning.

    Called by a module left at a path that moved: importing ``old`` then gives the very module
    ``new`` (its private names too, so that patching either path patches the one module), for one
    release.
    """
    warnings.warn(
        f"{old} moved to {new}; import it from there (the old path goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )
    sys.modules[old] = importlib.import_module(new)
