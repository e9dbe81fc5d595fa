"""Checks that read Optuna's private state: what the package relies on inside Optuna's objects.

The registry builds ``tpe`` with explicit arguments so that it is the same sampler on every Optuna
the package supports (Optuna 5 changed TPE's defaults); only the sampler's private attributes
show that the arguments took effect. Run on the lowest and the newest Optuna (the compatibility
run).
"""

from __future__ import annotations

from optuna.samplers._tpe.sampler import default_gamma
from optuna.samplers._tpe.sampler import default_weights

from optuna_boxcox.samplers import make_sampler


def test_tpe_is_the_same_sampler_on_every_supported_optuna():
    # The arguments Optuna 5 deprecated are not passed; their values are 4.2's defaults there too.
    sampler = make_sampler("tpe", seed=0)
    assert sampler._multivariate is True and sampler._constant_liar is True
    assert sampler._n_startup_trials == 10 and sampler._n_ei_candidates == 24
    parameters = sampler._parzen_estimator_parameters
    assert parameters.prior_weight == 1.0
    assert parameters.consider_magic_clip is True and parameters.consider_endpoints is False
    assert parameters.weights is default_weights
    assert sampler._gamma in (None, default_gamma)  # 5.x: None, default_gamma for one objective
