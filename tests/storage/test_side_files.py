"""A command that ends, however it ends, leaves the SQLite file alone: no ``-wal`` or ``-shm``
beside it. SQLite removes them when the file's last connection closes; a connection left open at
the command's quick exit (``os._exit``) keeps them on disk, which a user sees as litter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Each script ends as the command line does: close_opened_storages, then os._exit.
INTERRUPTED_WHILE_CREATING = """
    import optuna.storages._rdb.models as models
    from optuna_boxcox.cli import _close_and_exit
    from optuna_boxcox.storage import open_storage

    create_all = models.BaseModel.metadata.create_all

    def interrupted(bind, *args, **kwargs):
        create_all(bind, *args, **kwargs)
        raise KeyboardInterrupt  # a Ctrl-C while Optuna creates the tables of a new file

    models.BaseModel.metadata.create_all = interrupted
    try:
        open_storage("sqlite:///new.db", create=True)
    except KeyboardInterrupt:
        pass
    _close_and_exit(130)
"""

USERS_OWN_STORAGE = """
    import optuna
    from optuna_boxcox.cli import _close_and_exit
    from optuna_boxcox.storage import open_storage

    open_storage("sqlite:///new.db", create=True)
    own = optuna.storages.RDBStorage("sqlite:///new.db")  # a script's own, on the same file
    optuna.create_study(storage=own, study_name="mine")
    _close_and_exit(0)
"""


@pytest.mark.parametrize(
    "script",
    [INTERRUPTED_WHILE_CREATING, USERS_OWN_STORAGE],
    ids=["interrupted-while-creating", "users-own-storage"],
)
def test_no_side_files_after_a_quick_exit(tmp_path, script):
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 130), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db"], done.stderr
