"""A fresh installation's first fit compiles the fast paths with Numba, which takes seconds: it
says so in one line before the search's set-up, and a later process, loading them from Numba's
cache, says nothing (issue #53: the first fit sat silent for 13-43 s)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FIT = """
import sys
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._math import _numerics
from optuna_boxcox.classifiers import make_classifier

mle = _numerics.mle_lambdas


def announced_mle(*args, **kwargs):
    print("the MLE starts", file=sys.stderr, flush=True)
    return mle(*args, **kwargs)


_numerics.mle_lambdas = announced_mle
X, y = load_breast_cancer(return_X_y=True)
if sys.argv[1] == "logistic":
    estimator = LogisticRegression(max_iter=2000)
else:
    estimator = make_classifier(sys.argv[1])
print("fit starts", file=sys.stderr, flush=True)
BoxCoxClassifier(estimator, sampler="spherical").fit(X[:, :4], y)
print("fit ends", file=sys.stderr, flush=True)
"""


def notice(what: str) -> str:
    return (
        f"optuna-boxcox: compiling {what} with Numba, once per installation (cached for later "
        "runs); this takes seconds"
    )


def stderr_lines(code: str, argument: str, env: dict[str, str]) -> list[str]:
    """The lines a fresh process running ``code`` with ``argument`` writes to stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code, argument],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


NOTICES = {
    "logistic": "LogisticRegression's fast fit",
    "linear": "the perceptron's and SGD's fast fit",
}


@pytest.mark.long
@pytest.mark.parametrize("classifier", sorted(NOTICES))
def test_the_first_fit_says_it_compiles_and_a_later_one_does_not(tmp_path, classifier):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    line = notice(NOTICES[classifier])
    first = stderr_lines(FIT, classifier, env)
    assert first.count(line) == 1, first
    # Before the search's set-up (the MLE Λ, Numba's import), not once Numba has begun.
    assert first.index("fit starts") < first.index(line) < first.index("the MLE starts")
    assert first.index("fit ends") > first.index(line)
    assert line not in stderr_lines(FIT, classifier, env)


PROBE = """
import numpy as np


def double(a):
    return a * 2.0
"""

RUN = """
import sys
import numpy as np
from numba.core import event
from optuna_boxcox._math import _jit
import probe

if sys.argv[1] == "index unread":
    _jit._in_cache = lambda kernel: True  # as on a Numba whose caching internals moved


class Starts(event.Listener):
    def on_start(self, happening):
        print("numba compiles", file=sys.stderr, flush=True)

    def on_end(self, happening):
        pass


event.register("numba:compile", Starts())
kernel = _jit.compiled(probe.double, announce="a probe")
print("first call", file=sys.stderr, flush=True)
assert kernel(np.ones(2))[0] == 2.0
"""
PROBE_NOTICE = notice("a probe")


@pytest.mark.parametrize("index", ["index read", "index unread"])
def test_the_line_comes_before_numba_sets_up_and_never_from_the_cache(tmp_path, index):
    # With an empty cache the line is printed before the first call (Numba's set-up before it
    # starts compiling is most of a second); where the cache's index cannot be read, Numba's
    # compile event prints it. Either way once, and a process that loads the kernel says nothing.
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }

    first = stderr_lines(RUN, index, env)
    assert first.count(PROBE_NOTICE) == 1, first
    if index == "index read":
        assert (
            first.index(PROBE_NOTICE) < first.index("first call") < first.index("numba compiles")
        )
    else:
        assert first.index("first call") < first.index(PROBE_NOTICE)
    later = stderr_lines(RUN, index, env)
    assert PROBE_NOTICE not in later and "numba compiles" not in later, later
