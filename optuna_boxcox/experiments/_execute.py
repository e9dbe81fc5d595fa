"""Running independent experiment tasks in this process or over forked worker processes."""

from __future__ import annotations

from collections.abc import Callable
import multiprocessing
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from collections.abc import Sequence

_WORK: Callable[[Any], Any] | None = None


def _init(work: Callable[[Any], Any]) -> None:
    global _WORK
    _WORK = work


def _call(task: Any) -> tuple[Any, Any]:
    assert _WORK is not None
    return task, _WORK(task)


def execute(
    tasks: Sequence[Any],
    work: Callable[[Any], Any],
    on_result: Callable[[Any, Any], None],
    *,
    n_jobs: int = 1,
    max_tasks: int | None = None,
) -> int:
    """Call ``work(task)`` for each task and hand each result to ``on_result(task, result)`` (in this
    process, as results arrive). Returns the number of tasks done.

    With ``n_jobs > 1`` the work runs in forked processes (the data are inherited, only tasks and
    results travel); ``on_result`` — which writes to the storage — stays in this process. With
    ``max_tasks`` the run stops after that many results (the rest is left for a later run).
    """
    todo = list(tasks) if max_tasks is None else list(tasks)[: max(0, int(max_tasks))]
    done = 0
    if n_jobs <= 1 or len(todo) < 2:
        for task in todo:
            on_result(task, work(task))
            done += 1
        return done
    context = multiprocessing.get_context("fork")
    with context.Pool(min(int(n_jobs), len(todo)), initializer=_init, initargs=(work,)) as pool:
        for task, result in pool.imap_unordered(_call, todo):
            on_result(task, result)
            done += 1
    return done
