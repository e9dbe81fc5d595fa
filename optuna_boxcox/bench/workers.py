"""k batched workers on one PostgreSQL study against one, beside the machine's own ceiling
(``optuna-boxcox bench --sections workers``).

Each run starts k processes together (:mod:`optuna_boxcox.bench.workers_child`), each calling
:func:`optuna_boxcox.optimize` — the runner ``search`` uses — on one study, and releases them
together once all are ready (imports, data, objective, a storage connection: the start-up). It
is timed whole, from the first start to the last exit, and from the release on. The speed-up is
the one worker's time over k workers'. Every run is checked: each position of the plan COMPLETE
exactly once, nothing left RUNNING, and the same Λopt and value as the one worker found.

The *ceiling* is what the machine and the database allow right now: the same number of
evaluations (the one worker's) done by one process, against the same split over k processes
side by side — the same start-up, data, objective and storage connection, no plan and no claims.
A fraction of 1 means the workers lose nothing to coordination.

Two classifiers: :class:`SleepClassifier`, whose fit sleeps (no CPU, so 8 processes on 2 cores
stand in for 8 machines), and the paper's SVC (CPU-bound: its ceiling is the machine's cores).

The coordinate search scores one sweep (one feature's grid) at a time, and a sweep's points
depend on where the sweeps before it left Λopt: were every sweep to wait for its last point, k
workers would gain at most the new fits of a sweep over the rounds k workers need for them (10
new fits over 8 workers take 2 rounds, 5×). The table's ``sweeps`` column is that bound for the
plan measured (from the one worker's trials); workers that score ahead past the sweep barrier
(:mod:`optuna_boxcox._runner._ahead`) can pass it, and the ``fits`` column counts what they
scored for an outcome that did not come.
"""

from __future__ import annotations

from collections import Counter
import contextlib
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
import glob
import json
import math
import os
from pathlib import Path
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING
from typing import Any
import uuid

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin

if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Sequence


class SleepClassifier(ClassifierMixin, BaseEstimator):
    """A nearest-centroid classifier whose fit also sleeps ``seconds``: an expensive classifier
    that uses no CPU. Its predictions depend on the data (so on Λ), as a real classifier's do,
    and the search's plan follows the same path in every run."""

    def __init__(self, seconds: float = 0.5) -> None:
        self.seconds = seconds

    def fit(self, X: Any, y: Any) -> SleepClassifier:
        time.sleep(self.seconds)
        X = np.asarray(X, dtype=float)
        self.classes_, labels = np.unique(np.asarray(y), return_inverse=True)
        self.centroids_ = np.stack(
            [X[labels == k].mean(axis=0) for k in range(len(self.classes_))]
        )
        return self

    def predict(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        distances = ((X[:, None, :] - self.centroids_[None, :, :]) ** 2).sum(axis=2)
        return self.classes_[distances.argmin(axis=1)]


@dataclass
class WorkersCase:
    """One search that k workers share: data, classifier and the coordinate sampler's plan."""

    #: ``"sleep"`` (:class:`SleepClassifier`) or a classifier of the paper by name (``"svc"``).
    classifier: str
    rows: int
    features: int
    #: Seconds a sleep classifier's fit sleeps.
    seconds: float = 0.5
    #: A coordinate sampler of the registry (``iterative``, ``combined2``, …) and its settings.
    sampler: str = "iterative"
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    @property
    def label(self) -> str:
        what = f"sleep {self.seconds:g} s" if self.classifier == "sleep" else self.classifier
        settings = "".join(f" {k}={v}" for k, v in self.settings.items())
        return f"{what}, {self.rows}×{self.features}, {self.sampler}{settings}"


def case_data(case: WorkersCase) -> tuple[np.ndarray, np.ndarray]:
    """The scale generator's data (:func:`~optuna_boxcox.bench.scale.scale_data`), first
    ``case.features`` columns."""
    from optuna_boxcox.bench.scale import scale_data

    if not 1 <= case.features <= 30:
        raise ValueError(f"features must be between 1 and 30, got {case.features}")
    X, y = scale_data(case.rows)
    return X[:, : case.features], y


def case_objective(case: WorkersCase) -> Any:
    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox.classifiers import make_classifier

    X, y = case_data(case)
    if case.classifier == "sleep":
        estimator: Any = SleepClassifier(case.seconds)
    else:
        estimator = make_classifier(case.classifier)
    return BoxCoxObjective(X, y, estimator)


def case_sampler(case: WorkersCase) -> Any:
    from optuna_boxcox import make_sampler
    from optuna_boxcox.samplers import CoordinateGridSampler

    sampler = make_sampler(case.sampler, case.seed, **case.settings)
    if not isinstance(sampler, CoordinateGridSampler):
        raise ValueError(f"the workers bench runs coordinate samplers, not {case.sampler!r}")
    return sampler


# -- a throw-away PostgreSQL server ----------------------------------------------------------------


def postgres_bindir() -> str | None:
    """The folder of the newest installed PostgreSQL server binaries (Debian's layout), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(found[-1]) if found else None


def _as_server_user(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; Debian's package brings a 'postgres' user.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


class TemporaryPostgres:
    """A PostgreSQL server on a free loopback port, in a scratch folder, gone after ``with``.

    ``url``: a database of its own, for SQLAlchemy with psycopg.
    """

    def __init__(self) -> None:
        bindir = postgres_bindir()
        if bindir is None:
            raise RuntimeError(
                "no PostgreSQL server binaries under /usr/lib/postgresql (install Debian's "
                "postgresql), or pass --workers-storage URL of a server"
            )
        self.bindir = bindir
        self.url = ""

    def _run(self, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            _as_server_user(list(command)), capture_output=True, text=True, timeout=120
        )

    def __enter__(self) -> TemporaryPostgres:
        import psycopg

        self.root = tempfile.mkdtemp(prefix="optuna-boxcox-bench-pg-")
        self.data = os.path.join(self.root, "data")
        sockets = os.path.join(self.root, "run")
        os.makedirs(sockets)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(sockets, "postgres")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        init = self._run(
            f"{self.bindir}/initdb", "-D", self.data, "--auth=trust", "-U", "postgres"
        )
        if init.returncode != 0:
            shutil.rmtree(self.root, ignore_errors=True)
            raise RuntimeError(f"initdb failed: {init.stderr.strip()[:300]}")
        options = (
            f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c max_connections=200 "
            "-c fsync=off"
        )
        log = os.path.join(self.root, "log")
        start = self._run(
            f"{self.bindir}/pg_ctl", "-D", self.data, "-o", options, "-l", log, "-w", "start"
        )
        if start.returncode != 0:
            shutil.rmtree(self.root, ignore_errors=True)
            raise RuntimeError(f"PostgreSQL could not start: {start.stderr.strip()[:300]}")
        with psycopg.connect(
            host="127.0.0.1", port=port, user="postgres", dbname="postgres", autocommit=True
        ) as connection:
            connection.execute('CREATE DATABASE "bench"')
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/bench"
        return self

    def __exit__(self, *exc: object) -> None:
        self._run(f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


# -- the runs ----------------------------------------------------------------------------------------


@dataclass
class Started:
    """k child processes started together, released together once all were ready."""

    #: Seconds from the first start until every child was ready to evaluate (imports, data,
    #: objective, storage connection).
    startup: float
    #: Seconds from their release until the last one ended.
    working: float
    #: Fits each child made.
    fits: list[int]

    @property
    def seconds(self) -> float:
        """The whole commands' time."""
        return self.startup + self.working

    @property
    def evaluations(self) -> int:
        return sum(self.fits)


def _start(jobs: Sequence[dict[str, Any]], cwd: Path) -> Started:
    """Run one child per job; release them together when all are ready; wait for all.

    Released together, every worker of a run starts on the plan at once: k processes starting
    on two shared cores take from one to tens of seconds to import and load, and workers that
    join one by one would measure that spread, not how they share the plan.
    """
    tick = time.perf_counter()
    children, errors = [], []
    try:
        for i, job in enumerate(jobs):
            errors.append(open(cwd / f"child-{i}.err", "w+"))  # noqa: SIM115 (closed below)
            children.append(
                subprocess.Popen(
                    [sys.executable, "-m", "optuna_boxcox.bench.workers_child", json.dumps(job)],
                    cwd=cwd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors[-1],
                    text=True,
                )
            )
        for child, error in zip(children, errors):
            if child.stdout.readline().strip() != "ready":
                child.wait()
                error.seek(0)
                raise RuntimeError(f"a workers bench process failed:\n{error.read()[-2000:]}")
        released = time.perf_counter()
        for child in children:
            child.stdin.write("go\n")
            child.stdin.close()
        outputs = []
        for child in children:  # stdout is the only pipe: reading it to its end cannot block
            outputs.append(child.stdout.read())
            child.wait()
        ended = time.perf_counter()
        for child, error in zip(children, errors):
            if child.returncode != 0:
                error.seek(0)
                raise RuntimeError(f"a workers bench process failed:\n{error.read()[-2000:]}")
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        for error in errors:
            error.close()
    fits = [json.loads(out.strip().splitlines()[-1])["fits"] for out in outputs]
    return Started(released - tick, ended - released, fits)


def run_workers(case: WorkersCase, k: int, url: str, cwd: Path) -> tuple[Started, str]:
    """k workers on a new study of ``url``: the run and the study's name."""
    import optuna

    from optuna_boxcox.storage import open_storage

    name = f"workers-{case.classifier}-{k}-{uuid.uuid4().hex[:8]}"
    # The study exists before the workers start, as when they join one (``worker``).
    optuna.create_study(storage=open_storage(url), study_name=name, direction="maximize")
    job = {"mode": "search", "case": asdict(case), "storage": url, "study": name}
    return _start([job] * k, cwd), name


def run_ceiling(case: WorkersCase, k: int, evaluations: int, url: str, cwd: Path) -> Started:
    """``evaluations`` of the case's objective split over k processes side by side."""
    share = math.ceil(evaluations / k)
    jobs = [{"mode": "ceiling", "case": asdict(case), "storage": url, "evaluations": share}] * k
    return _start(jobs, cwd)


@dataclass
class Checked:
    """What a finished study says about a run."""

    once: bool  # every plan position COMPLETE exactly once, none RUNNING
    params: dict[str, float] | None
    value: float | None
    #: New fits of each sweep, in plan order (a λ scored before costs no fit).
    sweep_fits: list[int]


def check_study(case: WorkersCase, url: str, name: str) -> Checked:
    import optuna
    from optuna.trial import TrialState

    from optuna_boxcox.samplers._ledger import POSITION_KEY
    from optuna_boxcox.storage import open_storage

    study = optuna.load_study(study_name=name, storage=open_storage(url))
    sampler = case_sampler(case)
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    positions = Counter(t.system_attrs.get(POSITION_KEY) for t in complete)
    budget = sampler.budget(case.features)
    once = (
        sorted(positions) == list(range(budget))
        and set(positions.values()) == {1}
        and not any(t.state == TrialState.RUNNING for t in trials)
    )
    result = sampler.result(study)
    seen: set[tuple[float, ...]] = set()
    fits: dict[tuple[int, str], int] = {}
    for t in sorted(complete, key=lambda t: t.system_attrs.get(POSITION_KEY, -1)):
        point = tuple(t.params[n] for n in sorted(t.params))
        sweep = (t.user_attrs.get("epoch", -1), t.user_attrs.get("direction", ""))
        fits[sweep] = fits.get(sweep, 0) + (point not in seen)
        seen.add(point)
    return Checked(once, result.params, result.best_value, list(fits.values()))


def sweep_bound(sweep_fits: Sequence[int], k: int) -> float:
    """The speed-up k workers can reach at most when every sweep waits for its last fit."""
    return sum(sweep_fits) / max(1, sum(math.ceil(n / k) for n in sweep_fits))


def measure(
    case: WorkersCase,
    ks: Sequence[int],
    url: str,
    workdir: Path,
    *,
    repeats: int = 1,
    report: Any = None,
) -> list[dict[str, Any]]:
    """One worker, then for each k: the ceiling and k workers, ``repeats`` times alternating
    (the figures are medians, a fraction is the median speed-up over the median ceiling;
    ``working_range`` and ``per_k`` give the runs' spread). ``report(row)`` sees each row."""
    cwd = workdir / "workers"
    cwd.mkdir(parents=True, exist_ok=True)
    one, name = run_workers(case, 1, url, cwd)
    reference = check_study(case, url, name)
    evaluations = one.evaluations
    alone = run_ceiling(case, 1, evaluations, url, cwd)
    rows = []
    for k in [1, *ks]:
        if k == 1:
            runs, checks, ceilings = [one], [reference], [alone]
        else:
            runs, checks, ceilings = [], [], []
            for _ in range(repeats):
                ceilings.append(run_ceiling(case, k, evaluations, url, cwd))
                run, name = run_workers(case, k, url, cwd)
                runs.append(run)
                checks.append(check_study(case, url, name))
        whole = [one.seconds / r.seconds for r in runs]
        machine = [alone.seconds / c.seconds for c in ceilings]
        working = [one.working / r.working for r in runs]
        working_machine = [alone.working / c.working for c in ceilings]
        run = runs[int(np.argsort([r.working for r in runs])[len(runs) // 2])]  # the median run
        row = {
            "case": case.label,
            "k": k,
            "runs": len(runs),
            "startup": statistics.median(r.startup for r in runs),
            "seconds": statistics.median(r.seconds for r in runs),
            "speedup": statistics.median(whole),
            "ceiling": statistics.median(machine),
            "fraction": statistics.median(whole) / statistics.median(machine),
            "working": statistics.median(r.working for r in runs),
            "working_range": (min(r.working for r in runs), max(r.working for r in runs)),
            "working_speedup": statistics.median(working),
            "working_ceiling": statistics.median(working_machine),
            "working_fraction": statistics.median(working) / statistics.median(working_machine),
            "per_k": [w / k for w in working],
            "sweeps": sweep_bound(reference.sweep_fits, k),
            "fits": run.evaluations,
            "plan_fits": evaluations,
            "once": all(c.once for c in checks),
            "same": all(
                (c.params, c.value) == (reference.params, reference.value) for c in checks
            ),
        }
        rows.append(row)
        if report is not None:
            report(row)
    return rows


def format_workers_rows(rows: Sequence[dict[str, Any]], *, header: bool = True) -> str:
    head = (
        f"{'':>2} {'':>8} {'whole commands':^35} | {'once all are ready':^35} |\n"
        f"{'k':>2} {'start-up':>8} {'seconds':>8} {'speed-up':>8} {'ceiling':>7} {'fraction':>8} | "
        f"{'seconds':>8} {'speed-up':>8} {'ceiling':>7} {'fraction':>8} | "
        f"{'sweeps':>6} {'fits':>9} {'once':>5} {'same Λ':>6}"
    )
    lines = [head, "-" * len(head.splitlines()[-1])] if header else []
    for r in rows:
        fits = f"{r['fits']}/{r['plan_fits']}"
        lines.append(
            f"{r['k']:>2} {r['startup']:>8.1f} {r['seconds']:>8.1f} {r['speedup']:>8.2f} "
            f"{r['ceiling']:>7.2f} {r['fraction']:>8.2f} | {r['working']:>8.1f} "
            f"{r['working_speedup']:>8.2f} {r['working_ceiling']:>7.2f} "
            f"{r['working_fraction']:>8.2f} | {r['sweeps']:>6.2f} {fits:>9} {r['once']!s:>5} "
            f"{r['same']!s:>6}"
        )
        if r.get("runs", 1) > 1:
            low, high = r["working_range"]
            per_k = ", ".join(f"{x:.2f}" for x in r["per_k"])
            lines.append(
                f"{'':>2} ({r['runs']} runs: once all are ready {low:.1f}-{high:.1f} s, "
                f"speed-up/k {per_k})"
            )
    return "\n".join(lines)


@contextlib.contextmanager
def temporary_storage(url: str | None) -> Iterator[str]:
    """``url``, or a throw-away local server's database while the ``with`` block runs."""
    if url:
        yield url
        return
    with TemporaryPostgres() as server:
        yield server.url


__all__ = [
    "Checked",
    "SleepClassifier",
    "TemporaryPostgres",
    "WorkersCase",
    "case_objective",
    "check_study",
    "format_workers_rows",
    "measure",
    "postgres_bindir",
    "run_ceiling",
    "run_workers",
    "sweep_bound",
]
