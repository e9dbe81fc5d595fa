"""Numba compilation on first use, and threads for the compiled kernels that release the GIL.

Each kernel is plain Python + NumPy that Numba compiles the first time it is called (and caches on
disk), so importing the package stays cheap and a missing Numba only disables the fast paths that
need it: :func:`compiled` then returns None and callers take their NumPy or scikit-learn path.

Kernels are compiled with ``nogil=True``: :func:`parallel_map` runs them on a plain thread pool
(per process, so that a forked worker never inherits a pool whose threads did not survive the
fork), which needs no Numba threading layer and lets BLAS calls between kernels share the threads.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING
from typing import Any

from threadpoolctl import ThreadpoolController

if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Iterator

_COMPILED: dict[Callable[..., Any], Any] = {}
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_IN_POOL = threading.local()  # set in the pools' threads: work they map runs in place
_BLAS_LOCK = threading.Lock()
_BLAS_STATE: dict[str, Any] = {"controller": None, "depth": 0, "limiter": None}


def compiled(
    function: Callable[..., Any], *, announce: str = "", lean: bool = False
) -> Callable[..., Any] | None:
    """``function`` compiled with ``numba.njit(cache=True, nogil=True)``, or None without Numba.

    With ``announce`` (what the kernel is, in words), one line on stderr says when Numba will
    compile it — not when it loads it from its cache: a fresh installation's first fit would
    otherwise wait for the compiler without a word. The line comes before the first call when
    Numba's cache has no version of the kernel's current source (Numba's own set-up before it
    starts compiling is most of a second), else the moment Numba starts compiling it.

    ``lean`` is for a kernel that allocates no array (its caller passes them) and tests its
    floats for inf and NaN itself: compiled without Numba's reference counting and with NumPy's
    division semantics (inf or NaN, not ZeroDivisionError), it compiles about a second faster,
    which a fresh installation's first fit waits for."""
    if function not in _COMPILED:
        if announce:  # said once: now if the cache lacks it, else by the compiler's event
            _ANNOUNCED[function] = announce
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency
            _COMPILED[function] = None
        else:
            _listen_to_the_compiler()
            options = {"error_model": "numpy", "_nrt": False} if lean else {}
            kernel = numba.njit(cache=True, nogil=True, **options)(function)
            _COMPILED[function] = kernel
            if function in _ANNOUNCED and not _in_cache(kernel):
                _announce(_ANNOUNCED.pop(function))
    return _COMPILED[function]


def _in_cache(kernel: Any) -> bool:
    """Whether Numba's on-disk cache holds a version of ``kernel`` compiled from its current
    source: its index, read through Numba's caching internals (their one use in the package). An
    index for another signature or CPU reads as yes; the compiler's event then gives the line."""
    try:
        return bool(kernel._cache._cache_file._load_index())
    except Exception:  # another Numba's internals: leave the word to the compiler's event
        return True


def _announce(what: str) -> None:
    print(
        f"optuna-boxcox: compiling {what} with Numba, once per installation (cached for later "
        "runs); this takes seconds",
        file=sys.stderr,
        flush=True,
    )


#: Kernels whose compilation is announced, with what they are in words.
_ANNOUNCED: dict[Callable[..., Any], str] = {}
_LISTENING: list[bool] = []


def _listen_to_the_compiler() -> None:
    """Numba's event API reports each compilation (a load from its cache is none)."""
    if _LISTENING:
        return
    from numba.core import event

    class Announcer(event.Listener):
        def on_start(self, happening: Any) -> None:
            dispatcher = happening.data.get("dispatcher")
            what = _ANNOUNCED.pop(getattr(dispatcher, "py_func", None), None)
            if what:
                _announce(what)

        def on_end(self, happening: Any) -> None:
            pass

    event.register("numba:compile", Announcer())
    _LISTENING.append(True)


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def resolve_threads(n_threads: int | None) -> int:
    """``None`` or -1 → every usable core; a positive int as given. Raises on anything else."""
    if n_threads is None or n_threads == -1:
        return usable_cores()
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise ValueError(f"n_threads must be a positive int, -1 or None, got {n_threads!r}")
    return n_threads


def parallel_map(function: Callable[[Any], Any], items: Iterable[Any], n_threads: int) -> list:
    """``[function(x) for x in items]``, on up to `n_threads` threads; the first error is raised.

    Worth it only when `function` spends its time in code that releases the GIL (Numba ``nogil``
    kernels, BLAS, libsvm).
    """
    items = list(items)
    # Inside a pool thread (work mapped by work mapped on threads) the outer map already uses
    # the cores; waiting there on the same pool could deadlock.
    if n_threads <= 1 or len(items) <= 1 or getattr(_IN_POOL, "active", False):
        return [function(x) for x in items]
    return list(_pool(n_threads).map(function, items))


def _pool(n_threads: int) -> ThreadPoolExecutor:
    key = (os.getpid(), n_threads)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = ThreadPoolExecutor(
                n_threads, thread_name_prefix="optuna-boxcox", initializer=_mark_pool_thread
            )
        return pool


def _mark_pool_thread() -> None:
    _IN_POOL.active = True


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """BLAS on one thread inside the block, for kernels that run BLAS on threads of their own.

    The limit is process-wide (that is how BLAS libraries work): the first thread to enter sets
    it, the last to leave restores the original, so overlapping blocks on several threads nest.
    """
    with _BLAS_LOCK:
        if _BLAS_STATE["depth"] == 0:
            if _BLAS_STATE["controller"] is None:
                _BLAS_STATE["controller"] = ThreadpoolController()
            _BLAS_STATE["limiter"] = _BLAS_STATE["controller"].limit(limits=1, user_api="blas")
        _BLAS_STATE["depth"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_STATE["depth"] -= 1
            if _BLAS_STATE["depth"] == 0:
                _BLAS_STATE["limiter"].restore_original_limits()
                _BLAS_STATE["limiter"] = None
