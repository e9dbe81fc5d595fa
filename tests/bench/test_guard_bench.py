"""The guarded default's measuring script (``python -m optuna_boxcox.bench.guard``): its usage."""

from __future__ import annotations

import pytest

from optuna_boxcox.bench import guard


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help_prints_the_usage(argv, capsys):
    assert guard.main(argv) == 0
    assert capsys.readouterr().out.startswith("usage: python -m optuna_boxcox.bench.guard")


@pytest.mark.parametrize("argv", [[], ["table"], ["results.jsonl", "iris"], ["table", "a", "b"]])
def test_wrong_arguments_print_the_usage_and_exit_2(argv, capsys):
    # Before: an IndexError traceback.
    assert guard.main(argv) == 2
    assert capsys.readouterr().err.startswith("usage: ")


def _record(loo: dict[str, list[int]], inner: dict[str, list[int]]) -> dict:
    """A k-NN record of 20 rows: leave-one-out correctness and one inner repeat of 5 folds."""
    folds = [[i % guard.INNER_SPLITS for i in range(20)]] * 2
    return {
        "classifier": "knn",
        "loo": loo,
        "inner": {k: [v, v] for k, v in inner.items()},
        "inner_folds": folds,
        "held_out": {"searched": 0.9, "mle": 0.8, "ones": 0.7},
        "default_score": 0.9,
    }


def test_knn_rule_judges_the_searched_lambda_against_ones_alone():
    # Leave-one-out: MLE 18/20, searched 17/20, ones 10/20. Against the better anchor (the MLE Λ)
    # the searched Λ loses; against Λ = 1 it wins by far more than one SE, and CV confirms it.
    loo = {"mle": [1] * 18 + [0] * 2, "searched": [1] * 17 + [0] * 3, "ones": [1, 0] * 10}
    inner = {"searched": [1] * 16 + [0] * 4, "mle": [1] * 16 + [0] * 4, "ones": [1, 0] * 10}
    record = _record(loo, inner)
    assert guard._loo_choice(record, confirm=True) == "mle"
    assert guard._loo_choice(record, confirm=True, anchors=("ones",)) == "searched"
    rules = guard.policies(record)
    # The MLE Λ scores more than the kept searched Λ: the built rule falls back to it.
    assert rules["loo-ones-only"] == 0.9
    assert rules["guarded"] == 0.8
    assert rules["loo-both-anchors"] == 0.8
    assert rules["loo-anchor"] == 0.8
    # An MLE Λ below the searched Λ: the searched Λ is kept.
    below = _record({**loo, "mle": [1] * 16 + [0] * 4}, inner)
    assert guard.policies(below)["guarded"] == 0.9
    # The CV does not confirm the searched Λ: Λ = 1.
    record = _record(loo, {**inner, "searched": [1, 0] * 10})
    assert guard.policies(record)["guarded"] == 0.7


def test_the_knn_table_line_says_what_the_mle_anchor_was_worth():
    loo = {"mle": [1] * 18 + [0] * 2, "searched": [1] * 17 + [0] * 3, "ones": [1, 0] * 10}
    rows = [_record(loo, {"searched": [1] * 20, "mle": [1] * 20, "ones": [1] * 20})] * 2
    rows.append({**rows[0], "loo": {**loo, "ones": [1] * 20}})
    line = guard._mle_anchor_noise(rows)
    assert "in 2 of 3 folds" in line and "+10.00 pt" in line, line
