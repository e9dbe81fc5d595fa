"""Our numbers beside the paper's, cell by cell: printed, as CSV and as Markdown."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from dataclasses import field
import io
from typing import TYPE_CHECKING

from optuna_boxcox._system._markup import md_text

if TYPE_CHECKING:
    from pathlib import Path

    from optuna_boxcox.experiments._protocol import Protocol


@dataclass
class Cell:
    """One number of a table: ours (percent) and the paper's.

    Tables 5–8: ``row`` is a row label ("MLE"), ``column`` a classifier; the base row holds accuracy,
    every other row the improvement δ over the base. Tables 2–3: ``row`` is a classifier, ``column``
    one of base / after / full_delta / spherical_delta / diagonal_delta.
    """

    section: str  # the 2-D feature pair or the synthetic data set; "" for a whole table
    row: str
    column: str
    ours: float | None  # None until every fold (or cell) of it is computed
    paper: float | None
    n_done: int = 0
    n_total: int = 0
    seconds: float = 0.0  # computing time of the folds (summed over processes)

    @property
    def difference(self) -> float | None:
        if self.ours is None or self.paper is None:
            return None
        return self.ours - self.paper


@dataclass
class Reproduction:
    """The result of :func:`optuna_boxcox.experiments.reproduce.reproduce`."""

    target: str
    title: str
    protocol: Protocol
    cells: list[Cell]
    wall_seconds: float = 0.0
    files: list[Path] = field(default_factory=list)
    complete: bool = True
    figures: list[Path] = field(default_factory=list)

    # -- access ----------------------------------------------------------------------------------
    def cell(self, row: str, column: str, section: str = "") -> Cell:
        for c in self.cells:
            if (c.section, c.row, c.column) == (section, row, column):
                return c
        raise KeyError(f"no cell ({section!r}, {row!r}, {column!r}) in {self.target}")

    @property
    def sections(self) -> list[str]:
        return list(dict.fromkeys(c.section for c in self.cells))

    def _rows(self, section: str) -> list[str]:
        return list(dict.fromkeys(c.row for c in self.cells if c.section == section))

    def _columns(self, section: str) -> list[str]:
        return list(dict.fromkeys(c.column for c in self.cells if c.section == section))

    def _lookup(self, section: str) -> dict[tuple[str, str], Cell]:
        return {(c.row, c.column): c for c in self.cells if c.section == section}

    # -- text --------------------------------------------------------------------------------------
    def header(self) -> str:
        protocol = self.protocol
        kind = "the paper's protocol" if protocol.is_paper else "NOT the paper's protocol"
        return (
            f"{self.title} — ours / paper / Δ (ours − paper), percent; rows other than the base are δ "
            f"over the base.\nOuter CV: {protocol.n_splits}-fold × {protocol.n_repeats} repeats, "
            f"random_state={protocol.random_state} ({kind})."
        )

    def format(self) -> str:
        """The table as aligned text, one block per section."""
        out = [self.header()]
        for section in self.sections:
            columns, rows, cells = (
                self._columns(section),
                self._rows(section),
                self._lookup(section),
            )
            width = max(len(r) for r in [*rows, "row"]) + 2
            if section:
                out.append(f"\n{section}")
            else:
                out.append("")
            out.append(" " * width + "".join(f"{c:^26}" for c in columns))
            out.append(
                f"{'':<{width}}" + "".join(f"{'ours':>8}{'paper':>9}{'Δ':>8} " for _ in columns)
            )
            for row in rows:
                line = f"{row:<{width}}"
                for column in columns:
                    cell = cells.get((row, column))
                    line += _text_cell(cell)
                out.append(line)
        incomplete = [c for c in self.cells if c.ours is None]
        if incomplete:
            out.append(
                f"\n{len(incomplete)} cell(s) not complete yet (…): run the same command again to finish them."
            )
        return "\n".join(out)

    def markdown(self) -> str:
        """GitHub Markdown: one table per section, each cell ``ours / paper (Δ)``."""
        lines = [f"## {self.title}", "", self.header().replace("\n", "  \n"), ""]
        for section in self.sections:
            columns, rows, cells = (
                self._columns(section),
                self._rows(section),
                self._lookup(section),
            )
            if section:
                lines += [f"### {md_text(section)}", ""]
            lines.append("| | " + " | ".join(map(md_text, columns)) + " |")
            lines.append("|---|" + "---:|" * len(columns))
            for row in rows:
                lines.append(
                    f"| {md_text(row)} | "
                    + " | ".join(_md_cell(cells.get((row, c))) for c in columns)
                    + " |"
                )
            lines.append("")
        lines.append(f"Wall time: {self.wall_seconds:.0f} s.")
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """One line per cell: section, row, column, ours, paper, difference, folds, seconds."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(
            [
                "target",
                "protocol",
                "section",
                "row",
                "column",
                "ours",
                "paper",
                "difference",
                "done",
                "total",
                "seconds",
            ]
        )
        for c in self.cells:
            writer.writerow(
                [
                    self.target,
                    self.protocol.tag,
                    c.section,
                    c.row,
                    c.column,
                    _num(c.ours),
                    _num(c.paper),
                    _num(c.difference),
                    c.n_done,
                    c.n_total,
                    f"{c.seconds:.1f}",
                ]
            )
        return buffer.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _signed(value: float) -> str:
    """+0.000 rather than -0.000 for a difference that is zero up to rounding."""
    return f"{round(value, 3) + 0.0:+.3f}"


def _text_cell(cell: Cell | None) -> str:
    if cell is None:
        return f"{'':26}"
    ours = "…" if cell.ours is None else f"{cell.ours:.3f}"
    paper = "—" if cell.paper is None else f"{cell.paper:.3f}"
    diff = "" if cell.difference is None else _signed(cell.difference)
    return f"{ours:>8}{paper:>9}{diff:>8} "


def _md_cell(cell: Cell | None) -> str:
    if cell is None:
        return ""
    ours = "…" if cell.ours is None else f"{cell.ours:.3f}"
    if cell.paper is None:
        return ours
    diff = "" if cell.difference is None else f" ({_signed(cell.difference)})"
    return f"{ours} / {cell.paper:.3f}{diff}"
