"""Progress of long work, with an estimate of the time left, on a terminal or in a log.

On a terminal a tqdm bar; elsewhere (CI logs, a notebook's captured output, a file) a plain line at
most every :data:`LOG_EVERY` seconds — done, total, rate and the time left estimated from the rate
so far — and one at the end, so that a long run is never silent and a log is never flooded.

Work whose units cost unlike amounts (a reproduction's folds: a row without search next to a row of
several searches) is estimated by group (:class:`TimeLeft`), and done in :func:`interleaved` order:
done one group after another, from the cheapest, the rate so far promised far less time than such
a run then took.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import itertools
import sys
import time
from typing import IO
from typing import Any
from typing import TypeVar

from tqdm import tqdm

#: Seconds between two progress lines when the output is not a terminal.
LOG_EVERY = 10.0

_Item = TypeVar("_Item")


def interleaved(groups: Iterable[Sequence[_Item]]) -> list[_Item]:
    """The items of ``groups`` taken from each group in turn (the first of every group, then the
    second of every group, …): work done in this order is, at any moment, a sample of all of it,
    and every group is begun early."""
    rounds = itertools.zip_longest(*groups, fillvalue=_GAP)
    return [item for round_ in rounds for item in round_ if item is not _GAP]


_GAP = object()


class TimeLeft:
    """The seconds of work left, for work in groups of alike units (the folds of one row and
    classifier): each group's units left priced at the mean of its units done, a group not begun
    yet at the mean of all units done.

    Args:
        left: Units to do by group.
    """

    def __init__(self, left: Mapping[Hashable, int]) -> None:
        self.left = dict(left)
        self.spent: dict[Hashable, tuple[int, float]] = {}  # group → (units done, seconds)
        self.seconds_done = 0.0
        self.units_done = 0

    def done(self, group: Hashable, seconds: float) -> None:
        """One unit of ``group`` took ``seconds`` (of its own work: a worker's, say)."""
        units, spent = self.spent.get(group, (0, 0.0))
        self.spent[group] = (units + 1, spent + max(0.0, float(seconds)))
        self.left[group] = max(0, self.left.get(group, 0) - 1)
        self.seconds_done += max(0.0, float(seconds))
        self.units_done += 1

    def seconds(self) -> float | None:
        """The units' own seconds left, or None before any unit is done."""
        if not self.units_done or self.seconds_done <= 0:
            return None
        mean = self.seconds_done / self.units_done
        total = 0.0
        for group, left in self.left.items():
            units, spent = self.spent.get(group, (0, 0.0))
            total += left * (spent / units if units else mean)
        return total


class Progress:
    """Counts units of work done out of a total (which may be unknown, or grow).

    Args:
        total: Units to do, if known.
        unit: What is counted ("trial", "fold", …).
        label: Names the work in log lines.
        enabled: False shows nothing.
        initial: Units already done before this run (not counted in the rate).
        stream: Where to write (default stderr).
        every: Seconds between log lines when ``stream`` is not a terminal (default
            :data:`LOG_EVERY`, read when the progress starts).
        time_left: The work's groups (:class:`TimeLeft`): the time left is then their seconds
            left, at this run's pace (elapsed time per second of the units' own work, which
            counts the workers running at once), each unit told with :meth:`update`'s ``group``
            and ``seconds``.
    """

    def __init__(
        self,
        total: int | None = None,
        *,
        unit: str = "trial",
        label: str = "",
        enabled: bool = True,
        initial: int = 0,
        stream: IO[str] | None = None,
        every: float | None = None,
        time_left: TimeLeft | None = None,
    ) -> None:
        self.total = total
        self.unit = unit
        self.label = label
        self.enabled = enabled
        self.initial = self.done = int(initial)
        self.stream = stream if stream is not None else sys.stderr
        self.every = float(LOG_EVERY if every is None else every)
        self.started = time.perf_counter()
        self._last_line = self.started
        self._logged = self.done  # units done at the last log line
        self.time_left = time_left
        self._bar: Any = None
        self._closed = False
        if enabled and _is_terminal(self.stream):
            self._bar = tqdm(
                total=total,
                initial=self.initial,
                unit=unit,
                file=self.stream,
                dynamic_ncols=True,
                desc=label or None,
                # tqdm's own time left is its rate's: the groups' is shown after the rate.
                **({} if time_left is None else {"bar_format": _BAR_BY_GROUP}),
            )

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def set_total(self, total: int | None) -> None:
        """The total, once known (or when it changes)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def update(
        self, n: int = 1, *, group: Hashable | None = None, seconds: float | None = None
    ) -> None:
        """``n`` more units are done (with :class:`TimeLeft`: one of ``group``, which took
        ``seconds``)."""
        if self.time_left is not None and group is not None:
            self.time_left.done(group, 0.0 if seconds is None else seconds)
        self.advance_to(self.done + n)

    def advance_to(self, done: int) -> None:
        """``done`` units are done in all (including ``initial``)."""
        step = int(done) - self.done
        self.done = int(done)
        if not self.enabled or step <= 0:
            return
        if self._bar is not None:
            left = self.seconds_left(time.perf_counter())
            if self.time_left is not None and left is not None:
                self._bar.set_postfix_str(f"about {format_seconds(left)} left", refresh=False)
            self._bar.update(step)
            return
        now = time.perf_counter()
        if now - self._last_line >= self.every:
            self._last_line = now
            self._write(self.line(now))

    def line(self, now: float | None = None, *, final: bool = False) -> str:
        """``label: 120/2,640 trials (5 %), 310.2 trials/s, about 8 s left``; the ``final``
        line of work that ended short of its total (a trial budget, a timeout) says so instead
        of a time left: ``…, 6.3 s elapsed, 2,520 trials not run``."""
        now = time.perf_counter() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        rate = (self.done - self.initial) / elapsed
        units = plural(self.unit)
        parts = [f"{self.done:,}" + (f"/{self.total:,}" if self.total else "") + f" {units}"]
        if self.total:
            parts[0] += f" ({100 * self.done / self.total:.0f} %)"
        parts.append(f"{rate:,.1f} {units}/s")
        if final and self.total and self.done < self.total:
            parts.append(f"{format_seconds(elapsed)} elapsed")
            parts.append(f"{self.total - self.done:,} {plural(self.unit)} not run")
        elif self.total and rate > 0 and self.done < self.total:
            left = self.seconds_left(now)
            if left is not None:
                parts.append(f"about {format_seconds(left)} left")
        elif self.total is None or self.done >= (self.total or 0):
            parts.append(f"{format_seconds(elapsed)} elapsed")
        prefix = f"{self.label}: " if self.label else ""
        return prefix + ", ".join(parts)

    def seconds_left(self, now: float) -> float | None:
        """The estimated seconds left: from the groups' seconds left when :class:`TimeLeft`
        has measured some, else from the rate so far; None when there is nothing to go by."""
        if not self.total or self.done >= self.total:
            return None
        elapsed = max(now - self.started, 1e-9)
        if self.time_left is not None:
            own = self.time_left.seconds()
            if own is not None:
                return own * elapsed / self.time_left.seconds_done
        rate = (self.done - self.initial) / elapsed
        return (self.total - self.done) / rate if rate > 0 else None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.enabled and self.done > self._logged and not _interrupted():
            self._write(self.line(final=True))

    def _write(self, text: str) -> None:
        self._logged = self.done
        print(text, file=self.stream, flush=True)


#: tqdm's default bar, its own time left (its rate's) left out for the groups' (the postfix).
_BAR_BY_GROUP = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]"


def plural(unit: str) -> str:
    """``trial`` → ``trials``, ``study`` → ``studies``, ``λ row`` → ``λ rows``."""
    if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "o", "u"):
        return unit[:-1] + "ies"
    return unit + "s"


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _interrupted() -> bool:
    """Whether Ctrl-C is on its way out through the caller's ``finally``: the command then says
    how far it got, and a last line with a time left would contradict it."""
    return isinstance(sys.exc_info()[1], KeyboardInterrupt)


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
