"""The Pareto front of a two-objective search, as a user sees it: ``optuna-boxcox search
--transforms box-cox,identity,drop --sampler nsga2``, then ``optuna-boxcox dashboard``, in a real
headless Chromium, with the server and browser fixtures of :mod:`test_dashboard_browser` (same
requirements, same skips) on this study.
"""

from __future__ import annotations

import re

import optuna
import pytest
from test_dashboard_browser import dashboard  # noqa: F401 - the server fixture, on our study
from test_dashboard_browser import page  # noqa: F401 - the browser fixture
from test_dashboard_browser import run_search
from test_dashboard_browser import sync_api

STUDY = "wine/knn/nsga2"
PLOT_ID = "user-defined-plot:pareto-front"


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> str:
    """A finished two-objective search on wine (6 features, k-NN, NSGA-II), with its figure."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('study') / 's.db'}"
    run_search(
        storage,
        *["--dataset", "wine", "--features", "6", "--classifier", "knn"],
        *["--transforms", "box-cox,identity,drop", "--sampler", "nsga2", "--n-trials", "40"],
        timeout=300,
    )
    return storage


def test_study_page_renders_the_attached_pareto_front(searched, dashboard, page, tmp_path):  # noqa: F811
    study = optuna.load_study(study_name=STUDY, storage=searched)
    front = len({(t.values[0], t.values[1]) for t in study.best_trials})
    page.goto(f"{dashboard}/dashboard")
    listed = page.get_by_text(STUDY)
    sync_api.expect(listed.first).to_be_visible()
    listed.first.click()
    page.wait_for_url("**/dashboard/studies/*")
    plot = page.locator(f'[id="{PLOT_ID}"]')
    sync_api.expect(plot).to_have_class(re.compile(r"\bjs-plotly-plot\b"))
    sync_api.expect(plot.locator("svg.main-svg").first).to_be_visible()
    sync_api.expect(plot.locator(".gtitle")).to_have_text(
        "Pareto front: score against features kept"
    )
    assert plot.locator(".legendtext").all_text_contents() == ["trials", "Pareto front"]
    # One marker per distinct point of the front on its trace.
    markers = plot.locator(".scatterlayer .trace").nth(1).locator("path.point")
    assert markers.count() == front, "the front's points on the figure"
    page.screenshot(path=tmp_path / "pareto.png", full_page=True)
