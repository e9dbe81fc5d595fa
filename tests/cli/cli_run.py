"""Running the command line as a user does, for the tests of this folder."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

REPO = Path(__file__).resolve().parents[2]


def user_env() -> dict[str, str]:
    """The environment with this checkout first on the path, not whichever copy of the package
    the interpreter has installed."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def run_cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``optuna-boxcox ARGS`` in ``cwd``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.cli", *args],
        cwd=cwd,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
