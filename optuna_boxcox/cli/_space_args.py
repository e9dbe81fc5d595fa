"""The search's arguments for what else it chooses beside λ: ``--transforms``, ``--objectives``
and ``--estimator-param`` (a classifier setting searched as an Optuna distribution)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING
from typing import Any

from optuna_boxcox.cli._args import UsageError

if TYPE_CHECKING:
    pass

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).


#: What --transforms offers (BoxCoxObjective's transforms).
TRANSFORM_CHOICES = ("box-cox", "yeo-johnson", "identity", "drop")


def add_space_arguments(parser: argparse.ArgumentParser) -> None:
    """--transforms, --objectives and --estimator-param: what else the search chooses."""
    space = parser.add_argument_group(
        "what the search chooses besides λ (recorded in the study's search space)"
    )
    space.add_argument(
        "--transforms",
        default=None,
        metavar="LIST",
        help=f"comma-separated choices per feature among {', '.join(TRANSFORM_CHOICES)}, e.g. "
        "box-cox,identity,drop (default: box-cox only, the paper's search)",
    )
    space.add_argument(
        "--objectives",
        default=None,
        metavar="LIST",
        help="score, or score,n_features for a two-objective study whose Pareto front is "
        "attached to it (default: score,n_features with --sampler nsga2 and drop among "
        "--transforms, else score)",
    )
    space.add_argument(
        "--estimator-param",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a classifier setting to search, repeatable: NAME=int:LOW:HIGH, "
        "NAME=float:LOW:HIGH (add :log for a log scale) or NAME=cat:A,B,… "
        "(e.g. n_neighbors=int:1:21, weights=cat:uniform,distance)",
    )


def space_options(args: argparse.Namespace) -> dict[str, Any]:
    """BoxCoxObjective's transforms, estimator_params and objectives from the command line."""
    transforms = getattr(args, "transforms", None)
    if transforms is not None:
        transforms = tuple(part.strip() for part in transforms.split(",") if part.strip())
        unknown = [t for t in transforms if t not in TRANSFORM_CHOICES]
        if unknown:
            raise UsageError(
                f"--transforms: unknown {', '.join(unknown)}; choose among "
                f"{', '.join(TRANSFORM_CHOICES)}"
            )
    objectives = getattr(args, "objectives", None)
    if objectives is None:
        nsga2 = args.sampler.strip().lower() == "nsga2"
        objectives = "score,n_features" if nsga2 and "drop" in (transforms or ()) else "score"
    objectives = tuple(part.strip() for part in objectives.split(",") if part.strip())
    if objectives not in (("score",), ("score", "n_features")):
        raise UsageError(f"--objectives must be score or score,n_features, got {args.objectives}")
    if "n_features" in objectives and "drop" not in (transforms or ()):
        raise UsageError("--objectives score,n_features needs drop among --transforms")
    estimator_params = dict(
        parse_estimator_param(text) for text in getattr(args, "estimator_param", None) or ()
    )
    options: dict[str, Any] = {}
    if transforms is not None:
        options["transforms"] = transforms
    if estimator_params:
        options["estimator_params"] = estimator_params
    if objectives != ("score",):
        options["objectives"] = objectives
    return options


def parse_estimator_param(text: str) -> tuple[str, Any]:
    """``NAME=int:LOW:HIGH``, ``NAME=float:LOW:HIGH[:log]`` or ``NAME=cat:A,B,…`` as
    (name, Optuna distribution); categorical values that read as numbers become numbers."""
    from optuna.distributions import CategoricalDistribution
    from optuna.distributions import FloatDistribution
    from optuna.distributions import IntDistribution

    name, _, spec = text.partition("=")
    kind, _, rest = spec.partition(":")
    name, kind = name.strip(), kind.strip().lower()
    try:
        if kind == "cat":
            choices = [_number_or_text(c.strip()) for c in rest.split(",") if c.strip()]
            if not choices:
                raise ValueError("no choices")
            return name, CategoricalDistribution(choices)
        parts = rest.split(":")
        log = parts[2:] == ["log"]
        if kind in ("int", "float") and len(parts) in (2, 3) and (len(parts) == 2 or log):
            number = int if kind == "int" else float
            low, high = number(parts[0]), number(parts[1])
            make = IntDistribution if kind == "int" else FloatDistribution
            return name, make(low, high, log=log)
    except ValueError as error:
        raise UsageError(f"--estimator-param {text!r}: {error}") from None
    raise UsageError(
        f"--estimator-param {text!r}: expected NAME=int:LOW:HIGH, NAME=float:LOW:HIGH[:log] or "
        "NAME=cat:A,B,…"
    )


def _number_or_text(value: str) -> Any:
    for number in (int, float):
        try:
            return number(value)
        except ValueError:
            pass
    return {"None": None, "True": True, "False": False}.get(value, value)
