"""What a user sees: ``optuna-boxcox search``, then ``optuna-boxcox dashboard``, in a real Chromium.

Needs the Debian ``chromium`` package (/usr/bin/chromium) and the ``playwright`` Python package; the
browser is the system one (``playwright install`` is never needed). A screenshot of the study page
is left in the test's tmp_path; with ``UPDATE_SCREENSHOT=1`` it is also copied to docs/dashboard.png.
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import time
from urllib.error import URLError
from urllib.request import urlopen

import optuna
import pytest
from shared import free_port

from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox.cli import search as cli_search

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STUDY = "wine/bayes/iterative"
FEATURES = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash"]
#: optuna-dashboard keeps a figure saved with save_plotly_graph_object under this system-attr prefix.
PLOT_KEY = "dashboard:plot_data:lambda-trajectory:"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} not found (Debian: apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the playwright package is not installed (pip install playwright)",
)
sync_api.expect.set_options(timeout=20_000)


def _command(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("optuna-boxcox")
    return (
        [str(script), *args]
        if script.exists()
        else [sys.executable, "-m", "optuna_boxcox.cli", *args]
    )


def _cli_attaches_figures() -> bool:
    # Until the search command attaches figures itself the test attaches them, as the CLI will.
    return "attach_figures" in Path(cli_search.__file__).read_text()


def run_search(storage: str, *args: str, timeout: float = 120) -> None:
    """``optuna-boxcox search ARGS --storage STORAGE`` as a user runs it (iterative unless
    ``--sampler`` is given); fails the test with what it printed if it fails."""
    sampler = () if "--sampler" in args else ("--sampler", "iterative")
    run = subprocess.run(
        _command("search", *args, *sampler, "--storage", storage),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, f"optuna-boxcox search failed:\n{run.stdout}\n{run.stderr}"


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> str:
    """A finished ``optuna-boxcox search`` on wine (4 features, naive Bayes, iterative), with figures."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('study') / 's.db'}"
    run_search(storage, "--dataset", "wine", "--features", "4", "--classifier", "bayes")
    study = optuna.load_study(study_name=STUDY, storage=storage)
    has_figures = any(
        k.startswith(PLOT_KEY)
        for k in storage_of(study).get_study_system_attrs(study_id_of(study))
    )
    if _cli_attaches_figures():
        assert has_figures, "optuna-boxcox search did not attach its figures to the study"
    elif not has_figures:
        from optuna_boxcox import BoxCoxObjective
        from optuna_boxcox.classifiers import make_classifier
        from optuna_boxcox.datasets import load_dataset
        from optuna_boxcox.figures import attach_figures
        from optuna_boxcox.figures import search_figures
        from optuna_boxcox.samplers import make_sampler

        X, y = load_dataset("wine")
        objective = BoxCoxObjective(X.iloc[:, :4], y, make_classifier("bayes"))
        attach_figures(study, *search_figures(study, objective, make_sampler("iterative", seed=0)))
    return storage


@pytest.fixture(scope="module")
def dashboard(searched, tmp_path_factory):
    """``optuna-boxcox dashboard`` on the study, on a free port of 127.0.0.1; yields its URL."""
    port = free_port()
    directory = tmp_path_factory.mktemp("dashboard")
    log = open(directory / "dashboard.log", "w")  # noqa: SIM115 - the server writes it until teardown
    server = subprocess.Popen(
        _command(
            "dashboard",
            searched,
            "--port",
            str(port),
            "--artifact-dir",
            str(directory / "artifacts"),
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urlopen(f"{url}/api/meta", timeout=2).close()
                break
            except (URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(
                        f"optuna-boxcox dashboard did not start:\n{(directory / 'dashboard.log').read_text()}"
                    )
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def page(dashboard):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(20_000)
        try:
            yield page
        finally:
            browser.close()


@pytest.mark.long
def test_study_page_shows_the_search_and_its_lambda_trajectory(page, dashboard, tmp_path):
    page.goto(f"{dashboard}/dashboard")
    listed = page.get_by_text(STUDY)
    sync_api.expect(listed.first).to_be_visible()

    listed.first.click()
    page.wait_for_url("**/dashboard/studies/*")
    # The dashboard renders each attached figure with plotly.js into a div of this id.
    plot = page.locator('[id="user-defined-plot:lambda-trajectory"]')
    sync_api.expect(plot).to_have_class(re.compile(r"\bjs-plotly-plot\b"))
    sync_api.expect(plot.locator("svg.main-svg").first).to_be_visible()
    sync_api.expect(plot.locator(".gtitle")).to_have_text("λ of every feature after each sweep")
    assert plot.locator(".legendtext").all_text_contents() == FEATURES, (
        "legend of the λ trajectory"
    )
    assert plot.locator(".scatterlayer .trace").count() == len(FEATURES), "one line per feature"
    for other in ("best-so-far", "transform"):
        sync_api.expect(
            page.locator(f'[id="user-defined-plot:{other}"] svg.main-svg').first
        ).to_be_visible()

    page.wait_for_timeout(500)  # let plotly finish its transitions before the picture
    page.screenshot(path=tmp_path / "dashboard.png", full_page=True)
    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copy(tmp_path / "dashboard.png", SCREENSHOT)


def test_a_trial_shows_lambda_per_feature_and_the_sweep_it_belongs_to(page, dashboard):
    page.goto(f"{dashboard}/dashboard/studies/1")
    page.get_by_role("link", name="Details").click()
    page.wait_for_url("**/trials?numbers=*")
    details = page.locator("main")
    sync_api.expect(details.get_by_text("Best Trial")).to_be_visible()
    text = details.inner_text()
    for name in FEATURES:
        assert name in text, f"the trial page does not show the λ parameter {name!r}"
    for attr in ("epoch", "direction", "phase", "candidate"):
        assert attr in text, f"the trial page does not show the user attribute {attr!r}"


def test_note_describes_the_search(page, dashboard):
    page.goto(f"{dashboard}/dashboard/studies/1/note")
    note = page.locator("table").first
    sync_api.expect(note).to_contain_text("wine (178 samples × 4 features)")
    for text in ("bayes", "accuracy, resubstitution", "coordinate", "epochs = 4"):
        sync_api.expect(note).to_contain_text(text)
