"""The memory budget (optuna_boxcox._objective._memory): sizes users write, the default limit, the bookkeeping."""

from __future__ import annotations

import builtins

import pytest

from optuna_boxcox._objective import _memory
from optuna_boxcox._objective._memory import DEFAULT_CAP
from optuna_boxcox._objective._memory import DEFAULT_FLOOR
from optuna_boxcox._objective._memory import MemoryBudget
from optuna_boxcox._objective._memory import parse_memory


@pytest.mark.parametrize(
    "text, size",
    [
        (4096, 4096),
        ("4096", 4096),
        ("512MiB", 512 * 1024**2),
        ("2GB", 2 * 1000**3),
        ("1.5 GiB", 3 * 1024**3 // 2),
        (" 64 kib ", 64 * 1024),
        ("3 mb", 3 * 1000**2),
        ("1TiB", 1024**4),
    ],
)
def test_sizes_are_read_in_decimal_and_binary_units(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("bad", ["lots", "12XB", "GiB", "1.2.3MB", "-5MB", 0, -1, 1.5, True, None])
def test_a_bad_size_is_refused_in_one_line_naming_it(bad):
    with pytest.raises(ValueError, match="memory_limit") as error:
        parse_memory(bad)
    assert repr(bad) in str(error.value)
    assert "\n" not in str(error.value)


def test_the_default_limit_keeps_the_process_under_2_gib_and_half_the_available_memory():
    limit = _memory.default_memory_limit()
    resident = _memory.resident_memory()
    assert DEFAULT_FLOOR <= limit <= DEFAULT_CAP
    assert resident is not None and limit <= max(DEFAULT_CAP - resident, DEFAULT_FLOOR)
    available = _memory.available_memory()
    assert available is not None and limit <= max(available // 2, DEFAULT_FLOOR)


def test_available_memory_falls_back_when_proc_meminfo_is_missing(monkeypatch):
    real_open = builtins.open

    def no_proc(path, *args, **kwargs):
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)
    available = _memory.available_memory()
    assert available is not None and available > 0
    assert _memory.resident_memory() is None
    assert DEFAULT_FLOOR <= _memory.default_memory_limit() <= DEFAULT_CAP


def test_a_budget_hands_out_what_remains():
    budget = MemoryBudget("1MiB")
    assert budget.limit == 1024**2
    budget.reserve("data", 300 * 1024)
    assert budget.fits(724 * 1024) and not budget.fits(724 * 1024 + 1)
    budget.reserve("data", 100 * 1024)  # a reservation is replaced, not added
    assert budget.remaining() == 924 * 1024
    budget.release("data")
    budget.release("never reserved")
    assert budget.remaining() == budget.limit
    assert "1.0 MiB" in repr(budget)
