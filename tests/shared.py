"""What several test folders share that is not a fixture: the data they read, free ports for the
servers they start (the dashboard, PostgreSQL). Fixtures live in the folders' ``conftest.py``."""

from __future__ import annotations

from pathlib import Path
import socket

#: The sonar CSV lives beside the repository (tests and CI only; the package fetches it from OpenML).
SONAR_CSV = Path(__file__).resolve().parents[2] / "shared" / "data" / "sonar.csv"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
