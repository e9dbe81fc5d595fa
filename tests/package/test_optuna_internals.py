"""Checks that read Optuna's private state: what the package relies on inside Optuna's objects.

The registry builds ``tpe`` with explicit arguments so that it is the same sampler on every Optuna
the package supports (Optuna 5 changed TPE's defaults); only the sampler's private attributes
show that the arguments took effect. The figures are typed with the protocol of an artifact store,
which Optuna names only in a private module (re-exported by :mod:`optuna_boxcox._optuna` for type
checkers). Run on the lowest and the newest Optuna (the compatibility run).
"""

from __future__ import annotations

import inspect

from optuna.artifacts import FileSystemArtifactStore
from optuna.artifacts import upload_artifact
from optuna.artifacts._protocol import ArtifactStore
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


def test_the_artifact_store_protocol_is_where_the_figures_name_it():
    # attach_figures' artifact_store is typed with it: were it moved, type checkers would miss it.
    methods = ("open_reader", "write", "remove")
    assert all(callable(getattr(ArtifactStore, m, None)) for m in methods), (
        "optuna.artifacts._protocol.ArtifactStore is no artifact store protocol any more: "
        "re-export the new one from optuna_boxcox._optuna"
    )
    assert all(callable(getattr(FileSystemArtifactStore, m, None)) for m in methods)
    annotation = inspect.signature(upload_artifact).parameters["artifact_store"].annotation
    assert annotation in ("ArtifactStore", ArtifactStore)
