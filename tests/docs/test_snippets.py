"""Every Python block of the README and of the documentation's pages runs as it is shown.

Each page's ```` ```python ```` blocks (Markdown) and ``.. code-block:: python`` blocks
(reStructuredText) run in order in one namespace, as a reader pasting them one after another
would, in an empty temporary folder that must still be empty afterwards: a snippet leaves no file
behind. A block that is not meant to run (output, a sketch) is fenced as ``text`` or ``sh``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import re
import traceback

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: What ``make docs`` generates or reads as templates, not pages anyone reads as written.
GENERATED = {"_build", "_templates", "auto_examples", "generated"}
GENERATED_FILES = {"sg_execution_times.rst"}
#: Fence info strings (Markdown) and directive arguments (reStructuredText) that mean Python.
PYTHON = {"python", "py", "python3"}


@dataclass(frozen=True)
class Block:
    """One Python block: the page, the line of its first line of code (1-based), its code."""

    page: Path
    line: int
    code: str


def pages() -> list[Path]:
    """The README and every Markdown or reStructuredText page under docs/ that is not generated."""
    found = [ROOT / "README.md"]
    for path in sorted(DOCS.rglob("*")):
        parts = path.relative_to(DOCS).parts
        if (
            path.suffix in (".md", ".rst")
            and not GENERATED.intersection(parts)
            and path.name not in GENERATED_FILES
        ):
            found.append(path)
    return found


def _language(info: str) -> str:
    """The language of a Markdown fence's info string: ``python``, or MyST's
    ``{code-block} python``."""
    words = info.split()
    if words and words[0] in ("{code-block}", "{code}", "{sourcecode}"):
        words = words[1:]
    return words[0].lower() if words else ""


def markdown_blocks(page: Path) -> list[Block]:
    """Fenced code blocks (CommonMark: ``` or ~~~, at least three, closed by a fence of the same
    character at least as long) whose language is Python."""
    blocks, fence, language, start, code = [], None, "", 0, []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.lstrip(" ")
        if fence is None:
            opening = re.match(r"(`{3,}|~{3,})(.*)$", stripped)
            if opening and len(line) - len(stripped) <= 3:
                fence, language, start, code = opening[1], _language(opening[2]), number, []
            continue
        if re.fullmatch(f"{re.escape(fence[0])}{{{len(fence)},}}\\s*", stripped):
            if language in PYTHON:
                blocks.append(Block(page, start + 1, "\n".join(code) + "\n"))
            fence = None
        else:
            code.append(line)
    if fence is not None:
        raise AssertionError(f"{page.relative_to(ROOT)}:{start}: a code fence is never closed")
    return blocks


def rst_blocks(page: Path) -> list[Block]:
    """``.. code-block:: python`` (also ``code`` and ``sourcecode``) directives' contents."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    for number, line in enumerate(lines):
        directive = re.match(r"(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S+)", line)
        if not directive or directive[2].lower() not in PYTHON:
            continue
        indent = len(directive[1])
        body, first = [], None
        for later in range(number + 1, len(lines)):
            text = lines[later]
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break
            if first is None and re.match(r"\s+:[\w-]+:", text):
                continue  # the directive's options
            if first is None and not text.strip():
                continue
            first = later if first is None else first
            body.append(text)
        if first is not None:
            depth = min(len(t) - len(t.lstrip()) for t in body if t.strip())
            code = "\n".join(t[depth:] for t in body).rstrip() + "\n"
            blocks.append(Block(page, first + 1, code))
    return blocks


def python_blocks(page: Path) -> list[Block]:
    return markdown_blocks(page) if page.suffix == ".md" else rst_blocks(page)


PAGES = [page for page in pages() if python_blocks(page)]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_a_pages_python_blocks_run_in_order_and_leave_no_file(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = page.relative_to(ROOT)
    namespace = {"__name__": "__main__"}
    for block in python_blocks(page):
        # Padded so that a traceback's line numbers are the page's.
        source = "\n" * (block.line - 1) + block.code
        try:
            exec(compile(source, str(page), "exec"), namespace)
        except Exception:
            raised = traceback.format_exc()
        else:
            continue
        pytest.fail(
            f"{name}: the Python block at line {block.line} raised\n{raised}", pytrace=False
        )
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert not left, f"{name}: its Python blocks left {left} in the folder they ran in"


def test_the_readme_and_the_tutorial_have_python_blocks_to_run():
    names = {str(page.relative_to(ROOT)) for page in PAGES}
    assert {"README.md", "docs/tutorial.md"} <= names, names


def test_blocks_are_found_with_their_line_numbers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```python\nx = 1\n```\n\n````md\n```python\nnot = run\n```\n````\n\n"
        "```text\nnot python\n```\n\n~~~{code-block} python\ny = x + 1\n~~~\n",
        encoding="utf-8",
    )
    assert [(b.line, b.code) for b in markdown_blocks(page)] == [
        (4, "x = 1\n"),
        (18, "y = x + 1\n"),
    ]
    rst = tmp_path / "page.rst"
    rst.write_text(
        "Title\n=====\n\n.. code-block:: python\n   :caption: c\n\n   a = 1\n\n   b = a\n\ntext\n",
        encoding="utf-8",
    )
    assert [(b.line, b.code) for b in rst_blocks(rst)] == [(7, "a = 1\n\nb = a\n")]


def test_the_readme_is_short_and_says_where_the_rest_is():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    top = "\n".join(lines[:60])
    for words in ("make demo", "make test", "make docs", "docs/_build/html/index.html", "apt-get"):
        assert words in top, words
