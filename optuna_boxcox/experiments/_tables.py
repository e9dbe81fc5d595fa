"""Tables 5–8 of the paper: Box-Cox search strategies under the outer cross-validation (SPEC §7).

Every (section, row, classifier) is one experiment study, ``reproduce/<table>/[<pair>/]<row>/<classifier>``
(with the protocol appended when it is not the paper's, e.g. ``…/knn/2x1``); each outer fold is one
finished trial of it: param ``fold``, value = test accuracy, user attributes test/train accuracy, Λ,
evaluations and seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.distributions import IntDistribution

from optuna_boxcox._system._parallel import map_tasks
from optuna_boxcox._system._progress import interleaved
from optuna_boxcox.experiments import _record
from optuna_boxcox.experiments._data import paper_features
from optuna_boxcox.experiments._protocol import BASE
from optuna_boxcox.experiments._protocol import ROWS
from optuna_boxcox.experiments._protocol import FoldResult
from optuna_boxcox.experiments._protocol import evaluate_fold
from optuna_boxcox.experiments._report import Cell

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import optuna

    from optuna_boxcox.experiments._paper import TableTarget
    from optuna_boxcox.experiments._protocol import Protocol
    from optuna_boxcox.experiments._record import TableRun


def section_slug(section: str) -> str:
    """``"Features 8 and 41"`` → ``"features-8-41"`` (study-name component)."""
    return "-".join(re.findall(r"[a-z0-9]+", section.lower().replace(" and ", " ")))


@dataclass
class _Unit:
    """One (section, row, classifier): its study and the folds it still needs."""

    section: str
    row: str
    classifier: str
    study: optuna.Study
    done: dict[int, FoldResult]


def study_name(target: str, section: str, row: str, classifier: str, protocol: Protocol) -> str:
    section_part = [section_slug(section)] if section else []
    return protocol.study_name("reproduce", target, *section_part, row, classifier)


def run_table(
    target: TableTarget,
    run: TableRun,
    *,
    rows: Sequence[str],
    sections: Sequence[str] | None = None,
    csv: str | Path | None = None,
    label: str = "y",
) -> tuple[list[Cell], bool]:
    """Compute (or resume) the folds of one table; return its cells and whether all are complete."""
    protocol, on_progress = run.protocol, run.on_progress
    X_all, y = paper_features(target.dataset, csv=csv, label=label)
    pairs: dict[str, Any] = target.pairs if target.two_d else {"": None}
    if sections is not None:
        pairs = {s: pairs[s] for s in sections}
    data = {s: (X_all if pair is None else X_all[:, list(pair)]) for s, pair in pairs.items()}
    splits = protocol.splits(X_all, y)  # stratified splits depend on y (and n) only
    units: dict[tuple[str, str, str], _Unit] = {}
    for section, pair in pairs.items():
        for row in ["base", *rows]:
            sampler = ROWS[row].sampler()
            for classifier in run.classifiers:
                settings = {
                    "table": target.name,
                    "dataset": target.dataset,
                    "features": None if pair is None else list(pair),
                    "row": row,
                    "paper_row": ROWS[row].paper_row,
                    "classifier": classifier,
                    "protocol": protocol.to_attr(),
                    "float32_cast": True,
                    "sampler": None
                    if sampler is None
                    else {"name": sampler.name, "settings": sampler.settings()},
                    "paper": target.published(section, ROWS[row].paper_row, classifier),
                }
                name = study_name(target.name, section, row, classifier, protocol)
                study = _record.open_study(run.storage, name, settings)
                done = {
                    fold: FoldResult.from_attrs(fold, t.user_attrs)
                    for fold, t in _record.finished(study).items()
                }
                units[(section, row, classifier)] = _Unit(section, row, classifier, study, done)

    # A fold of every study in turn: rows and classifiers cost unlike amounts (a row without
    # search beside one of many searches), and the time left is estimated from each one's folds.
    left = {
        key: [(key, fold) for fold in range(protocol.n_folds) if fold not in unit.done]
        for key, unit in units.items()
    }
    tasks = interleaved(left.values())
    total = len(units) * protocol.n_folds
    if on_progress is not None:
        on_progress(total - len(tasks), total, left={k: len(v) for k, v in left.items()})
    distributions = {"fold": IntDistribution(0, protocol.n_folds - 1)}

    def work(task: tuple[tuple[str, str, str], int]) -> FoldResult:
        (section, row, classifier), fold = task
        return evaluate_fold(data[section], y, splits[fold], classifier, ROWS[row].sampler(), fold)

    def on_result(task: tuple[tuple[str, str, str], int], result: FoldResult) -> None:
        unit = units[task[0]]
        attrs = {
            **result.to_attrs(),
            "repeat": result.fold // protocol.n_splits,
            "split": result.fold % protocol.n_splits,
        }
        _record.record(
            unit.study,
            [(result.fold, {"fold": result.fold}, result.test_accuracy, attrs, result.seconds)],
            distributions,
        )
        unit.done[result.fold] = result
        if on_progress is not None:
            on_progress(1, 0, group=task[0], seconds=result.seconds)

    map_tasks(tasks, work, on_result, n_jobs=run.n_jobs, max_tasks=run.max_tasks)
    return _cells(target, units, protocol)


def _cells(
    target: TableTarget, units: dict[tuple[str, str, str], _Unit], protocol: Protocol
) -> tuple[list[Cell], bool]:
    n = protocol.n_folds
    means: dict[tuple[str, str, str], float | None] = {}
    for key, unit in units.items():
        folds = [unit.done[f].test_accuracy for f in range(n) if f in unit.done]
        means[key] = 100.0 * float(np.mean(folds)) if len(folds) == n else None
        if means[key] is not None:
            unit.study.set_user_attr(
                _record.RESULT_ATTR, {"mean_test_accuracy": means[key], "folds": n}
            )
    cells = []
    for (section, row, classifier), unit in units.items():
        base = means[(section, BASE.key, classifier)]
        mean = means[(section, row, classifier)]
        if row == BASE.key:
            ours = mean
        else:
            ours = None if mean is None or base is None else mean - base
        cells.append(
            Cell(
                section=section,
                row=ROWS[row].label,
                column=classifier,
                ours=ours,
                paper=target.published(section, ROWS[row].paper_row, classifier),
                n_done=len(unit.done),
                n_total=n,
                seconds=float(sum(r.seconds for r in unit.done.values())),
            )
        )
    return cells, all(c.ours is not None for c in cells)
