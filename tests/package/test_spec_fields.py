"""What a study is is declared once, by ``SearchSpec``'s fields: the estimator's parameters, the
objective's keyword arguments and ``search``'s options each name those fields (under the name that
surface's users know) or say how and where a search runs. A field added to ``SearchSpec`` fails
here until every surface says whether it takes it."""

from __future__ import annotations

import dataclasses
import inspect

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._objective._objective import BoxCoxObjective
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.cli import build_parser

SPEC = frozenset(field.name for field in dataclasses.fields(SearchSpec))

#: Fields filled in from the data or by the search itself, never passed by a user.
FROM_DATA = {"source", "columns", "fingerprint", "n_samples", "fidelity_choice"}


def _check(names: set[str], aliases: dict[str, str], runs: set[str], absent: set[str]) -> None:
    """``names``: a surface's parameters. Each is a spec field (directly or by ``aliases``) or
    says how the search runs (``runs``); every spec field not taken is in ``absent``."""
    taken = {aliases.get(name, name) for name in names - runs}
    assert taken <= SPEC, f"not fields of SearchSpec: {sorted(taken - SPEC)}"
    assert runs.isdisjoint(SPEC), f"run options named like fields: {sorted(runs & SPEC)}"
    assert SPEC - taken == absent, (
        f"fields this surface does not take: {sorted(SPEC - taken)}; declared: {sorted(absent)}"
    )


def _parameters(function) -> set[str]:
    return set(inspect.signature(function).parameters) - {"self"}


def test_the_estimators_parameters_are_the_spec_fields() -> None:
    _check(
        _parameters(BoxCoxClassifier.__init__),
        aliases={"estimator": "classifier", "random_state": "seed"},
        runs={
            "n_trials",
            "storage",
            "study_name",
            "n_jobs",
            "memory_limit",
            "verbose",
            "ensemble",
            "figures",
        },
        # One objective (the score), the sampler's own settings and a pruner come from the
        # sampler object a user passes.
        absent=FROM_DATA | {"objectives", "sampler_settings", "pruner"},
    )


def test_the_objectives_arguments_are_the_spec_fields() -> None:
    _check(
        _parameters(BoxCoxObjective.__init__),
        aliases={"estimator": "classifier", "random_state": "seed"},
        runs={"X", "y", "initial_params", "fast", "memory_limit", "n_threads"},
        # The objective scores a Λ: which sampler and pruner ask it is the study's business.
        absent=FROM_DATA | {"sampler", "sampler_settings", "pruner"},
    )


def test_the_search_commands_options_are_the_spec_fields() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a.choices, dict))
    options = {a.dest for a in commands.choices["search"]._actions} - {"help"}
    _check(
        options,
        aliases={
            "estimator_param": "estimator_params",
            "grid_range": "bounds",
            # the coordinate search's settings
            **dict.fromkeys(
                ("epochs", "shift_epoch", "shuffle_epoch", "finer_epoch", "grid_size"),
                "sampler_settings",
            ),
        },
        runs={
            # the data
            "dataset",
            "csv",
            "label",
            "features",
            "allow_large",
            # where and how long
            "storage",
            "study_name",
            "restart",
            "n_trials",
            "timeout",
            "n_jobs",
            "max_memory",
            "no_batch",
            "no_figures",
            "report_timings",
        },
        # The command searches Box-Cox, extrapolating, as the paper does.
        absent=FROM_DATA | {"method", "extrapolation"},
    )
