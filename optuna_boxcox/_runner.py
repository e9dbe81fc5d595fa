"""Sweep-batched execution of the paper's samplers: evaluate a whole batch, persist it in one go.

``study.optimize`` asks the sampler for one point at a time and the storage commits every parameter
separately. :func:`run_batched` instead asks a :class:`~optuna_boxcox.samplers.PlanSampler` for its
whole next batch (a coordinate sweep, a spherical pass, …), scores it (over ``n_jobs`` processes when
that pays), and appends the finished trials in one transaction. The study it writes is the one
``study.optimize`` with the same sampler writes: same params, values, user attributes and order.
"""

from __future__ import annotations

from dataclasses import dataclass
import datetime
import multiprocessing
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox._persist import TrialRecord
from optuna_boxcox._persist import write_trials
from optuna_boxcox.samplers._plan import OWNER_KEY
from optuna_boxcox.samplers._plan import POSITION_KEY

if TYPE_CHECKING:
    from collections.abc import Callable

    import optuna

    from optuna_boxcox._objective import BoxCoxObjective
    from optuna_boxcox.samplers import PlanSampler
    from optuna_boxcox.samplers import SearchResult



@dataclass
class RunStats:
    """What a batched run did (for benchmarks and progress reports)."""

    trials: int = 0
    batches: int = 0
    evaluate_seconds: float = 0.0
    persist_seconds: float = 0.0


def run_batched(
    study: optuna.Study,
    objective: BoxCoxObjective,
    sampler: PlanSampler,
    *,
    n_jobs: int = 1,
    max_trials: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    stats: RunStats | None = None,
) -> SearchResult:
    """Run (or resume) ``sampler``'s plan on ``study`` batch by batch; return the sampler's result.

    Args:
        study: The study to write; its trials so far are replayed first (a run resumes).
        objective: Scores λ vectors (``objective.evaluate``).
        sampler: A plan sampler (coordinate, spherical, diagonal, grid, MLE, Nelder–Mead).
        n_jobs: Processes to use: 1 scores and writes in turn; n ≥ 2 scores in n - 1 worker
            processes while this one writes the previous batch.
        max_trials: Stop after about this many new trials (whole batches); ``None`` runs the plan out.
        on_batch: Called after every batch with (trials written so far, plan size once known).
        stats: Filled with counts and time spent scoring and persisting.
    """
    stats = stats if stats is not None else RunStats()
    objective.register(study)
    sampler._check_settings(study)
    space = sampler._space(study)
    with sampler._lock:
        trials = sampler._trials(study)
        sampler._forget(study)  # a fresh replay: this run advances it privately
        replay, scores = sampler._sync(study, space, trials)
    last_trial_id = max((t._trial_id for t in trials), default=-1)
    distributions = space.distributions()
    identity = sampler._identity
    pool = _Pool(objective, n_jobs)
    written = 0
    pending: list[TrialRecord] = []  # the previous batch, written while this one is scored

    def persist(records: list[TrialRecord]) -> None:
        nonlocal last_trial_id
        tick = time.perf_counter()
        # Another writer on the same study may have finished some of these positions meanwhile:
        # the write drops those (the plan is deterministic, so their scores are ours too).
        last_trial_id = write_trials(study, records, position_key=POSITION_KEY, after_trial_id=last_trial_id)
        stats.persist_seconds += time.perf_counter() - tick

    try:
        while not replay.finished and (max_trials is None or written < max_trials):
            batch = replay.batches[replay.current]
            span = list(replay.positions(replay.current))
            todo = [p for p in span if p not in scores]
            started = datetime.datetime.now()
            tick = time.perf_counter()
            handle = pool.submit([batch.points[p - span[0]] for p in todo])
            if pending:  # overlaps with the scoring when it runs in worker processes
                persist(pending)
            new_scores = handle()
            stats.evaluate_seconds += time.perf_counter() - tick
            finished = datetime.datetime.now()
            records = []
            running = batch.incumbent_score
            for p in span:
                if p in scores:
                    running = max(running, scores[p])
                    continue
                score = new_scores[todo.index(p)]
                attrs = dict(batch.attrs[p - span[0]])
                attrs["improved"] = bool(score > running)
                running = max(running, score)
                records.append(
                    TrialRecord(
                        params=space.to_params(batch.points[p - span[0]]),
                        distributions=distributions,
                        value=sampler._to_value(study, score),
                        user_attrs=attrs,
                        system_attrs={OWNER_KEY: identity, POSITION_KEY: p},
                        datetime_start=started,
                        datetime_complete=finished,
                    )
                )
                scores[p] = score
            pending = records
            stats.trials += len(records)
            stats.batches += 1
            written += len(records)
            replay.advance(scores)
            if on_batch is not None:
                on_batch(written, replay.n_positions if replay.finished else None)
        if pending:
            persist(pending)
    finally:
        pool.close()
    # The result comes from the replay we advanced; reading the study back would cost more than
    # the whole run. The sampler's own cache did not see our writes, so it is dropped.
    result = sampler._result_of(study, replay, space)
    sampler._forget(study)
    if replay.finished:
        sampler._finish(study, result)
    return result


# -- scoring, optionally over worker processes -------------------------------------------------
_WORKER_OBJECTIVE: Any = None


def _init_worker(objective: BoxCoxObjective) -> None:
    global _WORKER_OBJECTIVE
    _WORKER_OBJECTIVE = objective


def _score_points(points: list[np.ndarray]) -> list[float]:
    return [_WORKER_OBJECTIVE.evaluate(x) for x in points]


class _Pool:
    """Scores batches here (one job) or in worker processes (more jobs).

    With ``n_jobs`` ≥ 2 there are ``n_jobs - 1`` forked workers: the main process writes the
    previous batch while they score the current one. A single worker keeps its incremental
    transform across sweeps; several split each batch into contiguous chunks.
    """

    def __init__(self, objective: BoxCoxObjective, n_jobs: int) -> None:
        self.objective = objective
        self.n_workers = max(1, int(n_jobs)) - 1
        self._pool = None

    def submit(self, points: list[np.ndarray]) -> Callable[[], list[float]]:
        """Start scoring ``points``; the returned callable waits for the scores."""
        if not points:
            return list
        if self.n_workers == 0:
            result = [self.objective.evaluate(x) for x in points]
            return lambda: result
        if self._pool is None:
            context = multiprocessing.get_context("fork")
            self._pool = context.Pool(self.n_workers, initializer=_init_worker, initargs=(self.objective,))
        chunks = [list(c) for c in np.array_split(np.arange(len(points)), self.n_workers) if len(c)]
        pending = self._pool.map_async(_score_points, [[points[i] for i in c] for c in chunks])
        return lambda: [score for part in pending.get() for score in part]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None
