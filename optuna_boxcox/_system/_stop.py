"""A stop the command was asked for, remembered in case a library swallowed it.

Ctrl-C, SIGTERM and SIGHUP raise KeyboardInterrupt in the command wherever it is running. But
scikit-learn's MLP catches a KeyboardInterrupt raised while it trains, warns "Training
interrupted by user" and returns the half-trained model: the search went on as if nothing had
happened, and the next signal quit at once, losing the scored trials not yet written. The
command's signal handler records the signal here (:func:`request`), and the package checks after
every fit it makes (:func:`check`), raising the KeyboardInterrupt again, so that one signal stops
the command after writing what was scored, whatever the classifier.

Some moments must not be cut short at all: while Optuna asks for a trial and tells its result,
a KeyboardInterrupt leaves the trial RUNNING (and in ``tell`` Optuna then fails with an
UnboundLocalError, which the command reported without the count of trials). The runner marks them
:func:`deferred`, and the command's signal handler only records a signal that lands there
(:func:`deferring`); the runner raises it at the next safe point, through :func:`check`.

A leaf module: every layer may import it (it imports nothing of the package).
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import threading

_requested: list[int] = []
#: Whether a signal is only recorded now (innermost last); set by the main thread only, where
#: Python runs signal handlers.
_deferring: list[bool] = []


def request(signum: int) -> None:
    """Remember that the command was asked to stop (by signal ``signum``)."""
    _requested.append(signum)


def requested() -> bool:
    """Whether a stop was asked for since the last :func:`clear`."""
    return bool(_requested)


def check() -> None:
    """Raise KeyboardInterrupt when a stop was asked for: after a fit, which may have swallowed
    the one the signal raised."""
    if _requested:
        raise KeyboardInterrupt


def deferring() -> bool:
    """Whether a signal that lands now should only be recorded (:func:`request`), and raised
    later by :func:`check`."""
    return bool(_deferring) and _deferring[-1]


@contextlib.contextmanager
def deferred(defer: bool = True) -> Iterator[None]:
    """Signals that land inside are only recorded (``defer=False``: raised at once again, as
    inside a trial's objective within a deferred loop). Nests; other threads than the main one
    change nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring.append(defer)
    try:
        yield
    finally:
        _deferring.pop()


def clear() -> None:
    """Forget the stops asked for (a new command in the same process)."""
    _requested.clear()
