"""A stop the command was asked for, remembered in case a library swallowed it.

Ctrl-C, SIGTERM and SIGHUP raise KeyboardInterrupt in the command wherever it is running. But
scikit-learn's MLP catches a KeyboardInterrupt raised while it trains, warns "Training
interrupted by user" and returns the half-trained model: the search went on as if nothing had
happened, and the next signal quit at once, losing the scored trials not yet written. The
command's signal handler records the signal here (:func:`request`), and the package checks after
every fit it makes (:func:`check`), raising the KeyboardInterrupt again, so that one signal stops
the command after writing what was scored, whatever the classifier.

A leaf module: every layer may import it (it imports nothing of the package).
"""

from __future__ import annotations

_requested: list[int] = []


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


def clear() -> None:
    """Forget the stops asked for (a new command in the same process)."""
    _requested.clear()
