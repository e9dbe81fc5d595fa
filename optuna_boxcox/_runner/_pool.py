"""A pool of forked processes that score the points of a batch with this one.

A batch goes to shared memory and is shared out point by point: every process takes the next
unscored point from a counter there until none is left, so a process that is slower (its points
need more SGD epochs, or it is busy writing) simply scores fewer, and this process waits at most
for the points the workers hold. Any order keeps the incremental transform cheap: the points of a
sweep differ only in the swept column. Scores live in this process's cache, so no worker refits a
Λ that another one scored. Each point's start and end are recorded where it is scored: they are
its trial's datetimes.

The standard library's pools hand each task to a worker through a queue and its result back
through another while this process only waits; on the short batches this pool serves, that
hand-over costs a third more than scoring through the counter (docs/performance_log.md), so the pool
is hand-written.

The first worker can host one more duty (:meth:`ScoringPool.host`): the process writer, which
then writes in a process that is always scoring or writing, instead of a third process that
preempts a scorer mid-batch while the others wait for its point.
"""

from __future__ import annotations

import multiprocessing.connection
import os
import time
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

import numpy as np

from optuna_boxcox._system import _parallel

if TYPE_CHECKING:
    from collections.abc import Callable

# Slots of the pool's shared state.
_BATCH, _NEXT, _N, _TAKEN, _DONE, _FAILED = range(6)


class HostedDuty(Protocol):
    """Work a pool's first worker does besides scoring, on a channel of its own."""

    #: What the worker waits on besides its scoring channel.
    channel: Any

    def parent_ends(self) -> list[Any]:
        """This process's ends of the duty's pipes, which the workers close."""

    def worker_ends(self) -> list[Any]:
        """The hosting worker's ends of the duty's pipes, which the other workers close (else
        this process would not see the end of the pipe when the hosting worker dies)."""

    def started(self) -> None:
        """The workers run: close the workers' ends of the duty's pipes here."""

    def in_worker(self) -> None:
        """Called first in the forked worker (open its own database connections, ...)."""

    def serve(self) -> bool:
        """Handle what arrived on :attr:`channel`; False when the duty has ended."""

    def end(self) -> None:
        """The pool is closing: finish what was handed over."""


class ScoringPool:
    """Scores batches in this process, helped by ``n_jobs - 1`` forked worker processes.

    Workers ignore Ctrl-C (this process stops handing out work and closes them) and die with
    this process however it ends (:func:`~optuna_boxcox._system._parallel.die_with_parent`).
    """

    def __init__(self, objective: Any, n_jobs: int) -> None:
        self.objective = objective
        self.n_workers = int(n_jobs) - 1 if int(n_jobs) >= 2 else 0
        dim = objective.space.dim
        self.capacity = max(64, min(4096, 4_000_000 // (8 * dim)))  # points per shared batch
        self._workers: list[tuple[Any, Any]] = []  # (process, connection)
        self._duty: HostedDuty | None = None
        self._closed = False
        self._batches = 0

    @property
    def batches_posted(self) -> int:
        """Batches shared out to the workers so far."""
        return self._batches

    def host(self, duty: HostedDuty) -> None:
        """Have the first worker do ``duty`` too (before the workers start)."""
        if self._workers:
            raise RuntimeError("a duty must be hosted before the pool starts")
        self._duty = duty

    # -- scoring ------------------------------------------------------------------------------
    def score(
        self,
        points: list[np.ndarray],
        meanwhile: Callable[[], None] | None = None,
        *,
        rows: int | None = None,
    ) -> tuple[list[float], list[float], list[float]]:
        """The values of ``points``, in order, with the ``time.time()`` each one's scoring
        started and ended (a point scored before: both the moment it was looked up).

        ``meanwhile`` is called once, before this returns: while the workers score the first
        points when they are used, else first. ``rows``: score on the objective's rung of that
        many rows (``objective.at_rows``) instead of all rows.
        """
        objective = self._scorer(rows)
        n = len(points)
        now = time.time()
        values: list[float | None] = [objective.cached_score(x) for x in points]
        starts, ends = [now] * n, [now] * n
        todo = [i for i, v in enumerate(values) if v is None]
        # Worker processes share out the points of a batch when the objective scores them one by
        # one; one whose batches share work (k-NN's sweeps) scores them together here. Waking a
        # worker for a single point costs more than it saves.
        shared = objective.batch_work == "sequential"
        if self.n_workers > 0 and len(todo) >= 2 and shared:
            self.start()
            for first in range(0, len(todo), self.capacity):
                where = todo[first : first + self.capacity]
                self._share(
                    [points[i] for i in where], where, values, starts, ends, meanwhile, rows
                )
                meanwhile = None
            return values, starts, ends  # type: ignore[return-value]
        if meanwhile is not None:
            meanwhile()
        if todo:
            tick = time.time()
            scored = objective.evaluate_batch([points[i] for i in todo])
            # One call scored them all: each gets an equal share of its time, end to end.
            share = (time.time() - tick) / len(todo)
            for k, (i, value) in enumerate(zip(todo, scored)):
                values[i] = value
                starts[i], ends[i] = tick + k * share, tick + (k + 1) * share
        return values, starts, ends  # type: ignore[return-value]

    def _scorer(self, rows: int | None) -> Any:
        """The objective that scores on ``rows`` rows (None: all of them)."""
        return self.objective if rows is None else self.objective.at_rows(rows)

    def _share(
        self,
        chunk: list[np.ndarray],
        where: list[int],
        values: list[float | None],
        starts: list[float],
        ends: list[float],
        meanwhile: Callable[[], None] | None,
        rows: int | None,
    ) -> None:
        objective = self._scorer(rows)
        n = len(chunk)
        state, lock = self._state, self._lock
        np.stack(chunk, out=self._points[:n])
        with lock:
            state[_BATCH] += 1
            state[_NEXT], state[_N], state[_TAKEN], state[_DONE], state[_FAILED] = 0, n, 0, 0, 0
            batch = state[_BATCH]
        self._batches = batch
        for _, connection in self._workers:
            try:
                _parallel.send_whole(connection, ("score", batch, rows))
            except OSError:  # broken pipe, reset: the worker is gone
                raise self.died_error() from None
        mine = set()
        try:
            if meanwhile is not None:
                meanwhile()
            while (k := self._take(batch)) is not None:
                mine.add(k)
                starts[where[k]] = time.time()
                values[where[k]] = objective.evaluate(self._points[k])
                ends[where[k]] = time.time()
        finally:  # also on an error or Ctrl-C here: nothing new is taken, the workers' points end
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
                objective.remember_score(self._points[k], value)

    def _take(self, batch: int, *, worker: bool = False) -> int | None:
        """Take the next unscored point of ``batch``: its index, or None when there is none.
        A worker's points are counted, so that this process knows how many to wait for."""
        state = self._state
        with self._lock:
            if state[_BATCH] != batch or state[_NEXT] >= state[_N]:
                return None
            k = state[_NEXT]
            state[_NEXT] = k + 1
            if worker:
                state[_TAKEN] += 1
        return k

    def _wait_for_workers(self) -> None:
        """Until every point a worker took is scored (or the worker is gone)."""
        state = self._state
        spins = 0
        while state[_DONE] != state[_TAKEN]:
            spins += 1
            if spins > 2000:  # a point takes long, or a worker is not running: stop spinning
                time.sleep(0.0002)
                if spins % 500 == 0 and not all(
                    process.is_alive() for process, _ in self._workers
                ):
                    raise self.died_error()

    def _scoring_error(self, worker: int) -> BaseException:
        try:
            message = self._workers[worker][1].recv()
        except (EOFError, OSError):
            return self.died_error()
        return message[1]

    def died_error(self, consequence: str = "") -> RuntimeError:
        """The error saying that a worker died (``consequence``: what that lost)."""
        codes = [
            process.exitcode for process, _ in self._workers if process.exitcode not in (None, 0)
        ]
        return RuntimeError(
            f"a worker process of the search died (exit code "
            f"{', '.join(map(str, codes)) or 'unknown'}: killed, or out of memory?){consequence}"
        )

    # -- in a worker ----------------------------------------------------------------------------
    def _work(self, index: int, connection: Any, parent_ends: list[Any]) -> None:
        """A forked worker: score the points it takes of each batch it is told of, and serve
        the hosted duty (first worker) — that first, since only this process can do it while any
        can score. Stops when told to (None), or when this pool's process is gone."""
        _parallel.die_with_parent(self._parent)
        _parallel.ignore_interrupts()
        for end in parent_ends:  # else the pipes would never report the other side's end
            end.close()
        duty = self._duty if index == 0 else None
        channels = [connection]
        if duty is not None:
            duty.in_worker()
            channels.insert(0, duty.channel)
        while True:
            ready = multiprocessing.connection.wait(channels)
            if duty is not None and duty.channel in ready:
                if not duty.serve():
                    channels.remove(duty.channel)
                    duty = None
                continue
            try:
                message = connection.recv()
            except EOFError:
                return
            if message is None:
                break
            self._score_taken(index, connection, message[1], message[2])
        if duty is not None:
            duty.end()

    def _score_taken(self, index: int, connection: Any, batch: int, rows: int | None) -> None:
        state, lock = self._state, self._lock
        objective = self._scorer(rows)
        while (k := self._take(batch, worker=True)) is not None:
            try:
                self._times[k, 0] = time.time()
                self._scores[k] = objective.evaluate(self._points[k].copy())
                self._times[k, 1] = time.time()
            except Exception as error:  # raised again in the parent, which stops the run
                with lock:
                    state[_NEXT] = state[_N]
                    state[_FAILED] = state[_FAILED] or index + 1
                _parallel.send_error(connection, "score-error", error)
            finally:
                with lock:
                    state[_DONE] += 1

    # -- life cycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Fork the workers (once)."""
        if self._workers or self._closed or self.n_workers == 0:
            return
        self.objective.warm_up()  # once here, inherited by every worker
        if getattr(self.objective, "fidelity", None) is not None:
            # The rungs' objectives (their row subsets) too: built after the fork, each worker
            # would build its own.
            self.objective.prepare_rungs()
        context = _parallel.worker_context()
        self._parent = os.getpid()
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
        duty = self._duty
        for index in range(self.n_workers):
            mine, theirs = context.Pipe()
            parent_ends = [mine, *(c for _, c in self._workers)]
            if duty is not None:
                parent_ends += duty.parent_ends() + (duty.worker_ends() if index else [])
            process = context.Process(
                target=self._work, args=(index, theirs, parent_ends), daemon=True
            )
            process.start()
            theirs.close()
            self._workers.append((process, mine))
        if self._duty is not None:
            self._duty.started()

    @property
    def started(self) -> bool:
        return bool(self._workers)

    def worker_alive(self, index: int) -> bool:
        return bool(self._workers) and self._workers[index][0].is_alive()

    def close(self) -> None:
        """Stop the workers (after the hosted duty has ended)."""
        if self._closed:
            return
        self._closed = True
        for _, connection in self._workers:
            try:
                _parallel.send_whole(connection, None)
            except (BrokenPipeError, OSError):
                pass
        for process, connection in self._workers:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()  # it ignores SIGTERM (``_parallel.ignore_interrupts``)
                process.join()
            connection.close()
        self._workers = []
