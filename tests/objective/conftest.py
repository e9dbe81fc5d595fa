"""Fixtures shared by the objective's tests."""

from __future__ import annotations

import pytest
from sklearn.datasets import load_wine


@pytest.fixture(scope="module")
def wine4():
    """Wine's first four features and its classes (a DataFrame and a Series)."""
    X, y = load_wine(return_X_y=True, as_frame=True)
    return X.iloc[:, :4], y
