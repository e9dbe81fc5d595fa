"""Meta-study: which settings of the iterative grid search matter? (``optuna-boxcox meta``)

The paper tried six settings of Algorithm 6 (its Table 4) and left "the influence of the
hyperparameters" to future work. Here they are the parameters of an ordinary Optuna study: each trial
picks ``grid_size``, ``epochs``, ``shift_epoch``, ``shuffle_epoch`` and ``finer_epoch``, runs the
Box-Cox pipeline with a :class:`~optuna_boxcox.CoordinateGridSampler` of those settings under an outer
cross-validation (SPEC §7's protocol, smaller by default: 3 folds × 1 repeat), and scores the mean test
accuracy. The six Table-4 rows are enqueued first, then a seeded TPE sampler proposes the rest; the
parameter importances (fANOVA) say which settings moved the accuracy. The study lives in the storage
like any other, so optuna-dashboard shows it and a second run continues it.

Example::

    from optuna_boxcox.experiments.meta import meta_study
    found = meta_study(classifier="bayes", n_trials=30)
    print(found.importances, found.study.best_params)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import time
from typing import Any

import numpy as np
import optuna
from optuna.distributions import IntDistribution
from optuna.trial import TrialState

from optuna_boxcox._lifecycle._open import Recorded
from optuna_boxcox._lifecycle._open import open_study
from optuna_boxcox._lifecycle._open import trials_left
from optuna_boxcox._runner import optimize
from optuna_boxcox._system._parallel import map_tasks
from optuna_boxcox.classifiers import CLASSIFIERS
from optuna_boxcox.experiments._data import paper_features
from optuna_boxcox.experiments._protocol import PAPER_SEED
from optuna_boxcox.experiments._protocol import Protocol
from optuna_boxcox.experiments._protocol import evaluate_fold
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import DEFAULT_STORAGE
from optuna_boxcox.storage import open_storage

#: The meta-study's search space; every Table-4 row lies in it. Odd grid sizes keep λ = 0 and the
#: paper's integer grid points (11 → step 1, 21 → step 0.5).
SPACE: dict[str, IntDistribution] = {
    "grid_size": IntDistribution(5, 31, step=2),
    "epochs": IntDistribution(1, 16),
    "shift_epoch": IntDistribution(1, 16),
    "shuffle_epoch": IntDistribution(1, 16),
    "finer_epoch": IntDistribution(1, 16),
}
#: Study user attribute recording the data and protocol; a study is continued only with the same.
SETTINGS_ATTR = "meta"


class MetaObjective:
    """Outer cross-validated accuracy of the Box-Cox pipeline for one setting of Algorithm 6.

    Args:
        X, y: The data (the paper's float32 cast already applied).
        classifier: One of the paper's classifiers by name.
        protocol: The outer cross-validation.
        n_jobs: Worker processes computing the folds of a trial.
        seed: Seed of the coordinate search's Shift and Shuffle draws.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        classifier: str,
        protocol: Protocol,
        *,
        n_jobs: int = 1,
        seed: int = PAPER_SEED,
    ) -> None:
        self.X, self.y, self.classifier = X, y, classifier
        self.splits = protocol.splits(X, y)
        self.n_jobs, self.seed = n_jobs, seed

    def __call__(self, trial: optuna.Trial) -> float:
        settings = {
            name: trial.suggest_int(name, d.low, d.high, step=d.step) for name, d in SPACE.items()
        }
        sampler = CoordinateGridSampler(**settings, seed=self.seed)
        started = time.perf_counter()
        results: dict[int, float] = {}
        map_tasks(
            list(range(len(self.splits))),
            lambda k: (
                evaluate_fold(
                    self.X, self.y, self.splits[k], self.classifier, sampler, k
                ).test_accuracy
            ),
            lambda k, accuracy: results.__setitem__(k, accuracy),
            n_jobs=self.n_jobs,
        )
        accuracies = [results[k] for k in range(len(self.splits))]
        trial.set_user_attr("fold_accuracies", accuracies)
        trial.set_user_attr("evaluations_per_fold", sampler.budget(self.X.shape[1]))
        trial.set_user_attr("seconds", time.perf_counter() - started)
        return float(np.mean(accuracies))


@dataclass
class MetaResult:
    """What :func:`meta_study` found."""

    study: optuna.Study
    importances: dict[str, float] | None  # None when they cannot be computed yet
    wall_seconds: float


def meta_study(
    *,
    classifier: str = "bayes",
    dataset: str = "breast_cancer",
    csv: str | Path | None = None,
    label: str = "y",
    features: int | None = None,
    folds: int = 3,
    repeats: int = 1,
    n_trials: int = 30,
    seed: int = PAPER_SEED,
    storage: str | Any = DEFAULT_STORAGE,
    study_name: str | None = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> MetaResult:
    """Run (or continue) the meta-study until it holds ``n_trials`` finished trials.

    Args:
        classifier: The classifier the Box-Cox λ are searched for (default Gaussian naive Bayes,
            which the transform helps most in the paper).
        dataset, csv, label: ``breast_cancer`` (default) or ``sonar`` (OpenML, or ``csv``).
        features: Use only the first N features (quick runs).
        folds, repeats: The outer cross-validation (random_state 42).
        n_trials: Finished trials the study should hold; the first six are the Table-4 rows.
        seed: Seed of TPE, of the coordinate search, and of the importance evaluator.
        storage, study_name: Where the study lives (default name ``meta/<dataset>/<classifier>/…``).
        n_jobs: Worker processes computing the folds of a trial.
        progress: Report the trials done, with the time left.
    """
    if classifier not in CLASSIFIERS:
        raise ValueError(
            f"unknown classifier {classifier!r}; choose one of {', '.join(CLASSIFIERS)}"
        )
    protocol = Protocol(n_splits=int(folds), n_repeats=int(repeats))
    X, y = paper_features(dataset, csv=csv, label=label)
    if features is not None:
        if features < 1:
            raise ValueError(f"features must be at least 1, got {features}")
        X = X[:, :features]
    name = study_name or "/".join(
        ["meta", dataset, classifier, protocol.tag, *([f"first{features}"] if features else [])]
    )
    store = open_storage(storage) if isinstance(storage, str) else storage
    started = time.perf_counter()
    sampler = make_sampler("tpe", seed=seed)  # explicit arguments: the same on every Optuna
    study = open_study(
        store,
        name,
        sampler=sampler,
        settings=Recorded(
            SETTINGS_ATTR,
            {
                "dataset": dataset,
                "classifier": classifier,
                "features": features,
                "protocol": protocol.to_attr(),
                "seed": seed,
            },
        ),
    )
    if not study.trials:
        for preset, settings in PRESETS.items():
            study.enqueue_trial(dict(settings), user_attrs={"preset": preset})
    left = trials_left(study, n_trials)
    if left:
        objective = MetaObjective(X, y, classifier, protocol, n_jobs=n_jobs, seed=seed)
        optimize(study, objective, n_trials=left, show_progress_bar=progress)
    importances = param_importances(study, seed)
    if importances is not None:
        study.set_user_attr("param_importances", importances)
        _attach_importances(study, seed)
    return MetaResult(study, importances, time.perf_counter() - started)


def param_importances(study: optuna.Study, seed: int = PAPER_SEED) -> dict[str, float] | None:
    """fANOVA importances of the settings, or None while there are too few distinct results."""
    finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(finished) < 2 or len({t.value for t in finished}) < 2:
        return None
    evaluator = optuna.importance.FanovaImportanceEvaluator(seed=seed)
    try:
        importances = optuna.importance.get_param_importances(study, evaluator=evaluator)
    except (RuntimeError, ValueError):
        return None
    return {k: float(v) for k, v in importances.items()}


def _attach_importances(study: optuna.Study, seed: int) -> None:
    # optuna-dashboard is imported where a note or graph is saved, in this whole module: it loads
    # its web server's modules, the slowest import of the package (docs/performance_log.md, imports).
    from optuna_dashboard import save_plotly_graph_object

    figure = optuna.visualization.plot_param_importances(
        study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=seed)
    )
    save_plotly_graph_object(study, figure, graph_object_id="param-importances")


def format_meta(result: MetaResult) -> str:
    """The trials (settings and accuracy, presets named), the best setting and the importances."""
    study = result.study
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    names = list(SPACE)
    lines = [
        f"meta-study {study.study_name}: {len(trials)} finished trials, mean outer test accuracy [%]",
        "",
    ]
    lines.append(
        f"{'trial':>5}  {'preset':<10}" + "".join(f"{n:>14}" for n in names) + f"{'accuracy':>10}"
    )
    for t in trials:
        preset = t.user_attrs.get("preset", "")
        lines.append(
            f"{t.number:>5}  {preset:<10}"
            + "".join(f"{t.params[n]:>14}" for n in names)
            + f"{100 * t.value:>10.3f}"
        )
    if trials:
        best = study.best_trial
        lines.append(f"\nbest: trial {best.number} {best.params} → {100 * best.value:.3f} %")
    if result.importances is None:
        lines.append(
            "parameter importances: not yet (need at least two trials with different results)"
        )
    else:
        lines.append("parameter importances (fANOVA):")
        lines += [f"  {name:<14} {value:.3f}" for name, value in result.importances.items()]
    return "\n".join(lines)
