"""The paper's published numbers (Tables 2, 3, 5–8) and the feature pairs of its 2-D studies.

They live in ``optuna_boxcox/data/paper_tables.json``, copied from the paper as published (percent;
rows other than "Base accuracy" are improvements δ over the base accuracy). Everything that compares
with the paper reads them through this module.
"""

from __future__ import annotations

from dataclasses import dataclass
import functools
from importlib import resources
import json
from typing import Any


@functools.cache
def paper_tables() -> dict[str, Any]:
    """The whole data file (read once)."""
    text = (
        resources.files("optuna_boxcox").joinpath("data", "paper_tables.json").read_text("utf-8")
    )
    return json.loads(text)


@dataclass(frozen=True)
class TableTarget:
    """One of the paper's cross-validated tables of Box-Cox search strategies (Tables 5–8).

    Attributes:
        name: ``table5`` … ``table8``.
        key: Its entry in the data file.
        dataset: ``sonar`` or ``breast_cancer``.
        two_d: Whether the table is split into the 2-D feature pairs of the paper.
        title: What the table shows, for reports.
    """

    name: str
    key: str
    dataset: str
    two_d: bool
    title: str

    @property
    def pairs(self) -> dict[str, tuple[int, int]]:
        """Section label ("Features 8 and 41") → 0-based feature pair; empty for a full table."""
        if not self.two_d:
            return {}
        pairs = paper_tables()["feature_pairs_zero_based"][
            "sonar" if self.dataset == "sonar" else "breast"
        ]
        return {label: (int(i), int(j)) for label, (i, j) in pairs.items()}

    def published(self, section: str, row_label: str, classifier: str) -> float | None:
        """The paper's number for one cell (``section`` is the pair label, ``""`` for full tables)."""
        table = paper_tables()[self.key]
        if self.two_d:
            table = table.get(section, {})
        return table.get(row_label, {}).get(classifier)


TABLE_TARGETS: dict[str, TableTarget] = {
    "table5": TableTarget(
        "table5", "table5_sonar_full", "sonar", False, "Table 5: sonar, all 60 features"
    ),
    "table6": TableTarget(
        "table6", "table6_sonar_2d", "sonar", True, "Table 6: sonar, 2-D feature pairs"
    ),
    "table7": TableTarget(
        "table7",
        "table7_breast_full",
        "breast_cancer",
        False,
        "Table 7: breast cancer, all 30 features",
    ),
    "table8": TableTarget(
        "table8",
        "table8_breast_2d",
        "breast_cancer",
        True,
        "Table 8: breast cancer, 2-D feature pairs",
    ),
}

#: Column names of the grid-exploration tables (Tables 2 and 3), in the paper's order.
GRID_COLUMNS = ("base", "after", "full_delta", "spherical_delta", "diagonal_delta")


def published_grid(target: str, section: str, classifier: str, column: str) -> float | None:
    """The paper's number in Table 2 (``section`` = data set label) or Table 3 (``section`` = "")."""
    if target == "table2":
        table = paper_tables()["table2_synthetic_grid_exploration"].get(section, {})
    else:
        table = paper_tables()["table3_random_dataset_10_seeds"]
    return table.get(classifier, {}).get(column)
