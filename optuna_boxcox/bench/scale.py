"""How the cost of a search grows with the number of rows (``optuna-boxcox bench --sections scale``).

The scale data: ``make_classification(n, 30 features, 10 informative, random_state=0)``, then
``exp(X / 2)`` for skewed positive features, for n in {1k, 5k, 20k, 50k}. For each size and each of
the paper's four fast classifiers, one process (so that its own peak memory is measured) runs the
first ``trials`` trials of the iterative coordinate search through :func:`optuna_boxcox.optimize`
on SQLite with the default memory budget, and reports the seconds per new evaluation, the
evaluator the objective chose and its peak resident memory; another process times the paper's
plain loop (:func:`~optuna_boxcox.bench.components.plain_loop_score`) on the first Λ the search
evaluated. A cell that would take longer than its time cap is cut short (the search after its
last finished trial, the plain loop by being stopped) and says so.
"""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys
import time
from typing import Any

#: Rows of the scale table.
DEFAULT_SIZES = (1_000, 5_000, 20_000, 50_000)
#: The paper's classifiers with exact fast evaluators.
SCALE_CLASSIFIERS = ("bayes", "linear", "knn", "svc")


def scale_data(n: int) -> tuple[Any, Any]:
    """The issue's synthetic data: 30 features (10 informative), skewed positive values."""
    import numpy as np
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=30, n_informative=10, random_state=0)
    return np.exp(X / 2), y


def _search_cell(n: int, classifier: str, trials: int, cap: float, db: str) -> dict[str, Any]:
    """In a child process: the first trials of the iterative search; what they cost."""
    import optuna

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox import make_sampler
    from optuna_boxcox import optimize
    from optuna_boxcox._system._process import peak_rss_kib
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.storage import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = scale_data(n)
    started = time.perf_counter()
    objective = BoxCoxObjective(X, y, make_classifier(classifier))
    study = optuna.create_study(
        storage=open_storage(f"sqlite:///{db}"),
        direction="maximize",
        sampler=make_sampler("iterative"),
    )
    objective.register(study)
    objective.warm_up()  # compiled kernels load once per process, before the clock
    setup = time.perf_counter() - started
    started = time.perf_counter()
    done = 0
    # A trial at a time past the cap would take too long at 50,000 rows: whole sweeps while the
    # time allows, then single trials, and no new trial after the cap.
    while done < trials and time.perf_counter() - started < cap:
        step = trials - done if done == 0 and n <= 5_000 else 1
        optimize(study, objective, n_trials=step)
        done = len(study.get_trials(deepcopy=False))
    seconds = time.perf_counter() - started
    first = study.get_trials(deepcopy=False)[0]
    return {
        "n": n,
        "classifier": classifier,
        "trials": done,
        "evaluations": objective.n_evaluations,
        "ms": 1e3 * seconds / max(1, objective.n_evaluations),
        "setup_s": setup,
        "evaluator": objective.evaluator,
        "peak_mib": peak_rss_kib() / 1024,
        "cut": done < trials,
        "lambdas": [first.params[name] for name in objective.param_names],
    }


def _plain_cell(n: int, classifier: str, lambdas: list[float]) -> dict[str, Any]:
    """In a child process: the paper's plain loop on one Λ."""
    import warnings

    import numpy as np

    from optuna_boxcox.bench.components import paper_classifier
    from optuna_boxcox.bench.components import plain_loop_score

    warnings.simplefilter("ignore")
    X, y = scale_data(n)
    started = time.perf_counter()
    plain_loop_score(X, y, np.asarray(lambdas), paper_classifier(classifier))
    return {"ms": 1e3 * (time.perf_counter() - started)}


def _child(function: str, args: list[Any], timeout: float) -> dict[str, Any] | None:
    code = (
        "import json, sys\n"
        "from optuna_boxcox.bench import scale\n"
        f"print(json.dumps(scale.{function}(*json.loads(sys.argv[1]))))\n"
    )
    try:
        run = subprocess.run(
            [sys.executable, "-c", code, json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    if run.returncode != 0:
        raise RuntimeError(f"{function}{tuple(args[:2])} failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def scale_row(
    n: int, classifier: str, workdir: Path, *, trials: int = 11, cap: float = 300.0
) -> dict[str, Any]:
    """One cell of the table: the search's cost per evaluation against the plain loop's."""
    db = workdir / f"scale-{n}-{classifier}.db"
    db.unlink(missing_ok=True)
    row = _child("_search_cell", [n, classifier, trials, cap, str(db)], timeout=4 * cap + 600)
    if row is None:
        raise RuntimeError(f"the search at n={n} ({classifier}) overran its time cap")
    plain = _child("_plain_cell", [n, classifier, row["lambdas"]], timeout=cap)
    row["plain_ms"] = None if plain is None else plain["ms"]
    row["plain_cap_s"] = cap
    return row


def format_scale_rows(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'rows':>7} {'classifier':<10} {'evaluator':<17} {'trials':>6} {'ours ms':>10} "
        f"{'plain ms':>11} {'plain/ours':>10} {'peak MiB':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        plain = "—" if r["plain_ms"] is None else f"{r['plain_ms']:.1f}"
        if r["plain_ms"] is None:
            plain = f">{1e3 * r['plain_cap_s']:.0f}"
            ratio = f">{1e3 * r['plain_cap_s'] / r['ms']:.1f}"
        else:
            ratio = f"{r['plain_ms'] / r['ms']:.1f}"
        trials = f"{r['trials']}{'*' if r['cut'] else ''}"
        lines.append(
            f"{r['n']:>7,} {r['classifier']:<10} {r['evaluator']:<17} {trials:>6} "
            f"{r['ms']:>10.1f} {plain:>11} {ratio:>10} {r['peak_mib']:>8.0f}"
        )
    return "\n".join(lines)


__all__ = ["DEFAULT_SIZES", "SCALE_CLASSIFIERS", "format_scale_rows", "scale_data", "scale_row"]
