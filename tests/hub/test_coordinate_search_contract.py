"""The OptunaHub package's sampler honours Optuna's sampler contract (optuna.testing.pytest_samplers).

The suites suggest x, y, z, … with every kind of distribution; the sampler's float space is over
two names they never suggest, so every trial takes a position of the plan while the suites' own
parameters go to the independent sampler.
"""

from __future__ import annotations

from pathlib import Path

from optuna.distributions import FloatDistribution
import pytest

pytest.importorskip("optuna.testing.pytest_samplers", reason="Optuna < 4.3 has no pytest_samplers")
from optuna.testing.pytest_samplers import BasicSamplerTestCase
from optuna.testing.pytest_samplers import RelativeSamplerTestCase
from optuna.testing.pytest_samplers import SingleOnlySamplerTestCase

#: The registry root of the package: hub/ mirrors the registry's package/ folder.
REGISTRY_ROOT = Path(__file__).resolve().parents[2] / "hub"
optunahub = pytest.importorskip("optunahub", reason="optunahub is in the test extra")
hub = optunahub.load_local_module(
    package="samplers/coordinate_search", registry_root=str(REGISTRY_ROOT)
)

SPACE = {"coord_a": FloatDistribution(-10.0, 10.0), "coord_b": FloatDistribution(-10.0, 10.0)}


class _HubSampler:
    @pytest.fixture(params=["iterative", "combined1"])
    def sampler(self, request: pytest.FixtureRequest):
        return lambda: hub.CoordinateSearchSampler.from_preset(request.param, SPACE, seed=7)


class TestCoordinateSearchAsBasicSampler(_HubSampler, BasicSamplerTestCase):
    pass


class TestCoordinateSearchAsRelativeSampler(_HubSampler, RelativeSamplerTestCase):
    pass


class TestCoordinateSearchAsSingleObjectiveSampler(_HubSampler, SingleOnlySamplerTestCase):
    pass
