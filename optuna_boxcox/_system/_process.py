"""Which process owns a running trial, and whether that process is still alive.

Trials record their owner as ``host:pid:start-time`` (system attribute :data:`OWNER_KEY`), so that a
worker can recognise the running trials of a process on the same host that died (a crash, a kill)
and have them re-run. The start time tells a live process from a dead one whose pid was reused; a
zombie (killed, and not yet waited for by its parent) is dead too, though its pid still answers.
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import time

#: Trial system attribute naming the process that runs (or ran) the trial.
OWNER_KEY = "boxcox:owner"
#: Trial system attribute marking a trial failed because its owner died (not by itself): it is
#: re-run without counting toward a sampler's retries.
REAPED_KEY = "boxcox:reaped"


def process_identity() -> str:
    """``host:pid:start-time`` of this process."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


#: Process states of a process that has ended: a zombie (``Z``), or one being removed (``X``,
#: ``x`` on older kernels). Its pid still answers a signal until its parent waits for it.
_ENDED = frozenset("ZXx")
#: Seconds a state read through ``ps`` (systems without /proc) is reused: the check runs for every
#: running trial each time a worker polls.
_PS_FRESH = 1.0
_ps_seen: dict[int, tuple[float, str | None]] = {}


def _start_time(pid: int) -> str:
    return _stat(pid)[1]


def _stat(pid: int) -> tuple[str | None, str]:
    """The process's state letter and start time (clock ticks since boot) from /proc, or
    (None, ``"?"``) where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], fields[19]
    except (OSError, IndexError):
        return None, "?"


def _ps_state(pid: int) -> str | None:
    """The process's state letter from ``ps`` (macOS and the BSDs have no /proc), or None."""
    now = time.monotonic()
    seen = _ps_seen.get(pid)
    if seen is not None and now - seen[0] < _PS_FRESH:
        return seen[1]
    try:
        out = subprocess.run(
            ["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    state = out[:1] or None
    _ps_seen[pid] = (now, state)
    return state


def owner_is_dead(owner: str) -> bool:
    """True only when the owner ran on this host and its process is gone: no such pid, a
    zombie, or another process that reused the pid."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    except OSError:  # e.g. a pid the platform cannot signal
        return False
    state, started = _stat(pid)
    if state is None and not os.path.isdir("/proc"):
        state = _ps_state(pid)
    if state in _ENDED:
        return True
    return start not in ("?", started)


def peak_rss_kib() -> int:
    """This process's peak resident set size in KiB.

    Linux's ``ru_maxrss`` survives ``exec``: a process started by ``subprocess`` reports its
    parent's peak when that was larger, so the high-water mark of the process's current memory
    map (``VmHWM``) is read instead where /proc has it.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
