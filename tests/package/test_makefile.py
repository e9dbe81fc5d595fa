"""``make test`` says what it installs system-wide before it does, and installs nothing there
when asked not to (issue #54: apt-get upgraded unrelated system packages without a word)."""

from __future__ import annotations

from pathlib import Path
import shutil
import subprocess

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _make(*args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-s", "-B", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target, package", [("/usr/bin/chromium", "chromium")])
def test_system_packages_are_announced_before_apt_get_runs(target, package):
    recipe = _make("-n", target)
    said = recipe.index(f"installing Debian's {package} system-wide")
    assert "may upgrade packages" in recipe
    assert said < recipe.index("apt-get install")


def test_system_packages_no_installs_nothing_system_wide():
    out = _make("/usr/bin/chromium", "SYSTEM_PACKAGES=no")
    assert out.strip() == "make: chromium not installed (the browser tests will be skipped)"
