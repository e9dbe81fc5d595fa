"""Which process owns a running trial, and whether that process is still alive.

Trials record their owner as ``host:pid:start-time`` (system attribute :data:`OWNER_KEY`), so that a
worker can recognise the running trials of a process on the same host that died (a crash, a kill)
and have them re-run. The start time tells a live process from a dead one whose pid was reused.
"""

from __future__ import annotations

import os
import resource
import socket

#: Trial system attribute naming the process that runs (or ran) the trial.
OWNER_KEY = "boxcox:owner"
#: Trial system attribute marking a trial failed because its owner died (not by itself): it is
#: re-run without counting toward a sampler's retries.
REAPED_KEY = "boxcox:reaped"


def process_identity() -> str:
    """``host:pid:start-time`` of this process."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def owner_is_dead(owner: str) -> bool:
    """True only when the owner ran on this host and its process is gone."""
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
    return start not in ("?", _start_time(pid))


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
