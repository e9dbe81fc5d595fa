"""The Pareto front of a two-objective search, as a user sees it: ``optuna-boxcox search
--transforms box-cox,identity,drop --sampler nsga2``, then ``optuna-boxcox dashboard``, in a real
headless Chromium.

Needs the Debian ``chromium`` package (/usr/bin/chromium) and the ``playwright`` Python package; the
browser is the system one (``playwright install`` is never needed).
"""

from __future__ import annotations

from pathlib import Path
import re
import socket
import subprocess
import sys
import time
from urllib.error import URLError
from urllib.request import urlopen

import optuna
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
STUDY = "wine/knn/nsga2"
PLOT_ID = "user-defined-plot:pareto-front"

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} not found (Debian: apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the playwright package is not installed (pip install playwright)",
)


def _command(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("optuna-boxcox")
    return (
        [str(script), *args]
        if script.exists()
        else [sys.executable, "-m", "optuna_boxcox.cli", *args]
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> str:
    """A finished two-objective search on wine (6 features, k-NN, NSGA-II), with its figure."""
    storage = f"sqlite:///{tmp_path_factory.mktemp('study') / 's.db'}"
    run = subprocess.run(
        _command(
            "search",
            "--dataset",
            "wine",
            "--features",
            "6",
            "--classifier",
            "knn",
            "--transforms",
            "box-cox,identity,drop",
            "--sampler",
            "nsga2",
            "--n-trials",
            "40",
            "--storage",
            storage,
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"optuna-boxcox search failed:\n{run.stdout}\n{run.stderr}"
    return storage


@pytest.fixture(scope="module")
def dashboard(searched, tmp_path_factory):
    port = _free_port()
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
                        "optuna-boxcox dashboard did not start:\n"
                        + (directory / "dashboard.log").read_text()
                    )
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def test_study_page_renders_the_attached_pareto_front(searched, dashboard, tmp_path):
    study = optuna.load_study(study_name=STUDY, storage=searched)
    front = len({(t.values[0], t.values[1]) for t in study.best_trials})
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(20_000)
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
        finally:
            browser.close()
