"""One registry of samplers by name, used by the estimator, the command line and the experiments."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING
from typing import Any
import warnings
import weakref

import optuna

from optuna_boxcox._study._settings import record_settings
from optuna_boxcox.samplers._coordinate import PRESETS
from optuna_boxcox.samplers._coordinate import CoordinateGridSampler
from optuna_boxcox.samplers._diagonal import DiagonalSampler
from optuna_boxcox.samplers._full_grid import FullGridSampler
from optuna_boxcox.samplers._mle import MLESampler
from optuna_boxcox.samplers._nelder_mead import NelderMeadSampler
from optuna_boxcox.samplers._plan import SAMPLER_ATTR
from optuna_boxcox.samplers._spherical import SphericalSampler

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Mapping

    from optuna.samplers import BaseSampler

    from optuna_boxcox._study._spec import SearchSpec


#: Optuna's samplers as the registry builds them: every argument whose default differs between the
#: Optuna versions supported (4.2–5.x), or could, is given, so that ``tpe`` is the same sampler on
#: every one of them (Optuna 5 made TPE multivariate with the constant liar by default for one
#: objective). TPE's prior, magic clip, end points, gamma and weights are deprecated arguments on
#: Optuna 5 (passing them warns) with the same defaults as 4.2, so they are not passed. Recorded in
#: the study with the seed (:func:`record_sampler`).
BASELINE_ARGUMENTS: dict[str, dict[str, Any]] = {
    "tpe": dict(
        multivariate=True, constant_liar=True, n_startup_trials=10, n_ei_candidates=24, group=False
    ),
    "random": {},
    "cmaes": dict(
        n_startup_trials=1,
        consider_pruned_trials=False,
        restart_strategy=None,
        popsize=None,
        use_separable_cma=False,
        with_margin=False,
        lr_adapt=False,
        warn_independent_sampling=False,
    ),
    "qmc": dict(qmc_type="sobol", scramble=False),
    "gp": dict(n_startup_trials=10, deterministic_objective=False),
    # Multi-objective: the Pareto front of score and features kept (BoxCoxObjective's
    # objectives=("score", "n_features")); on one objective a genetic algorithm.
    "nsga2": dict(population_size=50, mutation_prob=None, crossover_prob=0.9, swapping_prob=0.5),
}
_CLASSES = {
    "tpe": "TPESampler",
    "random": "RandomSampler",
    "cmaes": "CmaEsSampler",
    "qmc": "QMCSampler",
    "gp": "GPSampler",
    "nsga2": "NSGAIISampler",
}
#: What each sampler the registry built of Optuna's is, as :func:`record_sampler` records it.
_RECORDS: weakref.WeakKeyDictionary[BaseSampler, dict[str, Any]] = weakref.WeakKeyDictionary()


def _optuna_sampler(name: str) -> Callable[..., BaseSampler]:
    def make(seed: int, **kwargs: Any) -> BaseSampler:
        if name == "gp" and importlib.util.find_spec("torch") is None:
            raise ValueError(
                "the 'gp' sampler (Optuna's GPSampler) needs PyTorch: pip install torch"
            )
        arguments = {**BASELINE_ARGUMENTS[name], **kwargs}
        with warnings.catch_warnings():
            # The user chose the sampler by name: Optuna's ExperimentalWarning ("QMCSampler is
            # experimental …") says nothing they can act on.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = getattr(optuna.samplers, _CLASSES[name])(seed=seed, **arguments)
        _RECORDS[sampler] = {
            "name": name,
            "class": _CLASSES[name],
            "settings": {"seed": seed, **{k: _plain(v) for k, v in sorted(arguments.items())}},
        }
        return sampler

    return make


def _plain(value: Any) -> Any:
    """A setting as JSON holds it (a callable or an object by its repr)."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def record_sampler(
    study: optuna.Study, sampler: BaseSampler, *, recorded: Mapping[str, Any] | None = None
) -> None:
    """Record in the study (user attribute ``boxcox_sampler``, shown in the dashboard) the name
    and arguments of one of Optuna's samplers that :func:`make_sampler` built, and the Optuna
    version running it; refuse a study recorded with other arguments. The paper's samplers record
    themselves; a sampler built some other way is not recorded.

    Raises:
        ValueError: The study was run with another sampler or other arguments.
    """
    record = _RECORDS.get(sampler)
    if record is None:
        return
    mine = {**record, "optuna": optuna.__version__}
    record_settings(
        study,
        SAMPLER_ATTR,
        mine,
        recorded=recorded,
        # The same arguments mean the same sampler on any supported Optuna.
        continues=lambda theirs: {**theirs, "optuna": None} == {**mine, "optuna": None},
        alternative="use the sampler it was run with",
    )


def _paper(cls: type, **fixed: Any) -> Callable[..., BaseSampler]:
    def make(seed: int, **kwargs: Any) -> BaseSampler:
        return cls(seed=seed, **{**fixed, **kwargs})

    make.__doc__ = cls.__doc__
    return make


#: Sampler factories by name: ``factory(seed, **settings) -> BaseSampler``.
SAMPLERS: dict[str, Callable[..., BaseSampler]] = {
    "coordinate": _paper(CoordinateGridSampler),
    **{preset: _paper(CoordinateGridSampler, **settings) for preset, settings in PRESETS.items()},
    "spherical": _paper(SphericalSampler),
    "diagonal": _paper(DiagonalSampler),
    "grid": _paper(FullGridSampler),
    "mle": _paper(MLESampler),
    "nelder-mead": _paper(NelderMeadSampler),
    **{name: _optuna_sampler(name) for name in BASELINE_ARGUMENTS},
}


def make_sampler(name: str, seed: int = 0, **settings: Any) -> BaseSampler:
    """A sampler by registry name (see :data:`SAMPLERS`); ``coordinate:<preset>`` also works.

    ``coordinate`` alone is the paper's plain iterative search (Table 4, first row).
    """
    key = sampler_key(name)
    if key is None:
        raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
    return SAMPLERS[key](seed, **settings)


def sampler_of(spec: SearchSpec) -> BaseSampler:
    """The sampler ``spec`` names (:attr:`~SearchSpec.sampler`), with its settings and seed.

    Here rather than a method of the spec: a spec is a value of the layer below the samplers.
    """
    if spec.sampler is None:
        raise ValueError("this spec names no sampler: the study's own one searches")
    settings = {
        k: tuple(v) if isinstance(v, list) else v for k, v in spec.sampler_settings.items()
    }
    return make_sampler(spec.sampler, seed=spec.seed, **settings)


def sampler_key(name: str) -> str | None:
    """The :data:`SAMPLERS` key that ``name`` names (in any case; ``coordinate:<preset>`` is the
    preset), or None for a name :func:`make_sampler` refuses."""
    key = name.strip().lower()
    if key.startswith("coordinate:"):
        key = key.split(":", 1)[1]
    return key if key in SAMPLERS else None
