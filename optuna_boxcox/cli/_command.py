"""A command of this installation as a user types it, in the commands' advice.

``make demo`` installs into ``.venv`` without activating it, so the shell that ran it finds no
``optuna-boxcox`` on its PATH: a command the output tells a user to type must work as printed.
"""

from __future__ import annotations

import os
from pathlib import Path
import shlex
import shutil
import sys

#: The command line's module, run by ``python -m`` where its console script is not installed.
MODULE = "optuna_boxcox.cli"


def command(script: str = "optuna-boxcox") -> str | None:
    """``script``, a console script of this environment (``optuna-boxcox``, ``optuna-dashboard``),
    as typed in the current folder: its bare name when the PATH finds this environment's copy,
    else its path (relative below the current folder: ``.venv/bin/optuna-boxcox``). Where the
    environment has no such script: the bare name if the PATH finds one, else ``python -m`` for
    ``optuna-boxcox``, else None."""
    bin_dir = Path(sys.executable).parent
    installed = shutil.which(script, path=str(bin_dir))
    on_path = shutil.which(script)
    if installed is None:
        if on_path is not None:
            return script
        if script == "optuna-boxcox":
            return f"{_typed(Path(sys.executable))} -m {MODULE}"
        return None
    if on_path is not None and os.path.samefile(on_path, installed):
        return script
    return _typed(Path(installed))


def _typed(path: Path) -> str:
    """``path`` relative to the current folder when it lies below it (with a ``/``, so that the
    shell runs it rather than looking it up), else as it is."""
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        return shlex.quote(str(path))
    return shlex.quote(shown if os.sep in shown else f".{os.sep}{shown}")
