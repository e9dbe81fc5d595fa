"""Comparing samplers on one data set: same budget, several seeds, one storage, resumable.

Every (sampler, seed) is its own study named ``<dataset>/<classifier>/<sampler>/seed<k>``, followed
by a tag of the settings that differ from the defaults (``/n300`` for a budget given explicitly,
``/f1`` for another scoring, ``/cv5``, ``/test0.25``, ``/outer5x2``, ``/null0``), so a comparison
with other settings never reads another's studies. The paper's samplers run through
:func:`optuna_boxcox.optimize` (batch by batch) and run their whole plan unless a budget is given;
Optuna's samplers run on an in-memory copy of the study and their trials are appended to the
storage in one write per chunk, so a comparison costs what the samplers cost, not what
per-parameter commits cost. A study that already holds its trials is read, not re-run; independent
studies run in parallel with ``n_jobs``.

Honest scores. The search's own score (the paper's resubstitution accuracy, or an inner k-fold) is
what the samplers maximise, so its best value flatters every sampler. Two ways to score the chosen
Λ on data the search never saw:

- ``test_size``: one stratified holdout (``train_test_split``, random_state 0);
- ``outer_cv="RxK"``: repeated stratified K-fold, R repeats (``RepeatedStratifiedKFold``,
  random_state 0), e.g. ``"5x2"``. Each outer fold's training part is the data of its own studies
  (``…/outer5x2/fold<k>``, k = 0 … R·K - 1); the chosen Λ is scored on the fold's test part with the
  search's metric and recorded in the fold's study as the user attribute ``held_out``, so a
  finished fold is read back, not rerun.

``null=True`` repeats every search on labels permuted with a seeded RNG (the same X, the same
outer protocol, studies tagged ``null<seed>``). Inner scores on permuted labels can look good —
resubstitution rewards memorising noise — but held-out scores must sit at chance; the table shows
the gap between inner best and held-out on real and on permuted labels.

Fixed transforms (:data:`FIXED_TRANSFORMS`, and on request the peers of :data:`PEER_TRANSFORMS`)
are scored on the same splits as reference rows: what a user would otherwise put in front of the
classifier. Their scores are kept in a study of their own,
``<dataset>/<classifier>/fixed/<tags>`` (one user attribute per fold, read back by a second run;
and one finished trial per transform and fold, its score maximised, so that the dashboard shows
what the study holds rather than an empty "minimize" study).

This module is :func:`compare`; its parts are ``_problems`` (what is compared, the run's
settings, the splits, the studies' names), ``_compare_runs`` (running or reading back the studies)
and ``_compare_table`` (the table and its tests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox.experiments._compare_runs import run_problems
from optuna_boxcox.experiments._compare_table import format_table
from optuna_boxcox.experiments._compare_table import text_table
from optuna_boxcox.experiments._compare_table import wilcoxon_runs
from optuna_boxcox.experiments._peers import PEER_TRANSFORMS
from optuna_boxcox.experiments._peers import require_peers
from optuna_boxcox.experiments._problems import ALL_TRANSFORMS
from optuna_boxcox.experiments._problems import FIXED_ATTR
from optuna_boxcox.experiments._problems import FIXED_TRANSFORMS
from optuna_boxcox.experiments._problems import HELD_OUT_ATTR
from optuna_boxcox.experiments._problems import OUTER_SEED
from optuna_boxcox.experiments._problems import REFERENCE_SAMPLER
from optuna_boxcox.experiments._problems import SETTINGS_ATTR
from optuna_boxcox.experiments._problems import WALL_ATTR
from optuna_boxcox.experiments._problems import Problem
from optuna_boxcox.experiments._problems import RunSettings
from optuna_boxcox.experiments._problems import SamplerRuns
from optuna_boxcox.experiments._problems import Scores
from optuna_boxcox.experiments._problems import Split
from optuna_boxcox.experiments._problems import fixed_transform
from optuna_boxcox.experiments._problems import held_out_metric
from optuna_boxcox.experiments._problems import outer_splits
from optuna_boxcox.experiments._problems import outer_tag
from optuna_boxcox.experiments._problems import parse_outer_cv
from optuna_boxcox.experiments._problems import permuted_labels
from optuna_boxcox.experiments._problems import reference_transforms
from optuna_boxcox.experiments._problems import study_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.storages import BaseStorage


def compare(
    X: Any,
    y: Any,
    estimator: Any,
    *,
    dataset: str,
    classifier: str,
    samplers: Sequence[str],
    seeds: int = 3,
    n_trials: int | None = None,
    storage: str | BaseStorage | None = None,
    scoring: str = "accuracy",
    cv: int | None = None,
    test_size: float | None = None,
    outer_cv: str | int | tuple[int, int] | None = None,
    null: bool = False,
    null_seed: int = 0,
    transforms: Sequence[str] | None = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> tuple[list[SamplerRuns], dict[str, Scores]]:
    """Run (or read back) every sampler × seed (× outer fold); return per-sampler runs and the
    fixed transforms' scores by row label.

    Args:
        X, y: The data.
        estimator: The classifier.
        dataset, classifier: Names, for the study names.
        samplers: Registry names (:func:`~optuna_boxcox.make_sampler`).
        seeds: Studies per sampler (seeds 0 … seeds - 1), per outer fold.
        n_trials: Trials per study. By default every paper sampler runs its whole plan and
            every other sampler gets the coordinate search's E·p·L; given, a paper sampler whose
            plan is shorter runs its plan and a longer one stops at the budget.
        storage: Where the studies live (URL, or a storage when ``n_jobs`` is 1).
        scoring, cv: The search's score (see :class:`~optuna_boxcox.BoxCoxObjective`).
        test_size: Hold out a stratified part of the data: searches see only the rest, and each
            chosen Λ is scored on the held-out part (classifier fitted on the search data) with
            the search's metric (accuracy for a classifier-free criterion).
        outer_cv: Instead of one holdout, repeated stratified k-fold (``"5x2"``: 5 repeats of
            2-fold): every fold's training part is searched by every sampler × seed, and its test
            part scores the chosen Λ. Scores are reported per study (seed × fold).
        null: Also run everything on permuted labels (:func:`permuted_labels` with ``null_seed``);
            needs ``test_size`` or ``outer_cv``. Filled in ``null_best`` and ``null_held_out``.
        transforms: Keys of the fixed transforms to score (default all of
            :data:`FIXED_TRANSFORMS`); the peers of :data:`PEER_TRANSFORMS` (``kdi``,
            ``squashing``, ``skew-rule``) on request.
        n_jobs: Studies run at once, each in a process of its own (-1: one per CPU).
        progress: Show progress over the studies, with the time left.

    The Wilcoxon signed-rank p-value of each sampler is against the coordinate search's inner
    best, paired by seed and fold (when the coordinate search is among the samplers).
    """
    if null and not (test_size or outer_cv is not None):
        raise ValueError(
            "the null check needs held-out scores: give test_size (one holdout) or outer_cv"
        )
    splits = outer_splits(y, outer_cv=outer_cv, test_size=test_size)
    problems = [Problem(dataset, classifier, X, np.asarray(y), estimator, splits)]
    if null:
        permuted = permuted_labels(y, null_seed)
        problems.append(
            Problem(
                dataset,
                classifier,
                X,
                permuted,
                estimator,
                outer_splits(permuted, outer_cv=outer_cv, test_size=test_size),
                null_seed,
            )
        )
    keys = list(FIXED_TRANSFORMS) if transforms is None else list(transforms)
    require_peers(keys)  # before any study: a peer asked for whose library is missing
    settings = RunSettings(
        samplers=tuple(samplers),
        seeds=tuple(range(seeds)),
        transforms=tuple(keys),
        n_trials=n_trials,
        scoring=scoring,
        cv=cv,
        test_size=test_size,
        outer_cv=outer_cv,
        storage=storage,
        n_jobs=n_jobs,
        progress=progress,
        progress_label="compare",
    )
    found = run_problems(problems, settings)
    runs = []
    for name in samplers:
        run = SamplerRuns(name)
        for p, problem in enumerate(problems):
            for seed in range(seeds):
                for s in range(len(problem.splits)):
                    summary = found[("search", p, s, name, seed)]
                    _add(run, problem, summary["best"], summary["held_out"])
                    if problem.null_seed is not None:
                        continue
                    run.curves.append(summary["curve"])
                    run.trials.append(len(summary["curve"]))
                    run.trials_to_99.append(summary["trials_to_99"])
                    run.wall.append(summary["wall"])
                    run.study_names.append(summary["name"])
        runs.append(run)
    wilcoxon_runs(runs)
    references = {}
    for key in keys:
        row = Scores(ALL_TRANSFORMS[key])
        for p, problem in enumerate(problems):
            for s in range(len(problem.splits)):
                inner, outer, _ = found[("fixed", p, s)][key]
                _add(row, problem, inner, outer)
        references[row.name] = row
    return runs, references


def _add(scores: Scores, problem: Problem, best: float, held_out: float | None) -> None:
    real = problem.null_seed is None
    (scores.best if real else scores.null_best).append(best)
    if held_out is not None:
        (scores.held_out if real else scores.null_held_out).append(held_out)


__all__ = [
    "ALL_TRANSFORMS",
    "FIXED_ATTR",
    "FIXED_TRANSFORMS",
    "HELD_OUT_ATTR",
    "OUTER_SEED",
    "PEER_TRANSFORMS",
    "REFERENCE_SAMPLER",
    "SETTINGS_ATTR",
    "WALL_ATTR",
    "Problem",
    "RunSettings",
    "SamplerRuns",
    "Scores",
    "Split",
    "compare",
    "fixed_transform",
    "format_table",
    "held_out_metric",
    "outer_splits",
    "outer_tag",
    "parse_outer_cv",
    "permuted_labels",
    "reference_transforms",
    "run_problems",
    "study_name",
    "text_table",
]
