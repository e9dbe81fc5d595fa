"""Numba compilation on first use, for the few loops NumPy cannot express without extra passes.

Each kernel is plain Python + NumPy that Numba compiles the first time it is called (and caches on
disk), so importing the package stays cheap and a missing Numba only disables the fast paths that
need it: :func:`compiled` then returns None and callers take their NumPy or scikit-learn path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_COMPILED: dict[Callable[..., Any], Any] = {}


def compiled(function: Callable[..., Any]) -> Callable[..., Any] | None:
    """``function`` compiled with ``numba.njit(cache=True, nogil=True)``, or None without Numba."""
    if function not in _COMPILED:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency
            _COMPILED[function] = None
        else:
            _COMPILED[function] = numba.njit(cache=True, nogil=True)(function)
    return _COMPILED[function]
