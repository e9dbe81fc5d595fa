"""The scores an objective has computed, by point, within a share of the memory limit."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

#: Bytes of one entry besides its key's 8 bytes per coordinate (bytes object, float, dict slot).
ENTRY_BYTES = 160


class ScoreCache:
    """Scores by point key, shared by the threads of one objective.

    Beyond ``capacity`` the oldest scores go: a search revisits recent points (the Λopt of earlier
    sweeps), rarely old ones.

    Args:
        capacity: The most scores kept.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        #: Scores stored since the objective was made (evaluations that fitted a classifier, and
        #: scores computed elsewhere and remembered).
        self.n_stored = 0
        self._scores: dict[bytes, float] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._scores)

    def get(self, key: bytes) -> float | None:
        with self._lock:
            return self._scores.get(key)

    def found(self, keys: Iterable[bytes]) -> dict[bytes, float]:
        """The scores of those keys that are cached (one lock for all)."""
        with self._lock:
            return {key: self._scores[key] for key in keys if key in self._scores}

    def store(self, key: bytes, score: float) -> float:
        """Cache a new score (a key cached already keeps its score); returns ``score``."""
        with self._lock:
            if key not in self._scores:
                while len(self._scores) >= self.capacity:
                    del self._scores[next(iter(self._scores))]
                self._scores[key] = score
                self.n_stored += 1
        return score
