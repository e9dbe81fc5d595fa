"""``dashboard``: optuna-dashboard on a study storage, read through the package's fast reader."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
from pathlib import Path
import socket
import sys
from typing import Any

from optuna_boxcox.cli._args import DEFAULT_STORAGE
from optuna_boxcox.cli._args import UsageError

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).


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
            f"no study storage at {path}{'' if path.is_absolute() else f' (looked in {Path.cwd()})'}; "
            "check the path, or run a "
            "search first"
        )
    if path.is_file():
        with path.open("rb") as file:
            if file.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
                return f"sqlite:///{path}"
    return text


def is_loopback(host: str) -> bool:
    """Whether ``host`` answers only on this machine (127.0.0.1, ::1, localhost); 0.0.0.0 and ::
    mean every interface, so they are not."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    addresses = {info[4][0].split("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


class ReadOnly:
    """A WSGI application that answers reads and refuses every request that could write (POST,
    PUT, PATCH, DELETE: new or deleted studies, notes, told trials, uploaded artifacts) with 403
    and a reason the dashboard shows."""

    READS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("REQUEST_METHOD", "GET").upper() in self.READS:
            return self.app(environ, start_response)
        body = json.dumps(
            {"reason": "this dashboard is read-only (optuna-boxcox dashboard --read-only)"}
        ).encode()
        start_response(
            "403 Forbidden",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]


def artifact_store(folder: Path) -> Any:
    """optuna's file-system artifact store in ``folder``, which is made on the first upload only:
    a dashboard someone merely looks at leaves no folder behind."""
    from optuna.artifacts import FileSystemArtifactStore

    class MadeOnUpload(FileSystemArtifactStore):
        def write(self, artifact_id: str, content_body: Any) -> None:
            folder.mkdir(parents=True, exist_ok=True)
            super().write(artifact_id, content_body)

    return MadeOnUpload(str(folder))


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
    # Read-only: the storage itself refuses writes, and SQLite opens the file read-only (so a
    # file on read-only media is served too); the HTTP filter below answers write requests.
    storage = open_storage(url, create=False, read_only=args.read_only)
    problem = port_in_use(args.host, args.port)
    if problem is not None:
        raise UsageError(f"{problem}; choose another with --port")
    import optuna_dashboard

    folder = Path(args.artifact_dir) if args.artifact_dir else artifact_dir(url)
    app = optuna_dashboard.wsgi(storage, artifact_store=artifact_store(folder))
    if args.read_only:
        app = ReadOnly(app)
    if not is_loopback(args.host):
        writes = (
            "" if args.read_only else " and change or delete them (add --read-only to refuse that)"
        )
        print(
            f"optuna-boxcox: warning: optuna-dashboard has no authentication: anyone who can "
            f"reach {args.host}:{args.port} can read these studies{writes}",
            file=sys.stderr,
            flush=True,
        )
    mode = ", read-only" if args.read_only else ""
    print(
        f"optuna-dashboard on {redact(url)}{mode}: http://{args.host}:{args.port}/  "
        "(Ctrl-C stops it)",
        flush=True,
    )
    serve(app, args.host, args.port)
    return 0


def serve(app: Any, host: str, port: int) -> None:
    """Serve ``app`` as optuna_dashboard.run_server does (bottle's wsgiref server), until Ctrl-C.

    The server runs in a thread of its own: Ctrl-C reaches the main thread only, which stops
    waiting, whereas raised in the middle of a request it would be taken by wsgiref for that
    request's error, and printed, and the server would carry on."""
    import threading

    import bottle

    failed: list[BaseException] = []

    def run() -> None:
        try:
            bottle.run(app, host=host, port=port)
        except BaseException as error:  # reported by the main thread, as any command's error
            failed.append(error)

    server = threading.Thread(target=run, name="optuna-dashboard", daemon=True)
    server.start()
    try:
        server.join()
    except KeyboardInterrupt:
        return  # the process exits; the daemon thread with it
    if failed:
        raise failed[0]


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
    dash.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (another than this machine's own warns: optuna-dashboard has "
        "no authentication)",
    )
    dash.add_argument("--port", type=int, default=8080, help="port to listen on")
    dash.add_argument(
        "--artifact-dir",
        default=None,
        help="where files uploaded to studies are kept, made on the first upload (default: "
        "artifacts/ beside a SQLite or journal file, else studies/artifacts)",
    )
    dash.add_argument(
        "--read-only",
        action="store_true",
        help="refuse every change through the dashboard (new, renamed or deleted studies, notes, "
        "told trials, uploads): for showing studies to others",
    )
    dash.set_defaults(func=cmd_dashboard)
