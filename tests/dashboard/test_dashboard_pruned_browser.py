"""A search with rows as the fidelity, in optuna-dashboard: its pruned candidates are PRUNED trials
whose intermediate values (step = rows) the dashboard plots and lists.

In a real Chromium, with the server and browser fixtures of :mod:`test_dashboard_browser` (same
requirements and skip reasons) on a study of its own, written by the batched runner.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB
from test_dashboard_browser import dashboard  # noqa: F401 - the server fixture, on our study
from test_dashboard_browser import page  # noqa: F401 - the browser fixture
from test_dashboard_browser import sync_api

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox.samplers import make_sampler


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> str:
    """The iterative search on breast_cancer's first 4 features, halved from 60 rows."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('pruned') / 's.db'}"
    X, y = load_breast_cancer(return_X_y=True)
    study = optuna.create_study(
        storage=storage,
        study_name="halved",
        direction="maximize",
        sampler=make_sampler("iterative"),
    )
    optimize(study, BoxCoxObjective(X[:, :4], y, GaussianNB(), fidelity=Fidelity(min_rows=60)))
    return storage


@pytest.fixture(scope="module")
def trials(searched):
    return optuna.load_study(study_name="halved", storage=searched).trials


def test_the_intermediate_values_plot_draws_the_halved_trials(page, dashboard, trials):  # noqa: F811
    page.goto(f"{dashboard}/dashboard/studies/1")
    plot = page.locator('[id="graph-intermediate-values"]')
    sync_api.expect(plot.locator("svg.main-svg").first).to_be_visible()
    drawn = [t for t in trials if t.intermediate_values]
    assert any(t.state == TrialState.PRUNED for t in drawn)
    # One line per trial with intermediate values (COMPLETE and PRUNED alike).
    sync_api.expect(plot.locator(".scatterlayer .trace")).to_have_count(len(drawn))


def test_a_pruned_trial_shows_its_state_and_intermediate_values(page, dashboard, trials):  # noqa: F811
    pruned = next(
        t for t in trials if t.state == TrialState.PRUNED and len(t.intermediate_values) >= 2
    )
    page.goto(f"{dashboard}/dashboard/studies/1/trials?numbers={pruned.number}")
    title = page.locator("main").get_by_text(f"Trial {pruned.number} (trial_id=")
    sync_api.expect(title).to_be_visible()
    # The trial's own pane (not the list of every trial beside it): its state and values.
    pane = title.locator("xpath=..")
    sync_api.expect(pane.get_by_text("Pruned", exact=True)).to_be_visible()
    row = pane.get_by_text("Intermediate Values").locator("xpath=..")
    for step, value in pruned.intermediate_values.items():
        sync_api.expect(row).to_contain_text(f"{step} {value!r}")
