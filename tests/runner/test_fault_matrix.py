"""Fault matrix: cooperating ``search`` workers killed or interrupted at random moments, then
resumed, end with the study an undisturbed run writes — judged from the storage alone.

A run starts one, two or three ``optuna-boxcox search --n-jobs 2`` processes on one study (a SQLite
file or a PostgreSQL database) and, at seeded random moments (a time after the start, or once the
storage holds some number of trials), sends SIGKILL or SIGINT to a random one of those
processes or of their forked children. The others run to their end; then the same command runs
once more to completion. The storage, read with Optuna's ``get_all_trials`` only, is the oracle:

- every plan position (trial system attribute ``POSITION_KEY``) is COMPLETE exactly once, with the
  params and value the undisturbed run has at that position;
- the resumed run prints the undisturbed run's best value and λ;
- every report a process printed agrees with the storage when it exited: a plan it calls finished
  has every position COMPLETE and its trial count lies between the plan's size and the stored
  count (equals it when no other worker ran), it leaves no trial of its own RUNNING, and the last
  process to leave leaves no RUNNING trial at all; Ctrl-C ends with one line saying so;
- a process ends with its children: none is alive 5 s after its parent ended (however it ended),
  and nothing prints a traceback.

Every wait is bounded, so a hang fails. The seed (printed in every failure message) fixes the
faults; when they land depends on the machine, so a rerun explores the same plan of faults, not
necessarily the same interleaving. CI runs a few seeds; ``-m slow`` runs the whole matrix.

The widened matrix mixes batched ``search`` processes with trial-by-trial ``worker`` processes on
one study, sends SIGTERM as well as SIGKILL and SIGINT (import time included), and on PostgreSQL
stops a worker (SIGSTOP) for longer than the heartbeat's grace period before it continues it
(SIGCONT): a machine that vanished and came back, whose late writes must neither double nor
overwrite a position. ``FAULT_MATRIX_LOG=<file>`` appends each of its runs' events there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field
import os
from pathlib import Path
import random
import re
import signal
import subprocess
import sys
import time

from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import pytest
from shared import skip_if_ignored

from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox.samplers._ledger import POSITION_KEY


@pytest.fixture(autouse=True)
def _signals_heard():
    """The matrix sends SIGINT and SIGTERM: a run that ignores them cannot show their handling."""
    skip_if_ignored("SIGINT", "SIGTERM")


#: The searched case: small enough that a run takes seconds, large enough (880 trials in batches
#: of 11–22) that a fault often lands while trials are being scored, claimed and written.
CASE = (
    "--dataset",
    "breast_cancer",
    "--features",
    "10",
    "--classifier",
    "knn",
    "--sampler",
    "shift",
    "--seed",
    "7",
    "--no-figures",
)
#: A search that lasts minutes (all 30 features, scored by 5-fold CV: about 2 min on a quiet
#: machine), for the tests that must catch it mid-run however fast the machine is.
LONG_CASE = (*CASE[:2], *CASE[4:], "--cv", "5")
#: Scoring processes per worker: each ``search`` forks one child that scores and writes.
N_JOBS = 2
#: A parent's children must be gone this long after it ended.
ORPHAN_GRACE = 5.0
#: Bounds on every wait: a worker phase or a resume that takes longer is a hang.
RUN_TIMEOUT = 180.0
#: How often the harness looks at processes (and, while a fault waits for progress, the storage).
TICK = 0.05


# -- processes, through /proc --------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Proc:
    """A process by pid and start time (so that a reused pid is not taken for it)."""

    pid: int
    start: str

    @classmethod
    def of(cls, pid: int) -> Proc | None:
        stat = _stat(pid)
        return None if stat is None else cls(pid, stat[1])

    def alive(self) -> bool:
        stat = _stat(self.pid)
        return stat is not None and stat[1] == self.start and stat[0] != "Z"

    def children(self) -> list[Proc]:
        found = []
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return []
        for task in tasks:
            try:
                with open(f"/proc/{self.pid}/task/{task}/children") as f:
                    pids = f.read().split()
            except OSError:
                continue
            found += [p for p in map(Proc.of, map(int, pids)) if p is not None]
        return found

    def descendants(self) -> list[Proc]:
        found, todo = [], self.children()
        while todo:
            proc = todo.pop()
            found.append(proc)
            todo += proc.children()
        return found


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) of a process from /proc, or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]


def processes_running(url: str) -> list[Proc]:
    """Live processes whose command line names ``url``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if url.encode() not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        proc = Proc.of(int(entry))
        if proc is not None and proc.alive():
            found.append(proc)
    return found


def _owner_pid(trial: FrozenTrial) -> int | None:
    owner = trial.system_attrs.get(OWNER_KEY)  # host:pid:start-time
    parts = str(owner).split(":") if owner else []
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None


# -- the storage, read with Optuna only ----------------------------------------------------------


class Oracle:
    """Reads a study's trials straight from the storage (no table is ever created here)."""

    def __init__(self, url: str, study: str) -> None:
        self.url, self.study = url, study
        self._storage: RDBStorage | None = None

    def _study_id(self) -> int | None:
        """The study's id, or None while its database, tables or study do not exist yet."""
        if self._storage is None:
            if self.url.startswith("sqlite:///") and not Path(self.url[10:]).exists():
                return None
            try:
                self._storage = RDBStorage(
                    self.url,
                    engine_kwargs={"connect_args": {"timeout": 60}}
                    if self.url.startswith("sqlite")
                    else None,
                    skip_compatibility_check=True,
                    skip_table_creation=True,
                )
            except Exception:  # the database is being created
                return None
        try:
            return self._storage.get_study_id_from_name(self.study)
        except KeyError:
            return None
        except Exception:  # tables not created yet
            return None

    def trials(self) -> list[FrozenTrial]:
        """All trials of the study ([] while there is no study)."""
        study_id = self._study_id()
        return [] if study_id is None else self._storage.get_all_trials(study_id, deepcopy=False)

    def running(self) -> list[FrozenTrial]:
        """The study's RUNNING trials (a query filtered by state: cheap while few run)."""
        study_id = self._study_id()
        if study_id is None:
            return []
        return self._storage.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,))

    def has_trial(self, number: int) -> bool:
        """Whether the study has a trial numbered ``number`` (one indexed lookup)."""
        study_id = self._study_id()
        if study_id is None:
            return False
        try:
            self._storage.get_trial_id_from_study_id_trial_number(study_id, number)
        except KeyError:
            return False
        return True

    def close(self) -> None:
        if self._storage is not None:
            self._storage.engine.dispose()


def positions(trials: list[FrozenTrial]) -> Counter:
    """How often each plan position is COMPLETE."""
    return Counter(
        t.system_attrs[POSITION_KEY]
        for t in trials
        if t.state == TrialState.COMPLETE and t.system_attrs.get(POSITION_KEY, -1) >= 0
    )


def by_position(trials: list[FrozenTrial]) -> dict[int, tuple[dict, float]]:
    return {
        t.system_attrs[POSITION_KEY]: (t.params, t.value)
        for t in trials
        if t.state == TrialState.COMPLETE and t.system_attrs.get(POSITION_KEY, -1) >= 0
    }


# -- what a process printed ----------------------------------------------------------------------


@dataclass
class Report:
    """The summary ``search`` prints: trial count, whether the plan is finished, best and λ."""

    n_trials: int | None = None
    finished: bool = False
    best: str | None = None
    lambdas: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> Report:
        report = cls()
        if m := re.search(r"^study\s+\S+\s+\((\d+) trials", text, re.M):
            report.n_trials = int(m.group(1))
        if m := re.search(r"Box-Cox search (\S+)", text):
            report.best = m.group(1)
        report.finished = report.n_trials is not None and "plan is not finished" not in text
        if "λ by feature:" in text:
            for line in text.split("λ by feature:", 1)[1].splitlines()[2:]:
                if not line.startswith("  "):
                    break
                *name, lam, _ = line.split()  # names may hold spaces ("mean radius")
                report.lambdas[" ".join(name)] = lam
        return report


def interrupted_while_imported(err: str) -> bool:
    """Whether ``err`` is Python's report of a KeyboardInterrupt raised while it imported the
    command: the package's frames are all modules' top level (none is a function, such as the
    command's entry point, which handles Ctrl-C)."""
    lines = err.strip().splitlines()
    frames = re.findall(r'^  File "([^"]+)", line \d+, in (\S+)$', err, re.M)
    ours = [name for path, name in frames if "/optuna_boxcox/" in path]
    return bool(lines and lines[-1] == "KeyboardInterrupt" and frames) and all(
        name == "<module>" for name in ours
    )


def search_command(url: str, study: str, case: tuple[str, ...] = CASE) -> list[str]:
    return [
        sys.executable,
        "-m",
        "optuna_boxcox.cli",
        "search",
        *case,
        "--n-jobs",
        str(N_JOBS),
        "--storage",
        url,
        "--study-name",
        study,
    ]


#: The widened matrix's processes: the command line as ``python -m optuna_boxcox.cli`` runs it,
#: with a heartbeat of 1 s on PostgreSQL (grace 4 s) instead of 15 s, so that a worker stopped for
#: :data:`STOP_SECONDS` is taken for a vanished machine while it is stopped. The storage module is
#: imported inside ``main``, where a Ctrl-C or SIGTERM at import time is still the command's.
LAUNCH = """
from optuna_boxcox import cli
command = cli.main
def main(argv=None):
    import optuna_boxcox.storage
    optuna_boxcox.storage.HEARTBEAT_SECONDS = 1
    return command(argv)
cli.main = main
cli.run()
"""
#: How long a stopped worker stays stopped: longer than the heartbeat's grace period.
STOP_SECONDS = 8.0
#: The widened matrix's bound on one phase (workers, or the resume), progress or not.
STALL_CAP = 1200.0


def launch_command(kind: str, url: str) -> list[str]:
    """A ``search`` (batched) or ``worker`` (trial by trial) process of the widened matrix."""
    if kind == "search":
        arguments = ["search", *CASE, "--n-jobs", str(N_JOBS)]
    else:
        arguments = ["worker"]
    return [sys.executable, "-c", LAUNCH, *arguments, "--storage", url, "--study-name", "fm"]


class Worker:
    """One ``search`` or ``worker`` process, the processes it forked (seen so far), and how it
    ended."""

    def __init__(self, command: list[str], folder: Path, name: str, kind: str = "search") -> None:
        self.name, self.kind = name, kind
        self.out, self.err = folder / f"{name}.out", folder / f"{name}.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.popen = subprocess.Popen(command, stdout=out, stderr=err)
        self.root = Proc.of(self.popen.pid)
        self.tree: set[Proc] = set()  # descendants seen while it ran
        self.ended: float | None = None
        self.signals: list[str] = []  # signals the harness sent to this tree
        self.snapshot: list[FrozenTrial] | None = None  # the storage when it exited
        self.alone = False  # no other worker was alive when it exited
        self.solo = False  # no other worker was alive at any moment while it ran

    def look(self) -> bool:
        """Record its children; True once, when it is seen to have ended."""
        if self.ended is not None:
            return False
        if self.root is not None:
            self.tree.update(self.root.descendants())
        if self.popen.poll() is None:
            return False
        self.ended = time.monotonic()
        return True

    def live(self) -> list[Proc]:
        """Its processes still alive: the root first, then its children by pid."""
        procs = [] if self.root is None or not self.root.alive() else [self.root]
        return procs + sorted(p for p in self.tree if p.alive())

    def kill(self) -> None:
        """SIGKILL whatever of it is left (cleaning up after a failure)."""
        for proc in self.live():
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass

    def stdout(self) -> str:
        return self.out.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def tail(self) -> str:
        """Its exit status and last lines of stderr (from the first traceback, if any)."""
        err = self.stderr().replace("\r", "\n").strip().splitlines()
        first = next((k for k, line in enumerate(err) if "Traceback" in line), None)
        shown = err[max(0, first - 1) : first + 12] if first is not None else err[-4:]
        return f"{self.name} (exit {self.popen.returncode}): " + " | ".join(shown)


# -- the undisturbed run -------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    report: Report
    trials: dict[int, tuple[dict, float]]  # position → (params, value)
    seconds: float


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Reference:
    """One undisturbed single-process run of the case, shared by every run of the module (the
    outcome cannot depend on the storage, the number of workers or the faults)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('reference') / 'ref.db'}"
    tick = time.monotonic()
    done = subprocess.run(
        search_command(url, "ref"), capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    seconds = time.monotonic() - tick
    assert done.returncode == 0, f"the undisturbed run failed: {done.stderr[-2000:]}"
    oracle = Oracle(url, "ref")
    trials = oracle.trials()
    oracle.close()
    counts = positions(trials)
    assert counts and set(counts) == set(range(len(counts))) and max(counts.values()) == 1, (
        "the undisturbed run did not complete each plan position 0..n-1 once"
    )
    return Reference(Report.parse(done.stdout), by_position(trials), seconds)


# -- one run of the matrix -----------------------------------------------------------------------


@dataclass
class Fault:
    """A signal to send: at a moment after the start, or once the study has this many trials
    (whatever their state: claimed, or written in a batch)."""

    signal: signal.Signals
    target: float  # picks among the live processes, in [0, 1)
    at: float | None = None  # a fraction of the undisturbed run's time (start-up included)
    after_trials: int | None = None

    def describe(self) -> str:
        if self.signal == signal.SIGSTOP:
            return f"SIGSTOP of a worker for {STOP_SECONDS:.0f} s at {self.at:.2f}"
        if self.at is None:
            return f"{self.signal.name} at {self.after_trials} trials"
        return f"{self.signal.name} at {self.at:.2f} of the undisturbed run's time"


def plan_faults(rng: random.Random, n_positions: int) -> list[Fault]:
    faults = []
    for _ in range(rng.choice((1, 1, 2))):
        sig = signal.SIGKILL if rng.random() < 0.7 else signal.SIGINT
        if rng.random() < 0.5:
            faults.append(Fault(sig, rng.random(), at=rng.uniform(0.05, 1.0)))
        else:
            faults.append(Fault(sig, rng.random(), after_trials=rng.randrange(1, n_positions)))
    return faults


def plan_mix_faults(rng: random.Random, n_positions: int, stop: bool) -> list[Fault]:
    """The widened matrix's faults: SIGKILL, SIGINT or SIGTERM at any moment (import time
    included) or once the study holds some trials, and, with ``stop``, a worker stopped for
    :data:`STOP_SECONDS` (then continued)."""
    faults = []
    if stop:
        # As soon as a worker holds a running trial: a batched search finishes the plan in
        # seconds, so a worker holds trials mostly once the searches were stopped.
        faults.append(Fault(signal.SIGSTOP, rng.random(), at=0.0))
    for _ in range(rng.choice((1, 1, 2))):
        sig = rng.choice((signal.SIGKILL, signal.SIGINT, signal.SIGTERM))
        if rng.random() < 0.3:  # else mostly once workers have joined
            faults.append(Fault(sig, rng.random(), at=rng.uniform(0.0, 1.0)))
        else:
            faults.append(Fault(sig, rng.random(), after_trials=rng.randrange(1, n_positions)))
    return faults


@dataclass
class Run:
    """Workers on one study, faults sent to them, and every problem found, by kind."""

    seed: int
    url: str
    folder: Path
    reference: Reference
    workers: list[Worker] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.oracle = Oracle(self.url, "fm")
        self.t0 = time.monotonic()
        self.stopped: list[tuple[float, Worker, Proc]] = []  # (when to continue, worker, process)
        #: (kind, name) of processes to start once the study holds a trial (``worker`` joins an
        #: existing study).
        self.later: list[tuple[str, str]] = []
        self.launch = False  # the widened matrix's command lines (LAUNCH)
        self.seen = 0  # trials seen stored (the widened matrix's progress)
        #: Trials an interrupted worker left RUNNING for the next run to reap (see check_exit).
        self.in_flight: set[int] = set()

    def log(self, text: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:6.2f} s  {text}")

    def problem(self, kind: str, text: str) -> None:
        self.problems.append(f"[{kind}] {text}")

    def start(self, name: str, kind: str = "search", case: tuple[str, ...] = CASE) -> Worker:
        if self.launch:
            command = launch_command(kind, self.url)
        else:
            command = search_command(self.url, "fm", case)
        worker = Worker(command, self.folder, name, kind)
        for other in self.workers:  # neither it nor any running worker is alone any more
            if other.ended is None:
                other.solo = False
        worker.solo = all(w.ended is not None for w in self.workers)
        self.workers.append(worker)
        self.log(f"started {name} (pid {worker.popen.pid})")
        return worker

    def send(self, fault: Fault) -> None:
        if fault.signal == signal.SIGSTOP:
            self.stop(fault)
            return
        live = [(w, p) for w in self.workers for p in w.live()]
        if not live:
            self.log(f"{fault.describe()}: no process left")
            return
        worker, proc = live[int(fault.target * len(live))]
        role = "search" if proc == worker.root else "child"
        try:
            os.kill(proc.pid, fault.signal)
        except ProcessLookupError:
            self.log(f"{fault.describe()}: {worker.name} {role} {proc.pid} already gone")
            return
        worker.signals.append(f"{fault.signal.name} to {role}")
        self.log(f"{fault.describe()}: {fault.signal.name} to {worker.name} {role} {proc.pid}")

    def holding_worker(self) -> list[tuple[Worker, Proc]]:
        """The live ``worker`` processes that hold a running trial."""
        if not any(w.kind == "worker" and w.ended is None for w in self.workers):
            return []
        owners = {_owner_pid(t) for t in self.oracle.running()}
        return [
            (w, w.root)
            for w in self.workers
            if w.kind == "worker" and w.ended is None and w.root and w.root.pid in owners
        ]

    def stop(self, fault: Fault) -> None:
        """SIGSTOP to a ``worker`` process holding a running trial, SIGCONT
        :data:`STOP_SECONDS` later (see ``watch``)."""
        live = self.holding_worker()
        if not live:
            self.log(f"{fault.describe()}: no worker holds a trial")
            return
        worker, proc = live[int(fault.target * len(live))]
        try:
            os.kill(proc.pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        worker.signals.append("SIGSTOP")
        self.stopped.append((time.monotonic() + STOP_SECONDS, worker, proc))
        held = [t.number for t in self.oracle.running() if _owner_pid(t) == proc.pid]
        self.log(f"{fault.describe()}: SIGSTOP to {worker.name} {proc.pid}, holding {held}")

    def resume_stopped(self, now: float) -> None:
        for due, worker, proc in list(self.stopped):
            if now >= due:
                self.stopped.remove((due, worker, proc))
                try:
                    os.kill(proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    continue
                self.log(f"SIGCONT to {worker.name} {proc.pid}")

    def start_later(self) -> None:
        """Start the processes waiting for the study to hold a trial; drop them when every
        started process has ended without one."""
        if not self.later:
            return
        if self.oracle.has_trial(0):
            for kind, name in self.later:
                self.start(name, kind)
            self.later = []
        elif all(w.ended is not None for w in self.workers):
            self.log(f"never started {[name for _, name in self.later]}: no trial was stored")
            self.later = []

    def watch(self, faults: list[Fault]) -> bool:
        """Until every worker ended and its children had their grace: send the faults when due,
        read the storage as each worker exits, check for orphans. False on a hang."""
        faults = list(faults)
        orphan_checks: list[Worker] = []
        deadline = time.monotonic() + RUN_TIMEOUT
        while any(w.ended is None for w in self.workers) or orphan_checks or self.later:
            now = time.monotonic()
            self.resume_stopped(now)
            self.start_later()
            if now > deadline:
                running = [w.name for w in self.workers if w.ended is None]
                self.problem("hang", f"still running after {RUN_TIMEOUT:.0f} s: {running}")
                return False
            for worker in self.workers:
                if worker.look():
                    self.exited(worker)
                    orphan_checks.append(worker)
            for worker in list(orphan_checks):
                if not any(p.alive() for p in worker.tree):
                    orphan_checks.remove(worker)
                elif now - worker.ended >= ORPHAN_GRACE:
                    orphan_checks.remove(worker)
                    self.check_orphans(worker)
            if self.launch:
                # A worker left alone scores trial by trial, slowly on a loaded machine: a hang
                # is no new trial for RUN_TIMEOUT (and at most STALL_CAP in all).
                while self.oracle.has_trial(self.seen):
                    self.seen += 1
                    deadline = min(now + RUN_TIMEOUT, self.t0 + STALL_CAP)
            for fault in list(faults):
                if fault.signal == signal.SIGSTOP:
                    # A worker joins once the study holds a trial; it is stopped while it holds
                    # a running trial (which others then take over).
                    due = now - self.t0 >= fault.at * self.reference.seconds and bool(
                        self.holding_worker()
                    )
                elif fault.at is not None:
                    due = now - self.t0 >= fault.at * self.reference.seconds
                else:
                    due = self.oracle.has_trial(fault.after_trials - 1)
                if due:
                    faults.remove(fault)
                    self.send(fault)
            time.sleep(TICK)
        for fault in faults:
            self.log(f"{fault.describe()}: never due (the workers had ended)")
        self.check_strays()
        return True

    def exited(self, worker: Worker) -> None:
        worker.snapshot = self.oracle.trials()
        worker.alone = all(w.ended is not None for w in self.workers)
        code = worker.popen.returncode
        self.log(f"{worker.name} exited {code} ({len(worker.snapshot)} trials stored)")
        self.check_exit(worker)

    def check_exit(self, worker: Worker) -> None:
        """How the process ended, and what it printed, against the storage when it exited."""
        code, err, trials = worker.popen.returncode, worker.stderr(), worker.snapshot
        if code == -signal.SIGKILL:
            if not worker.signals:
                self.problem("crash", f"{worker.name} was killed, not by the harness")
            return
        if (
            code in (-signal.SIGINT, -signal.SIGTERM)
            and not err.strip()
            and any(signal.Signals(-code).name in s for s in worker.signals)
        ):
            # Ctrl-C in the first milliseconds, before Python installs its handler, ends any
            # Python program this way (silently, as the operating system's default does).
            self.log(f"{worker.name} was interrupted before Python could handle it")
            return
        if (
            code == -signal.SIGINT
            and any("SIGINT" in s for s in worker.signals)
            and interrupted_while_imported(err)
        ):
            # Ctrl-C while Python still imports the command, before any of its code can catch it:
            # Python prints the KeyboardInterrupt and ends by SIGINT, as for any Python program.
            self.log(f"{worker.name} was interrupted while Python imported it")
            return
        if "Traceback" in err:
            self.problem("traceback", f"{worker.name} printed a traceback: {worker.tail()}")
        if code in (130, 143):
            said = re.search(
                r"^optuna-boxcox: (?:interrupted|stopped by SIGTERM) after (\d+) trials", err, re.M
            )
            if not re.search(r"^optuna-boxcox: \S", err, re.M):
                self.problem(
                    "unclear", f"{worker.name} was interrupted and said nothing: {worker.tail()}"
                )
            elif said and int(said.group(1)) > len(trials):
                self.problem(
                    "report",
                    f"{worker.name} said 'interrupted after {said.group(1)} trials'; the storage "
                    f"had {len(trials)}",
                )
        elif code != 0:
            if not worker.signals:
                self.problem("crash", f"{worker.name} failed undisturbed: {worker.tail()}")
            elif not re.search(r"^optuna-boxcox: ", err, re.M):
                self.problem(
                    "unclear", f"{worker.name} failed with no one-line error: {worker.tail()}"
                )
        mine = {worker.root.pid} | {p.pid for p in worker.tree} if worker.root else set()
        left = [
            t.number for t in trials if t.state == TrialState.RUNNING and _owner_pid(t) in mine
        ]
        if left and worker.kind == "worker" and code in (130, 143) and len(left) == 1:
            # By design a trial-by-trial worker stopped by a signal leaves its one trial in
            # flight RUNNING, for the next run to reap (its owner is gone): checked at the end.
            self.log(f"{worker.name} left its trial in flight RUNNING: {left}")
            self.in_flight.update(left)
        elif left:
            self.problem(
                "running-left",
                f"{worker.name} exited {code} leaving its own trials RUNNING: {left[:10]}",
            )
        if code == 0 and worker.kind == "search":
            self.check_report(worker, trials)

    def check_report(self, worker: Worker, trials: list[FrozenTrial]) -> None:
        """A process that exited 0 printed a finished search that the storage holds."""
        report = Report.parse(worker.stdout())
        if report.n_trials is None:
            self.problem("report", f"{worker.name} exited 0 without a report")
            return
        if not report.finished:
            self.problem("report", f"{worker.name} exited 0 with its plan not finished")
            return
        # Trials are never deleted: a count read before the exit is at most the stored one, and
        # a finished plan's trials were all there when it was read.
        plan, stored = len(self.reference.trials), len(trials)
        if not plan <= report.n_trials <= stored or (worker.solo and report.n_trials != stored):
            self.problem(
                "report",
                f"{worker.name} reported a finished search of {report.n_trials} trials; the plan "
                f"has {plan} positions and the storage held {stored} when it exited"
                + (" (no other worker ran meanwhile)" if worker.solo else ""),
            )
        missing = set(self.reference.trials) - set(positions(trials))
        if missing:
            self.problem(
                "report",
                f"{worker.name} reported a finished search (best {report.best}, "
                f"{report.n_trials} trials) while {len(missing)} plan positions were not "
                f"COMPLETE, e.g. {sorted(missing)[:5]}",
            )
        expected = self.reference.report
        if (report.best, report.lambdas) != (expected.best, expected.lambdas):
            self.problem(
                "best",
                f"{worker.name} reported best {report.best} λ {report.lambdas}; undisturbed: "
                f"{expected.best} λ {expected.lambdas}",
            )
        running = [
            t.number
            for t in trials
            if t.state == TrialState.RUNNING and t.number not in self.in_flight
        ]
        if worker.alone and running:
            self.problem(
                "running-left",
                f"{worker.name}, the last process, exited 0 reporting a finished search with "
                f"{len(running)} trials RUNNING, e.g. {running[:5]}",
            )

    def check_orphans(self, worker: Worker) -> None:
        alive = [p.pid for p in worker.tree if p.alive()]
        if alive:
            self.problem(
                "orphan",
                f"{worker.name}'s children {alive} still alive {ORPHAN_GRACE:.0f} s after it "
                f"ended ({', '.join(worker.signals) or 'undisturbed'}, exit "
                f"{worker.popen.returncode})",
            )
            for pid in alive:  # they could still write: stop them before the resume
                os.kill(pid, signal.SIGKILL)

    def check_strays(self) -> None:
        """Once every worker ended: no process on this study is left, even a child forked and
        orphaned between two looks (a forked child keeps its parent's command line)."""
        last = max(w.ended for w in self.workers)
        while (strays := processes_running(self.url)) and time.monotonic() - last < ORPHAN_GRACE:
            time.sleep(TICK)
        if strays:
            self.problem(
                "orphan",
                f"processes {[p.pid for p in strays]} of this study still alive "
                f"{ORPHAN_GRACE:.0f} s after every worker ended",
            )
            for proc in strays:
                os.kill(proc.pid, signal.SIGKILL)

    def check_final(self) -> None:
        """The study after the resume, against the undisturbed run."""
        trials = self.oracle.trials()
        counts = positions(trials)
        expected = set(self.reference.trials)
        missing = sorted(expected - set(counts))
        doubled = sorted(p for p, n in counts.items() if n > 1)
        if missing:
            self.problem("missing", f"{len(missing)} positions never COMPLETE: {missing[:10]}")
        if doubled:
            self.problem("doubled", f"{len(doubled)} positions COMPLETE twice: {doubled[:10]}")
        if extra := sorted(set(counts) - expected):
            self.problem("extra", f"positions beyond the plan: {extra[:10]}")
        got = by_position(trials)
        differ = sorted(p for p in expected & set(got) if got[p] != self.reference.trials[p])
        if differ:
            p = differ[0]
            self.problem(
                "diverged",
                f"{len(differ)} positions differ from the undisturbed run; position {p}: "
                f"{got[p]} instead of {self.reference.trials[p]}",
            )
        running = [t.number for t in trials if t.state == TrialState.RUNNING]
        if running:
            self.problem("running-left", f"after the resume, trials RUNNING: {running[:10]}")

    def message(self, what: str) -> str:
        return "\n".join(
            [
                f"{what}, seed {self.seed}: {len(self.problems)} problem(s)",
                *self.problems,
                "events:",
                *self.events,
                "last output:",
                *(w.tail() for w in self.workers),
            ]
        )


def fault_run(seed: int, url: str, n_workers: int, folder: Path, reference: Reference) -> Run:
    """Workers disturbed by the seed's faults, then the same command to completion."""
    rng = random.Random(seed)
    faults = plan_faults(rng, len(reference.trials))
    delays = sorted(rng.uniform(0, 1.0) for _ in range(n_workers - 1))
    run = Run(seed, url, folder, reference)
    run.log("faults planned: " + ", ".join(f.describe() for f in faults))
    try:
        run.start("w1")
        for k, delay in enumerate(delays, 2):
            time.sleep(max(0.0, delay - (time.monotonic() - run.t0)))
            run.start(f"w{k}")
        if not run.watch(faults):
            return run
        resume = run.start("resume")
        if not run.watch([]):
            return run
        if resume.popen.returncode != 0:
            run.problem("resume", f"the resumed run failed: {resume.tail()}")
        else:
            run.check_final()
        return run
    finally:
        for worker in run.workers:
            worker.kill()
        run.oracle.close()


def mix_run(seed: int, url: str, mix: tuple[str, ...], folder: Path, reference: Reference) -> Run:
    """The widened matrix: batched ``search`` and trial-by-trial ``worker`` processes on one study
    (``mix``, started together on a study made beforehand),
    disturbed by the seed's faults — on PostgreSQL a worker stopped for longer than the
    heartbeat's grace too — then the same search to completion."""
    rng = random.Random(seed)
    stop = url.startswith("postgresql") and "worker" in mix
    faults = plan_mix_faults(rng, len(reference.trials), stop)
    delays = sorted(rng.uniform(0, 1.0) for _ in mix[1:])
    run = Run(seed, url, folder, reference)
    run.launch = True
    run.log(f"mix {'+'.join(mix)}; faults planned: " + ", ".join(f.describe() for f in faults))
    try:
        # The study is made first (one trial, undisturbed), so that the workers start beside the
        # searches: a search started alone would be through the plan before a worker joined.
        made = subprocess.run(
            [*launch_command("search", url), "--n-trials", "1"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        if made.returncode != 0:
            run.problem("setup", f"making the study failed: {made.stderr[-2000:]}")
            return run
        run.t0 = time.monotonic()
        run.start("w1", mix[0])
        for k, (kind, delay) in enumerate(zip(mix[1:], delays), 2):
            time.sleep(max(0.0, delay - (time.monotonic() - run.t0)))
            run.start(f"w{k}", kind)
        if not run.watch(faults):
            return run
        resume = run.start("resume")
        if not run.watch([]):
            return run
        if resume.popen.returncode != 0:
            run.problem("resume", f"the resumed run failed: {resume.tail()}")
        else:
            run.check_final()
        return run
    finally:
        for worker in run.workers:
            worker.kill()  # SIGKILL ends a stopped process too
        run.oracle.close()


# -- the matrix ----------------------------------------------------------------------------------

#: (storage, workers, seed) run in CI: both storages, one to three workers, SIGKILL of a search or
#: of a child once trials are stored (mid-search) and SIGINT at start-up.
CI_RUNS = [("sqlite", 1, 6), ("sqlite", 3, 4), ("postgresql", 2, 12)]
#: Under ``-m slow``: every storage and worker count, nine seeds each (54 runs).
SLOW_RUNS = [
    (storage, workers, 100 + 10 * k + workers + (5 if storage == "postgresql" else 0))
    for storage in ("sqlite", "postgresql")
    for workers in (1, 2, 3)
    for k in range(9)
]


#: The widened matrix's mixes of batched searches and trial-by-trial workers on one study.
MIXES = (("search", "worker"), ("search", "worker", "worker"), ("search", "search", "worker"))
#: (storage, mix, seed) run in CI.
CI_MIX_RUNS = [("sqlite", 1, 3), ("postgresql", 0, 5)]
#: Under ``-m slow``: both storages, every mix, 17 seeds each (102 runs).
SLOW_MIX_RUNS = [
    (storage, m, 500 + 20 * k + m + (10 if storage == "postgresql" else 0))
    for storage in ("sqlite", "postgresql")
    for m in range(len(MIXES))
    for k in range(17)
]


def storage_url(kind: str, tmp_path: Path, request) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'study.db'}"
    return request.getfixturevalue("postgres_url")


def _check(kind, n_workers, seed, tmp_path, request, reference) -> None:
    url = storage_url(kind, tmp_path, request)
    run = fault_run(seed, url, n_workers, tmp_path, reference)
    assert not run.problems, run.message(f"{kind}, {n_workers} worker(s)")


@pytest.mark.long
@pytest.mark.parametrize(
    "kind, n_workers, seed", [pytest.param(*r, id=f"{r[0]}-{r[1]}w-seed{r[2]}") for r in CI_RUNS]
)
def test_faults_then_resume_end_with_the_undisturbed_study(
    kind, n_workers, seed, tmp_path, request, reference
):
    _check(kind, n_workers, seed, tmp_path, request, reference)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, n_workers, seed",
    [pytest.param(*r, id=f"{r[0]}-{r[1]}w-seed{r[2]}") for r in SLOW_RUNS],
)
def test_fault_matrix(kind, n_workers, seed, tmp_path, request, reference):
    _check(kind, n_workers, seed, tmp_path, request, reference)


def _check_mix(kind, mix, seed, tmp_path, request, reference) -> None:
    url = storage_url(kind, tmp_path, request)
    run = mix_run(seed, url, MIXES[mix], tmp_path, reference)
    if log := os.environ.get("FAULT_MATRIX_LOG"):  # every run's events, to count the outcomes
        with open(log, "a") as f:
            f.write(run.message(f"{kind}, {'+'.join(MIXES[mix])}") + "\n\n")
    assert not run.problems, run.message(f"{kind}, {'+'.join(MIXES[mix])}")


def _mix_id(r: tuple) -> str:
    return f"{r[0]}-{'+'.join(MIXES[r[1]])}-seed{r[2]}"


@pytest.mark.long
@pytest.mark.parametrize("kind, mix, seed", [pytest.param(*r, id=_mix_id(r)) for r in CI_MIX_RUNS])
def test_searches_and_workers_disturbed_then_resumed_end_with_the_undisturbed_study(
    kind, mix, seed, tmp_path, request, reference
):
    _check_mix(kind, mix, seed, tmp_path, request, reference)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, mix, seed", [pytest.param(*r, id=_mix_id(r)) for r in SLOW_MIX_RUNS]
)
def test_fault_matrix_of_searches_and_workers(kind, mix, seed, tmp_path, request, reference):
    _check_mix(kind, mix, seed, tmp_path, request, reference)


# -- the two worker failures, one deterministic test each ----------------------------------------


def _wait_until(condition, what: str, timeout: float = RUN_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up after {timeout:.0f} s waiting for {what}"
        time.sleep(TICK)


@pytest.mark.long
def test_a_survivor_reports_the_stored_study_after_its_partner_is_killed(tmp_path, reference):
    """Two searches on one SQLite study; the second is killed -9 (with its child) while it holds
    claimed positions: the survivor completes them before it reports, and its report is the
    storage's. On a quiet machine the second may find the plan done before it claims anything:
    then the pair is started again on a new study (a few tries)."""
    for attempt in range(5):
        folder = tmp_path / f"try{attempt}"
        folder.mkdir()
        run = Run(0, f"sqlite:///{folder / 'study.db'}", folder, reference)
        try:
            survivor = run.start("w1")
            victim = run.start("w2")

            def victim_holds_a_claim(victim=victim, run=run) -> bool:
                return victim.look() or any(
                    _owner_pid(t) == victim.root.pid for t in run.oracle.running()
                )

            _wait_until(victim_holds_a_claim, "w2 to claim plan positions")
            if victim.ended is not None:
                continue  # it never held a claim: nothing to kill
            for proc in victim.live():
                os.kill(proc.pid, signal.SIGKILL)
            victim.signals.append("SIGKILL to search and child")
            run.log("SIGKILL to w2 and its child, holding claims")
            assert run.watch([]), run.message("the survivor hung")
            assert survivor.popen.returncode == 0, run.message("the survivor failed")
            assert not run.problems, run.message("two searches, the second killed")
            return
        finally:
            for worker in run.workers:
                worker.kill()
            run.oracle.close()
    pytest.fail("in 5 tries the second search never held a claim before the plan was done")


@pytest.mark.long
def test_a_search_killed_leaves_no_process_behind(tmp_path, reference):
    """``search --n-jobs 2`` killed -9 mid-run: its forked child is gone 5 s later (it would hold
    the database and its memory, and ignore Ctrl-C)."""
    run = Run(0, f"sqlite:///{tmp_path / 'study.db'}", tmp_path, reference)
    try:
        worker = run.start("w1", case=LONG_CASE)

        def scoring_with_a_child() -> bool:
            worker.look()
            assert worker.ended is None, f"the search ended first: {worker.tail()}"
            return bool(worker.tree) and run.oracle.has_trial(0)

        _wait_until(scoring_with_a_child, "the search to fork its child and store a trial")
        children = sorted(worker.tree)
        os.kill(worker.root.pid, signal.SIGKILL)
        worker.popen.wait(timeout=30)
        time.sleep(ORPHAN_GRACE)
        alive = [p.pid for p in children if p.alive()]
        assert not alive, (
            f"search killed with -9: its children {alive} still alive {ORPHAN_GRACE:.0f} s later"
        )
    finally:
        run.workers[0].kill()
        run.oracle.close()
