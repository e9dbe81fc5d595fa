"""A fresh installation's first fit compiles the fast paths with Numba, which takes seconds: it
says so in one line the moment compiling starts, and a later process, loading them from Numba's
cache, says nothing (issue #53: the first fit sat silent for 13-43 s)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FIT = """
import sys, time
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from optuna_boxcox import BoxCoxClassifier
X, y = load_breast_cancer(return_X_y=True)
print("fit starts", file=sys.stderr, flush=True)
BoxCoxClassifier(LogisticRegression(max_iter=2000), sampler="spherical").fit(X[:, :4], y)
print("fit ends", file=sys.stderr, flush=True)
"""
NOTICE = (
    "optuna-boxcox: compiling LogisticRegression's fast fit with Numba, once per installation "
    "(cached for later runs); this takes seconds"
)


@pytest.mark.long
def test_the_first_fit_says_it_compiles_and_a_later_one_does_not(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}

    def lines() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", FIT], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0, done.stderr
        return done.stderr.splitlines()

    first = lines()
    assert first.count(NOTICE) == 1, first
    assert first.index("fit starts") < first.index(NOTICE) < first.index("fit ends")
    assert NOTICE not in lines()
