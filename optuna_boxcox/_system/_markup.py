"""Text of the user's (column names, study and file names) in the Markdown and the figures the
package writes: escaped, so that it shows as written and is never read as markup.

optuna-dashboard renders a note's raw HTML and GitHub's autolinks; Plotly reads a subset of HTML
in its labels (links among them). A name goes into Markdown as a code span (:func:`md_code`:
nothing in it is markup, not even a URL), other text with its markup characters escaped
(:func:`md_text`), and into a figure's label with Plotly's entities (:func:`plotly_text`). In all
three a line break or another control character is shown as its escape (``\\n``): it would end a
table's row or a heading.
"""

from __future__ import annotations

import re

#: Characters that start or end Markdown's inline markup (emphasis, code, links, images,
#: strikethrough, tables, HTML and entities), escaped by a backslash in :func:`md_text`.
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]()<>!|~&#$])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_BACKTICKS = re.compile(r"`+")


def visible(text: object) -> str:
    """``str(text)`` with each control character (line breaks, tabs, …) as its escape."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def md_text(text: object) -> str:
    """``text`` as plain Markdown text: every markup character backslash-escaped, so text such
    as ``![x](http://…)``, ``<script>`` or ``a|b`` shows as written, in a table cell too (a bare
    URL may still be shown as a link: names go in :func:`md_code`)."""
    return _MD_PUNCTUATION.sub(r"\\\1", visible(text))


def md_code(text: object, *, cell: bool = True) -> str:
    """``text`` as a Markdown code span, fenced by more backticks than it holds (CommonMark):
    shown as written; in a table ``cell`` its ``|`` escaped, as GitHub's tables ask (elsewhere
    the backslash would show)."""
    shown = visible(text)
    if cell:
        shown = shown.replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(shown)), default=0))
    # CommonMark strips one space from each end of a span that has one at both ends.
    padded = shown[:1] in ("`", " ") or shown[-1:] in ("`", " ")
    pad = " " if padded and shown.strip() else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def plotly_text(text: object) -> str:
    """``text`` for a Plotly label (a title, an axis title, a trace's name): ``&``, ``<`` and
    ``>`` as entities, so Plotly shows them instead of reading tags (``<a href=…>``)."""
    shown = visible(text)
    return shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
