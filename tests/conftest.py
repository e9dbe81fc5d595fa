"""Shared fixtures: the paper's two real data sets as scikit-learn Bunches (data, target, frame)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.utils import Bunch

#: The sonar CSV lives beside the repository (tests and CI only; the package fetches it from OpenML).
SONAR_CSV = Path(__file__).resolve().parents[2] / "shared" / "data" / "sonar.csv"


@pytest.fixture(scope="session")
def sonar() -> Bunch:
    """Sonar (208 × 60): ``data`` has columns x0..x59, ``target`` is y (1 = rock, 0 = mine)."""
    if not SONAR_CSV.exists():
        pytest.skip(f"sonar data not found at {SONAR_CSV} (expected beside the repository in shared/data)")
    frame = pd.read_csv(SONAR_CSV)
    features = [f"x{j}" for j in range(60)]
    return Bunch(data=frame[features], target=frame["y"], frame=frame, feature_names=features)


@pytest.fixture(scope="session")
def breast_cancer() -> Bunch:
    """Breast cancer (569 × 30) from scikit-learn, as DataFrame ``data`` and Series ``target``."""
    return load_breast_cancer(as_frame=True)
