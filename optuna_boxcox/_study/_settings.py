"""What a study was made with, recorded in the study, and a refusal to continue it with anything else.

Every long-lived study of the package — a search (its sampler and settings), a reproduction unit (its
table, row, classifier and protocol), a meta-study (its data and protocol) — records the settings
that determine its trials as a user attribute, shown in the dashboard. Continuing the study with
other settings would mix trials that answer different questions, so it is refused with one message
that names what differs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Mapping

    import optuna

#: How the library says to start a refused study over; a command names its own options
#: (:meth:`StudyRefusal.message`).
START_OVER = "use a new study name, or delete the study, to start it over"


class StudyRefusal(ValueError):
    """A study that may not be continued with what was asked (another experiment, other
    settings, trials of someone else's).

    Attributes:
        reason: Why, naming the study and what differs.
        alternative: What would continue it instead (empty: nothing but starting over).
    """

    def __init__(self, reason: str, alternative: str = "") -> None:
        self.reason, self.alternative = reason, alternative
        super().__init__(self.message(START_OVER))

    def message(self, start_over: str) -> str:
        """The refusal in one line, ending with ``start_over``: how the caller starts it over
        (the library: :data:`START_OVER`; a command: its own options)."""
        remedies = f"{self.alternative}, or {start_over}" if self.alternative else start_over
        return f"{self.reason}; {remedies}"


class SettingsMismatch(StudyRefusal):
    """The study was run with settings this run may not continue."""


def record_settings(
    study: optuna.Study,
    key: str,
    settings: Mapping[str, Any],
    *,
    recorded: Mapping[str, Any] | None = None,
    continues: Callable[[Mapping[str, Any]], bool] | None = None,
    alternative: str = "use the same settings to continue it",
    named_last: tuple[str, ...] = (),
) -> None:
    """Record ``settings`` under the study user attribute ``key``, or refuse a study recorded with
    other ones.

    Args:
        study: The study.
        key: Its user attribute holding the settings.
        settings: This run's settings (JSON-serialisable).
        recorded: The study's user attributes if already read (each read is a query on a database
            storage); read from the study otherwise.
        continues: Whether a study recorded with the given settings may be continued with these
            (default: only with equal ones). When it may, these are recorded in their place.
        alternative: What would continue the study instead, in the refusal's message.
        named_last: Fields that may differ on their own (more epochs): the message names
            another differing field first.

    Raises:
        SettingsMismatch: The study was recorded with settings this run may not continue.
    """
    mine = json.loads(json.dumps(dict(settings)))
    attrs = study.user_attrs if recorded is None else recorded
    theirs = attrs.get(key)
    if theirs is None:
        study.set_user_attr(key, mine)
        return
    allowed = theirs == mine if continues is None else continues(theirs)
    if not allowed:
        field, there, here = first_difference(theirs, mine, named_last=named_last)
        raise SettingsMismatch(
            f"study {study.study_name!r} was run with other settings ({field}: {there!r} there, "
            f"{here!r} here)",
            alternative,
        )
    if theirs != mine:
        study.set_user_attr(key, mine)


def first_difference(
    theirs: Any, mine: Any, field: str = "", *, named_last: tuple[str, ...] = ()
) -> tuple[str, Any, Any]:
    """The first field, in recorded order, whose value differs between two recorded settings —
    nested mappings looked into, named by their dotted path (a sampler's ``settings`` wrapper
    left out), fields of ``named_last`` after all others — with its two values (None where
    missing)."""
    if isinstance(theirs, dict) and isinstance(mine, dict):
        keys = [*theirs, *(k for k in mine if k not in theirs)]
        keys.sort(key=lambda k: str(k) in named_last)  # stable: recorded order otherwise
        for key in keys:
            if theirs.get(key) != mine.get(key):
                name = str(key) if field in ("", "settings") else f"{field}.{key}"
                return first_difference(
                    theirs.get(key), mine.get(key), name, named_last=named_last
                )
    return field or "settings", theirs, mine
