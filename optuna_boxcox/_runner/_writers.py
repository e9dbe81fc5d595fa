"""Trial writers: lists of finished trials in, each list written in one transaction, in order.

One protocol (:class:`TrialWriter`), two writers: :class:`ThreadWriter` writes in a thread of this
process (or in the caller's thread), :class:`ProcessWriter` in the first worker of a scoring pool.
Both report each list written to the run's :class:`~optuna_boxcox._runner._trials.RunTrials`.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._optuna._write import checkpoint
from optuna_boxcox._optuna._write import take_over_writes
from optuna_boxcox._optuna._write import write_prepared
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox._system import _parallel

if TYPE_CHECKING:
    import optuna

    from optuna_boxcox._runner._pool import ScoringPool
    from optuna_boxcox._runner._trials import Row
    from optuna_boxcox._runner._trials import RunStats
    from optuna_boxcox._runner._trials import RunTrials

#: A writing worker on a SQLite file only appends to its write-ahead log; the search process copies
#: the log into the database file (a checkpoint, a fifth of the writing work) while it waits for the
#: writer at the end, and once this many trials were handed over since the last one, which bounds
#: the log (SQLite's own default is every 1000 pages, about 400 trials of 60 λ).
CHECKPOINT_EVERY = 2000
#: The background writer's backlog: lists are handed over only while those not yet written hold
#: fewer λ values than this (or none at all). SQLite writes a few hundred thousand a second, so an
#: interrupted run writes what it scored in a second or two; on narrow data the queue's 16 lists
#: are the bound, as before. It bounds the backlog's memory too (about a hundred bytes a λ as
#: rows to insert).
BACKLOG_VALUES = 200_000


class TrialWriter(Protocol):
    """Writes lists of finished trials in order, each in one transaction."""

    def put(self, rows: list[Row]) -> None:
        """Hand over a list to write; raise an earlier write error."""

    def flush(self) -> None:
        """Wait until every list handed over is written; raise the first write error."""

    def close(self) -> None:
        """Flush and stop; raise the first write error."""


class ThreadWriter:
    """Writes in a thread of this process while the caller scores the next batches, or, without
    ``background``, in the caller's thread.

    In the background a write overlaps the scoring: on an RDB storage with one job (the database
    does its work with the GIL released), and with worker processes on a storage that a child
    process cannot write to (in-memory, journal).
    """

    def __init__(
        self,
        study: optuna.Study,
        last_trial_id: int,
        stats: RunStats,
        trials: RunTrials,
        *,
        background: bool,
    ) -> None:
        self.study = study
        self.last_trial_id = last_trial_id
        self.stats = stats
        self.trials = trials
        self.bulk = capabilities_of(storage_of(study)).bulk_write
        self.error: BaseException | None = None
        self._queue: queue.Queue[list[Row] | None] | None = None
        self._thread: threading.Thread | None = None
        self._width = len(trials.space.names)  # λ values per trial
        self._backlog = 0  # λ values handed over and not yet written
        self._room = threading.Condition()
        if background:
            self._queue = queue.Queue(maxsize=16)
            self._thread = threading.Thread(
                target=self._drain, name="optuna-boxcox-writer", daemon=True
            )
            self._thread.start()

    def put(self, rows: list[Row]) -> None:
        if self.error is not None:
            raise self.error
        if self._queue is None:
            self._write(rows)
            return
        size = len(rows) * self._width
        with self._room:
            while self._backlog and self._backlog + size > BACKLOG_VALUES and self.error is None:
                self._room.wait()
            self._backlog += size
        self._queue.put(rows)

    def flush(self) -> None:
        if self._queue is not None:
            self._queue.join()
        if self.error is not None:
            raise self.error

    def close(self) -> None:
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
            with self._room:
                self._backlog -= len(rows) * self._width
                self._room.notify_all()
            self._queue.task_done()

    def _write(self, rows: list[Row]) -> None:
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
                position_key=self.trials.position_key,
                after_trial_id=self.last_trial_id,
            )
        self.trials.written(written)
        self.last_trial_id = written.last_trial_id
        self.stats.persist_seconds += time.perf_counter() - tick


class ProcessWriter:
    """Writes in the first worker of a scoring pool (an RDB study).

    Trials are encoded here, where time is to spare when the writer is the one behind (sweeps
    whose Λ were all scored before), and overlapping the workers' scoring otherwise — a third of
    a write's work; the worker only inserts them. It opens its own database connections
    (SQLAlchemy's pool does not survive a fork) and leaves SQLite's checkpoints to this process
    (:data:`CHECKPOINT_EVERY`). Trials go on a pipe of their own, which scoring never waits on,
    and reports come back on another.
    """

    def __init__(
        self,
        study: optuna.Study,
        pool: ScoringPool,
        last_trial_id: int,
        stats: RunStats,
        trials: RunTrials,
    ) -> None:
        self.study, self.pool, self.stats, self.trials = study, pool, stats, trials
        self.last_trial_id = last_trial_id
        self.error: BaseException | None = None
        context = _parallel.worker_context()
        self._rows_in, self._rows = context.Pipe(duplex=False)  # (worker's end, ours)
        self._reports, self._reports_out = context.Pipe(duplex=False)  # (ours, worker's end)
        _parallel.enlarge_pipe(self._rows)
        self.channel = self._rows_in
        self._unchecked = 0  # trials handed over since this process last checkpointed
        self._closed = False
        self._last: str | None = None  # the kind of the last report
        pool.host(self)

    # -- this process --------------------------------------------------------------------------
    def parent_ends(self) -> list[Any]:
        return [self._rows, self._reports]

    def worker_ends(self) -> list[Any]:
        return [self._rows_in, self._reports_out]

    def started(self) -> None:
        self._rows_in.close()
        self._reports_out.close()

    def put(self, rows: list[Row]) -> None:
        self.pool.start()
        while self.error is None and self._reports.poll():
            if not self._receive():
                break
        if self.error is not None:
            raise self.error
        prepared = self.trials.prepared(rows)
        self.trials.handed(rows)
        try:
            _parallel.send_whole(self._rows, prepared)
        except (BrokenPipeError, OSError):
            raise self._died() from None
        self._unchecked += len(rows)
        if self._unchecked >= CHECKPOINT_EVERY:
            checkpoint(storage_of(self.study))
            self._unchecked = 0

    def flush(self) -> None:
        while self.error is None and self.trials.unwritten():
            if not self._receive():
                break
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.pool.started:
            try:
                _parallel.send_whole(self._rows, None)
            except (BrokenPipeError, OSError):
                self.error = self.error or self._died()
            storage = storage_of(self.study)
            while self.error is None:
                # The writer leaves SQLite's checkpoints to this process, which has nothing else
                # to do now; on other databases it just waits for the writer. What the last
                # transactions leave in the log is copied later, like the rest a one-job run
                # leaves there (SQLite checkpoints on a later commit, or when the last
                # connection closes).
                while not self._reports.poll(0.003) and checkpoint(storage):
                    pass
                if not self._receive() or self._last == "closed":
                    break
        else:  # nothing was handed over: the worker's ends were never handed to a worker
            self.started()
        self._rows.close()
        self._reports.close()
        if self.error is not None:
            raise self.error

    def _receive(self) -> bool:
        """Apply one report of the writer; False when it is gone."""
        try:
            kind, payload, seconds = self._reports.recv()
        except (EOFError, OSError):
            self.error = self.error or self._died()
            return False
        self._last = kind
        self.stats.persist_seconds += seconds
        if kind == "write-error":
            self.error = self.error or payload
        elif kind == "written":
            self.trials.written(payload)
            self.last_trial_id = payload.last_trial_id
        return True

    def _died(self) -> RuntimeError:
        return self.pool.died_error(
            "; trials it had not written yet are not in the study (running the search again "
            "resumes it)"
        )

    # -- the worker process ----------------------------------------------------------------------
    def in_worker(self) -> None:
        take_over_writes(storage_of(self.study), defer_checkpoints=True)
        self._failed = False

    def serve(self) -> bool:
        try:
            prepared = self._rows_in.recv()
        except EOFError:  # the search process is gone
            raise SystemExit(1) from None
        if prepared is None:
            self.end()
            return False
        self._write(prepared)
        return True

    def end(self) -> None:
        while self._rows_in.poll():  # handed over before the stop
            prepared = self._rows_in.recv()
            if prepared is not None:
                self._write(prepared)
        self._reports_out.send(("closed", self.last_trial_id, 0.0))

    def _write(self, prepared: Any) -> None:
        if self._failed:
            return
        tick = time.perf_counter()
        try:
            written = write_prepared(self.study, prepared, after_trial_id=self.last_trial_id)
        except Exception as error:
            self._failed = True
            _parallel.send_error(
                self._reports_out, "write-error", error, time.perf_counter() - tick
            )
        else:
            self.last_trial_id = written.last_trial_id
            self._reports_out.send(("written", written, time.perf_counter() - tick))
