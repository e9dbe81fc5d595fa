"""End to end, as a user measures it: whole processes, start-up included, side by side.

Two comparisons, each run as separate processes that alternate (A B A B …) so that the machine's
drift hits both alike; every figure is the median of its runs:

- **search vs the plain loop.** ``optuna-boxcox search`` (SQLite, every trial stored, figures
  attached) against :mod:`optuna_boxcox.bench.plain_loop`, the paper's loop as a script (every
  candidate rescaled, ``scipy.stats.boxcox`` per column, a fresh scaler and classifier; repeated
  Λ looked up), on the same data and preset. Both must choose the same Λ. The search reports when
  its last trial was written (``--report-timings``): what comes after (the result, the base and
  MLE scores, the figures, exit) is the command's *tail*.
- **study scripts.** :mod:`optuna_boxcox.bench.study_script` with :func:`optuna_boxcox.optimize`
  against the same script with ``study.optimize``, on SQLite: seconds per trial of the call that
  runs the study (start-up excluded), and the trials both wrote must be the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import json
from pathlib import Path
import statistics
import subprocess
import sys
import time
from typing import Any

#: (data, classifier, preset) of the search-vs-plain-loop comparison by default.
DEFAULT_CASES = (
    ("sonar", "bayes", "iterative"),
    ("sonar", "linear", "iterative"),
    ("sonar", "knn", "iterative"),
    ("sonar", "svc", "iterative"),
    ("sonar", "bayes", "combined2"),
    ("sonar", "svc", "combined2"),
    ("breast_cancer[:8]", "bayes", "iterative"),
)


@dataclass
class Timed:
    """One process: wall seconds, peak resident memory (MiB), what it printed as JSON."""

    seconds: float
    peak_mib: float
    report: dict[str, Any] = field(default_factory=dict)


def _python_with_peak(module: str, args: list[str]) -> list[str]:
    """``python -m module args``, reporting its own peak memory on exit (VmHWM, not ru_maxrss,
    which Linux carries over from a parent across exec)."""
    code = (
        "import atexit, json, runpy, sys\n"
        "def _peak():\n"
        "    try:\n"
        "        with open('/proc/self/status') as f:\n"
        "            kib = next(int(l.split()[1]) for l in f if l.startswith('VmHWM:'))\n"
        "    except (OSError, StopIteration):\n"
        "        kib = 0\n"
        "    print(json.dumps({'peak_kib': kib}), file=sys.stderr)\n"
        "atexit.register(_peak)\n"
        f"sys.argv = [{module!r}, *{args!r}]\n"
        f"runpy.run_module({module!r}, run_name='__main__')\n"
    )
    return [sys.executable, "-c", code]


def timed_python(module: str, args: list[str], cwd: Path) -> Timed:
    started = time.time()
    run = subprocess.run(
        _python_with_peak(module, args), cwd=cwd, capture_output=True, text=True, timeout=3600
    )
    ended = time.time()
    if run.returncode != 0:
        raise RuntimeError(f"python -m {module} failed ({run.returncode}): {run.stderr[-2000:]}")
    report: dict[str, Any] = {"started": started, "ended": ended}
    for line in reversed(run.stdout.splitlines()):
        if line.startswith("{"):
            report.update(json.loads(line))
            break
    peak = 0.0
    for line in reversed(run.stderr.splitlines()):
        if line.startswith('{"peak_kib"'):
            peak = json.loads(line)["peak_kib"] / 1024
            break
    return Timed(ended - started, peak, report)


def data_file(data: str, sonar_csv: Path | None, workdir: Path) -> tuple[Path, str]:
    """A CSV of ``data`` ("sonar", or "breast_cancer[:N]" for its first N features) and its label."""
    if data == "sonar":
        if sonar_csv is None:
            raise ValueError("the sonar cases need --csv sonar.csv")
        return sonar_csv, "y"
    name, _, rest = data.partition("[:")
    from optuna_boxcox.datasets import load_dataset

    X, y = load_dataset(name)
    if rest:
        X = X.iloc[:, : int(rest.rstrip("]"))]
    path = workdir / f"{name}{'-' + rest.rstrip(']') if rest else ''}.csv"
    frame = X.copy()
    frame["label"] = y.to_numpy()
    frame.to_csv(path, index=False)
    return path, "label"


def compare_search(
    data: str,
    classifier: str,
    preset: str,
    *,
    sonar_csv: Path | None,
    workdir: Path,
    repeats: int = 3,
) -> dict[str, Any]:
    """``optuna-boxcox search`` against the plain-loop script, alternating ``repeats`` times."""
    csv, label = data_file(data, sonar_csv, workdir)
    searches, plains = [], []
    for k in range(repeats):
        db = workdir / f"e2e-{data.replace('[:', '-').rstrip(']')}-{classifier}-{preset}-{k}.db"
        timings = workdir / f"timings-{k}.json"
        for path in (db, timings):
            path.unlink(missing_ok=True)
        search = timed_python(
            "optuna_boxcox.cli",
            [
                "search",
                "--csv",
                str(csv),
                "--label",
                label,
                "--classifier",
                classifier,
                "--sampler",
                preset,
                "--storage",
                f"sqlite:///{db}",
                "--study-name",
                "e2e",
                "--report-timings",
                str(timings),
            ],
            workdir,
        )
        search.report.update(json.loads(timings.read_text()))
        search.peak_mib = search.report["peak_kib"] / 1024  # it exits without running atexit
        search.report["lambdas"] = _stored_result(db)
        searches.append(search)
        plains.append(
            timed_python(
                "optuna_boxcox.bench.plain_loop",
                [
                    "--csv",
                    str(csv),
                    "--label",
                    label,
                    "--classifier",
                    classifier,
                    "--preset",
                    preset,
                ],
                workdir,
            )
        )
    ratios = [p.seconds / s.seconds for s, p in zip(searches, plains)]
    tails = [(s.report["ended"] - s.report["written_at"]) / s.seconds for s in searches]
    same = all(s.report["lambdas"] == p.report["lambdas"] for s, p in zip(searches, plains))
    return {
        "data": data,
        "classifier": classifier,
        "preset": preset,
        "trials": plains[0].report["candidates"],
        "evaluations": plains[0].report["evaluations"],
        "search_s": statistics.median(s.seconds for s in searches),
        "plain_s": statistics.median(p.seconds for p in plains),
        "ratio": statistics.median(ratios),
        "ratio_range": (min(ratios), max(ratios)),
        "tail": statistics.median(tails),
        "search_mib": max(s.peak_mib for s in searches),
        "plain_mib": max(p.peak_mib for p in plains),
        "same_lambda": same,
        "repeats": repeats,
    }


def _stored_result(db: Path) -> list[float]:
    """Λopt the search recorded in its study (in feature order)."""
    import sqlite3

    with sqlite3.connect(db) as connection:
        ((space,),) = connection.execute(
            "SELECT value_json FROM study_user_attributes WHERE key = 'boxcox_search_space'"
        ).fetchall()
        ((result,),) = connection.execute(
            "SELECT value_json FROM study_user_attributes WHERE key = 'boxcox_result'"
        ).fetchall()
    names, params = json.loads(space)["names"], json.loads(result)["params"]
    return [float(params[n]) for n in names]


def compare_study_scripts(
    workdir: Path, *, optuna_trials: int = 110, repeats: int = 3
) -> dict[str, Any]:
    """The study script with ``optuna_boxcox.optimize`` (whole plan) against ``study.optimize``
    (its first ``optuna_trials`` trials), per trial, on SQLite; and whether they wrote the same."""
    plugin, plain = [], []
    for k in range(repeats):
        db = workdir / f"scripts-{k}.db"
        db.unlink(missing_ok=True)
        url = f"sqlite:///{db}"
        plugin.append(
            timed_python(
                "optuna_boxcox.bench.study_script",
                ["--storage", url, "--study-name", "plugin", "--runner", "plugin"],
                workdir,
            )
        )
        plain.append(
            timed_python(
                "optuna_boxcox.bench.study_script",
                [
                    "--storage",
                    url,
                    "--study-name",
                    "optuna",
                    "--runner",
                    "optuna",
                    "--n-trials",
                    str(optuna_trials),
                ],
                workdir,
            )
        )
        same = _same_trials(db, "plugin", "optuna", optuna_trials)
    per_plugin = [t.report["seconds"] / t.report["trials"] for t in plugin]
    per_plain = [t.report["seconds"] / t.report["trials"] for t in plain]
    ratios = [b / a for a, b in zip(per_plugin, per_plain)]
    return {
        "plugin_trials": plugin[0].report["trials"],
        "optuna_trials": plain[0].report["trials"],
        "plugin_ms": 1e3 * statistics.median(per_plugin),
        "optuna_ms": 1e3 * statistics.median(per_plain),
        "ratio": statistics.median(ratios),
        "ratio_range": (min(ratios), max(ratios)),
        "same_trials": same,
        "repeats": repeats,
    }


def _same_trials(db: Path, first: str, second: str, n: int) -> bool:
    """Whether the first ``n`` trials of two studies hold the same params, values and user attrs."""
    from optuna.storages import RDBStorage

    storage = RDBStorage(f"sqlite:///{db}", skip_compatibility_check=True)
    a = storage.get_all_trials(storage.get_study_id_from_name(first))[:n]
    b = storage.get_all_trials(storage.get_study_id_from_name(second))[:n]
    return len(a) == len(b) == n and all(
        (x.params, x.values, x.user_attrs) == (y.params, y.values, y.user_attrs)
        for x, y in zip(a, b)
    )


def format_search_rows(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'data':<18} {'classifier':<10} {'preset':<10} {'trials':>7} {'evals':>6} "
        f"{'search s':>9} {'plain s':>9} {'plain/search':>12} {'(range)':>13} {'tail':>5} "
        f"{'MiB':>5}  same Λ"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        low, high = r["ratio_range"]
        lines.append(
            f"{r['data']:<18} {r['classifier']:<10} {r['preset']:<10} {r['trials']:>7} "
            f"{r['evaluations']:>6} {r['search_s']:>9.2f} {r['plain_s']:>9.2f} "
            f"{r['ratio']:>12.1f} {f'{low:.1f}–{high:.1f}':>13} {r['tail']:>5.0%} "
            f"{r['search_mib']:>5.0f}  {r['same_lambda']}"
        )
    return "\n".join(lines)


def format_script_row(r: dict[str, Any]) -> str:
    low, high = r["ratio_range"]
    return (
        f"study script on breast cancer, naive Bayes, iterative, SQLite: optuna_boxcox.optimize "
        f"{r['plugin_ms']:.2f} ms a trial ({r['plugin_trials']} trials), study.optimize "
        f"{r['optuna_ms']:.1f} ms a trial (first {r['optuna_trials']}): {r['ratio']:.0f}x "
        f"({low:.0f}–{high:.0f}x over {r['repeats']} pairs); same trials: {r['same_trials']}"
    )


__all__ = [
    "DEFAULT_CASES",
    "compare_search",
    "compare_study_scripts",
    "format_script_row",
    "format_search_rows",
]
