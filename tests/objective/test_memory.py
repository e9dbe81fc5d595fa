"""The memory budget (optuna_boxcox._objective._memory): sizes users write, the default limit, the bookkeeping."""

from __future__ import annotations

import builtins
import re
import tracemalloc

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox._objective import _memory
from optuna_boxcox._objective._memory import DEFAULT_CAP
from optuna_boxcox._objective._memory import DEFAULT_FLOOR
from optuna_boxcox._objective._memory import MemoryBudget
from optuna_boxcox._objective._memory import MemoryLimitTooSmall
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


# -- a limit given holds, or is refused with the least that fits --------------------------------


def _skewed(n, p):
    X, y = make_classification(n, p, n_informative=max(2, p // 3), random_state=0)
    return np.exp(X / 2), y


def _refusal(X, y, estimator, limit, **options):
    with pytest.raises(MemoryLimitTooSmall) as refused:
        BoxCoxObjective(X, y, estimator, memory_limit=limit, **options).prepare_rungs()
    return refused.value


@pytest.mark.parametrize("estimator", [GaussianNB(), KNeighborsClassifier()], ids=repr)
def test_a_limit_below_what_the_data_need_is_refused_with_the_least_that_fits(estimator):
    X, y = _skewed(4000, 10)  # the data alone: 0.3 MiB a copy
    refused = _refusal(X, y, estimator, "64KiB")
    said = str(refused)
    assert "\n" not in said and said.startswith("memory_limit 64KiB is too small for 4,000 rows")
    least = re.search(r"give at least (\d+)(KiB|MiB)", said)
    assert least is not None, said
    given = least.group(1) + least.group(2)
    assert refused.least == parse_memory(given)
    objective = BoxCoxObjective(X, y, estimator, memory_limit=given)
    assert objective.describe()["estimated_peak_bytes"] <= objective.budget.limit
    less = f"{int(least.group(1)) - 1}{least.group(2)}"
    _refusal(X, y, estimator, less)  # the least: one unit less is refused


def test_what_the_objective_allocates_stays_within_its_limit_or_it_is_refused():
    X, y = _skewed(8000, 8)  # one copy of the data: 0.5 MiB
    BoxCoxObjective(X[:50], y[:50], GaussianNB()).warm_up()  # compiled outside the trace
    allowed = []
    for limit in ("1MiB", None):
        tracemalloc.start()
        try:
            given = limit or _refusal(X, y, GaussianNB(), "1MiB").least
            tracemalloc.reset_peak()
            objective = BoxCoxObjective(X, y, GaussianNB(), memory_limit=given)
            objective.warm_up()
            start = np.asarray(objective.space.initial, dtype=float)
            objective.evaluate_batch([np.r_[c, start[1:]] for c in np.linspace(-3, 3, 7)])
            _, peak = tracemalloc.get_traced_memory()
            allowed.append((given, peak))
        except MemoryLimitTooSmall:
            allowed.append((limit, None))
        finally:
            tracemalloc.stop()
    (small, small_peak), (least, peak) = allowed
    assert small_peak is None, f"{small}: {small_peak / 2**20:.1f} MiB allocated, not refused"
    assert peak <= 1.5 * least, f"{peak / 2**20:.1f} MiB allocated under {least / 2**20:.1f} MiB"


def test_the_rungs_fit_the_limit_given_or_it_is_refused_with_the_least_for_them_all():
    X, y = _skewed(6000, 10)
    own = _refusal(X, y, GaussianNB(), "1KiB").least  # what the objective on all rows needs
    refused = _refusal(X, y, GaussianNB(), own, fidelity=200)
    assert refused.least > own, "the rungs' room is the search's"
    objective = BoxCoxObjective(X, y, GaussianNB(), memory_limit=refused.least, fidelity=200)
    objective.prepare_rungs()
    assert objective.budget.used <= objective.budget.limit, objective.budget
    _refusal(X, y, GaussianNB(), refused.least - 1024**2, fidelity=200)


def test_the_default_limit_still_gives_the_rungs_the_room_they_need():
    X, y = _skewed(3000, 6)
    objective = BoxCoxObjective(X, y, GaussianNB(), fidelity=200)
    objective.prepare_rungs()  # no refusal: the default is no promise of the caller's
    assert len(objective.rungs) > 2
