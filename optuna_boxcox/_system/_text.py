"""Text as a terminal shows it: East Asian wide characters take two columns, combining marks none."""

from __future__ import annotations

import unicodedata


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (``str.ljust`` counts characters)."""
    return text + " " * max(0, width - display_width(text))
