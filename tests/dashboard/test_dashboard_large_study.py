"""The 20,160-trial study of ``search --sampler combined2`` on sonar, in ``optuna-boxcox dashboard``.

In a real Chromium, with the server and browser fixtures of :mod:`test_dashboard_browser` (same
requirements, same skips) on this study. The page is slow to fill — optuna-dashboard sends every
trial with every parameter's distribution, ~300 MB of JSON here — so the test waits minutes, and
prints how long the page took (README, docs/performance_log.md).
"""

from __future__ import annotations

import time

import optuna
import pytest
from shared import SONAR_CSV
from test_dashboard_browser import dashboard  # noqa: F401 - the server fixture, on our study
from test_dashboard_browser import page  # noqa: F401 - the browser fixture
from test_dashboard_browser import run_search

from optuna_boxcox.storage import open_storage

#: A full-scale run (about two minutes, most of it the page filling): `make test-all` runs it;
#: the CI-sized browser tests render smaller studies.
pytestmark = pytest.mark.slow

STUDY = "sonar/bayes/combined2"
TRIALS = 20_160

if not SONAR_CSV.exists():
    pytest.skip(f"sonar data not found at {SONAR_CSV}", allow_module_level=True)


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> str:
    """A finished ``optuna-boxcox search --sampler combined2`` on sonar with naive Bayes."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('study') / 's.db'}"
    run_search(
        storage,
        *["--csv", str(SONAR_CSV), "--label", "y", "--classifier", "bayes"],
        *["--sampler", "combined2", "--study-name", STUDY],
        timeout=600,
    )
    return storage


@pytest.mark.timeout(900)
def test_the_combined2_study_page_renders_every_trial(page, dashboard, searched):  # noqa: F811
    # The package's storage reads the study in bulk (Optuna's reader takes a minute here).
    study = optuna.load_study(study_name=STUDY, storage=open_storage(searched, create=False))
    assert len(study.trials) == TRIALS
    started = time.perf_counter()
    page.goto(f"{dashboard}/dashboard/studies/1")
    # plotly keeps a graph's traces on its div: the history plot holds one point per trial.
    page.wait_for_function(
        "() => (document.getElementById('plot-history')?.data || [])"
        ".filter(t => t.name && t.name.startsWith('accuracy'))"
        ".reduce((n, t) => n + (t.x || []).length, 0) > 0",
        timeout=600_000,
    )
    seconds = time.perf_counter() - started
    points = page.evaluate(
        "() => document.getElementById('plot-history').data"
        ".filter(t => t.name && t.name.startsWith('accuracy'))"
        ".reduce((n, t) => n + t.x.length, 0)"
    )
    assert points == TRIALS
    best = page.get_by_text("Best Trial").first.inner_text()
    assert f"number={study.best_trial.number}" in best
    print(f"\nthe {TRIALS}-trial study page rendered its trials in {seconds:.0f} s")
