"""``optuna-boxcox dashboard --read-only`` serves a study on read-only media, in a real Chromium.

The study is made by ``optuna-boxcox search`` in a folder that is then bind-mounted read-only (a
mounted archive of studies): SQLite cannot make its lock files there, so the dashboard must open
the file immutable. Needs root for the mount, Debian's ``chromium`` and the ``playwright``
package; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys
import time
from urllib.error import HTTPError
from urllib.error import URLError
from urllib.request import Request
from urllib.request import urlopen

import pytest
from shared import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
STUDY = "wine/bayes/iterative"

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} not found (Debian: apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the playwright package is not installed (pip install playwright)",
)


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "optuna_boxcox.cli", *args]


#: The commands run this checkout's package, whatever the folder they start in.
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


@pytest.fixture
def archive(tmp_path):
    """A finished search's SQLite file on a read-only bind mount; yields the mounted file."""
    source, mounted = tmp_path / "studies", tmp_path / "archive"
    source.mkdir()
    mounted.mkdir()
    search = subprocess.run(
        _command(
            "search", "--dataset", "wine", "--features", "4", "--classifier", "bayes",
            "--sampler", "iterative", "--storage", f"sqlite:///{source / 's.db'}",
        ),
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
    )  # fmt: skip
    assert search.returncode == 0, search.stderr
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    made = subprocess.run(["mount", "--bind", str(source), str(mounted)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"bind mounts are not allowed here: {made.stderr.decode().strip()}")
    try:
        ro = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(mounted)], capture_output=True, text=True
        )
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only: {ro.stderr.strip()}")
        yield mounted / "s.db"
    finally:
        subprocess.run(["umount", str(mounted)], check=True)


@pytest.fixture
def dashboard(archive, tmp_path):
    """``optuna-boxcox dashboard --read-only`` on the mounted file; yields its URL."""
    port = free_port()
    log_path = tmp_path / "dashboard.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            _command("dashboard", str(archive), "--read-only", "--port", str(port)),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env=ENV,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urlopen(f"{url}/api/meta", timeout=2).close()
                    break
                except (URLError, ConnectionError):
                    if server.poll() is not None or time.monotonic() > deadline:
                        log.flush()
                        pytest.fail(f"the dashboard did not start:\n{log_path.read_text()}")
                    time.sleep(0.2)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=10)


def test_a_read_only_dashboard_renders_a_study_on_read_only_media(dashboard):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            page.goto(f"{dashboard}/dashboard")
            listed = page.get_by_text(STUDY)
            sync_api.expect(listed.first).to_be_visible()
            listed.first.click()
            page.wait_for_url("**/dashboard/studies/*")
            plot = page.locator('[id="user-defined-plot:lambda-trajectory"]')
            sync_api.expect(plot.locator("svg.main-svg").first).to_be_visible()
        finally:
            browser.close()
    # Writes are refused by the HTTP filter; the storage under it refuses them too.
    request = Request(f"{dashboard}/api/studies/1", method="DELETE")
    with pytest.raises(HTTPError) as refused:
        urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert "read-only" in json.loads(refused.value.read())["reason"]
