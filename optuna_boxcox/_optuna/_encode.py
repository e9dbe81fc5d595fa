"""Trials encoded for the bulk writer: each trial's rows of Optuna's RDB schema prepared once
(parameters, values, attributes, intermediate values) and the SQL that inserts them, so that a
write is a few ``executemany``."""

from __future__ import annotations

from dataclasses import dataclass
import datetime
import json
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

from optuna.distributions import FloatDistribution
from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_boxcox._optuna._sql import stored_intermediate
from optuna_boxcox._optuna._sql import stored_value
from optuna_boxcox._optuna._sql import told_value

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution


@dataclass
class TrialRecord:
    """One finished trial to write."""

    params: Mapping[str, Any]
    distributions: Mapping[str, BaseDistribution]
    value: float | None
    user_attrs: Mapping[str, Any]
    system_attrs: Mapping[str, Any]
    datetime_start: datetime.datetime
    datetime_complete: datetime.datetime
    state: TrialState = TrialState.COMPLETE
    #: step → value, as ``trial.report`` records them (a PRUNED trial's value is its last one).
    intermediate_values: Mapping[int, float] | None = None

    def frozen(self) -> FrozenTrial:
        value = None if self.value is None else float(self.value)
        return FrozenTrial(
            number=-1,
            state=self.state,
            value=told_value(self.state.name, value),
            values=None,
            datetime_start=self.datetime_start,
            datetime_complete=self.datetime_complete,
            params=dict(self.params),
            distributions=dict(self.distributions),
            user_attrs=dict(self.user_attrs),
            system_attrs=dict(self.system_attrs),
            intermediate_values=dict(self.intermediate_values or {}),
            trial_id=-1,
        )


class EncodedTrial(NamedTuple):
    """One finished trial as the bulk writer's statements take it (see :func:`encode_trials`)."""

    position: (
        tuple[str, str] | None
    )  # (key, JSON) of the position attribute; None: not deduplicated
    state: str
    datetime_start: datetime.datetime
    datetime_complete: datetime.datetime
    value: tuple[float, str] | None  # (stored value, value type) of a complete trial
    encoding: _EncodedDistributions
    param_values: (
        tuple[float, ...] | None
    )  # in ``encoding.names`` order, when all are floats there
    param_rows: (
        list[tuple[str, float, str]] | None
    )  # else (name, internal value, distribution JSON)
    user_attrs: list[tuple[str, str]]  # (key, JSON)
    system_attrs: list[tuple[str, str]]
    #: (step, stored value, value type) of each intermediate value
    intermediate: list[tuple[int, float | None, str]] = []


def encode_trials(
    records: Sequence[TrialRecord], position_key: str | None = None
) -> list[EncodedTrial]:
    """Everything :func:`write_encoded` needs, computed without a database connection.

    Encoding is most of the Python work of a bulk write; a process with time to spare can do it
    while another one writes (the batched runner's main process and its writing worker).
    """
    encoded = []
    for record in records:
        value = None
        told = told_value(record.state.name, None if record.value is None else float(record.value))
        if told is not None:
            value = stored_value(told)
        encoding = _encoded_distributions(record.distributions)
        param_values = param_rows = None
        if encoding.floats and list(record.params) == encoding.names:
            param_values = tuple(map(float, record.params.values()))
        else:
            param_rows = [
                (
                    name,
                    float(v)
                    if encoding.floats
                    else record.distributions[name].to_internal_repr(v),
                    encoding.json[name],
                )
                for name, v in record.params.items()
            ]
        encoded.append(
            EncodedTrial(
                position=None
                if position_key is None
                else (position_key, _json(record.system_attrs.get(position_key))),
                state=record.state.name,
                datetime_start=record.datetime_start,
                datetime_complete=record.datetime_complete,
                value=value,
                encoding=encoding,
                param_values=param_values,
                param_rows=param_rows,
                user_attrs=[(k, _json(v)) for k, v in record.user_attrs.items()],
                system_attrs=[(k, _json(v)) for k, v in record.system_attrs.items()],
                intermediate=_intermediate(record.intermediate_values),
            )
        )
    return encoded


def _intermediate(values: Mapping[int, float] | None) -> list[tuple[int, float | None, str]]:
    return [(int(step), *stored_intermediate(float(v))) for step, v in (values or {}).items()]


class FloatTrialEncoder:
    """Encodes finished trials whose parameters are the floats of one all-float distributions
    mapping, straight from their values: :func:`encode_trials` without building a
    :class:`TrialRecord` and a parameter dict per trial (the batched runner's hot path).
    """

    def __init__(
        self, distributions: Mapping[str, FloatDistribution], position_key: str | None = None
    ) -> None:
        self.encoding = _encoded_distributions(distributions)
        if not self.encoding.floats:
            raise TypeError("FloatTrialEncoder needs FloatDistribution parameters only")
        self.position_key = position_key

    def __call__(
        self,
        values: Sequence[float],
        value: float,
        user_attrs: Mapping[str, Any],
        system_attrs: Mapping[str, Any],
        datetime_start: datetime.datetime,
        datetime_complete: datetime.datetime,
        state: TrialState = TrialState.COMPLETE,
        intermediate_values: Mapping[int, float] | None = None,
    ) -> EncodedTrial:
        """One finished trial (COMPLETE, or PRUNED with its intermediate values); ``values`` in
        the order of the distributions mapping."""
        key = self.position_key
        told = told_value(state.name, float(value))
        return EncodedTrial(
            position=None if key is None else (key, _json(system_attrs.get(key))),
            state=state.name,
            datetime_start=datetime_start,
            datetime_complete=datetime_complete,
            value=None if told is None else stored_value(told),
            encoding=self.encoding,
            param_values=tuple(map(float, values)),
            param_rows=None,
            user_attrs=[(k, _json(v)) for k, v in user_attrs.items()],
            system_attrs=[(k, _json(v)) for k, v in system_attrs.items()],
            intermediate=_intermediate(intermediate_values),
        )


class PreparedTrials(NamedTuple):
    """Encoded trials as the rows of each table, for trial ids and numbers counted on from
    ``first_trial_id`` and ``first_number`` (see :class:`TrialRows`).

    Building the rows is most of the Python work of a bulk write; one process can do it while
    another one writes. :func:`write_prepared` renumbers them if the database has moved on since.
    """

    first_trial_id: int
    first_number: int
    positions: list[tuple[str, str] | None]  # each trial's (key, JSON) position, or None
    trials: list[tuple]  # (number, study_id, state, datetime_start, datetime_complete)
    tables: list[
        tuple[str, list[tuple]]
    ]  # (statement, rows), each row's first column the trial id


@dataclass
class _EncodedDistributions:
    names: list[str]
    json: dict[str, str]
    floats: bool  # all FloatDistribution: the internal representation is the float itself
    # SQLite: one statement inserting all of a trial's parameter rows, binding only the trial id
    # and the values (None where that does not apply).
    sqlite_insert: str | None


def _sqlite_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _whole_trial_insert(names: list[str], json_of: Mapping[str, str]) -> str | None:
    """``INSERT INTO trial_params … VALUES (?1, 'λ_0', ?2, '{…}'), (?1, 'λ_1', ?3, '{…}'), …``.

    SQLite spends most of a bulk write of parameters on executing one row at a time; with the names
    and distributions (the same for every trial) in the statement, one execution writes a trial.
    The stored text is identical to binding them.
    """
    texts = [*names, *json_of.values()]
    if not names or len(names) + 1 > 999 or any("\x00" in t for t in texts):  # SQLite's limits
        return None
    rows = ", ".join(
        f"(?1, {_sqlite_literal(name)}, ?{j + 2}, {_sqlite_literal(json_of[name])})"
        for j, name in enumerate(names)
    )
    return f"INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) VALUES {rows}"


def whole_trial_attrs_insert(table: str, keys: tuple[str, ...]) -> str | None:
    """``INSERT INTO <table> … VALUES (?1, 'epoch', ?2), (?1, 'phase', ?3), …`` for one trial's
    attributes (SQLite; the keys are the same for many trials), as :func:`_whole_trial_insert`."""
    statement = _ATTRS_INSERTS.get((table, keys))
    if statement is None:
        if not keys or len(keys) + 1 > 999 or any("\x00" in k for k in keys):
            return None
        if len(_ATTRS_INSERTS) > 256:
            _ATTRS_INSERTS.clear()
        rows = ", ".join(f"(?1, {_sqlite_literal(key)}, ?{j + 2})" for j, key in enumerate(keys))
        statement = _ATTRS_INSERTS[(table, keys)] = (
            f"INSERT INTO {table} (trial_id, key, value_json) VALUES {rows}"
        )
    return statement


_ATTRS_INSERTS: dict[tuple[str, tuple[str, ...]], str] = {}


# Records of one run share one distributions mapping; its encoding is kept (with the mapping, so
# that its id stays unique) for the next batches.
_ENCODED: dict[int, tuple[Mapping[str, BaseDistribution], _EncodedDistributions]] = {}


def _encoded_distributions(distributions: Mapping[str, BaseDistribution]) -> _EncodedDistributions:
    entry = _ENCODED.get(id(distributions))
    if entry is None or entry[0] is not distributions:
        if len(_ENCODED) >= 16:
            _ENCODED.clear()
        names = list(distributions)
        json_of = {name: distribution_to_json(d) for name, d in distributions.items()}
        floats = all(type(d) is FloatDistribution for d in distributions.values())
        encoded = _EncodedDistributions(
            names=names,
            json=json_of,
            floats=floats,
            sqlite_insert=_whole_trial_insert(names, json_of) if floats else None,
        )
        entry = _ENCODED[id(distributions)] = (distributions, encoded)
    return entry[1]


_JSON_SCALARS = (bool, int, float, str, type(None))


def _json(value: Any) -> str:
    """json.dumps, remembered for the small scalars that fill the attribute tables."""
    if type(value) in _JSON_SCALARS:
        key = (type(value), value)
        cached = _JSON_MEMO.get(key)
        if cached is None:
            if len(_JSON_MEMO) > 10_000:
                _JSON_MEMO.clear()
            cached = _JSON_MEMO[key] = json.dumps(value)
        return cached
    return json.dumps(value)


_JSON_MEMO: dict[tuple[type, Any], str] = {}
