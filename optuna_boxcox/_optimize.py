"""``optuna_boxcox.optimize``: the plugin's ``study.optimize``.

``study.optimize`` asks the sampler for one point at a time and the storage commits every parameter
separately: about 50 ms a trial on SQLite, whatever the classifier costs. For the paper's samplers
(:class:`~optuna_boxcox.samplers.PlanSampler`) with a :class:`~optuna_boxcox.BoxCoxObjective`,
:func:`optimize` instead takes the sampler's whole next batch (a coordinate sweep, a spherical
pass, …) through its :class:`~optuna_boxcox.samplers.PlanRun`, scores it (over ``n_jobs``
processes when that pays), and appends the finished trials in one transaction. The study it writes
is the one ``study.optimize`` with the same sampler writes: same params, values, user attributes
and order. Any other sampler or objective goes through ``study.optimize`` unchanged.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
import datetime
import gc
import multiprocessing.connection
import queue
import threading
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_boxcox import _parallel
from optuna_boxcox._optuna import optimize_loop
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._write import FloatTrialEncoder
from optuna_boxcox._optuna._write import PreparedTrials
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import TrialRows
from optuna_boxcox._optuna._write import Written
from optuna_boxcox._optuna._write import bulk_supported
from optuna_boxcox._optuna._write import checkpoint
from optuna_boxcox._optuna._write import encode_trials
from optuna_boxcox._optuna._write import take_over_writes
from optuna_boxcox._optuna._write import write_prepared
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox._process import OWNER_KEY
from optuna_boxcox._progress import Progress
from optuna_boxcox.samplers._plan import POSITION_KEY
from optuna_boxcox.samplers._plan import PlanSampler
from optuna_boxcox.samplers._plan import SearchResult

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable
    from collections.abc import Sequence

    from optuna_boxcox._space import LambdaSpace
    from optuna_boxcox.samplers._plan import PendingPoints
    from optuna_boxcox.samplers._plan import PlanRun

#: Finished trials are written once at least this many are pending (and at the end): a sweep of the
#: paper's presets is 11–21 trials, and a commit costs about as much as writing 30 trials' rows.
#: They are handed over while the next batch is scored, so a crash loses at most these, the batch
#: being scored and what the writer had not committed yet; a resumed run recomputes them.
WRITE_AT_LEAST = 100
#: A writing worker on a SQLite file only appends to its write-ahead log; the search process copies
#: the log into the database file (a checkpoint, a fifth of the writing work) while it waits for the
#: writer at the end, and once this many trials were handed over since the last one, which bounds
#: the log (SQLite's own default is every 1000 pages, about 400 trials of 60 λ).
CHECKPOINT_EVERY = 2000


@dataclass
class RunStats:
    """What a batched run did (for benchmarks and progress reports)."""

    trials: int = 0
    batches: int = 0
    evaluate_seconds: float = 0.0
    persist_seconds: float = 0.0
    #: Seconds from the start of the run to the end of the last batch that fitted a new Λ; what
    #: comes after is the sweeps of Λ scored before, which cost their bookkeeping and writes only.
    scoring_seconds: float = 0.0
    #: Seconds from the start of the run until the last trial was written.
    written_seconds: float = 0.0


def optimize(
    study: optuna.Study,
    objective: Any,
    *,
    n_trials: int | None = None,
    timeout: float | None = None,
    n_jobs: int = 1,
    catch: Iterable[type[Exception]] | type[Exception] = (),
    callbacks: Sequence[Callable[[optuna.Study, FrozenTrial], None]] | None = None,
    gc_after_trial: bool = False,
    show_progress_bar: bool = False,
    batch: bool = True,
    stats: RunStats | None = None,
) -> SearchResult:
    """Optimise ``objective`` on ``study``, as ``study.optimize`` does, batch by batch where it can.

    With one of the paper's samplers (``study.sampler`` a
    :class:`~optuna_boxcox.samplers.PlanSampler`) and a :class:`~optuna_boxcox.BoxCoxObjective`,
    whole batches of the plan are scored and their trials written in one transaction each — the
    same trials ``study.optimize`` would write, about a hundred times faster on SQLite. Every other
    combination runs ``study.optimize(objective, ...)`` with the same arguments.

    Example::

        import optuna
        import optuna_boxcox
        from sklearn.datasets import load_breast_cancer
        from sklearn.svm import SVC

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        objective = optuna_boxcox.BoxCoxObjective(X, y, SVC())
        sampler = optuna_boxcox.CoordinateGridSampler.from_preset("iterative")
        study = optuna.create_study(direction="maximize", sampler=sampler)
        result = optuna_boxcox.optimize(study, objective)   # 4 · 30 · 11 trials
        print(result.params, result.best_value)

    Args:
        study: The study to optimise; a batched run resumes from its finished trials.
        objective: A :class:`~optuna_boxcox.BoxCoxObjective` (batched with a plan sampler), or any
            callable ``study.optimize`` accepts.
        n_trials: Stop after this many new trials; ``None`` runs a plan sampler's plan to its end
            (other samplers then run until ``timeout`` or ``study.stop()``, as in Optuna).
        timeout: Stop starting new work after this many seconds (batched: between batches); what
            was scored is written, and the same call later resumes.
        n_jobs: Batched: processes scoring each batch (-1: one per CPU), this one included; the
            first worker also writes the trials. Otherwise: ``study.optimize``'s threads.
        catch: As ``study.optimize``; batched runs stop on any error of the objective, after
            writing what was scored.
        callbacks: Called as ``callback(study, frozen_trial)`` after each trial is stored; a
            batched run stores trials in groups (at least :data:`WRITE_AT_LEAST` at a time), and
            calls them then, in trial order. ``study.stop()`` in a callback ends the run after
            the batch being scored.
        gc_after_trial: As ``study.optimize`` (batched: after each batch).
        show_progress_bar: A progress bar on a terminal, or a line with the time left every few
            seconds when the output is a log.
        batch: False runs a plan sampler trial by trial through ``study.optimize`` too (each
            trial claims its plan position in the storage, so it can share a study with other
            ``study.optimize`` workers).
        stats: Filled with what a batched run did (counts, seconds scoring and writing).

    Returns:
        What the search chose: for a plan sampler its Λopt (also when the plan is not finished
        yet), its value and the history of Λopt per batch; for other samplers the best trial.
    """
    if n_trials is not None and (isinstance(n_trials, bool) or n_trials < 0):
        raise ValueError(f"n_trials must be a non-negative integer or None, got {n_trials!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    sampler = study.sampler
    if batch and isinstance(sampler, PlanSampler) and _is_boxcox_objective(objective):
        n_jobs = _parallel.resolve_n_jobs(n_jobs)
        objective.register(study)
        _name_metric(study, objective)
        run = sampler.start_run(study, max_trials=n_trials)
        runner = _BatchedRun(
            study,
            objective,
            run,
            n_jobs=n_jobs,
            callbacks=list(callbacks or ()),
            gc_after_trial=gc_after_trial,
            stats=stats if stats is not None else RunStats(),
        )
        return runner.run(n_trials=n_trials, timeout=timeout, progress=show_progress_bar)
    if _is_boxcox_objective(objective):
        objective.register(study)
        _name_metric(study, objective)
    total = n_trials
    if total is None and isinstance(sampler, PlanSampler) and _is_boxcox_objective(objective):
        total = max(0, sampler.budget(objective.space.dim) - len(study.get_trials(deepcopy=False)))
    with Progress(total, label="search", enabled=show_progress_bar) as bar:
        study.optimize(
            objective,
            n_trials=n_trials,
            timeout=timeout,
            n_jobs=n_jobs,
            catch=catch,
            callbacks=[*(callbacks or ()), lambda _study, _trial: bar.update()],
            gc_after_trial=gc_after_trial,
        )
    if isinstance(sampler, PlanSampler):
        return sampler.result(study)
    return _best_of(study)


def _is_boxcox_objective(objective: Any) -> bool:
    from optuna_boxcox._objective import BoxCoxObjective

    return isinstance(objective, BoxCoxObjective)


def _name_metric(study: optuna.Study, objective: Any) -> None:
    """Name the study's objective after the scoring (the dashboard shows it instead of
    "Objective 0"), unless the study names its metrics already."""
    name = objective.metric_name
    if not name or study.metric_names is not None or len(study.directions) != 1:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([name])


def _best_of(study: optuna.Study) -> SearchResult:
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not trials or len(study.directions) != 1:
        return SearchResult(None, None, n_trials=len(trials))
    best = study.best_trial
    return SearchResult(dict(best.params), best.value, n_trials=len(trials))


#: One scored trial waiting to be written: (Λ, objective value, user attributes, plan position,
#: start, end). Compact, so that handing many to a writer process costs little.
_Row = tuple[np.ndarray, float, dict[str, Any], int, datetime.datetime, datetime.datetime]


class _BatchedRun:
    """One batched pass: score the plan's batches, hand the trials to the writer, keep them."""

    def __init__(
        self,
        study: optuna.Study,
        objective: Any,
        run: PlanRun,
        *,
        n_jobs: int,
        callbacks: list[Callable[[optuna.Study, FrozenTrial], None]],
        gc_after_trial: bool,
        stats: RunStats,
    ) -> None:
        self.study, self.objective, self.plan_run = study, objective, run
        self.callbacks, self.gc_after_trial, self.stats = callbacks, gc_after_trial, stats
        self.trials = _Trials(study, run)
        # Another writer on the same study may have finished some positions meanwhile: the writes
        # drop those (the plan is deterministic, so their scores are ours too).
        last_trial_id = max((trial_id_of(t) for t in run.trials), default=-1)
        self.team = _Team(
            objective,
            n_jobs,
            study=study,
            last_trial_id=last_trial_id,
            trials=self.trials,
            stats=stats,
        )
        self.writer: _Team | _Writer = self.team
        if not self.team.writes:
            # A thread writes while this one scores: SQLite does its work with the GIL released,
            # so even one job keeps two cores busy; with worker processes on a storage they
            # cannot write to (in-memory, journal), the thread is the writer.
            background = self.team.n_workers > 0 or bulk_supported(storage_of(study))
            self.writer = _Writer(study, last_trial_id, stats, self.trials, background=background)
        #: Sharing the plan's positions with other batched workers, on storages several
        #: processes (or machines) can write.
        self.cooperation = (
            _Cooperation(study, run, objective, self.trials)
            if bulk_supported(storage_of(study))
            else None
        )

    def run(self, *, n_trials: int | None, timeout: float | None, progress: bool) -> SearchResult:
        run, stats, objective = self.plan_run, self.stats, self.objective
        started = time.perf_counter()
        written = 0
        pending: list[_Row] = []  # scored, not yet handed to the writer
        handover = _Handover(self.writer)
        budget = run.sampler.budget(run.space.dim) if hasattr(run.sampler, "budget") else None
        done_before = len(run.scores)
        bar = Progress(
            budget if _is_int(budget) else None,
            label="search",
            enabled=progress,
            initial=min(done_before, budget) if _is_int(budget) else done_before,
        )
        try:
            with optimize_loop(self.study) as stopped:
                while not run.finished and (n_trials is None or written < n_trials):
                    if timeout is not None and time.perf_counter() - started > timeout:
                        break
                    if stopped():
                        break
                    points = run.pending(None if n_trials is None else n_trials - written)
                    if self.cooperation is not None and self.cooperation.check(handover):
                        # Another worker joined: what this one scored alone is written first.
                        handover.ready.append(pending)
                        pending = []
                        handover()
                        self.writer.flush()
                    tick, fits, handing = (
                        time.perf_counter(),
                        objective.n_evaluations,
                        handover.seconds,
                    )
                    if self.cooperation is not None and self.cooperation.shared:
                        values, starts, ends, how = self.cooperation.score(
                            points, self.team, meanwhile=handover
                        )
                    else:
                        # What is ready to write is handed over once the workers have this batch.
                        values, starts, ends = self.team.score(points.points, meanwhile=handover)
                        how = ["write"] * len(values)
                    stats.evaluate_seconds += (
                        time.perf_counter() - tick - (handover.seconds - handing)
                    )
                    if objective.n_evaluations != fits:
                        stats.scoring_seconds = time.perf_counter() - started
                    attrs = run.tell(points, values)
                    rows = [
                        (x, float(v), a, p, _moment(s), _moment(e))
                        for x, v, a, p, s, e, h in zip(
                            points.points, values, attrs, points.positions, starts, ends, how
                        )
                        if h == "write"
                    ]
                    pending.extend(rows)
                    if len(pending) >= WRITE_AT_LEAST:
                        handover.ready.append(pending)
                        pending = []
                    ours = sum(h != "others" for h in how)
                    stats.trials += ours
                    stats.batches += 1
                    written += ours
                    bar.advance_to(done_before + written)
                    if self.callbacks:
                        self._call_back()
                    if self.gc_after_trial:
                        gc.collect()
        finally:
            bar.close()
            # Whatever was scored is written, also when scoring failed or was interrupted.
            try:
                handover.ready.append(pending)
                handover()
            finally:
                try:
                    self.writer.close()
                finally:
                    self.team.close()
                    if self.cooperation is not None:
                        self.cooperation.leave()
                    stats.written_seconds = time.perf_counter() - started
                    self.trials.cache()
        if self.callbacks:
            self._call_back()
        return run.finish()

    def _call_back(self) -> None:
        for trial in self.trials.stored_since_last_call():
            for callback in self.callbacks:
                callback(self.study, trial)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _moment(seconds: float) -> datetime.datetime:
    """A ``time.time()`` as a FrozenTrial datetime (naive local time)."""
    return datetime.datetime.fromtimestamp(seconds)


class _Trials:
    """The trials of a batched run, in the forms each consumer takes: table rows for the bulk
    writer of RDB storages (:meth:`prepared`), :class:`TrialRecord` for other storages, and, once
    written, FrozenTrials for the storage's cache and the callbacks."""

    def __init__(self, study: optuna.Study, run: PlanRun) -> None:
        self.study = study
        self.space: LambdaSpace = run.space
        self.distributions = run.space.distributions()
        self.owner = run.owner
        # λ only: the encoder's hot path; a space with transform or setting coordinates takes the
        # general encoding, which writes each parameter in its distribution's representation.
        self._encode = (
            FloatTrialEncoder(self.distributions, POSITION_KEY) if run.space.lambdas_only else None
        )
        self._trial_rows: TrialRows | None = None  # made at the first write: it reads the database
        self.stored: list[FrozenTrial] = []  # written, with their ids and numbers
        self._handed: collections.deque[list[_Row]] = collections.deque()
        self._called_back = 0
        self._lock = threading.Lock()

    def prepared(self, rows: list[_Row]) -> PreparedTrials:
        """The rows of each table for :func:`write_prepared`, numbered on from the last call's."""
        if self._trial_rows is None:
            self._trial_rows = TrialRows(self.study)
        encode, owner = self._encode, self.owner
        if encode is None:
            return self._trial_rows(encode_trials(self.records(rows), POSITION_KEY))
        return self._trial_rows(
            [
                encode(x.tolist(), value, attrs, {OWNER_KEY: owner, POSITION_KEY: p}, start, end)
                for x, value, attrs, p, start, end in rows
            ]
        )

    def records(self, rows: list[_Row]) -> list[TrialRecord]:
        return [
            TrialRecord(
                params=self.space.to_params(x),
                distributions=self.distributions,
                value=value,
                user_attrs=attrs,
                system_attrs={OWNER_KEY: self.owner, POSITION_KEY: p},
                datetime_start=start,
                datetime_complete=end,
            )
            for x, value, attrs, p, start, end in rows
        ]

    def handed(self, rows: list[_Row]) -> None:
        """``rows`` went to a writer that reports :class:`Written` for each list, in order."""
        with self._lock:
            self._handed.append(rows)

    def written(self, written: Written) -> None:
        """The writer wrote the oldest list handed over: keep its trials as stored."""
        with self._lock:
            rows = self._handed.popleft()
            for index, trial_id, number in zip(
                written.indices, written.trial_ids, written.numbers
            ):
                self.stored.append(self.frozen(*rows[index], trial_id, number))

    def frozen(
        self,
        x: np.ndarray,
        value: float,
        attrs: dict[str, Any],
        position: int,
        start: datetime.datetime,
        end: datetime.datetime,
        trial_id: int,
        number: int,
    ) -> FrozenTrial:
        """A complete trial of this run as the storage holds it."""
        return FrozenTrial(
            number=number,
            state=TrialState.COMPLETE,
            value=value,
            values=None,
            datetime_start=start,
            datetime_complete=end,
            params=(
                dict(zip(self.space.names, x.tolist()))
                if self._encode is not None
                else self.space.to_params(x)
            ),
            distributions=self.distributions,
            user_attrs=attrs,
            system_attrs={OWNER_KEY: self.owner, POSITION_KEY: position},
            intermediate_values={},
            trial_id=trial_id,
        )

    def unwritten(self) -> int:
        """Lists handed to a writer that has not reported them written yet."""
        with self._lock:
            return len(self._handed)

    def claimed(self, trials: list[FrozenTrial]) -> None:
        """Trials of claimed positions this worker completed itself (see :class:`_Cooperation`)."""
        with self._lock:
            self.stored.extend(trials)

    def stored_since_last_call(self) -> list[FrozenTrial]:
        with self._lock:
            new = self.stored[self._called_back :]
            self._called_back = len(self.stored)
        return new

    def cache(self) -> None:
        """Hand the stored trials to the storage's cache (a caching RDB storage), so that reading
        the study afterwards does not read them back."""
        add = getattr(storage_of(self.study), "add_finished_trials", None)
        if add is not None and self.stored:
            add(study_id_of(self.study), self.stored)


class _Cooperation:
    """Sharing a plan with other batched workers on the same study (any number, any machine).

    Alone, a worker scores and writes as fast as it can, and once a second says it announces
    itself and looks for others (one small query). When another batched worker runs on the study,
    each batch is shared: the positions whose Λ this worker has scored before are written as
    usual (the bulk writer drops those another worker wrote first); the others are claimed a
    chunk at a time through the storage (RUNNING trials, one transaction), scored and completed;
    the positions other workers claimed are read back from the storage when they finish (their
    scores go into this worker's cache). So every position is completed once, and the workers
    split each batch's new fits between them. A claim whose owner died is failed and claimed
    again: on this host when its process is gone, elsewhere when its heartbeat stops (servers).
    """

    #: Seconds between two looks for other workers while alone.
    CHECK_EVERY = 1.0
    #: Seconds between two refreshes of this worker's announcement.
    ANNOUNCE_EVERY = 5.0
    #: What sharing a batch costs, in seconds (claims, completions, reading back; a database
    #: server's round trips): a batch whose scoring saves less stays whole.
    COORDINATION = 0.02

    def __init__(self, study: optuna.Study, run: PlanRun, objective: Any, trials: _Trials) -> None:
        from optuna_boxcox._optuna import _claims
        from optuna_boxcox._optuna._storage import CachedRDBStorage

        self.study, self.run, self.objective, self.claims = study, run, objective, _claims
        self.trials = trials
        self.identity = run.owner
        storage = storage_of(study)
        backend = storage.backend if isinstance(storage, CachedRDBStorage) else storage
        self.heartbeat = getattr(backend, "get_heartbeat_interval", lambda: None)() is not None
        _claims.announce(study, self.identity)
        self.announced = self.checked = self.reaped = time.perf_counter()
        #: Seconds a new point costs this worker to score (a running mean; optimistic at first,
        #: so that the first batches are shared until measured).
        self.seconds_per_point = 1.0
        self.others = _claims.other_workers(study, self.identity)
        self.shared = bool(self.others)

    def check(self, handover: _Handover) -> bool:
        """Look for other workers now and then; True when this worker must start sharing."""
        now = time.perf_counter()
        if now - self.announced > self.ANNOUNCE_EVERY:
            self.claims.announce(self.study, self.identity)
            self.announced = now
        if self.shared or now - self.checked < self.CHECK_EVERY:
            return False
        self.checked = now
        self.others = self.claims.other_workers(self.study, self.identity)
        self.shared = bool(self.others)
        return self.shared

    def leave(self) -> None:
        try:
            self.claims.announce(self.study, self.identity, ended=True)
        except Exception:  # the storage went away: nothing left to tell the others
            pass

    def score(
        self, points: PendingPoints, team: _Team, *, meanwhile: Callable[[], None]
    ) -> tuple[list[float], list[float], list[float], list[str]]:
        """The batch's values, the times each was scored, and how each trial is stored:
        ``"write"`` (by the writer), ``"claimed"`` (completed here), ``"others"`` (by another)."""
        meanwhile()
        n = len(points.positions)
        now = time.time()
        values: list[float | None] = [self.objective.cached_score(x) for x in points.points]
        starts, ends = [now] * n, [now] * n
        how = ["write" if v is not None else "" for v in values]
        index = {p: k for k, p in enumerate(points.positions)}
        delay = 0.001
        claiming = True
        while any(h == "" for h in how):
            if claiming:
                free = [k for k in range(n) if how[k] == ""]
                claimed = self._claim(points, free[: self._chunk(len(free))])
                if claimed:
                    self._score_claimed(points, claimed, index, team, values, starts, ends, how)
                    continue
            # The rest is held or done by other workers: read it back as it finishes; claim again
            # what a failed (or dead) claim gives back.
            claiming = self._poll(points, index, values, how)
            if not claiming and any(h == "" for h in how):
                time.sleep(delay)
                delay = min(2 * delay, 0.01)
        return values, starts, ends, how  # type: ignore[return-value]

    def _claim(self, points: PendingPoints, chunk: list[int]) -> list[Any]:
        names = self.run.space.names
        claims = [
            self.claims.Claim(
                points.positions[k], dict(zip(names, points.points[k].tolist())), points.attrs[k]
            )
            for k in chunk
        ]
        return self.claims.claim(
            self.study,
            claims,
            self.run.space.distributions(),
            position_key=POSITION_KEY,
            owner=self.identity,
            heartbeat=self.heartbeat,
        )

    def _chunk(self, free: int) -> int:
        """How many of ``free`` positions to claim: a share among the workers when scoring them
        outweighs what sharing costs (a claim, a completion and reading back, ~COORDINATION
        seconds), else all of them — a batch too cheap to split goes to one worker whole."""
        share = -(-free // (1 + len(self.others)))
        if self.seconds_per_point * (free - share) < self.COORDINATION:
            return free
        return max(1, share)

    def _score_claimed(self, points, claimed, index, team, values, starts, ends, how) -> None:
        ks = [index[c.position] for c in claimed]
        tick = time.perf_counter()
        scored, s, e = team.score([points.points[k] for k in ks])
        # A running mean of what a point costs this worker, for the next batches' chunks.
        spent = (time.perf_counter() - tick) / len(ks)
        self.seconds_per_point += 0.2 * (spent - self.seconds_per_point)
        done = []
        scores = dict(self.run.scores)
        for c, k, value, start, end in zip(claimed, ks, scored, s, e):
            values[k], starts[k], ends[k], how[k] = value, start, end, "claimed"
            improved = self.run.plan.improved(c.position, self.run.to_score(value), scores)
            scores[c.position] = self.run.to_score(value)
            done.append((c, value, {"improved": improved}, _moment(start), _moment(end)))
        self.claims.complete(self.study, [(c, v, a, end) for c, v, a, _, end in done])
        self.trials.claimed(
            [
                self.trials.frozen(
                    points.points[index[c.position]],
                    v,
                    {**points.attrs[index[c.position]], **a},
                    c.position,
                    start,
                    end,
                    c.trial_id,
                    c.number,
                )
                for c, v, a, start, end in done
            ]
        )

    def _poll(self, points: PendingPoints, index, values, how) -> bool:
        """Read back the positions this worker waits for: the values of those other workers
        completed (into this worker's cache too); whether any is free to claim again (its claims
        failed, or their owners died)."""
        from optuna_boxcox._process import owner_is_dead

        waiting = [points.positions[k] for k in range(len(how)) if how[k] == ""]
        found = self.claims.read_positions(self.study, POSITION_KEY, waiting)
        storage = storage_of(self.study)
        free = False
        for position in waiting:
            trials = found.get(position, [])
            complete = [t for t in trials if t[0] == TrialState.COMPLETE and t[1] is not None]
            if complete:
                k = index[position]
                values[k], how[k] = float(complete[0][1]), "others"
                self.objective.remember_score(points.points[k], values[k])
                continue
            live = False
            for state, _, trial_id, owner in trials:
                if state != TrialState.RUNNING:
                    continue
                if owner and owner_is_dead(owner):  # a worker on this host died
                    try:
                        storage.set_trial_state_values(trial_id, state=TrialState.FAIL)
                    except (optuna.exceptions.UpdateFinishedTrialError, RuntimeError):
                        pass
                else:
                    live = True
            free = free or not live
        now = time.perf_counter()
        if self.heartbeat and now - self.reaped > self.CHECK_EVERY:
            # On a database server, a machine that vanished stops its claims' heartbeats.
            self.reaped = now
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(self.study)
        return free


class _Handover:
    """Lists of finished trials ready for the writer; calling it hands them over, in order.

    The runner calls it while the workers score the next batch (:meth:`_Team.score`'s
    ``meanwhile``): encoding and sending trials then overlaps with their scoring instead of
    keeping them waiting for the batch.
    """

    def __init__(self, writer: _Team | _Writer) -> None:
        self.writer = writer
        self.ready: list[list[_Row]] = []
        self.seconds = 0.0  # spent handing over

    def __call__(self) -> None:
        if not self.ready:
            return
        tick = time.perf_counter()
        try:
            while self.ready:
                rows = self.ready[0]
                if rows:
                    self.writer.put(rows)
                del self.ready[0]  # not before: what put refused is still here for a last try
        finally:
            self.seconds += time.perf_counter() - tick


class _Writer:
    """Writes lists of finished trials in order, each in one transaction.

    In the background (a thread of this process) a write overlaps the scoring of the next batches:
    on an RDB storage with one job (the database does its work with the GIL released), and with
    worker processes on a storage that a child process cannot write to (in-memory, journal).
    Otherwise it writes in the caller's thread.
    """

    def __init__(
        self,
        study: optuna.Study,
        last_trial_id: int,
        stats: RunStats,
        trials: _Trials,
        *,
        background: bool,
    ) -> None:
        self.study = study
        self.last_trial_id = last_trial_id
        self.stats = stats
        self.trials = trials
        self.bulk = bulk_supported(storage_of(study))
        self.error: BaseException | None = None
        self._queue: queue.Queue[list[_Row] | None] | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._queue = queue.Queue(maxsize=16)
            self._thread = threading.Thread(
                target=self._drain, name="optuna-boxcox-writer", daemon=True
            )
            self._thread.start()

    def put(self, rows: list[_Row]) -> None:
        if self.error is not None:
            raise self.error
        if self._queue is None:
            self._write(rows)
        else:
            self._queue.put(rows)

    def flush(self) -> None:
        """Wait until everything handed over so far is written; raise the first write error."""
        if self._queue is not None:
            self._queue.join()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Wait until everything handed over is written; raise the first write error."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self.error is not None:
            raise self.error

    def _drain(self) -> None:
        while (rows := self._queue.get()) is not None:
            if self.error is None:
                try:
                    self._write(rows)
                except BaseException as error:  # raised in the caller's thread by put/close
                    self.error = error
            self._queue.task_done()

    def _write(self, rows: list[_Row]) -> None:
        tick = time.perf_counter()
        self.trials.handed(rows)
        if self.bulk:
            written = write_prepared(
                self.study, self.trials.prepared(rows), after_trial_id=self.last_trial_id
            )
        else:
            written = write_trials(
                self.study,
                self.trials.records(rows),
                position_key=POSITION_KEY,
                after_trial_id=self.last_trial_id,
            )
        self.trials.written(written)
        self.last_trial_id = written.last_trial_id
        self.stats.persist_seconds += time.perf_counter() - tick


def _send(connection: Any, kind: str, payload: Any, *extra: Any) -> None:
    """Send (kind, payload, *extra); an exception that does not pickle goes as a RuntimeError."""
    try:
        connection.send((kind, payload, *extra))
    except Exception:
        if not isinstance(payload, BaseException):
            raise
        connection.send((kind, RuntimeError(f"{type(payload).__name__}: {payload}"), *extra))


# -- scoring (and writing) with worker processes -----------------------------------------------
# Slots of the team's shared state.
_BATCH, _NEXT, _N, _CLAIMED, _DONE, _FAILED = range(6)


class _Team:
    """Scores batches in this process, helped by ``n_jobs - 1`` forked worker processes; with an
    RDB study, the first worker also writes the finished trials.

    A batch goes to shared memory and is shared out point by point: every process claims the next
    unscored point from a counter there until none is left, so a process that is slower (its
    points need more SGD epochs, or it is busy writing) simply scores fewer, and this process
    waits at most for the points the workers hold. Any order keeps the incremental transform
    cheap: the points of a sweep differ only in the swept column. Scores live in this process's
    cache, so no worker refits a Λ that another one scored. Each point's start and end are
    recorded where it is scored: they are its trial's datetimes.

    Writing in a worker rather than in a thread or a process of its own keeps the cores busy: two
    processes, each always scoring or writing, and no third one to preempt a scorer mid-batch
    while the others wait for its point. The writer opens its own database connections
    (SQLAlchemy's pool does not survive a fork) and leaves SQLite's checkpoints to this process
    (:data:`CHECKPOINT_EVERY`). Workers ignore Ctrl-C: this process stops handing
    out work, hands over what is left to write, and closes them.
    """

    def __init__(
        self,
        objective: Any,
        n_jobs: int,
        *,
        study: optuna.Study | None = None,
        last_trial_id: int = -1,
        trials: _Trials | None = None,
        stats: RunStats | None = None,
    ) -> None:
        self.objective = objective
        self.n_workers = int(n_jobs) - 1 if int(n_jobs) >= 2 else 0
        #: Whether the first worker writes (the team then serves as the run's writer).
        self.writes = (
            self.n_workers > 0 and study is not None and bulk_supported(storage_of(study))
        )
        self.study = study
        self.last_trial_id = last_trial_id
        self.trials = trials
        self.stats = stats if stats is not None else RunStats()
        self.error: BaseException | None = None  # the first write error
        self._workers: list[tuple[Any, Any]] = []  # (process, connection)
        self._rows: Any = None  # the writing worker's channel for trials to write
        dim = objective.space.dim
        self.capacity = max(64, min(4096, 4_000_000 // (8 * dim)))  # points per shared batch
        self._closed = False
        self._unchecked = 0  # trials handed to the writer since this process last checkpointed

    # -- scoring ------------------------------------------------------------------------------
    def score(
        self, points: list[np.ndarray], meanwhile: Callable[[], None] | None = None
    ) -> tuple[list[float], list[float], list[float]]:
        """The values of ``points``, in order, with the ``time.time()`` each one's scoring
        started and ended (a point scored before: both the moment it was looked up).

        ``meanwhile`` is called once, before this returns: while the workers score the first
        points when they are used, else first.
        """
        n = len(points)
        now = time.time()
        values: list[float | None] = [self.objective.cached_score(x) for x in points]
        starts, ends = [now] * n, [now] * n
        todo = [i for i, v in enumerate(values) if v is None]
        # Worker processes share out the points of a batch when the objective scores them one by
        # one; one whose batches share work (k-NN's sweeps) scores them together here. Waking a
        # worker for a single point costs more than it saves.
        shared = self.objective.batch_work == "sequential"
        if self.n_workers > 0 and len(todo) >= 2 and shared:
            self._start()
            for first in range(0, len(todo), self.capacity):
                where = todo[first : first + self.capacity]
                self._score_shared(
                    [points[i] for i in where], where, values, starts, ends, meanwhile
                )
                meanwhile = None
            return values, starts, ends  # type: ignore[return-value]
        if meanwhile is not None:
            meanwhile()
        if todo:
            tick = time.time()
            scored = self.objective.evaluate_batch([points[i] for i in todo])
            # One call scored them all: each gets an equal share of its time, end to end.
            share = (time.time() - tick) / len(todo)
            for k, (i, value) in enumerate(zip(todo, scored)):
                values[i] = value
                starts[i], ends[i] = tick + k * share, tick + (k + 1) * share
        return values, starts, ends  # type: ignore[return-value]

    def _score_shared(
        self,
        chunk: list[np.ndarray],
        where: list[int],
        values: list[float | None],
        starts: list[float],
        ends: list[float],
        meanwhile: Callable[[], None] | None = None,
    ) -> None:
        n = len(chunk)
        state, lock = self._state, self._lock
        np.stack(chunk, out=self._points[:n])
        with lock:
            state[_BATCH] += 1
            state[_NEXT], state[_N], state[_CLAIMED], state[_DONE], state[_FAILED] = 0, n, 0, 0, 0
            batch = state[_BATCH]
        for _, connection in self._workers:
            try:
                connection.send(("score", batch))
            except OSError:  # broken pipe, reset: the worker is gone
                raise self._died() from None
        mine = set()
        try:
            if meanwhile is not None:
                meanwhile()
            while (k := _claim(state, lock, batch)) is not None:
                mine.add(k)
                starts[where[k]] = time.time()
                values[where[k]] = self.objective.evaluate(self._points[k])
                ends[where[k]] = time.time()
        finally:  # also on an error or Ctrl-C here: no new claims, and the workers' points finish
            with lock:
                state[_NEXT] = n
            self._wait_for_workers()
        if state[_FAILED]:
            raise self._scoring_error(state[_FAILED] - 1)
        for k in range(n):
            if k not in mine:
                value = float(self._scores[k])
                values[where[k]] = value
                starts[where[k]], ends[where[k]] = (
                    float(self._times[k, 0]),
                    float(self._times[k, 1]),
                )
                self.objective.remember_score(self._points[k], value)

    def _wait_for_workers(self) -> None:
        """Until every point a worker claimed is scored (or the worker is gone)."""
        state = self._state
        spins = 0
        while state[_DONE] != state[_CLAIMED]:
            spins += 1
            if spins > 2000:  # a point takes long, or a worker is not running: stop spinning
                time.sleep(0.0002)
                if spins % 500 == 0 and not all(
                    process.is_alive() for process, _ in self._workers
                ):
                    raise self._died()

    def _scoring_error(self, worker: int) -> BaseException:
        connection = self._workers[worker][1]
        while True:  # a write report may come first
            message = self._receive(connection)
            if message is None:
                return self._died()
            if message[0] == "score-error":
                return message[1]

    # -- writing (the run's writer, when ``writes``) ------------------------------------------
    def put(self, rows: list[_Row]) -> None:
        """Hand finished trials to the writing worker; raise an earlier write error."""
        self._start()
        connection = self._workers[0][1]
        while self.error is None and connection.poll():
            if self._receive(connection) is None:
                break
        if self.error is not None:
            raise self.error
        # Encoding the trials and building their table rows is a third of a write's work: done
        # here, where time is to spare when the writer is the one behind (sweeps whose Λ were all
        # scored before), and overlapping the workers' scoring otherwise.
        prepared = self.trials.prepared(rows)
        self.trials.handed(rows)
        try:
            self._rows.send(prepared)
        except (BrokenPipeError, OSError):
            raise self._died() from None
        self._unchecked += len(rows)
        if self._unchecked >= CHECKPOINT_EVERY:
            checkpoint(storage_of(self.study))
            self._unchecked = 0

    def flush(self) -> None:
        """Wait until the writing worker has written every trial handed over so far."""
        if not self.writes or not self._workers:
            return
        connection = self._workers[0][1]
        while self.error is None and self.trials.unwritten():
            if self._receive(connection) is None:
                break
        if self.error is not None:
            raise self.error

    def _receive(self, connection: Any) -> tuple | None:
        """One report from a worker (write reports are applied here); None when it is gone."""
        try:
            message = connection.recv()
        except (EOFError, OSError):
            if self.writes and connection is self._workers[0][1] and self.error is None:
                self.error = self._died()
            return None
        if message[0] in ("written", "write-error", "closed"):
            self.stats.persist_seconds += message[2]
            if message[0] == "write-error":
                self.error = self.error or message[1]
            elif message[0] == "written":
                self.trials.written(message[1])
                self.last_trial_id = message[1].last_trial_id
            elif message[0] == "closed":
                self.last_trial_id = message[1]
        return message

    def _died(self) -> RuntimeError:
        codes = [
            process.exitcode for process, _ in self._workers if process.exitcode not in (None, 0)
        ]
        lost = (
            "; trials it had not written yet are not in the study (running the search again "
            "resumes it)"
            if self.writes
            else ""
        )
        return RuntimeError(
            f"a worker process of the search died (exit code "
            f"{', '.join(map(str, codes)) or 'unknown'}: killed, or out of memory?){lost}"
        )

    # -- life cycle -----------------------------------------------------------------------------
    def _start(self) -> None:
        if self._workers or self._closed:
            return
        self.objective.warm_up()  # once here, inherited by every worker
        context = _parallel.worker_context()
        self._state = context.RawArray("q", 6)
        self._lock = context.Lock()
        dim = self.objective.space.dim
        self._points = np.frombuffer(
            context.RawArray("d", self.capacity * dim), dtype=np.float64
        ).reshape(-1, dim)
        self._scores = np.frombuffer(context.RawArray("d", self.capacity), dtype=np.float64)
        self._times = np.frombuffer(
            context.RawArray("d", 2 * self.capacity), dtype=np.float64
        ).reshape(-1, 2)
        self._rows = None
        rows_reader = None
        if self.writes:  # trials to write go on a pipe of their own, which scoring never waits on
            rows_reader, self._rows = context.Pipe(duplex=False)
            _parallel.enlarge_pipe(self._rows)
        for index in range(self.n_workers):
            mine, theirs = context.Pipe()
            reader = rows_reader if index == 0 else None
            process = context.Process(
                target=_team_worker, args=(self, index, theirs, reader), daemon=True
            )
            process.start()
            theirs.close()
            self._workers.append((process, mine))
        if rows_reader is not None:
            rows_reader.close()

    def close(self) -> None:
        """Wait until every handed-over trial is written, stop the workers; raise a write error."""
        if self._closed:
            return
        self._closed = True
        for _, connection in self._workers:
            try:
                connection.send(None)
            except (BrokenPipeError, OSError):
                pass
        if self.writes and self._workers:
            connection = self._workers[0][1]
            storage = storage_of(self.study)
            while True:
                # The writer leaves SQLite's checkpoints to this process, which has nothing else to
                # do now; on other databases (no checkpoint to make) it just waits for the writer.
                # What the last transactions leave in the log is copied later, like the rest a
                # one-job run leaves there (SQLite checkpoints on a later commit, or when the last
                # connection closes).
                while not connection.poll(0.003) and checkpoint(storage):
                    pass
                if (message := self._receive(connection)) is None or message[0] == "closed":
                    break
        for process, connection in self._workers:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join()
            connection.close()
        if self._rows is not None:
            self._rows.close()
        self._workers = []
        if self.error is not None:
            raise self.error


def _claim(state: Any, lock: Any, batch: int, *, worker: bool = False) -> int | None:
    """Claim the next unscored point of ``batch``: its index, or None when there is none.

    A worker's claims are counted, so that the parent knows how many points to wait for.
    """
    with lock:
        if state[_BATCH] != batch or state[_NEXT] >= state[_N]:
            return None
        k = state[_NEXT]
        state[_NEXT] = k + 1
        if worker:
            state[_CLAIMED] += 1
    return k


def _team_worker(team: _Team, index: int, connection: Any, rows: Any) -> None:
    """A forked worker: score claimed points of each batch it is told of and, if it has the rows
    channel, write the trials it receives there — those first, since this process is the only one
    that can write them while any process can score. Stops when told to (None), after writing
    everything handed over."""
    _parallel.ignore_interrupts()
    if rows is not None:
        take_over_writes(storage_of(team.study), defer_checkpoints=True)
    channels = [connection] if rows is None else [rows, connection]
    write_failed = False

    def write(trials: PreparedTrials) -> None:
        nonlocal write_failed
        if write_failed:
            return
        tick = time.perf_counter()
        try:
            written = write_prepared(team.study, trials, after_trial_id=team.last_trial_id)
        except Exception as error:
            write_failed = True
            _send(connection, "write-error", error, time.perf_counter() - tick)
        else:
            team.last_trial_id = written.last_trial_id
            connection.send(("written", written, time.perf_counter() - tick))

    while True:
        ready = multiprocessing.connection.wait(channels)
        if rows is not None and rows in ready:
            try:
                write(rows.recv())
            except EOFError:  # the parent is gone
                return
            continue
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            break
        _score_claimed(team, index, connection, message[1])
    if rows is not None:
        while rows.poll():  # handed over before the stop
            write(rows.recv())
        connection.send(("closed", team.last_trial_id, 0.0))


def _score_claimed(team: _Team, index: int, connection: Any, batch: int) -> None:
    state, lock = team._state, team._lock
    while (k := _claim(state, lock, batch, worker=True)) is not None:
        try:
            team._times[k, 0] = time.time()
            team._scores[k] = team.objective.evaluate(team._points[k].copy())
            team._times[k, 1] = time.time()
        except Exception as error:  # raised again in the parent, which stops the run
            with lock:
                state[_NEXT] = state[_N]
                state[_FAILED] = state[_FAILED] or index + 1
            _send(connection, "score-error", error)
        finally:
            with lock:
                state[_DONE] += 1
