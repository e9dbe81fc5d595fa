"""Reproducing the paper's tables: ``reproduce("table7")`` or ``optuna-boxcox reproduce table7``.

Targets:

- ``table2``: grid exploration (Algorithm 1) of the four synthetic data sets of Figure 1, with the
  heatmaps of Figure 2 (and its appendix) written as figures and attached to the studies;
- ``table3``: the same on the random data set regenerated with ten seeds, averaged;
- ``table5`` / ``table7``: sonar / breast cancer, every search strategy of the paper under the outer
  cross-validation of SPEC §7;
- ``table6`` / ``table8``: the same on the 2-D feature pairs of the paper, with the full 2-D grid.

Every unit of work (an outer fold of a (row, classifier), or a cell of a grid) is a finished trial in
the study storage, so an interrupted run continues where it stopped and optuna-dashboard shows the
progress. The result is printed beside the paper's numbers, cell by cell, and written as CSV and
Markdown (``<out>/reproduce-<target>.csv`` / ``.md``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
import re
import time
from typing import TYPE_CHECKING
from typing import Any

import optuna

from optuna_boxcox._system._progress import Progress
from optuna_boxcox._system._progress import TimeLeft
from optuna_boxcox.classifiers import CLASSIFIERS
from optuna_boxcox.experiments._data import SYNTHETIC
from optuna_boxcox.experiments._grid import figure2
from optuna_boxcox.experiments._grid import run_grid
from optuna_boxcox.experiments._paper import TABLE_TARGETS
from optuna_boxcox.experiments._protocol import DEFAULT_ROWS
from optuna_boxcox.experiments._protocol import ROWS
from optuna_boxcox.experiments._protocol import Protocol
from optuna_boxcox.experiments._record import TableRun
from optuna_boxcox.experiments._report import Reproduction
from optuna_boxcox.experiments._tables import run_table
from optuna_boxcox.figures import write_figures
from optuna_boxcox.storage import REPRODUCE_STORAGE
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from collections.abc import Hashable
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.storages import BaseStorage

#: What can be reproduced.
TARGETS = ("table2", "table3", "table5", "table6", "table7", "table8")
_GRID_TITLES = {
    "table2": "Table 2: grid exploration of the synthetic data sets of Figure 1",
    "table3": "Table 3: grid exploration of the random data set, mean over 10 seeds",
}


def reproduce(
    target: str,
    *,
    classifiers: Sequence[str] | None = None,
    rows: Sequence[str] | None = None,
    folds: int = 10,
    repeats: int = 5,
    storage: str | BaseStorage = REPRODUCE_STORAGE,
    out: str | Path | None = "studies",
    n_jobs: int = 1,
    progress: bool = True,
    csv: str | Path | None = None,
    label: str = "y",
    pairs: Sequence[str] | None = None,
    datasets: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    max_tasks: int | None = None,
    png: bool | None = None,
) -> Reproduction:
    """Run (or resume) one of the paper's tables and compare it with the published numbers.

    Args:
        target: ``table2``, ``table3``, ``table5``, ``table6``, ``table7`` or ``table8``.
        classifiers: Of ``linear``, ``knn``, ``bayes``, ``svc``, ``nn``; default all five.
        rows: Tables 5–8: search strategies by key (``diagonal``, ``spherical``, ``mle``, ``grid``
            (2-D only), ``iterative``, ``shift``, ``shuffle``, ``finer``, ``combined1``,
            ``combined2``, and ``diagonal-alg8``, Algorithm 8 as the text defines it); default the
            paper's rows. The base row always runs. ``diagonal`` is the authors' code (their
            published Diagonal rows come from it).
        folds, repeats: The outer ``RepeatedStratifiedKFold`` (the paper: 10 × 5, random_state 42).
        storage: Study storage URL (or storage) where every fold is recorded.
        out: Directory for the CSV, Markdown and figures; ``None`` writes nothing.
        n_jobs: Worker processes computing folds (or grid rows) concurrently.
        progress: Report progress with the time left (a bar on a terminal, else a line every few
            seconds, on stderr), estimated from each study's folds so far.
        csv, label: Sonar from a local CSV file (label column ``label``) instead of OpenML.
        pairs: Tables 6 and 8: which feature pairs, as the paper labels them ("Features 8 and 41")
            or as ``8-41``; default all four.
        datasets: Table 2: which synthetic data sets (``gaussian_quantiles``, ``moons``, ``blobs``,
            ``random``); default all four.
        seeds: Table 3: the seeds of the random data set; default 1–10.
        max_tasks: Stop after this many new folds (grid rows for Tables 2–3), taken from every
            study in turn; the rest is computed by a later run. For budgeted or staged runs.
        png: Table 2: also write the heatmaps as PNG (needs kaleido and a Chromium); default: when
            kaleido is installed. HTML is always written.

    Returns:
        A :class:`~optuna_boxcox.experiments.Reproduction`: cells (ours, paper, difference), wall
        time, files written; ``complete`` is False while some folds are missing.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    classifiers = _check_names("classifier", classifiers, CLASSIFIERS)
    protocol = Protocol(n_splits=int(folds), n_repeats=int(repeats))
    store = open_storage(storage) if isinstance(storage, str) else storage
    started = time.perf_counter()
    bar = _Progress(progress, "λ row" if target in _GRID_TITLES else "fold")
    run = TableRun(
        classifiers=tuple(classifiers),
        protocol=protocol,
        storage=store,
        n_jobs=n_jobs,
        max_tasks=max_tasks,
        on_progress=bar.update,
    )
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(
        max(verbosity, optuna.logging.WARNING)
    )  # no "study created" lines
    try:
        if target in _GRID_TITLES:
            _refuse(target, rows=rows, pairs=pairs, csv=csv)
            if datasets is not None and target == "table2":
                datasets = _check_names("dataset", datasets, SYNTHETIC)
            cells, complete, heatmaps = run_grid(
                target,
                run,
                datasets=datasets if target == "table2" else None,
                seeds=seeds if target == "table3" else None,
            )
            result = Reproduction(target, _GRID_TITLES[target], protocol, cells, complete=complete)
        else:
            table = TABLE_TARGETS[target]
            rows = _rows_for(table.two_d, rows)
            sections = _pairs_for(table, pairs) if table.two_d else None
            if datasets is not None or seeds is not None:
                raise ValueError("datasets and seeds are options of table2 and table3")
            cells, complete = run_table(
                table, run, rows=rows, sections=sections, csv=csv, label=label
            )
            heatmaps = {}
            result = Reproduction(target, table.title, protocol, cells, complete=complete)
    finally:
        bar.close()
        optuna.logging.set_verbosity(verbosity)
    result.wall_seconds = time.perf_counter() - started
    if out is not None:
        _write(result, Path(out), heatmaps if target == "table2" else {}, png)
    return result


# -- argument checks ---------------------------------------------------------------------------
def _check_names(kind: str, given: Sequence[str] | None, known: Any) -> list[str]:
    if given is None:
        return list(known)
    given = [g.strip() for g in given if g.strip()]
    unknown = [g for g in given if g not in known]
    if unknown or not given:
        raise ValueError(f"unknown {kind}(s) {unknown or given}; choose from {', '.join(known)}")
    return list(dict.fromkeys(given))


def _rows_for(two_d: bool, rows: Sequence[str] | None) -> list[str]:
    if rows is None:
        return [r for r in DEFAULT_ROWS if two_d or not ROWS[r].two_d_only]
    rows = _check_names("row", rows, [r for r in ROWS if r != "base"])
    full_only = [r for r in rows if ROWS[r].two_d_only and not two_d]
    if full_only:
        raise ValueError(
            f"row(s) {full_only} search the full grid of every feature and exist only for the 2-D "
            "tables (table6, table8)"
        )
    return rows


def _pairs_for(table: Any, pairs: Sequence[str] | None) -> list[str] | None:
    if pairs is None:
        return None
    known = table.pairs
    chosen = []
    for p in pairs:
        numbers = re.findall(r"\d+", p)
        label = (
            p
            if p in known
            else (f"Features {numbers[0]} and {numbers[1]}" if len(numbers) == 2 else p)
        )
        if label not in known:
            raise ValueError(
                f"unknown feature pair {p!r} for {table.name}; choose from "
                + ", ".join(f"{k} ({k.split()[1]}-{k.split()[3]})" for k in known)
            )
        chosen.append(label)
    return list(dict.fromkeys(chosen))


def _refuse(target: str, **options: Any) -> None:
    given = [name for name, value in options.items() if value is not None]
    if given:
        verb = "does" if len(given) == 1 else "do"
        raise ValueError(
            f"{target} is a grid exploration of synthetic data; {', '.join(given)} {verb} not apply"
        )


# -- output ------------------------------------------------------------------------------------
def output_stem(result: Reproduction) -> str:
    stem = f"reproduce-{result.target}"
    return stem if result.protocol.is_paper else f"{stem}-{result.protocol.tag}"


def _write(result: Reproduction, out: Path, heatmaps: dict, png: bool | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stem = output_stem(result)
    csv_path, md_path = out / f"{stem}.csv", out / f"{stem}.md"
    csv_path.write_text(result.csv(), encoding="utf-8")
    md_path.write_text(result.markdown(), encoding="utf-8")
    result.files = [csv_path, md_path]
    if not heatmaps:
        return
    figures = {}
    for (key, _seed), by_classifier in heatmaps.items():
        name = "figure2" if key == "random" else f"appendix-a-{key}"
        suffix = "" if result.protocol.is_paper else f"-{result.protocol.tag}"
        figures[f"{name}{suffix}"] = figure2(
            by_classifier,
            title=f"Grid exploration, {SYNTHETIC[key].label}: accuracy [%] (1 spherical, 2 diagonal, 3 full)",
        )
    if png is None:
        png = importlib.util.find_spec("kaleido") is not None
    formats = ("html", "png") if png else ("html",)
    result.figures = write_figures(figures, out / "figures", formats=formats)


class _Progress:
    """Progress fed by the experiment runners: first (done, total, left=units left by group),
    then (1, 0, group=…, seconds=…) per unit; the time left is estimated by group."""

    def __init__(self, enabled: bool, unit: str) -> None:
        self.enabled, self.unit, self.bar = enabled, unit, None

    def update(
        self,
        n: int,
        total: int,
        *,
        left: Mapping[Hashable, int] | None = None,
        group: Hashable | None = None,
        seconds: float | None = None,
    ) -> None:
        if self.bar is None:
            self.bar = Progress(
                total,
                unit=self.unit,
                label="reproduce",
                enabled=self.enabled,
                initial=n,
                time_left=None if left is None else TimeLeft(left),
            )
            return
        self.bar.update(n, group=group, seconds=seconds)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
