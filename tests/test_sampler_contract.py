"""The paper's samplers honour Optuna's sampler contract (optuna.testing.pytest_samplers).

The reusable suites optimise generic objectives (ints, categoricals, log floats, conditional and
dynamic spaces, NaN values, fixed and partially fixed parameters) that declare no λ space. A plan
sampler built as a user builds it, without ``search_space=``, therefore meets them as a plugin
sampler dropped into an ordinary study: it finds no λ space in the study, must not claim plan
positions or stop the study, and must hand every parameter to its independent sampler with values
that are valid for their distributions.

Why not an explicit ``search_space`` over the suites' names: such a sampler declares ``x`` and ``y``
to be float λ, and the suites then suggest ``x`` as an int or a categorical (Optuna rejects a
parameter whose kind changes between the relative space and ``suggest_*``), and expect ``n_trials``
trials where the plan is spent and stops the study after its budget (one trial for MLE). Those are
the sampler's documented behaviour, pinned down in ``test_paper_samplers.py``, not contract breaches.
"""

from __future__ import annotations

from typing import Callable

import optuna
from optuna.samplers import BaseSampler
from optuna.testing.pytest_samplers import BasicSamplerTestCase
from optuna.testing.pytest_samplers import RelativeSamplerTestCase
import pytest

from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import DiagonalSampler
from optuna_boxcox.samplers import FullGridSampler
from optuna_boxcox.samplers import MLESampler
from optuna_boxcox.samplers import SphericalSampler

FACTORIES: dict[str, Callable[[], BaseSampler]] = {
    "coordinate-default": lambda: CoordinateGridSampler(),
    "coordinate-combined1": lambda: CoordinateGridSampler.from_preset("combined1", seed=7),
    "spherical": lambda: SphericalSampler(),
    "diagonal": lambda: DiagonalSampler(),
    "diagonal-authors-code": lambda: DiagonalSampler(authors_code=True),
    "full-grid": lambda: FullGridSampler(),
    "mle": lambda: MLESampler(),
}


@pytest.fixture(autouse=True)
def _quiet_optuna():
    # Each study without a λ space logs one warning per sampler; keep the test output readable.
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    yield
    optuna.logging.set_verbosity(verbosity)


class _EachPaperSampler:
    # The suites declare ``sampler`` on their base class; a class-level override wins over it.
    @pytest.fixture(params=list(FACTORIES), ids=list(FACTORIES))
    def sampler(self, request: pytest.FixtureRequest) -> Callable[[], BaseSampler]:
        return FACTORIES[request.param]


class TestPaperSamplersAsBasicSamplers(_EachPaperSampler, BasicSamplerTestCase):
    pass


class TestPaperSamplersAsRelativeSamplers(_EachPaperSampler, RelativeSamplerTestCase):
    pass


@pytest.mark.parametrize("name", list(FACTORIES))
def test_sampler_without_a_lambda_space_neither_claims_plan_positions_nor_stops_the_study(name):
    study = optuna.create_study(sampler=FACTORIES[name]())
    study.optimize(lambda t: t.suggest_float("x", -1, 1) ** 2, n_trials=15)
    assert len(study.trials) == 15, (
        f"{name}: a study without a λ space stopped after {len(study.trials)} of 15 trials"
    )
    claimed = [t.number for t in study.trials if "boxcox:position" in t.system_attrs]
    assert claimed == [], f"{name}: trials {claimed} took plan positions without a λ space"
    assert "boxcox_sampler" not in study.user_attrs
