"""How much memory the objective may use, and what its pieces will need before they allocate.

The exact fast evaluators trade memory for speed: the incremental k-NN and the precomputed-kernel
SVC keep n × n matrices (3.2 GB each at 20,000 rows). Each piece of the objective therefore states
its footprint in bytes *before* it allocates, and the objective chooses the fastest evaluator whose
footprint fits a :class:`MemoryBudget`; above it, block-wise exact computation or scikit-learn's
own path (see :mod:`optuna_boxcox._objective._evaluators`).

The default limit keeps the whole process under :data:`DEFAULT_CAP` (2 GiB) and under
:data:`DEFAULT_FRACTION` of the memory the system has available; a user's ``memory_limit`` (bytes,
or a string such as ``"512MiB"`` or ``"2GB"``) bounds what the objective itself allocates.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys
from typing import Any

from optuna_boxcox._system._advice import AdvisedValueError

#: Share of the system's available memory the default limit may take.
DEFAULT_FRACTION = 0.5
#: Upper bound of the default limit for the whole process (interpreter and libraries included).
DEFAULT_CAP = 2 * 1024**3
#: The default limit never drops below this, however much the process already holds: below it the
#: objective could not even hold a few blocks of a paper-sized data set.
DEFAULT_FLOOR = 64 * 1024**2

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_memory(value: Any) -> int:
    """Bytes given as an int or a string such as ``"512MiB"``, ``"2GB"``, ``"1.5 GiB"``.

    Decimal units (kB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB) powers of
    1024; a bare number is bytes. Raises a one-line ValueError naming the bad value.
    """
    if isinstance(value, bool):
        raise ValueError(
            f"memory_limit must be bytes (int) or a size such as '512MiB', got {value!r}"
        )
    if isinstance(value, numbers.Integral):
        size = int(value)
    elif isinstance(value, str):
        match = _SIZE.match(value)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise ValueError(
                f"memory_limit {value!r} is not a size; write e.g. '512MiB', '2GB' or a number of bytes"
            )
        size = math.floor(float(match.group(1)) * _UNITS[unit])
    else:
        raise ValueError(
            f"memory_limit must be bytes (int) or a size such as '512MiB', got {value!r}"
        )
    if size <= 0:
        raise ValueError(f"memory_limit must be positive, got {value!r}")
    return size


def available_memory() -> int | None:
    """Bytes the system can give to new allocations without swapping, or None if unknown.

    Linux: ``MemAvailable`` of ``/proc/meminfo`` (free memory plus reclaimable caches). Elsewhere:
    the free physical pages (``os.sysconf``), or Windows' ``GlobalMemoryStatusEx``.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        pass
    if sys.platform == "win32":  # pragma: no cover - not tested on this platform
        return _windows_available_memory()
    return None


def _windows_available_memory() -> int | None:  # pragma: no cover - Windows only
    import ctypes

    class _Status(ctypes.Structure):
        _fields_ = [
            ("dwLength", ctypes.c_ulong),
            ("dwMemoryLoad", ctypes.c_ulong),
            ("ullTotalPhys", ctypes.c_ulonglong),
            ("ullAvailPhys", ctypes.c_ulonglong),
            ("ullTotalPageFile", ctypes.c_ulonglong),
            ("ullAvailPageFile", ctypes.c_ulonglong),
            ("ullTotalVirtual", ctypes.c_ulonglong),
            ("ullAvailVirtual", ctypes.c_ulonglong),
            ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
        ]

    status = _Status()
    status.dwLength = ctypes.sizeof(_Status)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
        return None
    return int(status.ullAvailPhys)


def resident_memory() -> int | None:
    """Bytes this process holds in RAM now (Linux ``/proc/self/statm``), or None if unknown."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def default_memory_limit() -> int:
    """The objective's default budget in bytes.

    At most :data:`DEFAULT_FRACTION` of the available memory and at most :data:`DEFAULT_CAP` for the
    whole process: what the process already holds (interpreter, libraries, the caller's data) is
    deducted from the cap, so that a search with the default stays under 2 GiB of resident memory.
    """
    available = available_memory()
    limit = DEFAULT_CAP - (resident_memory() or 0)
    if available is not None:
        limit = min(limit, int(DEFAULT_FRACTION * available))
    return max(limit, DEFAULT_FLOOR)


def round_up_size(size: int) -> str:
    """``size`` rounded up to a whole KiB, MiB or GiB, written as a user writes a limit
    (``'252MiB'``): a size to give back in a message, never below ``size``."""
    for unit, step in (("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3)):
        if size < 1024 * step or unit == "GiB":
            return f"{-(-size // step)}{unit}"
    raise AssertionError("unreachable")


class MemoryLimitTooSmall(AdvisedValueError):
    """A memory limit below what the objective must hold whatever it chooses: the data, one
    transform, the smallest evaluator that scores them. Says the least limit that fits
    (:attr:`least`, in bytes), which it was planned again with to check."""

    def __init__(self, given: Any, least: int, rows: int, features: int, classifier: str) -> None:
        self.least = int(least)
        super().__init__(
            "{memory_limit} {given} is too small for {rows:,} rows × {features} features "
            "with {classifier}: give at least {least}, or score fewer rows ({subsample})",
            given=given,
            least=round_up_size(self.least),
            rows=rows,
            features=features,
            classifier=classifier,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        values = self.values
        return (
            type(self),
            (
                values["given"],
                self.least,
                values["rows"],
                values["features"],
                values["classifier"],
            ),
        )


def format_bytes(size: float) -> str:
    """``1536`` → ``'1.5 KiB'``: sizes in messages, in binary units."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


class MemoryBudget:
    """Bytes the objective may allocate, handed out to its pieces before they allocate.

    Each piece asks :meth:`fits` with its footprint and, if it fits, :meth:`reserve`\\ s it; the
    evaluators size their blocks from :meth:`remaining`. Only the plan is recorded here (no
    allocation is tracked): the footprints are upper estimates of the arrays each piece holds at
    its peak.

    Args:
        limit: Bytes (int), a size string such as ``"512MiB"``, or None for
            :func:`default_memory_limit`.
    """

    def __init__(self, limit: int | str | None = None) -> None:
        self.limit = default_memory_limit() if limit is None else parse_memory(limit)
        #: The limit as it was given (None: the default), which a refusal names.
        self.given = limit
        self.reserved: dict[str, int] = {}

    @property
    def used(self) -> int:
        return sum(self.reserved.values())

    def remaining(self) -> int:
        return self.limit - self.used

    def fits(self, size: int) -> bool:
        return size <= self.remaining()

    def reserve(self, name: str, size: int) -> None:
        """Record `size` bytes for `name` (replacing an earlier reservation of that name)."""
        self.reserved[name] = int(size)

    def release(self, name: str) -> None:
        """Forget the reservation of `name`, if any."""
        self.reserved.pop(name, None)

    def __repr__(self) -> str:
        return (
            f"MemoryBudget(limit={format_bytes(self.limit)}, reserved={format_bytes(self.used)})"
        )
