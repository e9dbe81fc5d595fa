"""One home for each concept. What a classifier is: its entry in ``_objective._evaluators.REGISTRY``
(fast scorers, cost class, the gate's rule, whether it is gated, its held-out predictors) and its
evaluator modules; the study's lifecycle reads those traits and names no classifier. Where a study
is created or loaded: ``_lifecycle/_open``. What a command passes: its flags are named by the
commands alone; a lower layer's advice names parameters, which a command words as its flags."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
import pickle
import re

import numpy as np
import pytest
from sklearn.base import ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.linear_model import Perceptron
from sklearn.linear_model import RidgeClassifier
from sklearn.linear_model import RidgeClassifierCV
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from sklearn.svm import LinearSVC

import optuna_boxcox
from optuna_boxcox._objective._evaluators import LINEAR
from optuna_boxcox._objective._evaluators import gate_rule
from optuna_boxcox._objective._evaluators import ungated_reason
from optuna_boxcox._study._decision import Rule

PACKAGE = Path(optuna_boxcox.__file__).parent
LIFECYCLE = PACKAGE / "_lifecycle"


def _classifiers_named(path: Path) -> list[str]:
    """The scikit-learn classifier classes (or their modules' classifier names) a module uses."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sklearn"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                obj = getattr(module, alias.name, None)
                if isinstance(obj, type) and issubclass(obj, ClassifierMixin):
                    found.append(f"{path.name}:{node.lineno}: {alias.name}")
        elif isinstance(node, ast.Attribute) and node.attr.endswith(("Classifier", "SVC")):
            found.append(f"{path.name}:{node.lineno}: {node.attr}")
    return found


def test_the_lifecycle_names_no_classifier():
    named = [hit for path in sorted(LIFECYCLE.glob("*.py")) for hit in _classifiers_named(path)]
    assert named == [], "classifier traits belong in the registry entry:\n" + "\n".join(named)


@pytest.mark.parametrize(
    ("estimator", "reason"),
    [
        (SGDClassifier(loss="perceptron"), LINEAR),
        (Perceptron(), LINEAR),
        (LinearSVC(), ""),  # a convex fit: gated, as LogisticRegression and Ridge
        (RidgeClassifier(), ""),
        (RidgeClassifierCV(), LINEAR),  # no entry: a linear classifier of linear_model
        (LogisticRegression(), ""),
        (GaussianNB(), ""),
        (KNeighborsClassifier(), ""),
        (SVC(), ""),
        (MLPClassifier(), ""),
    ],
)
def test_whether_a_classifier_is_gated_is_its_registry_trait(estimator, reason):
    assert ungated_reason(estimator) == reason


def test_a_subclass_inherits_its_ancestors_gate_trait():
    class MySGD(SGDClassifier):
        pass

    class MyLogistic(LogisticRegression):
        pass

    assert ungated_reason(MySGD(loss="perceptron")) == LINEAR
    assert ungated_reason(MyLogistic()) == ""


def test_rules_come_from_the_entries():
    y = np.arange(40) % 2
    assert gate_rule(KNeighborsClassifier(), accuracy_score, y).criterion == "leave-one-out"
    assert gate_rule(SVC(), accuracy_score, y).margin == 0.0
    assert gate_rule(GaussianNB(), accuracy_score, y) == Rule()
    # k-NN's leave-one-out rule only holds for the accuracy it counts.
    assert gate_rule(KNeighborsClassifier(), lambda a, b: 0.0, y) == Rule()


def test_commands_and_experiments_open_studies_only_through_the_lifecycle():
    # A study is created or loaded by _lifecycle/_open (open_study, load_study), which records and
    # checks what the study is; a command or an experiment calling Optuna itself would skip that.
    root = Path(optuna_boxcox.__file__).parent
    calls = []
    for folder in ("cli", "experiments"):
        for path in sorted((root / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    name = ast.unparse(node.func)
                    if name in ("optuna.create_study", "optuna.load_study", "optuna.copy_study"):
                        calls.append(f"{folder}/{path.name}:{node.lineno}: {name}")
    assert calls == [], "\n".join(calls)


#: A command-line flag in a message.
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _flags_named(path: Path, root: Path) -> list[str]:
    """Flags in the string literals of ``path`` that are not docstrings (a docstring may say
    which command a function serves)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        f"{path.relative_to(root)}:{node.lineno}: {flag}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
        for flag in _FLAG.findall(node.value)
    ]


def test_no_layer_below_the_commands_names_a_flag():
    # Its advice names the parameter (``{grid_size}``), which ``cli.main`` words as the flag.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if not path.relative_to(PACKAGE).as_posix().startswith(("cli/", "bench/")):
            found += _flags_named(path, PACKAGE)
    assert found == []


def test_the_flag_check_finds_a_flag(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""Serves --help."""\nMESSAGE = "pass --grid-size"\n', encoding="utf-8")
    assert _flags_named(probe, tmp_path) == ["probe.py:2: --grid-size"]


def test_advice_names_a_parameter_and_a_command_words_it_as_its_flag(capsys):
    from optuna_boxcox.samplers._full_grid import GridTooLarge

    advice = GridTooLarge("fewer grid points ({grid_size}) in {path}", path="a{b}.db")
    assert str(advice) == "fewer grid points (grid_size) in a{b}.db"
    assert advice.worded(lambda name: "--" + name) == "fewer grid points (--grid_size) in a{b}.db"
    assert isinstance(advice, ValueError)
    # Raised in a worker process, it reaches the parent whole.
    back = pickle.loads(pickle.dumps(advice))
    assert type(back) is GridTooLarge and back.worded(str) == advice.worded(str)
