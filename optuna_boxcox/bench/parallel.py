"""Two jobs against one, beside what the machine itself gives two processes at that moment.

Speed-ups of parallel work mean little on a machine whose cores are shared and drift: each figure
here is set beside the *ceiling* measured in the same run — two independent processes of a plain
Python loop, started side by side, against the same two one after the other — and reported as a
fraction of it. Runs alternate (one job, two jobs, ceiling, …) and every figure is a median.

Cases: ``reproduce`` (independent outer folds), ``compare`` (independent studies) and a single
``search`` (one plan: its batches are shared out point by point, and a worker writes).
"""

from __future__ import annotations

from pathlib import Path
import statistics
import subprocess
import sys
import time
from typing import Any

#: The commands timed with --n-jobs 1 and 2 (after the command name; storage and output added).
CASES: dict[str, list[str]] = {
    "reproduce": [
        "reproduce", "table8", "--folds", "5", "--repeats", "2",
        "--classifiers", "bayes,knn", "--rows", "spherical,iterative", "--no-progress",
    ],
    "compare": [
        "compare", "--dataset", "breast_cancer", "--features", "8", "--classifier", "knn",
        "--samplers", "coordinate,random", "--seeds", "4", "--n-trials", "400",
    ],
    "search": [
        "search", "--dataset", "breast_cancer", "--classifier", "svc", "--sampler", "iterative",
        "--no-figures",
    ],
}  # fmt: skip


def _run(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, timeout=3600)
    return time.perf_counter() - started


def ceiling(n: int = 6_000_000) -> float:
    """How many times the work of one process two processes do in the same time, right now (the
    components section's measurement, with a loop long enough for these cases)."""
    from optuna_boxcox.bench.components import parallel_capacity

    return parallel_capacity(2, iterations=n)


def measure(case: str, workdir: Path, *, repeats: int = 3) -> dict[str, Any]:
    """The case with one job and with two, alternating, each beside a ceiling measurement."""
    one, two, ceilings = [], [], []
    for k in range(repeats):
        for jobs, times in ((1, one), (2, two)):
            cwd = workdir / f"{case}-{jobs}-{k}"
            cwd.mkdir(parents=True, exist_ok=True)
            command = [
                sys.executable, "-m", "optuna_boxcox.cli", *CASES[case],
                "--storage", f"sqlite:///{cwd / 'studies.db'}", "--n-jobs", str(jobs),
            ]  # fmt: skip
            if case == "reproduce":
                command += ["--out", str(cwd)]
            if case == "compare":
                command += ["--plot", str(cwd / "plot.html")]
            times.append(_run(command, cwd))
        ceilings.append(ceiling())
    speedups = [a / b for a, b in zip(one, two)]
    machine = statistics.median(ceilings)
    return {
        "case": case,
        "one_s": statistics.median(one),
        "two_s": statistics.median(two),
        "speedup": statistics.median(speedups),
        "speedup_range": (min(speedups), max(speedups)),
        "ceiling": machine,
        "ceiling_range": (min(ceilings), max(ceilings)),
        "fraction": statistics.median(s / c for s, c in zip(speedups, ceilings)),
        "repeats": repeats,
    }


def format_parallel_rows(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'case':<10} {'1 job s':>8} {'2 jobs s':>8} {'speed-up':>8} {'(range)':>11} "
        f"{'machine':>7} {'(range)':>11} {'fraction':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        low, high = r["speedup_range"]
        c_low, c_high = r["ceiling_range"]
        lines.append(
            f"{r['case']:<10} {r['one_s']:>8.1f} {r['two_s']:>8.1f} {r['speedup']:>8.2f} "
            f"{f'{low:.2f}–{high:.2f}':>11} {r['ceiling']:>7.2f} {f'{c_low:.2f}–{c_high:.2f}':>11} "
            f"{r['fraction']:>8.2f}"
        )
    return "\n".join(lines)


__all__ = ["CASES", "ceiling", "format_parallel_rows", "measure"]
