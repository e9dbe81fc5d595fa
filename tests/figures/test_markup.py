"""The user's names in the Markdown and the figures the package writes: shown as written, never
read as markup (a column name made the dashboard's note fetch a remote image, show a link, or
break its table)."""

from __future__ import annotations

import re

import numpy as np
import optuna
import pandas as pd
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import figures
from optuna_boxcox import optimize
from optuna_boxcox.experiments._protocol import Protocol
from optuna_boxcox.experiments._report import Cell
from optuna_boxcox.experiments._report import Reproduction
from optuna_boxcox.samplers import make_sampler

CRAFTED = [
    "a|b",
    "first line\nsecond line",
    "![x](http://attacker.example/pixel.png)",
    "<script>alert(1)</script>",
    "[click](http://attacker.example)",
    "http://attacker.example/bare",
    "`ticked` **bold**",
]


def _without_code_spans(markdown: str) -> str:
    """The Markdown with its code spans (CommonMark: a run of backticks up to the next run of
    the same length) taken out: what is left is read as markup."""
    return re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", markdown)


def _code_spans(markdown: str) -> list[str]:
    """What each code span shows (CommonMark: one space stripped from each end when both have
    one; in a table cell ``\\|`` is a ``|``)."""
    spans = []
    for match in re.finditer(r"(?<!`)(`+)(?!`)(.*?)(?<!`)\1(?!`)", markdown):
        text = match.group(2).replace("\\|", "|")
        if len(text) > 1 and text[0] == text[-1] == " " and text.strip():
            text = text[1:-1]
        spans.append(text)
    return spans


def _table_rows(markdown: str, header: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``header``, the header first: their
    cells, split at the ``|`` not escaped."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = [lines[start]]
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return [re.split(r"(?<!\\)\|", line)[1:-1] for line in rows]


def _fitted_note():
    from optuna_dashboard import get_note

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.gamma(2.0, size=(60, len(CRAFTED))) + 0.1, columns=CRAFTED)
    y = (X.iloc[:, 0] + rng.normal(size=60) > 2).astype(int)
    study_name = "study `x` <b>bold</b> | ![i](http://attacker.example/i.png)"
    clf = BoxCoxClassifier(GaussianNB(), sampler="diagonal", study_name=study_name).fit(X, y)
    return get_note(clf.study_)


def test_column_names_in_the_note_are_shown_as_written_and_read_as_no_markup():
    note = _fitted_note()
    markup = _without_code_spans(note)
    for sign in ("<", "![", "](", "http"):
        assert sign not in markup, f"the note reads {sign!r} as markup:\n{note}"
    shown = _code_spans(note)
    for name in CRAFTED:
        assert name.replace("\n", "\\n") in shown, f"{name!r} is not shown as written:\n{note}"
    assert "study `x` <b>bold</b> | ![i](http://attacker.example/i.png)" in shown
    head, *rows = _table_rows(note, "| feature |")
    assert len(rows) == len(CRAFTED), f"a name broke the table of λ into other rows:\n{note}"
    assert {len(cells) for cells in rows} == {len(head)}, f"a name split a row's cells:\n{note}"
    assert "\n" not in "".join(_code_spans(note)), "a name's line break ended a line of the note"


def test_column_names_in_the_figures_are_labels_not_html():
    X = pd.DataFrame(np.random.default_rng(1).gamma(2.0, size=(40, 2)) + 0.1, columns=CRAFTED[2:4])
    y = (X.iloc[:, 0] > 2).astype(int)
    objective = BoxCoxObjective(X, y, GaussianNB())
    sampler = make_sampler("diagonal", seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    optimize(study, objective)
    found, _ = figures.search_figures(study, objective, sampler)
    assert "grid" in found and "transform" in found
    for key, figure in found.items():
        labels = [trace.name or "" for trace in figure.data]
        labels += [figure.layout.xaxis.title.text or "", figure.layout.yaxis.title.text or ""]
        for label in labels:
            assert "<" not in label, f"figure {key} reads {label!r} as HTML"
    assert found["grid"].layout.yaxis.title.text == "λ of &lt;script&gt;alert(1)&lt;/script&gt;"


def test_a_reproduction_table_escapes_its_labels():
    cells = [Cell("x|y <b>", "row ![i](http://e/i.png)", "a|b", 50.0, 49.0, 1, 1)]
    markdown = Reproduction("t", "title", Protocol(), cells).markdown()
    assert "<b>" not in markdown and "![i]" not in markdown, markdown
    head, row = _table_rows(markdown, "| |")
    assert len(row) == len(head) == 2, markdown
