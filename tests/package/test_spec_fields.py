"""What a study is is declared once, by ``SearchSpec``'s fields: each field's declaration gives
its record, its identity label and, where it has one, its ``search`` option, so the record, the
identity and those options are derived. The estimator's parameters are written out (scikit-learn
reads its signature): a field added to ``SearchSpec`` fails here until the estimator takes it or
says it does not. The objective's keywords and ``search``'s hand-written options name only spec
fields (under the name that surface's users know) or say how and where a search runs; a field
they do not take reaches the objective through ``BoxCoxObjective.from_spec``."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._objective._objective import BoxCoxObjective
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox._study._spec import declared_fields
from optuna_boxcox._study._spec import flags
from optuna_boxcox.cli import build_parser

SPEC = frozenset(field.name for field in dataclasses.fields(SearchSpec))

#: Fields filled in from the data or by the search itself, never passed by a user.
FROM_DATA = {"source", "columns", "fingerprint", "n_samples", "fidelity_choice"}


def _check(
    names: set[str], aliases: dict[str, str], runs: set[str], absent: set[str] | None
) -> set[str]:
    """``names``: a surface's parameters. Each is a spec field (directly or by ``aliases``) or
    says how the search runs (``runs``); with ``absent``, every spec field not taken is in it.
    The fields taken."""
    taken = {aliases.get(name, name) for name in names - runs}
    assert taken <= SPEC, f"not fields of SearchSpec: {sorted(taken - SPEC)}"
    assert runs.isdisjoint(SPEC), f"run options named like fields: {sorted(runs & SPEC)}"
    if absent is not None:
        assert SPEC - taken == absent, (
            f"fields this surface does not take: {sorted(SPEC - taken)}; declared: "
            f"{sorted(absent)}"
        )
    return taken


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


def test_the_objectives_arguments_are_spec_fields_and_from_spec_takes_them_all() -> None:
    # Its keywords are a convenience: every field reaches it through from_spec.
    _check(
        _parameters(BoxCoxObjective.__init__),
        aliases={"estimator": "classifier", "random_state": "seed"},
        runs={"X", "y", "initial_params", "fast", "memory_limit", "n_threads"},
        absent=None,
    )
    assert "spec" in _parameters(BoxCoxObjective.from_spec)


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
            "drop_columns",
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


def test_every_field_is_declared_and_its_declared_option_is_searchs() -> None:
    assert {name for name, _, _ in declared_fields()} == SPEC
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a.choices, dict))
    search = {a.dest: a for a in commands.choices["search"]._actions}
    for name, flag, default in flags():
        option = search[name]
        assert option.option_strings == ["--" + name.replace("_", "-")]
        assert option.help.startswith(flag.help) and f"(default {default})" in option.help


@pytest.mark.parametrize(
    "spec",
    [
        SearchSpec("knn"),
        SearchSpec("bayes", cv=5, error_score=0.0, sampler="iterative", seed=3),
        SearchSpec("svc", fidelity="auto", pruner="median", bounds={"a": (0, 3)}, seed=None),
    ],
)
def test_the_record_and_the_identity_come_back_from_the_declarations(spec) -> None:
    back = SearchSpec.from_dict(spec.to_dict())
    assert back.to_dict() == spec.to_dict()  # (a value read back as JSON: lists for tuples)
    assert back.identity() == spec.identity() and back.difference(spec) is None


def test_an_older_record_without_a_field_reads_it_as_declared() -> None:
    record = SearchSpec("knn", cv=3).to_dict()
    for name in ("seed", "bounds", "scoring"):
        del record[name]
    assert "error_score" not in record  # recorded only where it is not "raise"
    spec = SearchSpec.from_dict(record)
    # An older study's seed was not recorded (None); its bounds are guarded by its λ space.
    assert (spec.seed, spec.bounds, spec.error_score, spec.scoring) == (
        None,
        "(not recorded)",
        "raise",
        "accuracy",
    )


def test_help_builds_the_declared_options_without_the_heavy_libraries() -> None:
    code = (
        "import sys\n"
        "from optuna_boxcox.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('numpy', 'optuna', 'sklearn', 'scipy', 'numba') "
        "if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout
