"""Comments say why: a ``#:`` doc-comment gives a constant its reason in a line or two, and the
measurements that chose it live in docs/performance_log.md with the command that measured them.

A *measured figure* is a number followed by a unit of time, memory or ratio (``0.5 s``, ``21 ms``,
``7.1–7.2 s``, ``170 kB``, ``8.6 GB``, ``65 %``, ``10×``, ``5x faster``), or a number on a line
that says "measured". A shape such as ``300 × 8`` is not a ratio (a number follows the ×).
"""

from __future__ import annotations

import io
from pathlib import Path
import re
import tokenize

import optuna_boxcox

PACKAGE = Path(optuna_boxcox.__file__).parent
#: ``#:`` lines with measured figures the package may keep (the k-NN and generic cost classes in
#: ``_objective/_evaluators/`` cite the timing their constant was read from).
AT_MOST = 3

_NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?)?"
_UNIT = (
    r"(?:ns|µs|us|ms|s|sec|seconds?|min|minutes?|h|hours?"
    r"|B|kB|KB|KiB|MB|MiB|GB|GiB|TB|%|[×x](?!\s*\d)(?:\s+(?:faster|slower))?)"
)
FIGURE = re.compile(rf"{_NUMBER}\s?{_UNIT}(?![\w])")
MEASURED = re.compile(r"\bmeasured\b", re.IGNORECASE)


def carries_figure(comment: str) -> bool:
    """Whether a comment's text holds a measured figure (see the module's docstring)."""
    return bool(FIGURE.search(comment)) or (
        bool(MEASURED.search(comment)) and bool(re.search(r"\d", comment))
    )


def doc_comments_with_figures(root: Path = PACKAGE) -> list[str]:
    """``path:line: text`` of every ``#:`` comment under ``root`` that carries a figure."""
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.COMMENT or not token.string.startswith("#:"):
                continue
            if carries_figure(token.string):
                found.append(f"{path.relative_to(root)}:{token.start[0]}: {token.string}")
    return found


def test_doc_comments_give_reasons_not_measurements():
    found = doc_comments_with_figures()
    assert len(found) <= AT_MOST, "\n".join(found)


def test_the_check_tells_a_figure_from_a_reason():
    figures = [
        "#: 16 batches all took 7.1–7.2 s",
        "#: inserting rows one by one: 8 rows 0.17 ms against 0.21 ms",
        "#: the 60 curves of sonar took 170 kB of the study",
        "#: measured: 8.6 GB after 5,500 trials",
        "#: SVC 9 %, perceptron 19 %",
        "#: all 30 of breast cancer's ~2× slower",
        "#: the calibration's inner fit costs ~5x faster",
        "#: two or three lists of ~100 each, measured with 16 workers",
        "#: the MLP ~12 min",
    ]
    reasons = [
        "#: Inner folds × repeats of the gate's cross-validation.",
        "#: the iterative search on 300 × 8 rows",
        "#: ``grid`` is the full 11 × 11 grid of the 2-D tables.",
        "#: the paper's iterative search takes 44 per λ (4 epochs × 11 grid points)",
        "#: SQLite's own default is every 1000 pages",
        "#: Bytes of one distance block (per thread): a few MiB keeps it in the cache.",
        "#: Rows of a distance block at most: 256 (lambda_0, x0 are names, not sizes)",
    ]
    assert [f for f in figures if not carries_figure(f)] == []
    assert [r for r in reasons if carries_figure(r)] == []


def test_the_check_reads_doc_comments_only(tmp_path):
    # A figure in a string or a plain comment is not a doc-comment's; one in a "#:" line is.
    (tmp_path / "probe.py").write_text(
        'TEXT = "#: 3 s"\n# took 3 s\n#: took 3 s\nX = 1  #: 4 ms\n', encoding="utf-8"
    )
    assert doc_comments_with_figures(tmp_path) == [
        "probe.py:3: #: took 3 s",
        "probe.py:4: #: 4 ms",
    ]
