"""The comparison's table: best and held-out scores per sampler, Wilcoxon tests against the
reference sampler, as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from optuna_boxcox.experiments._problems import REFERENCE_SAMPLER
from optuna_boxcox.experiments._problems import SamplerRuns
from optuna_boxcox.experiments._problems import Scores

if TYPE_CHECKING:
    from collections.abc import Sequence


def wilcoxon_runs(runs: list[SamplerRuns]) -> None:
    reference = next((r for r in runs if r.name == REFERENCE_SAMPLER), None)
    if reference is None:
        return
    for run in runs:
        if run is reference:
            continue
        differences = np.subtract(run.best, reference.best)
        if np.allclose(differences, 0):
            run.p_value = 1.0
            continue
        run.p_value = float(stats.wilcoxon(run.best, reference.best, zero_method="zsplit").pvalue)


# -- the table ------------------------------------------------------------------------------------
def _mean_sd(values: Sequence[float]) -> str:
    if not len(values) or np.all(np.isnan(values)):
        return "—"
    return f"{np.nanmean(values):.4f} ± {np.nanstd(values):.4f}"


def _gap(inner: Sequence[float], outer: Sequence[float]) -> str:
    if not len(inner) or not len(outer) or np.all(np.isnan(inner)):
        return "—"
    return f"{np.nanmean(inner) - np.mean(outer):+.4f}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return " ".join(
            [f"{first:<{widths[0]}}", *(f"{c:>{w}}" for c, w in zip(rest, widths[1:]))]
        ).rstrip()

    top = line(header)
    return [top, "-" * len(top), *(line(row) for row in rows)]


def format_table(
    runs: list[SamplerRuns],
    references: dict[str, Scores],
    *,
    metric: str = "accuracy",
) -> str:
    """The comparison as a text table.

    Per row: the inner best (the search's own score; for a fixed transform, that score of its
    features), the held-out score (``metric``) and the gap between them (inner − held-out), each
    as mean ± sd over studies (seeds × outer folds) or splits; the same on permuted labels when
    the null check ran; then, for samplers, trials, trials to 99 % of the final best, wall seconds
    and the Wilcoxon signed-rank p-value of the inner best against the coordinate search.
    """
    rows: list[Scores] = [*runs, *references.values()]
    held = any(r.held_out for r in rows)
    null = any(r.null_best for r in rows)
    groups = [("", "best", "held_out")]
    if null:
        groups.append((" (perm.)", "null_best", "null_held_out"))
    header = ["method"]
    for suffix, _, _ in groups:
        header.append(("inner best" if not suffix else "inner") + suffix)
        if held:
            header += ["held-out" + suffix, "gap" + suffix]
    header += ["trials", "to 99%", "wall s", f"Wilcoxon p vs {REFERENCE_SAMPLER}"]
    cells = []
    for r in rows:
        row = [r.name]
        for _, inner_field, held_field in groups:
            inner, outer = getattr(r, inner_field), getattr(r, held_field)
            row.append(_mean_sd(inner))
            if held:
                row += [_mean_sd(outer), _gap(inner, outer)]
        if isinstance(r, SamplerRuns):
            row += [
                f"{np.mean(r.trials):.0f}",
                f"{np.mean(r.trials_to_99):.0f}",
                f"{np.nanmean(r.wall):.1f}",
                "—" if r.p_value is None else f"{r.p_value:.3f}",
            ]
        else:
            row += [""] * 4
        cells.append(row)
    notes = []
    if held:
        notes.append(
            f"held-out: {metric} of the chosen Λ on rows its search did not see; "
            "gap: inner best − held-out"
        )
    if null:
        notes.append("perm.: the same on randomly permuted labels (chance is the null)")
    return "\n".join([*notes, *text_table(header, cells)])
