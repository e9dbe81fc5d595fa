"""Sharing a plan with other batched workers on the same study (any number, any machine), and
settling the positions another worker held when a run ends."""

from __future__ import annotations

import contextlib
import math
import time
from typing import TYPE_CHECKING
from typing import Any

import optuna
from optuna.trial import TrialState

from optuna_boxcox._optuna import _claims
from optuna_boxcox._optuna import rdb_backend
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._runner._ahead import Ahead
from optuna_boxcox._runner._halving import Scored
from optuna_boxcox._runner._trials import Row
from optuna_boxcox._runner._trials import moment
from optuna_boxcox._runner._writers import ThreadWriter
from optuna_boxcox._system._process import OWNER_KEY

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from optuna_boxcox._runner._trials import RunStats
    from optuna_boxcox._runner._trials import RunTrials
    from optuna_boxcox._runner._trials import Stored
    from optuna_boxcox.samplers import PendingPoints
    from optuna_boxcox.samplers import PlanRun


class Cooperation:
    """Sharing a plan with other batched workers on the same study.

    Alone, a worker scores and writes as fast as it can, and once a second says it announces
    itself and looks for others (one small query; also between the pieces of its first batch
    when that batch's points are expensive, see ``BatchedRun._score_alone``). When another
    batched worker runs on the study, each batch is shared: the positions whose Λ this worker
    has scored before are written as usual (the bulk writer drops those another worker holds);
    the others, once read as held by nobody, are claimed a chunk at a time through the storage
    (:func:`~optuna_boxcox._optuna._claims.claim`: RUNNING trials, one transaction), scored and
    completed; the positions other workers claimed are read back
    from the storage when they finish (their scores go into this worker's cache). So every
    position is completed once, and the workers split each batch's new fits between them. A
    claim whose owner died is reaped and claimed again (the one reaping rule of ``_claims``): on
    this host when its process is gone, elsewhere when its heartbeat stops (servers).

    With rows as the fidelity, a worker halves among the positions it claimed (a chunk of a
    batch): which of them are pruned depends on how the batch was split between the workers.
    """

    #: Seconds between two looks for other workers while alone.
    CHECK_EVERY = 1.0
    #: Seconds between two refreshes of this worker's announcement.
    ANNOUNCE_EVERY = 5.0
    #: What sharing a batch costs, in seconds (claims, completions, reading back; a database
    #: server's round trips): a batch whose scoring saves less stays whole.
    COORDINATION = 0.02
    #: Seconds of scoring a worker holds at most (by its running mean) when points are expensive:
    #: a worker that finishes early or joins late still finds positions to take, so the batch's
    #: last points end close together; a claim's round trips (~COORDINATION) then cost a few
    #: percent of the work it holds.
    HOLD_SECONDS = 0.5

    def __init__(
        self,
        study: optuna.Study,
        run: PlanRun,
        objective: Any,
        trials: RunTrials,
        score: Callable[[list[np.ndarray]], list[Scored]],
        processes: int = 1,
    ) -> None:
        self.study, self.run, self.objective, self.trials = study, run, objective, trials
        #: Processes scoring this worker's chunks (its pool's and its own).
        self.processes = processes
        #: Scores a chunk of claimed points (the batched run's: on all rows, or halved).
        self.score_points = score
        #: The objective whose values COMPLETE trials hold: all rows, or a fidelity's top rung.
        self.top = objective.at_rows(objective.rungs[-1]) if objective.rungs else objective
        self.identity = run.owner
        backend = rdb_backend(storage_of(study))
        interval = None if backend is None else backend.get_heartbeat_interval()
        self.heartbeat = interval is not None
        #: Seconds between two looks for claims whose heartbeat stopped: a claim is stale only
        #: after the grace period (several heartbeats), so looking more often finds nothing more.
        self.reap_every = max(self.CHECK_EVERY, float(interval or 0.0))
        _claims.announce(study, self.identity)
        self.announced = self.reaped = time.perf_counter()
        # The first batch looks again: workers started together announce themselves within
        # milliseconds, and the first one would otherwise score its first batch alone while the
        # others claim and score the same positions.
        self.checked = -self.CHECK_EVERY
        #: Seconds a new point costs this worker to score (a running mean), None until measured
        #: on a first chunk of one point per scoring process.
        self.seconds_per_point: float | None = None
        self.others = _claims.other_workers(study, self.identity)
        self.shared = bool(self.others)
        #: Scoring the next batches' likely points while waiting for others' (exact search
        #: only: with rows as the fidelity a worker halves among the points it claimed).
        self.ahead = (
            None
            if objective.rungs
            else Ahead(
                study,
                run,
                self.top,
                score,
                self.identity,
                processes,
                lambda: self.seconds_per_point,
            )
        )

    def _refresh(self) -> None:
        """Count the other workers again, at most once a second (a share is sized by them)."""
        now = time.perf_counter()
        if now - self.checked >= self.CHECK_EVERY:
            self.checked = now
            self.others = _claims.other_workers(self.study, self.identity)

    def check(self, *, at_once: bool = False) -> bool:
        """Look for other workers now and then (``at_once``: now, whenever it looked last); True
        when this worker must start sharing.

        A sharing worker keeps counting them too: its shares of a batch are sized by that count,
        which workers joining or leaving change (and which workers started together see only
        in part when they start)."""
        now = time.perf_counter()
        if now - self.announced > self.ANNOUNCE_EVERY:
            _claims.announce(self.study, self.identity)
            self.announced = now
        if now - self.checked < self.CHECK_EVERY and not at_once:
            return False
        self.checked = now
        self.others = _claims.other_workers(self.study, self.identity)
        if self.shared:
            return False
        self.shared = bool(self.others)
        return self.shared

    def leave(self) -> None:
        try:
            _claims.announce(self.study, self.identity, ended=True)
            if self.ahead is not None and self.run.finished:
                _claims.clear_ahead(self.study)  # its scores are the trials' now
        except Exception:  # the storage went away: nothing left to tell the others
            pass

    def score(
        self, points: PendingPoints, *, meanwhile: Callable[[], None]
    ) -> tuple[list[Scored], list[Stored]]:
        """The batch's points scored, and how each trial is stored: ``"write"`` (by the
        writer), ``"claimed"`` (completed here), ``"others"`` (by another).

        ``meanwhile`` (handing trials to the writer) is called when there is something to wait
        for: a batch of points all known goes by at once, and the trials of several such
        batches go to the writer together."""
        n = len(points.positions)
        now = time.time()
        # Scored before here, or ahead by any worker; being scored ahead by one (``ahead``).
        values, ahead = (
            self.ahead.known(points.points)
            if self.ahead is not None
            else ([self.top.cached_score(x) for x in points.points], {})
        )
        if any(v is None for v in values):
            meanwhile()
        scored: list[Scored | None] = [
            None if v is None else Scored(TrialState.COMPLETE, v, now, now) for v in values
        ]
        how = ["write" if v is not None else "" for v in values]
        index = {p: k for k, p in enumerate(points.positions)}
        # The positions not known to be held by another worker, claimed a chunk at a time: those
        # a claim did not get are held, and only reading them back finds them free again.
        free = [k for k in range(n) if how[k] == "" and k not in ahead]
        fresh, delay = True, 0.001  # fresh: this worker just scored, so it reads back at once
        if free:
            # Read first which of them other workers hold or finished (a read, no lock): a claim
            # takes the study's write lock, and every worker that reaches a batch after the one
            # that claimed its points would otherwise queue for it in vain (with many workers,
            # nearly every claim).
            unheld = set(self._poll(points, index, scored, how))
            free = [k for k in free if k in unheld]
            fresh = False
        while any(h == "" for h in how):
            if free and self.ahead is not None:
                free = self._known_since(points, free, scored, how)
            if free:
                self._refresh()
                size = self._chunk(len(free), self.processes)
                # The first ``size`` of them that nobody claimed since they were read, looked
                # for among the next few chunks' worth (a grid's batch can hold thousands): one
                # transaction, also where other workers took the first ones meanwhile.
                window = free[: CLAIM_WINDOW * size]
                try:
                    claimed = self._claim(points, window, size)
                    if claimed:
                        self._score_claimed(points, claimed, index, scored, how)
                except BaseException:
                    # Ctrl-C, or the scoring failed: the claims go back, unless the storage is
                    # what failed (then they are reaped once this process is gone).
                    with contextlib.suppress(Exception):
                        _claims.release(self.study, self.identity)
                    raise
                # Those before the last one claimed, or the whole window when fewer than
                # ``size`` were, are held by others now.
                if len(claimed) == size:
                    free = free[free.index(index[claimed[-1].position]) + 1 :]
                else:
                    free = free[len(window) :]
                if claimed:
                    fresh, delay = True, 0.001
                continue
            # The rest is held or done by other workers: read it back as it finishes, at once
            # after scoring, else after a wait; claim again what a failed (or dead) claim gives
            # back.
            if not fresh:
                if self.ahead is not None and self.ahead.step():
                    delay = 0.001  # busy ahead: the batch may have finished meanwhile
                else:
                    time.sleep(delay)
                    delay = min(2 * delay, self._longest_wait())
            fresh = False
            free = self._poll(points, index, scored, how)
            if ahead:
                free = self._poll_ahead(points, ahead, free, scored, how)
        return scored, how  # type: ignore[return-value]

    def _known_since(self, points, free, scored, how) -> list[int]:
        """``free`` less the points whose values this worker learned since the batch began (read
        back while scoring ahead: a sweep's current point recurs in the sweeps after it); those
        are written as known."""
        now = time.time()
        left = []
        for k in free:
            value = self.top.cached_score(points.points[k])
            if value is None:
                left.append(k)
            else:
                scored[k], how[k] = Scored(TrialState.COMPLETE, value, now, now), "write"
        return left

    def _poll_ahead(self, points, ahead, free, scored, how) -> list[int]:
        """Read back the points of the batch another worker is scoring ahead (``ahead``: index
        → when it gave up on them): those scored are written as known; those whose worker died
        or is late are claimed as any free position; the others stay out of ``free``."""
        waiting = [k for k in ahead if how[k] == ""]
        values, dead = self.ahead.read(points.points, waiting)
        now = time.time()
        for k in waiting:
            if values.get(k) is not None:
                scored[k], how[k] = Scored(TrialState.COMPLETE, values[k], now, now), "write"
            if how[k] != "" or k in dead or now > ahead[k]:
                del ahead[k]
        return [k for k in free if k not in ahead]

    def _claim(
        self, points: PendingPoints, chunk: list[int], at_most: int
    ) -> list[_claims.Claimed]:
        names = self.run.space.names
        claims = [
            _claims.Claim(
                points.positions[k], dict(zip(names, points.points[k].tolist())), points.attrs[k]
            )
            for k in chunk
        ]
        return _claims.claim(
            self.study,
            claims,
            self.run.space.distributions(),
            position_key=self.run.position_key,
            owner=self.identity,
            heartbeat=self.heartbeat,
            at_most=at_most,
        )

    def _chunk(self, free: int, processes: int) -> int:
        """How many of ``free`` positions to claim: a share among the workers when scoring them
        outweighs what sharing costs (a claim, a completion and reading back, ~COORDINATION
        seconds), else all of them — a batch too cheap to split goes to one worker whole. Of
        expensive points, no more than ~HOLD_SECONDS of scoring (but one per scoring process):
        a share fixed when the chunk is claimed would leave the workers that finish first idle
        while the last ones score theirs."""
        share = -(-free // (1 + len(self.others)))
        if self.objective.rungs:
            # Halving: a worker halves among the points it claimed, so its share is claimed
            # whole (a chunk of one point would go straight to the top rung).
            return max(1, share)
        cost = self.seconds_per_point
        if cost is None:  # one point per process first: its time sizes the next chunks
            return min(free, processes)
        chunk = max(1, min(share, max(processes, int(self.HOLD_SECONDS / cost))))
        if cost * (free - chunk) < self.COORDINATION:
            return free
        return chunk

    def _longest_wait(self) -> float:
        """Seconds between two reads of the positions other workers hold, at most: a small part
        of a point's scoring, so that waiting for others' points neither delays the next batch
        much nor takes much of the database's and the cores' time from the workers scoring."""
        cost = self.seconds_per_point or 0.0
        return min(0.1, max(0.01, cost / 20))

    def _score_claimed(self, points, claimed, index, scored, how) -> None:
        ks = [index[c.position] for c in claimed]
        tick = time.perf_counter()
        mine = self.score_points([points.points[k] for k in ks])
        # A running mean of what a point costs this worker, for the next batches' chunks: of the
        # points fitted (one found in the cache took no time, and counted it would let the next
        # chunk hold all the batch's free points — scored one after another by one worker).
        fitted = sum(s.end > s.start for s in mine)
        if fitted:
            spent = (time.perf_counter() - tick) / fitted
            if self.seconds_per_point is None:
                self.seconds_per_point = spent
            else:
                self.seconds_per_point += 0.2 * (spent - self.seconds_per_point)
        for k, outcome in zip(ks, mine):
            scored[k], how[k] = outcome, "claimed"
        # ``improved`` as far as the batch's earlier candidates are known now.
        values = [None if s is None else s.ranked for s in scored]
        attrs = self.run.attrs(points, values, ks)
        _claims.complete(
            self.study,
            [
                (
                    c,
                    scored[k].value,
                    {"improved": a["improved"]},
                    moment(scored[k].end),
                    scored[k].state,
                    scored[k].intermediate,
                )
                for c, k, a in zip(claimed, ks, attrs)
            ],
        )
        self.trials.completed(
            [
                self.trials.frozen(
                    Row(
                        points.points[k],
                        scored[k].value,
                        a,
                        c.position,
                        moment(scored[k].start),
                        moment(scored[k].end),
                        scored[k].state,
                        scored[k].intermediate,
                    ),
                    c.trial_id,
                    c.number,
                )
                for c, k, a in zip(claimed, ks, attrs)
            ]
        )

    def _poll(self, points: PendingPoints, index, scored, how) -> list[int]:
        """Read back the positions this worker waits for: the values of those other workers
        finished (COMPLETE ones into this worker's cache too); returns those free to claim again
        (no trial holds them yet, their claims failed, or their owners died and were reaped)."""
        waiting = [points.positions[k] for k in range(len(how)) if how[k] == ""]
        found = _claims.read_positions(self.study, self.run.position_key, waiting)
        free = []
        for position in waiting:
            trials = found.get(position, [])
            complete = [t for t in trials if t[0] == TrialState.COMPLETE and t[1] is not None]
            if complete:
                k = index[position]
                value = float(complete[0][1])
                scored[k], how[k] = Scored(TrialState.COMPLETE, value, 0.0, 0.0), "others"
                self.top.remember_score(points.points[k], value)
                continue
            pruned = [t for t in trials if t[0] == TrialState.PRUNED]
            if pruned:  # its value is a lower rung's: not one to remember
                k = index[position]
                value = math.nan if pruned[0][1] is None else float(pruned[0][1])
                scored[k], how[k] = Scored(TrialState.PRUNED, value, 0.0, 0.0), "others"
                continue
            live = False
            for state, _, trial_id, owner in trials:
                if state != TrialState.RUNNING:
                    continue
                if _claims.is_dead(owner):
                    _claims.reap(self.study, trial_id)
                else:
                    live = True
            if not live:
                free.append(index[position])
        now = time.perf_counter()
        if self.heartbeat and now - self.reaped > self.reap_every:
            # On a database server, a machine that vanished stops its claims' heartbeats.
            self.reaped = now
            _claims.fail_stale(self.study)
        return free


#: A claim looks for its chunk among this many chunks' worth of the positions read as free.
CLAIM_WINDOW = 4

#: States of a trial that finished its position for good.
_DONE = (TrialState.COMPLETE, TrialState.PRUNED)


def settle(study: optuna.Study, trials: RunTrials, stats: RunStats) -> None:
    """Complete the positions whose trials a write dropped because another worker's running trial
    held them: wait while that worker lives, and write this run's trial when it died (its claim
    is reaped) — so that no position is left RUNNING behind a dead worker when this one reports.
    """
    key = trials.position_key
    last_trial_id = -1
    delay = 0.01
    heartbeat = _claims.heartbeat_interval(study)
    looked = time.monotonic()
    while trials.dropped:
        rows, trials.dropped = trials.dropped, []
        held = _holders(study, key, [row.position for row in rows])
        rewrite, waiting = [], []
        for row in rows:
            states = held.get(row.position, [])
            if any(state in _DONE for state, _, _ in states):
                continue
            live = False
            for state, trial_id, owner in states:
                if state == TrialState.RUNNING:
                    if _claims.is_dead(owner):
                        _claims.reap(study, trial_id)
                    else:
                        live = True
            (waiting if live else rewrite).append(row)
        if rewrite:
            writer = ThreadWriter(study, last_trial_id, stats, trials, background=False)
            writer.put(rewrite)
            last_trial_id = writer.last_trial_id
        trials.dropped.extend(waiting)
        if waiting:
            time.sleep(delay)
            delay = min(2 * delay, 0.5)
            if heartbeat is not None and time.monotonic() - looked >= heartbeat:
                _claims.fail_stale(study)  # a holder on a machine that vanished, on a server
                looked = time.monotonic()


def _holders(
    study: optuna.Study, key: str, positions: list[int]
) -> dict[int, list[tuple[TrialState, int, Any]]]:
    """(state, trial id, owner) of every trial holding one of ``positions``, read now."""
    if capabilities_of(storage_of(study)).sql_claims:
        found = _claims.read_positions(study, key, positions)
        return {
            p: [(state, trial_id, owner) for state, _, trial_id, owner in holders]
            for p, holders in found.items()
        }
    wanted = set(positions)
    held: dict[int, list[tuple[TrialState, int, Any]]] = {}
    for t in storage_of(study).get_all_trials(study_id_of(study), deepcopy=False):
        position = t.system_attrs.get(key)
        if position in wanted:
            held.setdefault(position, []).append(
                (t.state, trial_id_of(t), t.system_attrs.get(OWNER_KEY))
            )
    return held
