"""The paper's samplers honour Optuna's sampler contract (optuna.testing.pytest_samplers).

The reusable suites optimise generic objectives (ints, categoricals, log floats, conditional and
dynamic spaces, NaN values, fixed and partially fixed parameters, two threads). Each sampler meets
them twice:

* built as a user builds it, without ``search_space=``: a plugin sampler dropped into an ordinary
  study. It finds no λ space in the study, so it must hand every parameter to its independent
  sampler, with values valid for their distributions, and must not stop the study;
* with an explicit λ space over two names the suites never suggest: every trial then claims a plan
  position and runs through the plan machinery (positions, replay, ``after_trial``, NaN and failed
  values, fixed parameters), while the suites' own parameters are sampled independently.

Two things the suites assume are, by design, not true of a plan sampler, so they are not asked of it:
the suites suggest ``x`` and ``y`` with every kind of distribution, which an explicit λ space over
``x`` and ``y`` declares float (Optuna refuses a parameter whose kind differs between the relative
space and ``suggest_*``); and they expect ``n_trials`` trials (up to 20) where a plan stops the study
when its budget is spent, which for MLE is one trial. MLE therefore takes part in the second set
only through the tests of ``test_paper_samplers.py`` that pin its single trial down.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna
from optuna.distributions import FloatDistribution
from optuna.samplers import BaseSampler
import pytest

# Optuna's shared sampler tests are part of Optuna's API since 4.3; on older releases (the
# compatibility run) the samplers are still covered by the package's own sampler tests.
pytest.importorskip(
    "optuna.testing.pytest_samplers",
    reason="Optuna < 4.3 has no pytest_samplers: Optuna's shared sampler tests need Optuna >= 4.3, "
    "which .venv has (the compatibility run's Optuna 4.2 is covered by the package's own tests)",
)
from optuna.testing.pytest_samplers import BasicSamplerTestCase
from optuna.testing.pytest_samplers import RelativeSamplerTestCase

from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import DiagonalSampler
from optuna_boxcox.samplers import FullGridSampler
from optuna_boxcox.samplers import MLESampler
from optuna_boxcox.samplers import NelderMeadSampler
from optuna_boxcox.samplers import SphericalSampler

#: A λ space the suites never suggest from (their parameters are x, y, z, category, a … f).
LAMBDAS = {"lambda_a": FloatDistribution(-10.0, 10.0), "lambda_b": FloatDistribution(-10.0, 10.0)}
START = {"lambda_a": 0.3, "lambda_b": -2.0}

AS_PLUGIN: dict[str, Callable[[], BaseSampler]] = {
    "coordinate-default": lambda: CoordinateGridSampler(),
    "coordinate-combined1": lambda: CoordinateGridSampler.from_preset("combined1", seed=7),
    "spherical": lambda: SphericalSampler(),
    "diagonal": lambda: DiagonalSampler(),
    "diagonal-authors-code": lambda: DiagonalSampler(authors_code=True),
    "full-grid": lambda: FullGridSampler(),
    "mle": lambda: MLESampler(),
    "nelder-mead": lambda: NelderMeadSampler(),
}

# Budgets over two λ: 88, 352, 21, 23, 22 and 121 trials, all above the suites' 20.
WITH_LAMBDA_SPACE: dict[str, Callable[[], BaseSampler]] = {
    "coordinate-default": lambda: CoordinateGridSampler(search_space=LAMBDAS),
    "coordinate-combined1": lambda: CoordinateGridSampler.from_preset(
        "combined1", seed=7, search_space=LAMBDAS, initial_params=START
    ),
    "spherical": lambda: SphericalSampler(grid_size=21, search_space=LAMBDAS),
    "diagonal": lambda: DiagonalSampler(search_space=LAMBDAS),
    "diagonal-authors-code": lambda: DiagonalSampler(authors_code=True, search_space=LAMBDAS),
    "full-grid": lambda: FullGridSampler(search_space=LAMBDAS),
    "nelder-mead": lambda: NelderMeadSampler(search_space=LAMBDAS, adaptive=True),
}


@pytest.fixture(autouse=True)
def _quiet_optuna():
    # Each study without a λ space logs one warning per sampler; keep the test output readable.
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    yield
    optuna.logging.set_verbosity(verbosity)


class _AsPlugin:
    # The suites declare ``sampler`` on their base class; a class-level override wins over it.
    @pytest.fixture(params=list(AS_PLUGIN))
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return AS_PLUGIN[request.param]


class _WithLambdaSpace:
    @pytest.fixture(params=list(WITH_LAMBDA_SPACE))
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return WITH_LAMBDA_SPACE[request.param]


class TestPaperSamplersAsBasicSamplers(_AsPlugin, BasicSamplerTestCase):
    pass


class TestPaperSamplersAsRelativeSamplers(_AsPlugin, RelativeSamplerTestCase):
    pass


class TestPlanSamplersAsBasicSamplers(_WithLambdaSpace, BasicSamplerTestCase):
    pass


class TestPlanSamplersAsRelativeSamplers(_WithLambdaSpace, RelativeSamplerTestCase):
    pass


@pytest.mark.parametrize("name", list(AS_PLUGIN))
def test_sampler_without_a_lambda_space_neither_claims_plan_positions_nor_stops_the_study(name):
    study = optuna.create_study(sampler=AS_PLUGIN[name]())
    study.optimize(lambda t: t.suggest_float("x", -1, 1) ** 2, n_trials=15)
    assert len(study.trials) == 15, (
        f"{name}: a study without a λ space stopped after {len(study.trials)} of 15 trials"
    )
    claimed = [t.number for t in study.trials if "boxcox:position" in t.system_attrs]
    assert claimed == [], f"{name}: trials {claimed} took plan positions without a λ space"
    assert "boxcox_sampler" not in study.user_attrs


@pytest.mark.parametrize("name", list(WITH_LAMBDA_SPACE))
def test_sampler_with_a_lambda_space_plans_it_while_the_suites_parameters_stay_independent(name):
    sampler = WITH_LAMBDA_SPACE[name]()
    study = optuna.create_study(sampler=sampler)
    study.optimize(
        lambda t: t.suggest_int("y", -3, 3) + t.suggest_float("lambda_a", -10, 10), n_trials=12
    )
    positions = [t.system_attrs.get("boxcox:position") for t in study.trials]
    assert positions == list(range(12)), (
        f"{name}: trials took plan positions {positions} instead of one each, in order"
    )
    assert {t.params["y"] for t in study.trials} - set(range(-3, 4)) == set()
    assert len({t.params["y"] for t in study.trials}) > 1, (
        f"{name}: the parameter outside the λ space got one value in 12 trials"
    )
