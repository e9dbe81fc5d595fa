"""Work spread over processes: how workers are started, and independent tasks mapped over them.

Workers are forked: they inherit the data, the objective's warm caches and compiled kernels, so only
small messages travel. Forking needs a POSIX system; elsewhere (Windows) :func:`worker_context`
answers None and callers run in one process, with a warning saying so. Nothing here imports a
POSIX-only module at import time.
"""

from __future__ import annotations

from collections.abc import Callable
import multiprocessing
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn
import warnings

from optuna_boxcox._system import _stop

if TYPE_CHECKING:
    from collections.abc import Sequence


def worker_context() -> Any:
    """The multiprocessing context workers are forked from, or None where there is no fork."""
    if os.name != "posix" or "fork" not in multiprocessing.get_all_start_methods():
        return None
    return multiprocessing.get_context("fork")


def resolve_n_jobs(n_jobs: int, *, what: str = "n_jobs") -> int:
    """``n_jobs`` as a number of processes: -1 means one per CPU this process may run on; anything
    else must be ≥ 1, and more than those CPUs is cut down to them with a warning (each process
    computes all the time: more only share the same cores, each with its own memory). Without fork
    (not POSIX) it is 1, with a warning when more were asked for."""
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, int)
        or not (n_jobs >= 1 or n_jobs == -1)
    ):
        raise ValueError(f"{what} must be a positive integer or -1 (one per CPU), got {n_jobs!r}")
    cores = usable_cores()
    if n_jobs == -1:
        n_jobs = cores
    elif n_jobs > cores:
        warnings.warn(
            f"{what}={n_jobs} is more than the {cores} CPU core(s) this process may use; "
            f"running {cores} process(es)",
            RuntimeWarning,
            stacklevel=3,
        )
        n_jobs = cores
    if n_jobs > 1 and worker_context() is None:
        warnings.warn(
            f"{what}={n_jobs} needs worker processes forked from this one, which "
            f"{sys.platform} cannot do; running in this process only",
            RuntimeWarning,
            stacklevel=3,
        )
        return 1
    return n_jobs


def resolve_threads(n_jobs: int, *, what: str = "n_jobs") -> int:
    """``n_jobs`` as threads of ``study.optimize``: -1 one per CPU this process may run on, more
    than those cut down to them with a warning (Optuna would start as many as asked)."""
    if (
        isinstance(n_jobs, bool)
        or not isinstance(n_jobs, int)
        or not (n_jobs >= 1 or n_jobs == -1)
    ):
        raise ValueError(f"{what} must be a positive integer or -1 (one per CPU), got {n_jobs!r}")
    cores = usable_cores()
    if n_jobs > cores:
        warnings.warn(
            f"{what}={n_jobs} is more than the {cores} CPU core(s) this process may use; "
            f"running {cores} thread(s)",
            RuntimeWarning,
            stacklevel=3,
        )
    return cores if n_jobs == -1 else min(n_jobs, cores)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, e.g. a container's or taskset's
    share), else all the machine has."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def ignore_interrupts() -> None:
    """In a worker: leave Ctrl-C — and SIGTERM and SIGHUP, which the command handles like it —
    to the parent, which stops handing out work and closes us."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


def die_with_parent(parent: int) -> None:
    """In a forked worker: end when the parent process ``parent`` ends, however it ends.

    A worker left behind by a parent killed with -9 would go on holding the database and its
    memory, and, ignoring Ctrl-C, would have to be found and killed by hand. On Linux the kernel
    sends the worker SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere a
    thread notices within a second that the worker was handed to another parent.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before the signal was asked for
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def send_error(connection: Any, kind: str, error: BaseException, *extra: Any) -> None:
    """Send ``(kind, error, *extra)`` to the parent; an error that does not pickle goes as a
    RuntimeError with its type and message."""
    try:
        connection.send((kind, error, *extra))
    except Exception:
        connection.send((kind, RuntimeError(f"{type(error).__name__}: {error}"), *extra))


#: The signals a run turns into a clean stop (see ``_runner._interrupt``).
_STOPPING = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def send_whole(connection: Any, message: Any) -> None:
    """``connection.send(message)``, whole even when a Ctrl-C (or SIGTERM, SIGHUP) comes while it
    is written: those signals are held until the message is in the pipe, then handled.

    A message of more than 16 KiB is written as a length header and then the payload; interrupted
    in between (or within a long payload), it left the reader waiting for bytes that never came,
    or reading the next message as the rest of this one — a search stopped by Ctrl-C then hung
    waiting for its writer. Elsewhere than in the main thread of a POSIX process it just sends.
    """
    payload = ForkingPickler.dumps(message)
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not (
        threading.main_thread()
    ):
        connection.send_bytes(payload)
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        connection.send_bytes(payload)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def enlarge_pipe(connection: Any, size: int = 1 << 20) -> None:
    """Room for ``size`` bytes in a pipe (Linux), so that a writer does not wait for its reader."""
    try:
        import fcntl

        fcntl.fcntl(connection.fileno(), fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError):  # not Linux, or above the system's limit
        pass


# -- independent tasks ----------------------------------------------------------------------------
def map_tasks(
    tasks: Sequence[Any],
    work: Callable[[Any], Any],
    on_result: Callable[[Any, Any], None],
    *,
    n_jobs: int = 1,
    max_tasks: int | None = None,
) -> int:
    """Call ``work(task)`` for each task and hand each result to ``on_result(task, result)`` in this
    process, as results arrive. Returns the number of tasks done.

    With ``n_jobs > 1`` the work runs in forked processes (the data are inherited, only tasks and
    results travel); ``on_result`` — which writes to the storage — stays in this process. With
    ``max_tasks`` the run stops after that many results (the rest is left for a later run).

    Each worker talks to this process through a pipe of its own. Workers that share a queue share
    its lock: ``timeout``'s SIGTERM, sent to the whole process group, killed a worker of
    multiprocessing's pool while it held the lock of the results queue, and the parent, stopping,
    waited for that lock for ever. A worker that dies here holds nothing another process waits
    for; the run stops (with the caller's KeyboardInterrupt when a stop was asked for).
    """
    todo = list(tasks) if max_tasks is None else list(tasks)[: max(0, int(max_tasks))]
    n_jobs = resolve_n_jobs(n_jobs)
    done = 0
    if n_jobs <= 1 or len(todo) < 2:
        for task in todo:
            on_result(task, work(task))
            done += 1
        return done
    context = worker_context()
    waiting = iter(todo)
    workers: list[_TaskWorker] = []
    stopped_early = True
    try:
        for _ in range(min(n_jobs, len(todo))):
            workers.append(_TaskWorker(context, work))
        busy = {worker.connection: worker for worker in workers if worker.give(waiting)}
        while busy:
            for connection in wait(list(busy)):
                worker = busy.pop(connection)
                task, result = worker.take()
                on_result(task, result)
                done += 1
                if worker.give(waiting):
                    busy[connection] = worker
        stopped_early = False
    finally:
        for worker in workers:
            worker.close(at_once=stopped_early)
    return done


class _TaskWorker:
    """A forked process that runs ``work`` on the tasks given to it one at a time, over a pipe of
    its own."""

    def __init__(self, context: Any, work: Callable[[Any], Any]) -> None:
        self.connection, theirs = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(work, theirs, self.connection, os.getpid()), daemon=True
        )
        self.process.start()
        theirs.close()
        self.task: Any = None

    def give(self, waiting: Any) -> bool:
        """Send the next waiting task, if any is left."""
        self.task = next(waiting, _NONE_LEFT)
        if self.task is _NONE_LEFT:
            return False
        try:
            self.connection.send((True, self.task))
        except OSError:
            self._died()
        return True

    def take(self) -> tuple[Any, Any]:
        """The task this worker was given and its result (its error raised here)."""
        try:
            kind, value = self.connection.recv()
        except (EOFError, OSError):
            self._died()
        if kind == "error":
            raise value
        return self.task, value

    def _died(self) -> NoReturn:
        if _stop.requested():  # killed with this process by the signal that stops it
            raise KeyboardInterrupt
        self.process.join(1.0)
        raise RuntimeError(
            f"a worker process ended without its result (exit code {self.process.exitcode}; "
            "killed, or out of memory?)"
        )

    def close(self, *, at_once: bool) -> None:
        """Tell the worker to end (``at_once``: end it with SIGTERM, then SIGKILL) and wait."""
        if not at_once:
            try:
                self.connection.send((False, None))
            except OSError:
                pass
        else:
            self.process.terminate()
        self.process.join(5.0)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self.connection.close()


_NONE_LEFT = object()


def _serve(work: Callable[[Any], Any], connection: Any, parents: Any, parent: int) -> None:
    parents.close()
    die_with_parent(parent)
    ignore_interrupts()
    # The parent ends a worker of a run stopped early with SIGTERM: then at once.
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            more, task = connection.recv()  # (False, None): no task is left
        except (EOFError, OSError):
            return
        if not more:
            return
        try:
            connection.send(("ok", work(task)))
        except Exception as error:  # the work's, or a result that does not pickle
            send_error(connection, "error", error)
