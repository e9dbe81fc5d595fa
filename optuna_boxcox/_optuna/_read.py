"""Reading a study's trials from an RDB storage in a few SQL queries.

Optuna's own reader builds an ORM object for every trial, parameter, value and attribute row and
then a FrozenTrial from them: about a millisecond per trial with 30 parameters, half a minute for a
20,000-trial search. Here one query per table fetches the rows as plain tuples and the
FrozenTrials are built straight from them, each distribution JSON decoded once. The result is equal
to Optuna's ``get_all_trials`` (params, distributions, values, attributes, states, datetimes,
intermediate values; tested), trial by trial, in trial-id order. The same reader brings Optuna's
own cache over an RDB storage (what ``optuna.create_study(storage="sqlite:///…")`` makes) up to
date (:func:`refresh_optuna_cache`), so that a study a script opens with Optuna is read back in bulk
too.
"""

from __future__ import annotations

from collections.abc import Collection
import datetime
import json
import math
from typing import TYPE_CHECKING
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import json_to_distribution
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

try:  # Optuna's cache over an RDB storage, which optuna.create_study(storage=URL) makes
    from optuna.storages._cached_storage import _CachedStorage
    from optuna.storages._cached_storage import _StudyInfo
except ImportError:  # pragma: no cover - every supported Optuna has both
    _CachedStorage = _StudyInfo = None  # type: ignore[assignment,misc]

from optuna_boxcox._optuna import from_stored_datetime
from optuna_boxcox._optuna import supported
from optuna_boxcox._optuna._sql import Sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

_STATES = {state.name: state for state in TrialState}
_INFINITE = {"INF_POS": math.inf, "INF_NEG": -math.inf, "NAN": math.nan}


def read_trials(
    connection: Connection,
    study_id: int,
    *,
    after: int = -1,
    including: Collection[int] = (),
    only: Collection[int] | None = None,
) -> list[FrozenTrial]:
    """The study's trials with an id above ``after`` or in ``including`` — or, given ``only``, with
    those ids — in trial-id order."""
    where, parameters = _selection(study_id, after, including, only)
    sql = Sql(connection)

    def rows(columns: str, table: str, order: str) -> list[tuple]:
        # The trials table is joined for the study and the id selection; every child table has an
        # index on trial_id.
        return sql(
            f"SELECT c.trial_id, {columns} FROM {table} c JOIN trials t ON c.trial_id = t.trial_id"
            f" WHERE {where} ORDER BY c.trial_id, {order}",
            parameters,
        )

    header_rows = sql(
        "SELECT t.trial_id, t.number, t.state, t.datetime_start, t.datetime_complete FROM trials t"
        f" WHERE {where} ORDER BY t.trial_id",
        parameters,
    )
    if not header_rows:
        return []
    params: dict[int, dict[str, Any]] = {}
    dists: dict[int, dict[str, BaseDistribution]] = {}
    decode = _DistributionCache()
    for trial_id, name, value, distribution_json in rows(
        "c.param_name, c.param_value, c.distribution_json", "trial_params", "c.param_id"
    ):
        distribution = decode(distribution_json)
        if trial_id not in params:
            params[trial_id], dists[trial_id] = {}, {}
        params[trial_id][name] = (
            value
            if type(distribution) is FloatDistribution
            else distribution.to_external_repr(value)
        )
        dists[trial_id][name] = distribution
    values: dict[int, list[float]] = {}
    for trial_id, objective, value, kind in rows(
        "c.objective, c.value, c.value_type", "trial_values", "c.objective"
    ):
        slots = values.setdefault(trial_id, [])
        slots.extend([0.0] * (objective + 1 - len(slots)))
        slots[objective] = value if kind == "FINITE" else _INFINITE[kind]
    intermediate: dict[int, dict[int, float]] = {}
    for trial_id, step, value, kind in rows(
        "c.step, c.intermediate_value, c.intermediate_value_type",
        "trial_intermediate_values",
        "c.step",
    ):
        intermediate.setdefault(trial_id, {})[step] = (
            value if kind == "FINITE" else _INFINITE[kind]
        )
    user_attrs = _attributes(
        rows("c.key, c.value_json", "trial_user_attributes", "c.trial_user_attribute_id")
    )
    system_attrs = _attributes(
        rows("c.key, c.value_json", "trial_system_attributes", "c.trial_system_attribute_id")
    )
    trials = []
    for trial_id, number, state, start, complete in header_rows:
        trials.append(
            FrozenTrial(
                number=number,
                state=_STATES[state],
                value=None,
                values=values.get(trial_id),
                datetime_start=_datetime(start),
                datetime_complete=_datetime(complete),
                params=params.get(trial_id, {}),
                distributions=dists.get(trial_id, {}),
                user_attrs=user_attrs.get(trial_id, {}),
                system_attrs=system_attrs.get(trial_id, {}),
                intermediate_values=intermediate.get(trial_id, {}),
                trial_id=trial_id,
            )
        )
    return trials


def _selection(
    study_id: int, after: int, including: Collection[int], only: Collection[int] | None
) -> tuple[str, tuple]:
    """A WHERE clause on ``trials t``, with ``?`` marks (see :class:`~._sql.Sql`)."""
    if only is not None:
        ids = sorted(int(i) for i in only) or [-1]
        marks = ", ".join("?" for _ in ids)
        return f"t.study_id = ? AND t.trial_id IN ({marks})", (study_id, *ids)
    ids = sorted(int(i) for i in including if i <= after)
    if not ids:
        return "t.study_id = ? AND t.trial_id > ?", (study_id, after)
    marks = ", ".join("?" for _ in ids)
    return (
        f"t.study_id = ? AND (t.trial_id > ? OR t.trial_id IN ({marks}))",
        (study_id, after, *ids),
    )


def _attributes(rows: list[tuple]) -> dict[int, dict[str, Any]]:
    attrs: dict[int, dict[str, Any]] = {}
    loads = _json_loads
    for trial_id, key, value_json in rows:
        if trial_id not in attrs:
            attrs[trial_id] = {}
        attrs[trial_id][key] = loads(value_json)
    return attrs


def _json_loads(text: str) -> Any:
    # Most attribute values are short scalars repeated across trials (epochs, phases, booleans):
    # decoded once. Lists and dicts are mutable, so every trial gets its own.
    try:
        return _SCALARS[text]
    except KeyError:
        pass
    value = json.loads(text)
    if len(text) <= 24 and not isinstance(value, (list, dict)):
        if len(_SCALARS) > 50_000:
            _SCALARS.clear()
        _SCALARS[text] = value
    return value


_SCALARS: dict[str, Any] = {}


class _DistributionCache:
    """Each distinct distribution JSON decoded once per read."""

    def __init__(self) -> None:
        self._known: dict[str, BaseDistribution] = {}

    def __call__(self, text: str) -> BaseDistribution:
        distribution = self._known.get(text)
        if distribution is None:
            distribution = self._known[text] = json_to_distribution(text)
        return distribution


def _datetime(stored: Any) -> datetime.datetime | None:
    """A datetime column as the driver returns it (SQLite: text) as a FrozenTrial's datetime."""
    if stored is None:
        return None
    if isinstance(stored, str):
        stored = datetime.datetime.fromisoformat(stored)
    return from_stored_datetime(stored)


# -- Optuna's own cache over an RDB storage --------------------------------------------------
def refresh_optuna_cache(storage: Any, study_id: int) -> bool:
    """Bring Optuna's own cache of an RDB storage (the ``_CachedStorage`` that
    ``optuna.create_study(storage="sqlite:///…")`` makes) up to date through :func:`read_trials`.

    It does what that cache's ``_read_trials_from_remote_storage`` does through Optuna's ORM (about
    a millisecond per trial): the trials after the last finished one are read and the unfinished
    ones read again, with the same bookkeeping, so that Optuna's next read finds nothing to read.
    Returns whether it did: False for any other storage and for an Optuna it was not checked
    against, which then reads the trials itself.
    """
    found = _optuna_cache(storage)
    if found is None:
        return False
    cache, study_info = found
    with cache._lock:
        study = cache._studies.get(study_id)
        if study is None:
            study = cache._studies[study_id] = study_info()
        with cache._backend.engine.connect() as connection:
            trials = read_trials(
                connection,
                study_id,
                after=study.last_finished_trial_id,
                including=study.unfinished_trial_ids,
            )
        if not trials:
            return True
        cache._add_trials_to_cache(study_id, trials)
        for trial in trials:
            trial_id = trial._trial_id
            if trial.state.is_finished():
                study.last_finished_trial_id = max(study.last_finished_trial_id, trial_id)
                study.unfinished_trial_ids.discard(trial_id)
            else:
                study.unfinished_trial_ids.add(trial_id)
    return True


def _optuna_cache(storage: Any) -> tuple[Any, type] | None:
    """``storage`` and the class of its per-study records, when it is Optuna's cache over an RDB
    storage with the fields :func:`refresh_optuna_cache` keeps as Optuna does."""
    if _CachedStorage is None or type(storage) is not _CachedStorage or not supported():
        return None
    if not all(hasattr(storage, name) for name in _CACHE_FIELDS):
        return None
    return storage, _StudyInfo


#: What :func:`refresh_optuna_cache` reads and writes of Optuna's cache.
_CACHE_FIELDS = ("_backend", "_studies", "_lock", "_add_trials_to_cache")
