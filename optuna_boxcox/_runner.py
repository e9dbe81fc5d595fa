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
import fcntl
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import threading
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox._persist import EncodedTrial
from optuna_boxcox._persist import FloatTrialEncoder
from optuna_boxcox._persist import PreparedTrials
from optuna_boxcox._persist import TrialRecord
from optuna_boxcox._persist import TrialRows
from optuna_boxcox._persist import bulk_supported
from optuna_boxcox._persist import checkpoint
from optuna_boxcox._persist import take_over_writes
from optuna_boxcox._persist import write_prepared
from optuna_boxcox._persist import write_trials
from optuna_boxcox.samplers._plan import OWNER_KEY
from optuna_boxcox.samplers._plan import POSITION_KEY

if TYPE_CHECKING:
    from collections.abc import Callable

    import optuna

    from optuna_boxcox._objective import BoxCoxObjective
    from optuna_boxcox._space import LambdaSpace
    from optuna_boxcox.samplers import PlanSampler
    from optuna_boxcox.samplers import SearchResult


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
            process; n ≥ 2 scores each batch here and in n - 1 forked worker processes, the first
            of which also writes the finished trials (for in-memory and journal storages, which a
            child process cannot write to, a thread of this process writes).
        max_trials: Stop after about this many new trials (whole batches); ``None`` runs the plan out.
        on_batch: Called after every batch with (trials written so far, plan size once known).
        stats: Filled with counts and time spent scoring and persisting.
    """
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, int)
        or not (n_jobs >= 1 or n_jobs == -1)
    ):
        raise ValueError(f"n_jobs must be a positive integer or -1 (one per CPU), got {n_jobs!r}")
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    stats = stats if stats is not None else RunStats()
    run_started = time.perf_counter()
    objective.register(study)
    sampler._check_settings(study)
    space = sampler._space(study)
    with sampler._lock:
        trials = sampler._trials(study)
        sampler._forget(study)  # a fresh replay: this run advances it privately
        replay, scores = sampler._sync(study, space, trials)
    identity = sampler._identity
    # Another writer on the same study may have finished some positions meanwhile: the writes drop
    # those (the plan is deterministic, so their scores are ours too).
    last_trial_id = max((t._trial_id for t in trials), default=-1)
    to_trials = _RowsToTrials(study, space, identity)
    team = _Team(
        objective,
        n_jobs,
        study=study,
        last_trial_id=last_trial_id,
        to_trials=to_trials,
        stats=stats,
    )
    writer: _Team | _Writer = team
    if not team.writes:
        writer = _Writer(study, last_trial_id, stats, to_trials, background=team.n_workers > 0)
    written = 0
    pending: list[_Row] = []  # scored, not yet handed to the writer
    handover = _Handover(writer)
    try:
        while not replay.finished and (max_trials is None or written < max_trials):
            batch = replay.batches[replay.current]
            span = list(replay.positions(replay.current))
            todo = [p for p in span if p not in scores]
            started = datetime.datetime.now()
            tick, fits, handing = time.perf_counter(), objective.n_evaluations, handover.seconds
            # What is ready to write is handed over once the workers have this batch to score.
            new_scores = team.score([batch.points[p - span[0]] for p in todo], meanwhile=handover)
            stats.evaluate_seconds += time.perf_counter() - tick - (handover.seconds - handing)
            if objective.n_evaluations != fits:
                stats.scoring_seconds = time.perf_counter() - run_started
            finished = datetime.datetime.now()
            rows = []
            running = batch.incumbent_score
            for p in span:
                if p in scores:
                    running = max(running, scores[p])
                    continue
                score = new_scores[todo.index(p)]
                attrs = dict(batch.attrs[p - span[0]])
                attrs["improved"] = bool(score > running)
                running = max(running, score)
                rows.append(
                    (
                        batch.points[p - span[0]],
                        sampler._to_value(study, score),
                        attrs,
                        p,
                        started,
                        finished,
                    )
                )
                scores[p] = score
            pending.extend(rows)
            if len(pending) >= WRITE_AT_LEAST:
                handover.ready.append(pending)
                pending = []
            stats.trials += len(rows)
            stats.batches += 1
            written += len(rows)
            replay.advance(scores)
            if on_batch is not None:
                on_batch(written, replay.n_positions if replay.finished else None)
    finally:
        # Whatever was scored is written, also when scoring failed or was interrupted.
        try:
            handover.ready.append(pending)
            handover()
        finally:
            try:
                writer.close()
            finally:
                team.close()
    # The result comes from the replay we advanced; reading the study back would cost more than
    # the whole run. The sampler's own cache did not see our writes, so it is dropped.
    result = sampler._result_of(study, replay, space)
    sampler._forget(study)
    if replay.finished:
        sampler._finish(study, result)
    return result


#: One scored trial waiting to be written: (Λ, objective value, user attributes, plan position,
#: start, end). Compact, so that handing many to a writer process costs little.
_Row = tuple[np.ndarray, float, dict[str, Any], int, datetime.datetime, datetime.datetime]


class _RowsToTrials:
    """Turns pending rows into what the storage's writer takes: the table rows of the bulk writer
    of RDB storages (:meth:`prepared`), :class:`TrialRecord` for the others."""

    def __init__(self, study: optuna.Study, space: LambdaSpace, identity: str) -> None:
        self.study = study
        self.space = space
        self.distributions = space.distributions()
        self.identity = identity
        self._encode = FloatTrialEncoder(self.distributions, POSITION_KEY)
        self._trial_rows: TrialRows | None = None  # made at the first write: it reads the database

    def prepared(self, rows: list[_Row]) -> PreparedTrials:
        """The rows of each table for :func:`write_prepared`, numbered on from the last call's."""
        if self._trial_rows is None:
            self._trial_rows = TrialRows(self.study)
        return self._trial_rows(self.encoded(rows))

    def encoded(self, rows: list[_Row]) -> list[EncodedTrial]:
        encode, identity = self._encode, self.identity
        return [
            encode(
                point.tolist(),
                value,
                attrs,
                {OWNER_KEY: identity, POSITION_KEY: position},
                started,
                finished,
            )
            for point, value, attrs, position, started, finished in rows
        ]

    def records(self, rows: list[_Row]) -> list[TrialRecord]:
        return [
            TrialRecord(
                params=self.space.to_params(point),
                distributions=self.distributions,
                value=value,
                user_attrs=attrs,
                system_attrs={OWNER_KEY: self.identity, POSITION_KEY: position},
                datetime_start=started,
                datetime_complete=finished,
            )
            for point, value, attrs, position, started, finished in rows
        ]


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
            self._hand_over()
        finally:
            self.seconds += time.perf_counter() - tick

    def _hand_over(self) -> None:
        while self.ready:
            rows = self.ready[0]
            if rows:
                self.writer.put(rows)
            del self.ready[0]  # not before: what put refused is still here for the final attempt


class _Writer:
    """Writes lists of finished trials in order, each in one transaction.

    With one job it writes in the caller's thread (one core: score, then write). With worker
    processes scoring on a storage that a child process cannot write to (in-memory, journal),
    it writes on a background thread, so that a write overlaps with the scoring of the next batches.
    """

    def __init__(
        self,
        study: optuna.Study,
        last_trial_id: int,
        stats: RunStats,
        to_trials: _RowsToTrials,
        *,
        background: bool,
    ) -> None:
        self.study = study
        self.last_trial_id = last_trial_id
        self.stats = stats
        self.to_trials = to_trials
        self.bulk = bulk_supported(study._storage)
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

    def _write(self, rows: list[_Row]) -> None:
        tick = time.perf_counter()
        if self.bulk:
            self.last_trial_id = write_prepared(
                self.study, self.to_trials.prepared(rows), after_trial_id=self.last_trial_id
            )
        else:
            self.last_trial_id = write_trials(
                self.study,
                self.to_trials.records(rows),
                position_key=POSITION_KEY,
                after_trial_id=self.last_trial_id,
            )
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
    cache, so no worker refits a Λ that another one scored.

    Writing in a worker rather than in a thread or a process of its own keeps the cores busy: two
    processes, each always scoring or writing, and no third one to preempt a scorer mid-batch
    while the others wait for its point. The writer opens its own database connections
    (SQLAlchemy's pool does not survive a fork) and leaves SQLite's checkpoints to this process
    (:data:`CHECKPOINT_EVERY`). Workers ignore Ctrl-C: this process stops handing
    out work, hands over what is left to write, and closes them.
    """

    def __init__(
        self,
        objective: BoxCoxObjective,
        n_jobs: int,
        *,
        study: optuna.Study | None = None,
        last_trial_id: int = -1,
        to_trials: _RowsToTrials | None = None,
        stats: RunStats | None = None,
    ) -> None:
        self.objective = objective
        self.n_workers = int(n_jobs) - 1 if int(n_jobs) >= 2 else 0
        #: Whether the first worker writes (the team then serves as the run's writer).
        self.writes = self.n_workers > 0 and study is not None and bulk_supported(study._storage)
        self.study = study
        self.last_trial_id = last_trial_id
        self.to_trials = to_trials
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
    ) -> list[float]:
        """The scores of ``points``, in order.

        ``meanwhile`` is called once, before this returns: while the workers score the first
        points when they are used, else first.
        """
        if self.n_workers > 0 and len(points) >= 2:
            scores: list[float | None] = [self.objective.cached_score(x) for x in points]
            todo = [i for i, score in enumerate(scores) if score is None]
            if len(todo) >= 2:  # else waking a worker costs more than it saves
                self._start()
                for first in range(0, len(todo), self.capacity):
                    chunk = [points[i] for i in todo[first : first + self.capacity]]
                    self._score_shared(chunk, todo[first:], scores, meanwhile)
                    meanwhile = None
                return scores  # type: ignore[return-value]
        if meanwhile is not None:
            meanwhile()
        return [self.objective.evaluate(x) for x in points]

    def _score_shared(
        self,
        chunk: list[np.ndarray],
        where: list[int],
        scores: list[float | None],
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
                scores[where[k]] = self.objective.evaluate(self._points[k])
        finally:  # also on an error or Ctrl-C here: no new claims, and the workers' points finish
            with lock:
                state[_NEXT] = n
            self._wait_for_workers()
        if state[_FAILED]:
            raise self._scoring_error(state[_FAILED] - 1)
        for k in range(n):
            if k not in mine:
                score = float(self._scores[k])
                scores[where[k]] = score
                self.objective.remember_score(self._points[k], score)

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
        prepared = self.to_trials.prepared(rows)
        try:
            self._rows.send(prepared)
        except (BrokenPipeError, OSError):
            raise self._died() from None
        self._unchecked += len(rows)
        if self._unchecked >= CHECKPOINT_EVERY:
            checkpoint(self.study._storage)
            self._unchecked = 0

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
            elif message[0] == "closed":
                self.last_trial_id = message[1]
        return message

    def _died(self) -> RuntimeError:
        codes = [
            process.exitcode for process, _ in self._workers if process.exitcode not in (None, 0)
        ]
        lost = (
            "; trials it had not written yet are not in the study (running the search again resumes it)"
            if self.writes
            else ""
        )
        return RuntimeError(
            f"a worker process of the search died (exit code {', '.join(map(str, codes)) or 'unknown'}: "
            f"killed, or out of memory?){lost}"
        )

    # -- life cycle -----------------------------------------------------------------------------
    def _start(self) -> None:
        if self._workers or self._closed:
            return
        self.objective.warm_up()  # once here, inherited by every worker
        context = multiprocessing.get_context("fork")
        self._state = context.RawArray("q", 6)
        self._lock = context.Lock()
        dim = self.objective.space.dim
        self._points = np.frombuffer(
            context.RawArray("d", self.capacity * dim), dtype=np.float64
        ).reshape(-1, dim)
        self._scores = np.frombuffer(context.RawArray("d", self.capacity), dtype=np.float64)
        self._rows = None
        rows_reader = None
        if self.writes:  # trials to write go on a pipe of their own, which scoring never waits on
            rows_reader, self._rows = context.Pipe(duplex=False)
            _enlarge_pipe(self._rows)
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
            storage = self.study._storage
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


def _enlarge_pipe(connection: Any) -> None:
    """Room for many batches of trials in the pipe (Linux), so that handing them over does not
    wait for the writer to finish its current transaction."""
    try:
        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (AttributeError, OSError):  # not Linux, or above the system's limit: the default size
        pass


def _team_worker(team: _Team, index: int, connection: Any, rows: Any) -> None:
    """A forked worker: score claimed points of each batch it is told of and, if it has the rows
    channel, write the trials it receives there — those first, since this process is the only one
    that can write them while any process can score. Stops when told to (None), after writing
    everything handed over."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if rows is not None:
        take_over_writes(team.study._storage, defer_checkpoints=True)
    channels = [connection] if rows is None else [rows, connection]
    write_failed = False

    def write(trials: PreparedTrials) -> None:
        nonlocal write_failed
        if write_failed:
            return
        tick = time.perf_counter()
        try:
            team.last_trial_id = write_prepared(
                team.study, trials, after_trial_id=team.last_trial_id
            )
        except Exception as error:
            write_failed = True
            _send(connection, "write-error", error, time.perf_counter() - tick)
        else:
            connection.send(("written", None, time.perf_counter() - tick))

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
            team._scores[k] = team.objective.evaluate(team._points[k].copy())
        except Exception as error:  # raised again in the parent, which stops the run
            with lock:
                state[_NEXT] = state[_N]
                state[_FAILED] = state[_FAILED] or index + 1
            _send(connection, "score-error", error)
        finally:
            with lock:
                state[_DONE] += 1
