"""The batched loop: score a plan's batches, hand the trials to a writer, keep them."""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING
from typing import Any

from optuna.trial import TrialState

from optuna_boxcox._optuna import optimize_loop
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._runner._cooperation import Cooperation
from optuna_boxcox._runner._cooperation import settle
from optuna_boxcox._runner._halving import Halving
from optuna_boxcox._runner._halving import confirm
from optuna_boxcox._runner._halving import exact
from optuna_boxcox._runner._pool import ScoringPool
from optuna_boxcox._runner._trials import Row
from optuna_boxcox._runner._trials import RunTrials
from optuna_boxcox._runner._trials import moment
from optuna_boxcox._runner._writers import ProcessWriter
from optuna_boxcox._runner._writers import ThreadWriter
from optuna_boxcox._system._progress import Progress
from optuna_boxcox.samplers._driver import Ranking

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable

    import numpy as np
    import optuna
    from optuna.trial import FrozenTrial

    from optuna_boxcox._runner._halving import Scored
    from optuna_boxcox._runner._trials import RunStats
    from optuna_boxcox._runner._trials import Stored
    from optuna_boxcox._runner._writers import TrialWriter
    from optuna_boxcox.samplers import PendingPoints
    from optuna_boxcox.samplers import PlanRun
    from optuna_boxcox.samplers import SearchResult

#: Finished trials are written once at least this many are pending (and at the end): a sweep of the
#: paper's presets is 11–21 trials, and a commit costs about as much as writing 30 trials' rows.
#: They are handed over while the next batch is scored, so a crash loses at most these, the batch
#: being scored and what the writer had not committed yet; a resumed run recomputes them.
WRITE_AT_LEAST = 100
#: ... or once they hold this many λ values (10 trials of 10,000 λ): on wide data a list is
#: written in a fraction of a second, so what an interrupted run still has to write stays small.
WRITE_VALUES_AT_MOST = 100_000
#: Lists that pile up while the run goes through batches of points all known before
#: (nothing to score or wait for, so none is handed over meanwhile) go together, up to this
#: many trials: one transaction where workers ending a shared plan together each write its
#: last known trials (two or three lists of a hundred each with many workers). A crash also
#: loses those; going through them takes milliseconds.
HANDOVER_AT_MOST = 1_000
#: Share of the objective's memory budget it has not reserved that the written trials kept for the
#: storage's cache may take (see ``RunTrials``); the writer's backlog is bounded in
#: ``_writers``, the rest is the plan's.
KEEP_SHARE = 0.25
#: Seconds of scoring between two looks for other workers while a lone worker scores its first
#: batch (see ``BatchedRun._score_alone``): a look is one small query.
PIECE_SECONDS = 1.0


class BatchedRun:
    """One batched pass over a :class:`~optuna_boxcox.samplers.PlanRun`."""

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
        self.study: optuna.Study = study
        self.objective: Any = objective  # a BoxCoxObjective
        self.plan_run: PlanRun = run
        self.callbacks: list[Callable[[optuna.Study, FrozenTrial], None]] = callbacks
        self.gc_after_trial: bool = gc_after_trial
        self.stats: RunStats = stats
        budget = getattr(objective, "budget", None)  # a BoxCoxObjective's MemoryBudget
        self.trials: RunTrials = RunTrials(
            study,
            run,
            keep_bytes=None if budget is None else int(KEEP_SHARE * max(budget.remaining(), 0)),
            callbacks=bool(callbacks),
        )
        # Another writer on the same study may have finished some positions meanwhile: the writes
        # drop those (the plan is deterministic, so their scores are ours too).
        last_trial_id = _first_after_trial_id(study, run.trials)
        self.pool: ScoringPool = ScoringPool(objective, n_jobs)
        #: Successive halving of each batch when the objective has a fidelity (rows as the
        #: fidelity); None scores every point on all rows.
        self.halving: Halving | None = self._halving(study, objective, run)
        capabilities = capabilities_of(storage_of(study))
        self.writer: TrialWriter
        if self.pool.n_workers > 0 and capabilities.bulk_write:
            self.writer = ProcessWriter(study, self.pool, last_trial_id, stats, self.trials)
        else:
            # A thread writes while this one scores: SQLite does its work with the GIL released,
            # so even one job keeps two cores busy; with worker processes on a storage they
            # cannot write to (in-memory, journal), the thread is the writer.
            background = self.pool.n_workers > 0 or capabilities.bulk_write
            self.writer = ThreadWriter(
                study, last_trial_id, stats, self.trials, background=background
            )
        #: Sharing the plan's positions with other batched workers, on storages several
        #: processes (or machines) can write.
        self.cooperation: Cooperation | None = (
            Cooperation(study, run, objective, self.trials, self.score, self.pool.n_workers + 1)
            if capabilities.sql_claims
            else None
        )
        width = max(len(run.space.names), 1)
        at_least = max(1, min(WRITE_AT_LEAST, WRITE_VALUES_AT_MOST // width))
        self.handover: Handover = Handover(
            self.writer,
            at_least=at_least,
            max_rows=max(at_least, min(HANDOVER_AT_MOST, WRITE_VALUES_AT_MOST // width)),
        )

    @staticmethod
    def _halving(study: optuna.Study, objective: Any, run: PlanRun) -> Halving | None:
        if getattr(objective, "fidelity", None) is None:
            return None
        halving = Halving(objective, Ranking.of(study))
        # Points COMPLETE before this run are known at the top rung, as in the run that
        # scored them (see Halving.seed).
        done = [
            t
            for t in run.trials
            if t.state == TrialState.COMPLETE and run.position_key in t.system_attrs
        ]
        halving.seed([run.space.to_vector(t.params) for t in done], [t.value for t in done])
        return halving

    def score(
        self, points: list[np.ndarray], meanwhile: Callable[[], None] | None = None
    ) -> list[Scored]:
        """Score ``points`` through the pool: on all rows, or halved over the objective's rungs.
        ``meanwhile`` is called once (see :meth:`ScoringPool.score`)."""
        if self.halving is None:
            return exact(*self.pool.score(points, meanwhile=meanwhile))
        pending = [meanwhile]

        def score_at(chunk: list[np.ndarray], rows: int) -> tuple:
            once, pending[0] = pending[0], None
            return self.pool.score(chunk, meanwhile=once, rows=rows)

        scored = self.halving.score(points, score_at)
        if pending[0] is not None:  # every point known: nothing was scored
            pending[0]()
        return scored

    def run(self, *, n_trials: int | None, timeout: float | None, progress: bool) -> SearchResult:
        run = self.plan_run
        started = time.perf_counter()
        budget = run.budget
        done_before = run.n_done
        written = 0  # trials of this run's batches stored by this worker
        bar = Progress(
            budget,
            label="search",
            enabled=progress,
            initial=done_before if budget is None else min(done_before, budget),
        )
        completed, first = False, True
        try:
            with optimize_loop(self.study) as stopped:
                while not run.finished and (n_trials is None or written < n_trials):
                    if timeout is not None and time.perf_counter() - started > timeout:
                        break
                    if stopped():
                        break
                    limit = None if n_trials is None else n_trials - written
                    written += self._batch(limit, started, first=first)
                    first = False
                    bar.advance_to(done_before + written)
                    if self.callbacks:
                        self._call_back()
                    if self.gc_after_trial:
                        gc.collect()
            completed = True
        finally:
            bar.close()
            self._end(started, settle_dropped=completed)
        if self.callbacks:
            self._call_back()
        result = run.finish()
        if result.finished and self.halving is not None and self.halving.capped:
            result = confirm(self.study, self.objective, result, self.halving.ranking)
        return result

    def _batch(self, limit: int | None, started: float, *, first: bool) -> int:
        """Score the plan's next pending points and queue their trials; return how many of them
        this worker stores (writes, or completed as claims)."""
        run, stats, handover = self.plan_run, self.stats, self.handover
        # Halving compares the points of a whole batch: a trial limit ends the run between
        # batches (passing it by the rest of the last one), so that the next run halves the
        # same batches as an uninterrupted one.
        points = run.pending(limit if self.halving is None else None)
        if self.cooperation is not None and self.cooperation.check():
            self._joined()
        tick, fits, handing = time.perf_counter(), self._fits(), handover.seconds
        alone = None
        if self.cooperation is None or not self.cooperation.shared:
            # What is ready to write is handed over once the workers have this batch.
            alone = self._score_alone(points.points, meanwhile=handover, first=first)
            if alone is None:
                self._joined()
        how: list[Stored]
        if alone is None:
            scored, how = self.cooperation.score(points, meanwhile=handover)
        else:
            scored, how = alone, ["write"] * len(alone)
        stats.evaluate_seconds += time.perf_counter() - tick - (handover.seconds - handing)
        if self._fits() != fits:
            stats.scoring_seconds = time.perf_counter() - started
        ours = [k for k, h in enumerate(how) if h == "write"]
        others = [k for k, h in enumerate(how) if h != "write"]
        tell(run, points, scored, others)
        values = [s.ranked for s in scored]
        attrs = run.attrs(points, values, ours)
        tell(run, points, scored, ours)
        handover.add(
            Row(
                points.points[k],
                float(scored[k].value),
                a,
                points.positions[k],
                moment(scored[k].start),
                moment(scored[k].end),
                scored[k].state,
                scored[k].intermediate or None,
            )
            for k, a in zip(ours, attrs)
        )
        mine = sum(h != "others" for h in how)
        stats.trials += mine
        stats.batches += 1
        return mine

    def _joined(self) -> None:
        """Another worker joined: what this one scored alone is written first."""
        self.handover.flush()
        self.writer.flush()

    def _score_alone(
        self, points: list[np.ndarray], meanwhile: Callable[[], None], *, first: bool
    ) -> list[Scored] | None:
        """A lone worker's batch scored, or None when another worker joined while it scored
        the run's first batch (what it scored is in the objective's cache, so the shared batch
        writes those points as known).

        Workers started together announce themselves within milliseconds of each other, and the
        first may find nobody yet: it would score its whole first batch alone (seconds, when
        its points are expensive) while the others claim and score the same points. So the first batch of expensive points is scored a piece at a time (the first
        piece one point per scoring process, the next ones ~``PIECE_SECONDS`` each), looking
        for other workers between pieces. Only the exact search of an objective that scores a
        batch point by point (halving compares a batch's points; k-NN scores a sweep as one),
        and only the first batch: later joiners are found at the next batch, and pieces would
        keep a pool's processes waiting for each piece's slowest point."""
        if (
            not first
            or self.cooperation is None
            or self.halving is not None
            or getattr(self.objective, "batch_work", None) != "sequential"
        ):
            return self.score(points, meanwhile=meanwhile)
        scored: list[Scored] = []
        size = self.pool.n_workers + 1
        while True:
            tick = time.perf_counter()
            piece = self.score(points[len(scored) : len(scored) + size], meanwhile=meanwhile)
            spent, meanwhile = time.perf_counter() - tick, None
            scored += piece
            left = len(points) - len(scored)
            if not left:
                return scored
            if spent * left / len(piece) < PIECE_SECONDS:
                return scored + self.score(points[len(scored) :])
            if self.cooperation.check(at_once=True):
                return None
            size = max(size, int(len(piece) * PIECE_SECONDS / spent))

    def _fits(self) -> int:
        """Λ fitted so far, on all rows and on every rung."""
        objective = self.objective
        rungs = objective.rungs if self.halving is not None else ()
        return objective.n_evaluations + sum(
            objective.at_rows(rows).n_evaluations for rows in rungs if rows != objective.n_samples
        )

    def _end(self, started: float, *, settle_dropped: bool) -> None:
        """Whatever was scored is written, also when scoring failed or was interrupted; a run
        that ended normally and wrote all of it also settles the positions its writes dropped
        (see :func:`settle`), while an interrupted one, or one whose writer failed, leaves them
        to the next run's replay."""
        handed = closed = False
        try:
            self.handover.flush()
            handed = True
        finally:
            try:
                self.writer.close()
                closed = True
            finally:
                self.pool.close()
                try:
                    # A failed writer (its process died, say) may have written lists it never
                    # reported, which settling's writer would take for its own; and the run fails
                    # anyway, so it does not wait for other workers' claims first.
                    if settle_dropped and handed and closed and self.trials.dropped:
                        settle(self.study, self.trials, self.stats)
                finally:
                    if self.cooperation is not None:
                        self.cooperation.leave()
                        if self.cooperation.ahead is not None:
                            self.stats.ahead = self.cooperation.ahead.scored
                    self.stats.written_seconds = time.perf_counter() - started
                    self.trials.cache()

    def _call_back(self) -> None:
        for trial in self.trials.stored_since_last_call():
            for callback in self.callbacks:
                callback(self.study, trial)


def tell(run: PlanRun, points: PendingPoints, scored: list[Scored], which: list[int]) -> None:
    """Tell the plan the outcome of ``points[k]`` for ``k`` in ``which``: the values of the
    COMPLETE ones, the worst score for the PRUNED ones."""
    complete = [k for k in which if scored[k].state == TrialState.COMPLETE]
    pruned = [k for k in which if scored[k].state != TrialState.COMPLETE]
    run.adopt([points.positions[k] for k in complete], [scored[k].value for k in complete])
    if pruned:
        run.prune([points.positions[k] for k in pruned])


def _first_after_trial_id(study: optuna.Study, trials: list[FrozenTrial]) -> int:
    """The first write's ``after_trial_id``: the trials up to it hold no position the run writes,
    so its writes need not look at them for positions another worker holds.

    Those are the study's trials when the run started (``trials``), whose finished positions the
    plan counts done — but not a trial still running then: its position is pending in this run,
    and its worker may complete it after this run scored the same point (alone, or from its
    cache), so the writes look from the first such trial on. One that failed since (a dead
    worker's claim, reaped as the run started) holds nothing.
    """
    storage = storage_of(study)
    held = [
        trial_id_of(t)
        for t in trials
        if not t.state.is_finished() and storage.get_trial(trial_id_of(t)).state != TrialState.FAIL
    ]
    if held:
        return min(held) - 1
    return max((trial_id_of(t) for t in trials), default=-1)


class Handover:
    """Finished trials on their way to the writer: gathered into lists of at least ``at_least``,
    which calling it hands over, in order.

    The runner calls it while the workers score the next batch (the pool's ``meanwhile``):
    encoding and sending trials then overlaps with their scoring instead of keeping them waiting
    for the batch.
    """

    def __init__(self, writer: TrialWriter, *, at_least: int, max_rows: int) -> None:
        self.writer = writer
        #: Rows a list gathers before it is ready (see :data:`WRITE_VALUES_AT_MOST`).
        self.at_least = at_least
        #: Rows handed over in one list at most: lists that piled up go together up to this.
        self.max_rows = max_rows
        self.pending: list[Row] = []  # the list being gathered
        self.ready: list[list[Row]] = []
        self.seconds = 0.0  # spent handing over

    @property
    def rows(self) -> int:
        """Rows ready and not handed over yet."""
        return sum(len(rows) for rows in self.ready)

    def add(self, rows: Iterable[Row]) -> None:
        """Gather a batch's rows; a full list is ready for the next call."""
        self.pending.extend(rows)
        if len(self.pending) >= self.at_least:
            self.ready.append(self.pending)
            self.pending = []
            if self.rows >= self.max_rows:
                self()  # a long run of batches with nothing to score: bounded all the same

    def flush(self) -> None:
        """Hand over every row, those of the list still being gathered too."""
        self.ready.append(self.pending)
        self.pending = []
        self()

    def __call__(self) -> None:
        if not self.ready:
            return
        tick = time.perf_counter()
        try:
            while self.ready:
                # Lists that piled up (batches of points known before, run through without
                # scoring) go as one write: every write is a transaction, and a shared plan's
                # workers each write its last known trials as they end it together.
                while len(self.ready) > 1 and len(self.ready[0]) + len(self.ready[1]) <= (
                    self.max_rows
                ):
                    self.ready[0:2] = [self.ready[0] + self.ready[1]]
                rows = self.ready[0]
                if rows:
                    self.writer.put(rows)
                del self.ready[0]  # not before: what put refused is still here for a last try
        finally:
            self.seconds += time.perf_counter() - tick
