"""Errors whose remedy names an option, so that the layer that raises them names no flag.

A library error that says what to pass instead names the option by a placeholder: the
parameter's name, ``{grid_size}``. ``str(error)`` words it as the library's parameter
(``grid_size``); a command words it as its flag (``--grid-size``: argparse's own rule from a
flag to its parameter, read backwards, ``cli.main``), so the layer that raises names no flag.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Advised(Exception):
    """An error whose message names options by placeholder (see the module).

    Args:
        template: The message, with ``{name}`` for each option it names.
        values: Text put in as given (a URL or a path may hold braces).
    """

    def __init__(self, template: str, **values: Any) -> None:
        self.template, self.values = template, values
        super().__init__(self.worded(str))

    def __reduce__(self) -> tuple[Any, ...]:
        # Raised in a worker process, it crosses to the parent with its template and values.
        return (_rebuilt, (type(self), self.template, self.values))

    def worded(self, option: Callable[[str], str]) -> str:
        """The message, each option named by ``option(name)``."""
        return self.template.format_map(_Filled(self.values, option))


class _Filled(dict):
    def __init__(self, values: dict[str, Any], option: Callable[[str], str]) -> None:
        super().__init__(values)
        self.option = option

    def __missing__(self, name: str) -> str:
        return self.option(name)


class AdvisedValueError(Advised, ValueError):
    """A caller's mistake whose remedy names an option."""


def _rebuilt(kind: type[Advised], template: str, values: dict[str, Any]) -> Advised:
    return kind(template, **values)
