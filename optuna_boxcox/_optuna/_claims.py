"""Plan positions claimed through an RDB storage, so that batched workers on one study share work.

A claim is what a ``study.optimize`` worker of the paper's samplers makes too: a RUNNING trial that
holds the position (system attribute ``position_key``) and names its owner. Here a whole chunk of
positions is claimed in one transaction, which first takes the study's write lock (a no-op update
of its row) and skips the positions another trial holds, so two workers never hold one position;
scoring them completes the trials in a second transaction. Workers announce themselves as study
system attributes, so a worker running alone can write without claims (cheaper) until another
one joins.
"""

from __future__ import annotations

from dataclasses import dataclass
import datetime
import hashlib
import json
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.distributions import distribution_to_json
from optuna.trial import TrialState

from optuna_boxcox._optuna import UpdateFinishedTrialError
from optuna_boxcox._optuna import rdb_backend
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import to_stored_datetime
from optuna_boxcox._optuna._sql import Sql
from optuna_boxcox._optuna._sql import stored_intermediate
from optuna_boxcox._optuna._sql import stored_value
from optuna_boxcox._optuna._sql import told_value
from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox._system._process import REAPED_KEY
from optuna_boxcox._system._process import owner_is_dead

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution

#: Prefix of the study system attributes by which batched workers announce themselves.
WORKER_PREFIX = "boxcox:worker:"
#: A worker that has not refreshed its announcement for this long is no longer counted.
ACTIVE_SECONDS = 30.0


@dataclass
class Claim:
    """A position to claim: its λ (by name) and the trial's user attributes."""

    position: int
    params: Mapping[str, float]
    user_attrs: Mapping[str, Any]


@dataclass
class Claimed:
    """A position this worker holds: the RUNNING trial that holds it."""

    position: int
    trial_id: int
    number: int


def announce(study: optuna.Study, identity: str, *, ended: bool = False) -> None:
    """Say (again) that the worker ``identity`` runs a batched search on this study."""
    storage_of(study).set_study_system_attr(
        study_id_of(study), WORKER_PREFIX + identity, {"seen": time.time(), "ended": ended}
    )


def other_workers(study: optuna.Study, identity: str) -> list[str]:
    """The other batched workers announced on this study, seen recently and not known dead (a
    worker killed on this host a moment ago is no partner: a search resumed after it would share
    its batches with nobody — and, with rows as the fidelity, halve them in pieces)."""
    now = time.time()
    attrs = _announcements(study)
    return [
        key[len(WORKER_PREFIX) :]
        for key, value in attrs.items()
        if key.startswith(WORKER_PREFIX)
        and key != WORKER_PREFIX + identity
        and isinstance(value, dict)
        and not value.get("ended")
        and now - float(value.get("seen", 0.0)) < ACTIVE_SECONDS
        and not owner_is_dead(key[len(WORKER_PREFIX) :])
    ]


def _announcements(study: optuna.Study) -> dict[str, Any]:
    """The study system attributes of the workers' announcements (not the board of scores
    ahead, which can hold thousands)."""
    backend = rdb_backend(storage_of(study))
    if backend is None:
        attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
        return {k: v for k, v in attrs.items() if k.startswith(WORKER_PREFIX)}
    with backend.engine.connect() as connection:
        rows = Sql(connection)(
            "SELECT key, value_json FROM study_system_attributes WHERE study_id = ? AND key LIKE ?",
            (study_id_of(study), WORKER_PREFIX + "%"),
        )
    return {key: json.loads(value_json) for key, value_json in rows}


def _stored_moment(moment: datetime.datetime, sqlite: bool) -> Any:
    stored = to_stored_datetime(moment)
    return stored.strftime("%Y-%m-%d %H:%M:%S.%f") if sqlite else stored


def claim(
    study: optuna.Study,
    claims: Sequence[Claim],
    distributions: Mapping[str, BaseDistribution],
    *,
    position_key: str,
    owner: str,
    heartbeat: bool = False,
    at_most: int | None = None,
) -> list[Claimed]:
    """Claim the free ones of ``claims`` (those no trial of the study holds, unless it failed),
    the first ``at_most`` of them when given: RUNNING trials with their λ and attributes, created
    in one transaction. Returns the claimed, in the order of ``claims``."""
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    sqlite = backend.engine.dialect.name == "sqlite"
    json_of = {name: distribution_to_json(d) for name, d in distributions.items()}
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        sql.lock_study(study_id)
        taken = held_positions(sql, study_id, position_key, positions=[c.position for c in claims])
        free = [c for c in claims if json.dumps(int(c.position)) not in taken][:at_most]
        if not free:
            return []
        count, before = sql.numbering(study_id)
        now = _stored_moment(datetime.datetime.now(), sqlite)
        sql.insert(
            "trials",
            ("number", "study_id", "state", "datetime_start", "datetime_complete"),
            [(count + k, study_id, TrialState.RUNNING.name, now, None) for k in range(len(free))],
        )
        rows = sql(
            "SELECT trial_id, number FROM trials WHERE trial_id > ? AND study_id = ? ORDER BY number",
            (before or 0, study_id),
        )
        if len(rows) != len(free):
            raise RuntimeError(f"claimed {len(free)} positions, found {len(rows)} new trials")
        claimed = [Claimed(c.position, tid, number) for c, (tid, number) in zip(free, rows)]
        sql.insert(
            "trial_params",
            ("trial_id", "param_name", "param_value", "distribution_json"),
            [
                (k.trial_id, name, float(value), json_of[name])
                for k, c in zip(claimed, free)
                for name, value in c.params.items()
            ],
        )
        sql.insert(
            "trial_user_attributes",
            ("trial_id", "key", "value_json"),
            [
                (k.trial_id, key, json.dumps(value))
                for k, c in zip(claimed, free)
                for key, value in c.user_attrs.items()
            ],
        )
        sql.insert(
            "trial_system_attributes",
            ("trial_id", "key", "value_json"),
            [
                row
                for k in claimed
                for row in (
                    (k.trial_id, OWNER_KEY, json.dumps(owner)),
                    (k.trial_id, position_key, json.dumps(k.position)),
                )
            ],
        )
        if heartbeat:  # the storage fails trials whose heartbeat stopped (a vanished machine)
            sql.insert(
                "trial_heartbeats",
                ("trial_id", "heartbeat"),
                [(k.trial_id, _stored_moment(datetime.datetime.now(), sqlite)) for k in claimed],
            )
    return claimed


def claim_trial(
    study: optuna.Study,
    trial_id: int,
    position: int,
    *,
    position_key: str,
    after_trial_id: int = -1,
    done: tuple[str, Any] | None = None,
) -> bool:
    """Claim ``position`` for the running trial ``trial_id`` (a ``study.optimize`` worker's), the
    way :func:`claim` claims a chunk: in one transaction that first takes the study's write lock
    (which every bulk write and claim takes too) and claims only while no other trial after
    ``after_trial_id`` holds the position. Returns whether it did.

    Writing the claim and then looking for rivals, as this path did before, missed a bulk write
    not yet committed: both then held the position.

    With ``done`` (the user attribute, and its value, of a trial that found the plan finished),
    an older trial of a live worker that holds no position yet, and is neither enqueued nor
    done, claims first: so the trials that find the plan finished are the study's newest,
    which a worker can withdraw (:func:`withdraw`).
    """
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        sql.lock_study(study_id)
        held = held_positions(
            sql, study_id, position_key, positions=[position], after_trial_id=after_trial_id
        )
        if held:
            return False
        if done is not None and _older_waiting(
            sql, study_id, trial_id, after_trial_id, position_key, done
        ):
            return False
        ((state,),) = sql("SELECT state FROM trials WHERE trial_id = ?", (trial_id,))
        if state != TrialState.RUNNING.name:
            raise UpdateFinishedTrialError(
                f"trial {trial_id} is {state}: it cannot claim position {position}"
            )
        _set_system_attr(sql, trial_id, position_key, int(position))
    return True


def _set_system_attr(sql: Sql, trial_id: int, key: str, value: Any) -> None:
    """Set the trial's system attribute ``key`` to ``value`` in the transaction of ``sql``."""
    text = json.dumps(value)
    sql(
        "UPDATE trial_system_attributes SET value_json = ? WHERE trial_id = ? AND key = ?",
        (text, trial_id, key),
    )
    if sql.cursor.rowcount == 0:
        sql.insert(
            "trial_system_attributes", ("trial_id", "key", "value_json"), [(trial_id, key, text)]
        )


def _older_waiting(
    sql: Sql,
    study_id: int,
    trial_id: int,
    after_trial_id: int,
    position_key: str,
    done: tuple[str, Any],
) -> bool:
    """Whether a running trial older than ``trial_id`` (and after ``after_trial_id``) of a live
    worker waits for a position: it holds none, was not enqueued, and has not found the plan
    done."""
    rows = sql(
        "SELECT o.value_json FROM trials t"
        " JOIN trial_system_attributes o ON o.trial_id = t.trial_id AND o.key = ?"
        " WHERE t.study_id = ? AND t.trial_id > ? AND t.trial_id < ? AND t.state = ?"
        " AND NOT EXISTS (SELECT 1 FROM trial_system_attributes a"
        " WHERE a.trial_id = t.trial_id AND a.key IN (?, ?))"
        " AND NOT EXISTS (SELECT 1 FROM trial_user_attributes u"
        " WHERE u.trial_id = t.trial_id AND u.key = ? AND u.value_json = ?)",
        (
            OWNER_KEY,
            study_id,
            after_trial_id,
            trial_id,
            TrialState.RUNNING.name,
            position_key,
            "fixed_params",
            done[0],
            json.dumps(done[1]),
        ),
    )
    return any(not is_dead(json.loads(owner)) for (owner,) in rows)


def complete(
    study: optuna.Study,
    done: Sequence[
        tuple[
            Claimed,
            float,
            Mapping[str, Any],
            datetime.datetime,
            TrialState,
            Mapping[int, float] | None,
        ]
    ],
) -> None:
    """Finish claimed trials in one transaction: (claim, value, user attributes to add, end,
    state, intermediate values). The state is COMPLETE, or PRUNED (rows as the fidelity): a
    pruned trial's value is its last intermediate value (none when NaN), as ``study.tell``
    stores it.

    A claim another worker failed meanwhile (its heartbeat looked stale) stays failed: the rows
    are locked where the database can (``FOR UPDATE``; SQLite's one writer needs none), and each
    is finished only while it is still RUNNING, so that a takeover committed between the read
    and the write is not overwritten (its position would then be scored twice).
    """
    backend = rdb_backend(storage_of(study))
    sqlite = backend.engine.dialect.name == "sqlite"
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        ids = [claimed.trial_id for claimed, *_ in done]
        marks = ", ".join("?" for _ in ids)
        running = {
            trial_id
            for (trial_id,) in sql(
                f"SELECT trial_id FROM trials WHERE trial_id IN ({marks}) AND state = ?"
                + ("" if sqlite else " FOR UPDATE"),
                (*ids, TrialState.RUNNING.name),
            )
        }
        done = [d for d in done if d[0].trial_id in running]
        finished = []
        for claimed, _, _, end, state, _ in done:
            sql(
                "UPDATE trials SET state = ?, datetime_complete = ? WHERE trial_id = ? "
                "AND state = ?",
                (state.name, _stored_moment(end, sqlite), claimed.trial_id, "RUNNING"),
            )
            if sql.cursor.rowcount != 0:
                finished.append(claimed.trial_id)
        done = [d for d in done if d[0].trial_id in finished]
        if not done:
            return
        told = [
            (claimed.trial_id, told_value(state.name, float(value)))
            for claimed, value, _, _, state, _ in done
        ]
        sql.insert(
            "trial_values",
            ("trial_id", "objective", "value", "value_type"),
            [(trial_id, 0, *stored_value(v)) for trial_id, v in told if v is not None],
        )
        sql.insert(
            "trial_intermediate_values",
            ("trial_id", "step", "intermediate_value", "intermediate_value_type"),
            [
                (claimed.trial_id, int(step), *stored_intermediate(float(v)))
                for claimed, _, _, _, _, steps in done
                for step, v in (steps or {}).items()
            ],
        )
        sql.insert(
            "trial_user_attributes",
            ("trial_id", "key", "value_json"),
            [
                (claimed.trial_id, key, json.dumps(v))
                for claimed, _, attrs, _, _, _ in done
                for key, v in attrs.items()
            ],
        )


def release(study: optuna.Study, owner: str) -> None:
    """Give back the positions ``owner`` holds (this process, stopping before it completed its
    claims: interrupted, or its scoring failed): its running trials fail, marked reaped as if it
    had died, in one transaction. Else they would stay RUNNING until another worker finds the
    process gone, and its report would disagree with the storage.

    Its claims are looked up by owner, not from what it knows it holds: a claim may have been
    committed just before an interrupt kept the claiming call from returning it.
    """
    backend = rdb_backend(storage_of(study))
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        rows = sql(
            "SELECT t.trial_id FROM trials t JOIN trial_system_attributes o"
            " ON o.trial_id = t.trial_id AND o.key = ?"
            " WHERE t.study_id = ? AND t.state = ? AND o.value_json = ?",
            (OWNER_KEY, study_id_of(study), TrialState.RUNNING.name, json.dumps(owner)),
        )
        if rows:
            _reap_rows(sql, [trial_id for (trial_id,) in rows])


def read_positions(
    study: optuna.Study, position_key: str, positions: Sequence[int]
) -> dict[int, list[tuple[TrialState, float | None, int, str | None]]]:
    """Every trial holding one of ``positions``: (state, value, trial id, owner JSON) each."""
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    found: dict[int, list[tuple[TrialState, float | None, int, str | None]]] = {}
    if not positions:
        return found
    with backend.engine.connect() as connection:
        sql = Sql(connection)
        marks = ", ".join("?" for _ in positions)
        rows = sql(
            "SELECT a.value_json, t.state, v.value, v.value_type, t.trial_id, o.value_json"
            " FROM trial_system_attributes a JOIN trials t ON a.trial_id = t.trial_id"
            " LEFT JOIN trial_values v ON v.trial_id = t.trial_id AND v.objective = 0"
            " LEFT JOIN trial_system_attributes o ON o.trial_id = t.trial_id AND o.key = ?"
            f" WHERE t.study_id = ? AND a.key = ? AND a.value_json IN ({marks})",
            (OWNER_KEY, study_id, position_key, *(json.dumps(int(p)) for p in positions)),
        )
    infinite = {"INF_POS": float("inf"), "INF_NEG": float("-inf")}
    for position_json, state, value, kind, trial_id, owner in rows:
        if kind is not None and kind != "FINITE":
            value = infinite[kind]
        found.setdefault(int(json.loads(position_json)), []).append(
            (TrialState[state], value, trial_id, None if owner is None else json.loads(owner))
        )
    return found


def held_positions(
    sql: Sql,
    study_id: int,
    key: str,
    *,
    positions: Sequence[int] | None = None,
    after_trial_id: int = -1,
    finished: bool = False,
    done: set[str] | None = None,
) -> set[str]:
    """The positions (as stored, JSON) that trials of the study after ``after_trial_id`` hold under
    system attribute ``key``: finished ones that did not fail, and running ones whose owner lives
    (``finished``: the finished ones only, which hold their positions for good). ``done``, if
    given, gets those of them that a finished trial holds, from the same query.

    A running trial whose owner died on this host holds nothing: it is reaped here, in the
    caller's transaction (see :func:`reap`), so that whoever has the position's score writes it
    instead of leaving it to a process that will never finish it.
    """
    if positions is not None and not positions:
        return set()
    marks = "" if positions is None else ", ".join("?" for _ in positions)
    states = (
        (TrialState.COMPLETE.name, TrialState.PRUNED.name)
        if finished
        else tuple(s.name for s in TrialState if s != TrialState.FAIL)
    )
    rows = sql(
        "SELECT a.value_json, t.trial_id, t.state, o.value_json FROM trial_system_attributes a"
        " JOIN trials t ON a.trial_id = t.trial_id"
        " LEFT JOIN trial_system_attributes o ON o.trial_id = t.trial_id AND o.key = ?"
        f" WHERE t.study_id = ? AND t.trial_id > ? AND t.state IN ({', '.join('?' for _ in states)})"
        " AND a.key = ?" + ("" if positions is None else f" AND a.value_json IN ({marks})"),
        (
            OWNER_KEY,
            study_id,
            after_trial_id,
            *states,
            key,
            *(() if positions is None else (json.dumps(int(p)) for p in positions)),
        ),
    )
    held, dead = set(), []
    for value_json, trial_id, state, owner in rows:
        if state == TrialState.RUNNING.name and owner is not None and is_dead(json.loads(owner)):
            dead.append(trial_id)
        else:
            held.add(value_json)
            if done is not None and state in (TrialState.COMPLETE.name, TrialState.PRUNED.name):
                done.add(value_json)
    if dead:
        _reap_rows(sql, dead)
    return held


# -- the reaping rule ------------------------------------------------------------------------------
# A running trial whose owner died is failed and marked reaped: it is re-run, and, unlike a trial
# that failed by itself, does not count toward the sampler's retries. Every worker kind applies
# this one rule: through the storage (:func:`reap`) or inside a write transaction (held_positions).


def is_dead(owner: Any) -> bool:
    """Whether a trial's recorded owner is a process of this host that is gone."""
    return isinstance(owner, str) and owner_is_dead(owner)


def heartbeat_interval(study: optuna.Study) -> float | None:
    """Seconds between a running trial's heartbeats where the storage keeps them (a database
    server's: :func:`~optuna_boxcox.storage.open_storage`), else None."""
    interval = getattr(storage_of(study), "get_heartbeat_interval", lambda: None)()
    return None if interval is None else float(interval)


def fail_stale(study: optuna.Study) -> None:
    """Fail the running trials whose heartbeat stopped (a machine that vanished from a database
    server): Optuna looks for them only when ``study.optimize`` begins a trial, so a worker that
    waits inside one for a position such a trial holds looks itself, now and then."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def reap(study: optuna.Study, trial_id: int) -> bool:
    """Fail the running trial ``trial_id`` of a dead owner, marked reaped; False if it had
    finished meanwhile (another worker reaped or completed it)."""
    storage = storage_of(study)
    try:
        storage.set_trial_system_attr(trial_id, REAPED_KEY, True)
        storage.set_trial_state_values(trial_id, state=TrialState.FAIL)
    except (UpdateFinishedTrialError, RuntimeError):
        return False
    return True


def _reap_rows(sql: Sql, trial_ids: Sequence[int]) -> None:
    marks = ", ".join("?" for _ in trial_ids)
    now = datetime.datetime.now()
    sql(
        f"UPDATE trials SET state = ?, datetime_complete = ? WHERE trial_id IN ({marks})"
        " AND state = ?",
        (
            TrialState.FAIL.name,
            _stored_moment(now, sql.sqlite),
            *trial_ids,
            TrialState.RUNNING.name,
        ),
    )
    # A reap through the storage (:func:`reap`: the mark, then the state, two commits) may have
    # marked some of them already.
    marked = {
        trial_id
        for (trial_id,) in sql(
            "SELECT trial_id FROM trial_system_attributes"
            f" WHERE key = ? AND trial_id IN ({marks})",
            (REAPED_KEY, *trial_ids),
        )
    }
    sql.insert(
        "trial_system_attributes",
        ("trial_id", "key", "value_json"),
        [
            (trial_id, REAPED_KEY, json.dumps(True))
            for trial_id in trial_ids
            if trial_id not in marked
        ],
    )


# A trial of Optuna's samplers holds no plan position: whose owner died, it is put back instead
# (WAITING, with the parameters it drew), and the next trial Optuna asks for runs it, as one
# stopped by Ctrl-C is; so the study ends with the trials asked for, none left RUNNING.


def put_back_dead(study: optuna.Study) -> int:
    """Put back the running trials of the study whose owner died on this host: WAITING, each
    once (a trial some worker took up again since has a live owner). Returns how many."""
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    query = (
        "SELECT t.trial_id, o.value_json FROM trials t JOIN trial_system_attributes o"
        " ON o.trial_id = t.trial_id AND o.key = ? WHERE t.study_id = ? AND t.state = ?"
    )
    parameters = (OWNER_KEY, study_id, TrialState.RUNNING.name)
    with backend.engine.connect() as connection:  # a read first: mostly there is none
        rows = Sql(connection)(query, parameters)
    if not any(is_dead(json.loads(owner)) for _, owner in rows):
        return 0
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        sql.lock_study(study_id)  # as a trial taken up again takes it (:func:`run_waiting`)
        dead = [tid for tid, owner in sql(query, parameters) if is_dead(json.loads(owner))]
        if dead:
            marks = ", ".join("?" for _ in dead)
            sql(
                f"UPDATE trials SET state = ? WHERE trial_id IN ({marks}) AND state = ?",
                (TrialState.WAITING.name, *dead, TrialState.RUNNING.name),
            )
    return len(dead)


def run_waiting(backend: Any, study_id: int, trial_id: int, owner: str) -> bool:
    """Take the WAITING trial ``trial_id`` up as ``owner``'s (Optuna's ``study.ask`` runs a
    waiting trial before a new one): RUNNING, and its owner recorded, in one transaction under
    the study's write lock, so that no worker sees it running under the owner that died. False
    when it is not waiting (another worker took it)."""
    sqlite = backend.engine.dialect.name == "sqlite"
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        sql.lock_study(study_id)
        sql(
            "UPDATE trials SET state = ?, datetime_start = ? WHERE trial_id = ? AND state = ?",
            (
                TrialState.RUNNING.name,
                _stored_moment(datetime.datetime.now(), sqlite),
                trial_id,
                TrialState.WAITING.name,
            ),
        )
        if sql.cursor.rowcount == 0:
            return False
        _set_system_attr(sql, trial_id, OWNER_KEY, owner)
    return True


# -- trials a study turned out not to need ---------------------------------------------------------
# Workers of ``study.optimize`` ask for a trial before they know whether the study still needs one:
# a worker waiting for a position when another finishes the plan, or one that starts a trial while
# the others bring the study to its total. Such a trial is withdrawn before it is scored, so that
# the study holds the trials one worker would have written. Only the study's newest trial is:
# trials are numbered by counting those before them (Optuna's and the bulk writer's rule).

#: Tables whose rows belong to a trial, deleted with it (Optuna's schema).
_TRIAL_TABLES = (
    "trial_params",
    "trial_values",
    "trial_intermediate_values",
    "trial_user_attributes",
    "trial_system_attributes",
    "trial_heartbeats",
)


def trials_up_to(study: optuna.Study, trial_id: int) -> int:
    """How many trials of the study up to ``trial_id`` (it included) count toward its total: all
    but the failed ones (a running trial of a worker that died is run again)."""
    backend = rdb_backend(storage_of(study))
    with backend.engine.connect() as connection:
        ((count,),) = Sql(connection)(
            "SELECT COUNT(*) FROM trials WHERE study_id = ? AND trial_id <= ? AND state != ?",
            (study_id_of(study), trial_id, TrialState.FAIL.name),
        )
    return int(count)


def positionless_running(
    study: optuna.Study, *, position_key: str, unclaimed: int, owner: str
) -> int:
    """How many running trials of live workers other than ``owner`` hold no plan position (no
    ``position_key``, or ``unclaimed``): once a study holds what it needs, trials being
    withdrawn, or finished, by their workers."""
    backend = rdb_backend(storage_of(study))
    with backend.engine.connect() as connection:
        rows = Sql(connection)(
            "SELECT o.value_json, p.value_json FROM trials t"
            " JOIN trial_system_attributes o ON o.trial_id = t.trial_id AND o.key = ?"
            " LEFT JOIN trial_system_attributes p ON p.trial_id = t.trial_id AND p.key = ?"
            " WHERE t.study_id = ? AND t.state = ?",
            (OWNER_KEY, position_key, study_id_of(study), TrialState.RUNNING.name),
        )
    return sum(
        position in (None, json.dumps(unclaimed))
        and json.loads(who) != owner
        and not is_dead(json.loads(who))
        for who, position in rows
    )


def withdraw(
    study: optuna.Study, trial_id: int, *, position_key: str, unclaimed: int
) -> bool | None:
    """Delete the running trial ``trial_id``, which holds no plan position (none under
    ``position_key``, or ``unclaimed``), when it is the study's newest trial (one transaction
    under the study's write lock, which Optuna's trial creation takes too). True when deleted;
    None while newer trials that hold no position run (withdrawn too in a moment, by their own
    workers: ask again); False when it must stay."""
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        sql.lock_study(study_id)
        rows = sql(
            "SELECT t.trial_id, t.state, p.value_json FROM trials t"
            " LEFT JOIN trial_system_attributes p ON p.trial_id = t.trial_id AND p.key = ?"
            " WHERE t.study_id = ? AND t.trial_id >= ?",
            (position_key, study_id, trial_id),
        )

        def free(state: str, position: str | None) -> bool:
            return state == TrialState.RUNNING.name and position in (None, json.dumps(unclaimed))

        mine = [(state, position) for tid, state, position in rows if tid == trial_id]
        if not mine or not free(*mine[0]):
            return False
        newer = [(state, position) for tid, state, position in rows if tid != trial_id]
        if newer:
            return None if all(free(*row) for row in newer) else False
        if sql.postgresql:
            # Optuna's heartbeat thread inserts the trial's first heartbeat on its own connection:
            # a lock on the trial's row makes that insert wait until the trial is gone, where it
            # could otherwise land between the two deletes and refuse the second (foreign key).
            sql("SELECT trial_id FROM trials WHERE trial_id = ? FOR UPDATE", (trial_id,))
        for table in _TRIAL_TABLES:
            sql(f"DELETE FROM {table} WHERE trial_id = ?", (trial_id,))
        sql("DELETE FROM trials WHERE trial_id = ?", (trial_id,))
    return True


# -- scores ahead of the plan: a board of Λ scored past the sweep barrier ---------------------------
#: Prefix of the study system attributes that hold scores of Λ taken or scored ahead of the plan
#: (``{"owner": ..., "value": ...}``, the value once scored): workers that would wait at a
#: sweep's end score the next sweeps' likely points, and every worker reads them back.
AHEAD_PREFIX = "boxcox:ahead:"
#: Keys in one query's IN list (SQLite allows 999 parameters in older builds).
KEYS_PER_QUERY = 500


def ahead_key(point: Any) -> str:
    """A Λ's key on the board: a digest of its float64 values (the plan computes the same bits
    in every worker)."""
    data = np.ascontiguousarray(point, dtype=np.float64).tobytes()
    return AHEAD_PREFIX + hashlib.blake2b(data, digest_size=12).hexdigest()


def read_ahead(
    study: optuna.Study, keys: Sequence[str]
) -> dict[str, tuple[float | None, str | None]]:
    """The board's entries among ``keys``: (the value where scored, else None; the worker that
    took it)."""
    if not keys:
        return {}
    backend = rdb_backend(storage_of(study))
    found: dict[str, tuple[float | None, str | None]] = {}
    rows: list[tuple] = []
    with backend.engine.connect() as connection:
        sql = Sql(connection)
        for start in range(0, len(keys), KEYS_PER_QUERY):
            chunk = keys[start : start + KEYS_PER_QUERY]
            marks = ", ".join("?" for _ in chunk)
            rows += sql(
                "SELECT key, value_json FROM study_system_attributes"
                f" WHERE study_id = ? AND key IN ({marks})",
                (study_id_of(study), *chunk),
            )
    for key, value_json in rows:
        entry = json.loads(value_json)
        value = entry.get("value")
        found[key] = (None if value is None else float(value), entry.get("owner"))
    return found


def take_ahead(study: optuna.Study, keys: Sequence[str], owner: str) -> list[str]:
    """Take the ``keys`` no worker took yet (at most :data:`KEYS_PER_QUERY`): the taken ones
    are this worker's to score. Returns them. One statement on PostgreSQL; elsewhere one
    transaction under the study's write lock, as :func:`claim`."""
    if not keys:
        return []
    keys = list(dict.fromkeys(keys))[:KEYS_PER_QUERY]
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    entry = json.dumps({"owner": owner})
    if backend.engine.dialect.name == "postgresql":
        # One statement, no study lock: the table's unique (study, key) lets exactly one
        # worker insert each key, and says which ones this insert got.
        with backend.engine.begin() as connection:
            rows = Sql(connection)(
                "INSERT INTO study_system_attributes (study_id, key, value_json) VALUES "
                + ", ".join("(?, ?, ?)" for _ in keys)
                + " ON CONFLICT (study_id, key) DO NOTHING RETURNING key",
                tuple(v for key in keys for v in (study_id, key, entry)),
            )
        got = {key for (key,) in rows}
        return [key for key in keys if key in got]
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        sql.lock_study(study_id)
        marks = ", ".join("?" for _ in keys)
        rows = sql(
            f"SELECT key FROM study_system_attributes WHERE study_id = ? AND key IN ({marks})",
            (study_id, *keys),
        )
        held = {key for (key,) in rows}
        free = list(dict.fromkeys(k for k in keys if k not in held))
        sql.insert(
            "study_system_attributes",
            ("study_id", "key", "value_json"),
            [(study_id, key, entry) for key in free],
        )
    return free


def put_ahead(study: optuna.Study, values: Mapping[str, float], owner: str) -> None:
    """The scores of keys this worker took, on the board (one transaction)."""
    if not values:
        return
    backend = rdb_backend(storage_of(study))
    study_id = study_id_of(study)
    with backend.engine.begin() as connection:
        sql = Sql(connection)
        for key, value in values.items():
            sql(
                "UPDATE study_system_attributes SET value_json = ? WHERE study_id = ? AND key = ?",
                (json.dumps({"owner": owner, "value": float(value)}), study_id, key),
            )


def clear_ahead(study: optuna.Study) -> None:
    """Remove the board (the plan is finished: its scores are in the trials)."""
    backend = rdb_backend(storage_of(study))
    with backend.engine.begin() as connection:
        Sql(connection)(
            "DELETE FROM study_system_attributes WHERE study_id = ? AND key LIKE ?",
            (study_id_of(study), AHEAD_PREFIX + "%"),
        )
