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
import os
import queue
import threading
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



#: Finished trials are written once at least this many are pending (and at the end): a sweep of the
#: paper's presets is 11–21 trials, and a commit costs about as much as writing 30 trials' rows. A
#: crash loses at most these unwritten trials, which a resumed run recomputes.
WRITE_AT_LEAST = 100


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
        n_jobs: Processes that score (-1: one per CPU). 1 scores and writes in turn in this
            process; n ≥ 2 scores each batch in n forked worker processes while a thread of this
            one writes the finished trials (mostly waiting on the database).
        max_trials: Stop after about this many new trials (whole batches); ``None`` runs the plan out.
        on_batch: Called after every batch with (trials written so far, plan size once known).
        stats: Filled with counts and time spent scoring and persisting.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not (n_jobs >= 1 or n_jobs == -1):
        raise ValueError(f"n_jobs must be a positive integer or -1 (one per CPU), got {n_jobs!r}")
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    stats = stats if stats is not None else RunStats()
    objective.register(study)
    sampler._check_settings(study)
    space = sampler._space(study)
    with sampler._lock:
        trials = sampler._trials(study)
        sampler._forget(study)  # a fresh replay: this run advances it privately
        replay, scores = sampler._sync(study, space, trials)
    distributions = space.distributions()
    identity = sampler._identity
    pool = _Pool(objective, n_jobs)
    # Another writer on the same study may have finished some positions meanwhile: the writes drop
    # those (the plan is deterministic, so their scores are ours too).
    writer = _Writer(
        study, max((t._trial_id for t in trials), default=-1), stats, background=pool.n_workers > 0
    )
    written = 0
    pending: list[TrialRecord] = []  # scored, not yet handed to the writer
    try:
        while not replay.finished and (max_trials is None or written < max_trials):
            batch = replay.batches[replay.current]
            span = list(replay.positions(replay.current))
            todo = [p for p in span if p not in scores]
            started = datetime.datetime.now()
            tick = time.perf_counter()
            new_scores = pool.submit([batch.points[p - span[0]] for p in todo])()
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
            pending.extend(records)
            if len(pending) >= WRITE_AT_LEAST:
                writer.put(pending)
                pending = []
            stats.trials += len(records)
            stats.batches += 1
            written += len(records)
            replay.advance(scores)
            if on_batch is not None:
                on_batch(written, replay.n_positions if replay.finished else None)
    finally:
        pool.close()
        # Whatever was scored is written, also when scoring failed or was interrupted.
        if pending:
            writer.put(pending)
        writer.close()
    # The result comes from the replay we advanced; reading the study back would cost more than
    # the whole run. The sampler's own cache did not see our writes, so it is dropped.
    result = sampler._result_of(study, replay, space)
    sampler._forget(study)
    if replay.finished:
        sampler._finish(study, result)
    return result


class _Writer:
    """Writes lists of finished trials in order, each in one transaction.

    With one job it writes in the caller's thread (one core: score, then write). With worker
    processes scoring, it writes on a background thread, so a write of many trials overlaps with
    the scoring of the next batches instead of only the current one; SQLite and the database
    drivers release the interpreter lock while they work.
    """

    def __init__(self, study: optuna.Study, last_trial_id: int, stats: RunStats, *, background: bool) -> None:
        self.study = study
        self.last_trial_id = last_trial_id
        self.stats = stats
        self.error: BaseException | None = None
        self._queue: queue.Queue[list[TrialRecord] | None] | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._queue = queue.Queue(maxsize=16)
            self._thread = threading.Thread(target=self._drain, name="optuna-boxcox-writer", daemon=True)
            self._thread.start()

    def put(self, records: list[TrialRecord]) -> None:
        if self.error is not None:
            raise self.error
        if self._queue is None:
            self._write(records)
        else:
            self._queue.put(records)

    def close(self) -> None:
        """Wait until everything handed over is written; raise the first write error."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self.error is not None:
            raise self.error

    def _drain(self) -> None:
        while (records := self._queue.get()) is not None:
            if self.error is None:
                try:
                    self._write(records)
                except BaseException as error:  # raised in the caller's thread by put/close
                    self.error = error

    def _write(self, records: list[TrialRecord]) -> None:
        tick = time.perf_counter()
        self.last_trial_id = write_trials(
            self.study, records, position_key=POSITION_KEY, after_trial_id=self.last_trial_id
        )
        self.stats.persist_seconds += time.perf_counter() - tick


# -- scoring, optionally over worker processes -------------------------------------------------
def _worker_loop(objective: BoxCoxObjective, connection: Any) -> None:
    """A forked worker: score each array of points it receives until told to stop (None)."""
    while True:
        try:
            points = connection.recv()
        except EOFError:
            return
        if points is None:
            return
        try:
            connection.send(("ok", [objective.evaluate(x) for x in points]))
        except Exception as error:  # raised again in the parent, which stops the run
            try:
                connection.send(("error", error))
            except Exception:  # an exception that does not pickle
                connection.send(("error", RuntimeError(f"{type(error).__name__}: {error}")))


class _Pool:
    """Scores batches here (one job) or in worker processes (more jobs).

    With ``n_jobs`` ≥ 2 there are ``n_jobs`` forked workers, each scoring a contiguous chunk of
    every batch (so each keeps its incremental transform: consecutive points of a sweep differ in
    one column) while the main process writes the trials scored before. Each worker is one pipe:
    one message out and one back per batch, and no helper threads competing with the writes for
    the interpreter lock. Scores live in this process's cache, so no worker refits a Λ that
    another one scored.
    """

    def __init__(self, objective: BoxCoxObjective, n_jobs: int) -> None:
        self.objective = objective
        self.n_workers = int(n_jobs) if int(n_jobs) >= 2 else 0
        self._workers: list[tuple[Any, Any]] = []  # (process, connection)

    def submit(self, points: list[np.ndarray]) -> Callable[[], list[float]]:
        """Start scoring ``points``; the returned callable waits for the scores."""
        if not points:
            return list
        if self.n_workers == 0:
            result = [self.objective.evaluate(x) for x in points]
            return lambda: result
        if not self._workers:
            self._start()
        scores: list[float | None] = [self.objective.cached_score(x) for x in points]
        todo = [i for i, score in enumerate(scores) if score is None]
        sent = []
        for (_, connection), chunk in zip(self._workers, np.array_split(np.array(todo, dtype=int), self.n_workers)):
            if len(chunk):
                connection.send(np.stack([points[i] for i in chunk]))
                sent.append((connection, chunk))

        def wait() -> list[float]:
            failure = None
            for connection, chunk in sent:  # collect every reply, so the pipes stay in step
                try:
                    status, payload = connection.recv()
                except EOFError:
                    status, payload = "error", RuntimeError("a scoring worker process died")
                if status != "ok":
                    failure = failure or payload
                    continue
                for i, score in zip(chunk, payload):
                    scores[i] = score
                    self.objective.remember_score(points[i], score)
            if failure is not None:
                raise failure
            return scores  # type: ignore[return-value]

        return wait

    def _start(self) -> None:
        self.objective.warm_up()  # once here, inherited by every worker
        context = multiprocessing.get_context("fork")
        for _ in range(self.n_workers):
            mine, theirs = context.Pipe()
            process = context.Process(target=_worker_loop, args=(self.objective, theirs), daemon=True)
            process.start()
            theirs.close()
            self._workers.append((process, mine))

    def close(self) -> None:
        for process, connection in self._workers:
            try:
                connection.send(None)
            except (BrokenPipeError, OSError):
                pass
        for process, connection in self._workers:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join()
            connection.close()
        self._workers = []
