"""``dashboard``: optuna-dashboard on a study storage, read through the package's fast reader."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path
import socket
from typing import Any

from optuna_boxcox.cli._args import DEFAULT_STORAGE
from optuna_boxcox.cli._args import UsageError


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, not allowed), or None when it can."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        return f"cannot resolve host {host!r} ({error.strerror})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As the server will bind: a port in TIME_WAIT after an earlier server is fine.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use"
            return f"cannot listen on {host}:{port} ({error.strerror})"
    return None


#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def storage_url(text: str) -> str:
    """The storage to open for ``text``: a plain path to a SQLite file (optuna-dashboard accepts
    one too) as its sqlite:/// URL; a plain path to nothing is refused, naming it."""
    from optuna_boxcox.storage import StorageError

    if "://" in text:
        return text
    path = Path(text)
    if not path.exists():
        raise StorageError(
            f"no study storage at {path} (looked in {Path.cwd()}); check the path, or run a "
            "search first"
        )
    if path.is_file():
        with path.open("rb") as file:
            if file.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
                return f"sqlite:///{path}"
    return text


def artifact_dir(storage: str) -> Path:
    """Where figures uploaded to a study go: beside a SQLite or journal file, else studies/."""
    from optuna_boxcox.storage import sqlite_path

    path = sqlite_path(storage)
    if path is None and "://" not in storage:
        path = Path(storage)
    return (path.parent if path is not None else Path("studies")) / "artifacts"


def cmd_dashboard(args: argparse.Namespace) -> int:
    from optuna_boxcox.storage import open_storage
    from optuna_boxcox.storage import redact

    # A misspelt path must not become an empty database served as an empty list.
    url = storage_url(args.storage)
    storage = open_storage(url, create=False)
    problem = port_in_use(args.host, args.port)
    if problem is not None:
        raise UsageError(f"{problem}; choose another with --port")
    from optuna.artifacts import FileSystemArtifactStore
    import optuna_dashboard

    artifacts = Path(args.artifact_dir) if args.artifact_dir else artifact_dir(url)
    artifacts.mkdir(parents=True, exist_ok=True)
    print(
        f"optuna-dashboard on {redact(url)}: http://{args.host}:{args.port}/  (Ctrl-C stops it)",
        flush=True,
    )
    optuna_dashboard.run_server(
        storage,
        host=args.host,
        port=args.port,
        artifact_store=FileSystemArtifactStore(str(artifacts)),
    )
    return 0


def register(subparsers: Any) -> None:
    dash = subparsers.add_parser(
        "dashboard", help="serve optuna-dashboard on a study storage (127.0.0.1 by default)"
    )
    dash.add_argument(
        "storage",
        nargs="?",
        default=DEFAULT_STORAGE,
        help=f"storage URL, SQLite file or journal file (default {DEFAULT_STORAGE}); it must "
        "exist",
    )
    dash.add_argument("--host", default="127.0.0.1", help="address to listen on")
    dash.add_argument("--port", type=int, default=8080, help="port to listen on")
    dash.add_argument(
        "--artifact-dir",
        default=None,
        help="where figures uploaded to studies are kept (default: artifacts/ beside a SQLite or "
        "journal file, else studies/artifacts)",
    )
    dash.set_defaults(func=cmd_dashboard)
