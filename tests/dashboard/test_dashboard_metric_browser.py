"""The dashboard names a search's objective after its scoring, not "Objective 0".

In a real Chromium, with the server and browser fixtures of :mod:`test_dashboard_browser` (same
requirements and skip reasons) on a study of its own, searched with a scoring other than accuracy so
that the name can only come from the study.
"""

from __future__ import annotations

import optuna
import pytest
from test_dashboard_browser import dashboard  # noqa: F401 - the server fixture, on our study
from test_dashboard_browser import page  # noqa: F401 - the browser fixture
from test_dashboard_browser import run_search
from test_dashboard_browser import sync_api

METRIC = "balanced_accuracy"
STUDY = "wine/bayes/iterative"


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> str:
    """``optuna-boxcox search`` on wine's first 3 features, scored by balanced accuracy."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('metric') / 's.db'}"
    run_search(
        storage,
        *["--dataset", "wine", "--features", "3", "--classifier", "bayes", "--scoring", METRIC],
    )
    assert optuna.load_study(study_name=STUDY, storage=storage).metric_names == [METRIC]
    return storage


def test_study_page_names_the_objective_after_the_scoring(page, dashboard):  # noqa: F811
    page.goto(f"{dashboard}/dashboard")
    page.get_by_text(STUDY).first.click()
    page.wait_for_url("**/dashboard/studies/*")
    main = page.locator("main")
    # The history plot titles its y axis with the objective's name; "Objective 0" when unnamed.
    axis = main.locator(".js-plotly-plot .ytitle").filter(has_text=METRIC)
    sync_api.expect(axis.first).to_be_visible()
    sync_api.expect(main).not_to_contain_text("Objective 0")
