"""Running the studies of a comparison (or reading back the finished ones): one study per sampler,
seed and problem, and the fixed transforms' scores."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
import dataclasses
import os
import time
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple
import warnings

import numpy as np
import optuna
from optuna.trial import TrialState
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from optuna_boxcox._ensemble import fit_member
from optuna_boxcox._lifecycle._guard import search_sampler
from optuna_boxcox._lifecycle._open import Recorded
from optuna_boxcox._lifecycle._open import open_study
from optuna_boxcox._lifecycle._search import RunOptions
from optuna_boxcox._lifecycle._search import SearchRun
from optuna_boxcox._lifecycle._search import Where
from optuna_boxcox._lifecycle._search import run_search
from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._objective._objective import CRITERIA
from optuna_boxcox._objective._objective import BoxCoxObjective
from optuna_boxcox._objective._scoring import score_predictions
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox._system._parallel import map_tasks
from optuna_boxcox._system._progress import Progress
from optuna_boxcox.experiments._problems import ALL_TRANSFORMS
from optuna_boxcox.experiments._problems import FIXED_ATTR
from optuna_boxcox.experiments._problems import HELD_OUT_ATTR
from optuna_boxcox.experiments._problems import REFERENCE_SAMPLER
from optuna_boxcox.experiments._problems import SETTINGS_ATTR
from optuna_boxcox.experiments._problems import WALL_ATTR
from optuna_boxcox.experiments._problems import Problem
from optuna_boxcox.experiments._problems import RunSettings
from optuna_boxcox.experiments._problems import Split
from optuna_boxcox.experiments._problems import fixed_transform
from optuna_boxcox.experiments._problems import held_out_metric
from optuna_boxcox.experiments._problems import outer_tag
from optuna_boxcox.experiments._problems import study_name
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.storages import BaseStorage


# -- running the studies --------------------------------------------------------------------------
#: Study user attribute of a search's study: the seconds of its fit as a user pays them (the
#: search, the gate and the final model's fit), recorded when it ran.
FIT_SECONDS_ATTR = "fit_seconds"


class FixedScore(NamedTuple):
    """A fixed transform's scores on one split: the search's inner score on the training part,
    the held-out score and the seconds of its pipeline's fit (NaN when read back from a study
    that did not record them)."""

    inner: float
    held_out: float | None
    fit_seconds: float


def run_problems(
    problems: Sequence[Problem], settings: RunSettings
) -> dict[tuple, dict[str, Any]]:
    """Every search (problem × split × sampler × seed) and every fixed-transform scoring
    (problem × split), run or read back, spread over ``settings.n_jobs`` processes.

    Returns a summary per task: ``("search", problem, split, sampler, seed)`` → the study's name,
    its number of trials, inner best, best-so-far curve, trials to 99 %, wall seconds, held-out score and whether it ran
    now (``ran``) and its fit's seconds (``fit_seconds``); ``("fixed", problem, split)`` → transform
    key → :class:`FixedScore`.
    Indices are positions in ``problems`` and in each problem's splits.
    """
    storage, n_jobs = settings.storage, settings.n_jobs
    scoring, cv, outer_cv = settings.scoring, settings.cv, settings.outer_cv
    if n_jobs != 1 and not isinstance(storage, (str, type(None))):
        n_jobs = 1  # a storage object cannot be shared with forked processes
    store = (
        open_storage(storage)
        if n_jobs == 1 and not hasattr(storage, "get_all_trials")
        else storage
    )
    opened: dict[int, BaseStorage] = {}

    def worker_storage() -> BaseStorage:
        # One storage per worker process, opened there (an engine must not cross a fork).
        if os.getpid() not in opened:
            opened[os.getpid()] = open_storage(storage)
        return opened[os.getpid()]

    _, metric = held_out_metric(scoring)
    scoring_name = scoring if isinstance(scoring, str) else held_out_metric(scoring)[0]
    tasks: list[tuple] = []
    for p, problem in enumerate(problems):
        for s in range(len(problem.splits)):
            tasks.append(("fixed", p, s))
            tasks += [
                ("search", p, s, name, seed)
                for name in settings.samplers
                for seed in settings.seeds
            ]
    objectives: OrderedDict[tuple[int, int], BoxCoxObjective] = OrderedDict()

    def spec_of(p: int) -> SearchSpec:
        # The experiment of problem p: its searches' objectives are built from it.
        return SearchSpec(problems[p].estimator, scoring=scoring, cv=cv)

    def objective_of(p: int, s: int) -> BoxCoxObjective:
        # Tasks of one split are neighbours: a few objectives per process are enough.
        if (p, s) not in objectives:
            X_train, y_train = problems[p].rows(problems[p].splits[s].train)
            objectives[(p, s)] = BoxCoxObjective.from_spec(spec_of(p), X_train, y_train)
            while len(objectives) > 4:
                objectives.popitem(last=False)
        return objectives[(p, s)]

    def work(task: tuple) -> Any:
        problem, split = problems[task[1]], problems[task[1]].splits[task[2]]
        target = store if n_jobs == 1 else worker_storage()
        objective = lambda: objective_of(task[1], task[2])  # built only if something is scored
        recorded: dict[str, Any] = {
            "scoring": scoring_name,
            "cv": cv,
            "test_size": settings.test_size,
        }
        if outer_cv is not None:
            recorded["outer_cv"] = outer_tag(outer_cv)[len("outer") :]
        if problem.null_seed is not None:
            recorded["null_seed"] = problem.null_seed
        if task[0] == "fixed":
            # The fixed transforms' scores do not depend on the budget: one study serves all.
            unbudgeted = dataclasses.replace(settings, n_trials=None)
            name = study_name(
                problem.dataset,
                problem.classifier,
                "fixed",
                None,
                unbudgeted,
                null_seed=problem.null_seed,
            )
            return _fixed_scores(
                target, name, recorded, problem, split, objective, settings.transforms, metric
            )
        sampler_name, seed = task[3], task[4]
        dim = np.shape(problem.X)[1]
        budget = settings.n_trials or make_sampler(REFERENCE_SAMPLER).budget(dim)
        recorded = {"budget": budget, **recorded}
        if outer_cv is not None:
            recorded["fold"] = split.fold
        name = study_name(
            problem.dataset,
            problem.classifier,
            sampler_name,
            seed,
            settings,
            null_seed=problem.null_seed,
            fold=split.fold,
        )
        return _run_one(
            Where(storage=target, study_name=name),
            dataclasses.replace(spec_of(task[1]), sampler=sampler_name, seed=seed),
            objective,
            problem,
            split,
            budget,
            recorded,
            whole_plan=settings.n_trials is None,
        )

    if n_jobs != 1 and tasks:
        # Compiled kernels loaded once here, inherited by every forked worker.
        objective_of(tasks[0][1], tasks[0][2]).warm_up()
    found: dict[tuple, dict[str, Any]] = {}
    # A task is one search or the fixed transforms of one split (a study holds every fold's).
    with Progress(
        len(tasks), unit="task", label=settings.progress_label, enabled=settings.progress
    ) as bar:

        def collect(task: tuple, summary: Any) -> None:
            found[task] = summary
            bar.update()

        map_tasks(tasks, work, collect, n_jobs=n_jobs)
    return found


def _fixed_scores(
    store: Any,
    name: str,
    settings: dict[str, Any],
    problem: Problem,
    split: Split,
    objective: Callable[[], BoxCoxObjective],
    transforms: Sequence[str],
    metric: Callable[[np.ndarray, np.ndarray], float],
) -> dict[str, FixedScore]:
    """The fixed transforms' scores on one split: read from the study ``name``
    (user attribute ``fixed_scores:fold<k>``, or ``fixed_scores`` for a single split), the
    transforms it lacks scored and added (each also as a finished trial, for the dashboard)."""
    study = open_study(
        store,
        name,
        settings=Recorded(SETTINGS_ATTR, settings),
    )
    attrs = study.user_attrs
    key = FIXED_ATTR if split.fold is None else f"{FIXED_ATTR}:fold{split.fold}"
    known = dict(attrs.get(key, {}))
    missing = [t for t in transforms if t not in known]
    if missing:
        for t, (inner, outer, seconds) in _score_fixed(
            problem, split, objective(), missing, metric
        ).items():
            known[t] = {"inner": inner, "held_out": outer, "fit_seconds": seconds}
            shown = inner if np.isfinite(inner) else outer  # a criterion has no inner score
            if shown is not None and study.direction == optuna.study.StudyDirection.MAXIMIZE:
                attrs = {"transform": ALL_TRANSFORMS[t], HELD_OUT_ATTR: outer}
                if split.fold is not None:
                    attrs["fold"] = split.fold
                study.add_trial(optuna.trial.create_trial(value=shown, user_attrs=attrs))
        study.set_user_attr(key, known)
    return {
        t: FixedScore(
            float(known[t]["inner"]),
            known[t]["held_out"],
            float(known[t].get("fit_seconds", np.nan)),
        )
        for t in transforms
    }


def _score_fixed(
    problem: Problem,
    split: Split,
    objective: BoxCoxObjective,
    transforms: Sequence[str],
    metric: Callable[[np.ndarray, np.ndarray], float],
) -> dict[str, FixedScore]:
    """Inner score (the search's own, on the training part), held-out score and fit seconds of
    each fixed transform followed by the classifier. A classifier-free criterion has no inner
    score (NaN)."""
    X_train = np.asarray(problem.rows(split.train)[0], float)
    y_train = problem.y[split.train]
    scores = {}
    with warnings.catch_warnings():
        # Baselines as a user would run them: a perceptron on raw features may not converge, and
        # Yeo-Johnson's MLE may overflow on a large feature; the score says what came of it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for key in transforms:
            transform = fixed_transform(key, len(split.train))
            inner = np.nan
            if not (isinstance(objective.scoring, str) and objective.scoring in CRITERIA):
                inner = objective.score_features(clone(transform).fit_transform(X_train))
            outer = None
            started = time.perf_counter()
            model = make_pipeline(transform, clone(problem.estimator)).fit(X_train, y_train)
            seconds = time.perf_counter() - started  # reported only: it decides nothing
            if split.test is not None:
                X_test = np.asarray(problem.rows(split.test)[0], float)
                outer = float(metric(problem.y[split.test], model.predict(X_test)))
            scores[key] = FixedScore(float(inner), outer, seconds)
    return scores


def _run_one(
    where: Where,
    spec: SearchSpec,
    objective: Callable[[], BoxCoxObjective],
    problem: Problem,
    split: Split,
    budget: int,
    settings: dict[str, Any],
    *,
    whole_plan: bool = False,
) -> dict[str, Any]:
    """Run (or read) one study through the study lifecycle; return what the table needs of it.

    ``spec`` names the sampler and its seed. A paper sampler runs its whole plan with
    ``whole_plan``, else at most ``budget`` trials of it; Optuna's samplers run ``budget`` trials
    (on an in-memory copy of the study, written back in chunks). The guarded default searches with
    the paper's coordinate search, then its gate decides
    (:func:`~optuna_boxcox._lifecycle._search.run_search`). A study that runs gets the search's
    note and figures, shown by optuna-dashboard; it records ``settings`` and may only be
    continued with them.

    The search sees the training rows of ``split``. When the split has test rows, the chosen Λ is
    scored on them with the search's held-out metric (:func:`held_out_metric`), the classifier
    fitted on the training rows, and the score recorded in the study's user attribute
    ``held_out``; a finished study's recorded score is read back. ``objective()`` gives the
    split's objective for ``spec``, built only when there is scoring to do.
    """
    rows = problem.rows(split.train)
    dim = np.shape(problem.X)[1]
    metric_name, metric = held_out_metric(spec.scoring)
    test = None
    if split.test is not None:
        test = (*rows, *problem.rows(split.test), problem.estimator, metric)
    sampler_name, seed = spec.sampler, spec.seed
    # Nelder–Mead's plan has no natural end: give it the shared budget. The paper's grid samplers
    # keep their own (fixed) plans, stopped at the budget when longer.
    sampler_settings = {"n_trials": budget} if sampler_name == "nelder-mead" else {}
    sampler = make_sampler(
        search_sampler(sampler_name, spec.estimator()), seed=seed, **sampler_settings
    )
    target = budget
    if isinstance(sampler, PlanSampler):
        target = sampler.budget(dim) if whole_plan else min(budget, sampler.budget(dim))
    started = time.perf_counter()
    found = run_search(
        spec,
        check_data(*rows),
        where,
        RunOptions(
            sampler=sampler,
            total=target,
            in_memory=True,
            settings=Recorded(SETTINGS_ATTR, settings),
            objective=objective,
            # The dashboard shows every study with the Λ used and its figures: they added no
            # measurable time to a comparison (a study read back keeps those it was given).
            figures=True,
        ),
    )
    study = found.study
    attrs = study.user_attrs
    if found.ran:
        study.set_user_attr(WALL_ATTR, attrs.get(WALL_ATTR, 0.0) + found.elapsed)
        attrs = study.user_attrs
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))[:target]
    curve = np.maximum.accumulate([t.value for t in trials])
    held_out = None
    if test is not None:
        recorded = attrs.get(HELD_OUT_ATTR)
        if recorded is not None and not found.ran:
            held_out = float(recorded["score"])
        else:
            held_out = _held_out(found, *test)
            if found.ran:
                # A user's fit: the search and its gate, then the model on the Λ used (the held-out
                # prediction is not part of it, but costs little). Reported only.
                study.set_user_attr(FIT_SECONDS_ATTR, time.perf_counter() - started)
            study.set_user_attr(
                HELD_OUT_ATTR,
                {
                    "score": held_out,
                    "metric": metric_name,
                    "fold": settings.get("fold"),
                    "train_rows": len(test[1]),
                    "test_rows": len(test[3]),
                },
            )
    return {
        "name": where.study_name,
        "best": float(curve[-1]),
        "curve": curve,
        "trials": len(trials),
        "trials_to_99": int(np.argmax(curve >= 0.99 * curve[-1])) + 1,
        "wall": float(attrs.get(WALL_ATTR, np.nan)),
        "held_out": held_out,
        "ran": found.ran,
        "fit_seconds": float(study.user_attrs.get(FIT_SECONDS_ATTR, np.nan)),
    }


def _held_out(found: SearchRun, X_train, y_train, X_test, y_test, estimator, metric) -> float:
    """The metric on the test rows of the search's result fitted on the training rows, as the
    estimator fits it (:func:`~optuna_boxcox._ensemble.fit_member`)."""
    objective = found.objective
    member = fit_member(
        objective.configuration(found.params),
        found.params,
        float("nan"),
        estimator,
        np.asarray(X_train, float),
        y_train,
        method=objective.method,
        extrapolation=objective.extrapolation,
        range_scale=found.range_scaled,
    )
    predicted = member.estimator.predict(member.transformer.transform(np.asarray(X_test, float)))
    return score_predictions(metric, np.asarray(y_test), predicted)
