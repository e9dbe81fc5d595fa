"""Many data sets: every (data set, classifier, method) scored on held-out data, then ranked.

``optuna-boxcox benchmark`` asks, across many data sets, whether a per-feature Box-Cox search beats
the fixed transforms a user would otherwise put in front of the classifier, the way Ortiz-Bejar,
Tellez & Graff compare model-selection schemes over many benchmarks: held-out scores, average ranks
and Wilcoxon signed-rank tests. Methods are fixed transforms and samplers (each a search of one Λ,
scored with the search's own metric on the training part only). The fixed transforms are
scikit-learn's and this package's (:data:`~optuna_boxcox.experiments.compare.FIXED_TRANSFORMS`:
``raw``, ``standard``, ``minmax``, ``maxabs``, ``quantile``, ``yeo-johnson``, ``box-cox``) and the
peers other tabular tools use (:data:`~optuna_boxcox.experiments.compare.PEER_TRANSFORMS`): ``kdi``
(kditransform's ``KDITransformer``, then ``StandardScaler``), ``squashing`` (skrub's
``SquashingScaler``) and ``skew-rule`` (TabPFN's rule: Box-Cox MLE where |skew| > 0.5, then
``StandardScaler``). ``kdi`` and ``squashing`` need the optional extra ``peers``
(``pip install -e '.[peers]'`` in the checkout); by default every fixed transform that can be built is
scored (all ten with the extra), and a peer named but not installed is a one-line error.

Protocol:

- **Held-out scores.** Each data set is split by repeated stratified k-fold (default 5×2:
  ``RepeatedStratifiedKFold(n_splits=2, n_repeats=5, random_state=0)``) or by one seeded stratified
  holdout (``test_size``). Every sampler searches each fold's training part (one study per
  data set × classifier × sampler × fold, named as :func:`~optuna_boxcox.experiments.compare.study_name` names
  them, so ``compare`` with the same settings reads the same studies); the chosen Λ — and each
  fixed transform — is fitted on the training part and scored on the test part. A method's score
  on a data set is the mean over the folds.
- **Average ranks.** Per classifier and data set the methods are ranked by that score (rank 1 =
  best, tied methods share the mean of their ranks: ``scipy.stats.rankdata(-scores)``); a method's
  average rank is the mean over the data sets. The row ``all`` averages over every (data set,
  classifier) pair.
- **Wilcoxon signed-rank tests.** Per classifier, the *best fixed transform* is the fixed transform
  (peers included) with the lowest average rank (ties: the higher mean score, then the earlier in
  the list): for a sampler, the best other method a user could have picked without a search. Each
  other method is paired with it data set by data set and tested two-sided with
  ``scipy.stats.wilcoxon(method, best, zero_method="zsplit")``: a data set where both score the
  same counts half for and half against (it is evidence of no difference, not dropped), and scipy
  picks the exact distribution, or an exact permutation distribution when there are ties or zeros
  (n ≤ 13). A method equal to the best fixed transform on every data set gets p = 1. The best fixed
  transform is chosen after seeing the scores, so its p-values lean towards it; with n data sets the
  smallest two-sided p is 2/2ⁿ (0.0625 for five).
- **Loss rate.** Per classifier, the share of data sets on which a method scores more than one
  point below the better of ``standard`` and ``box-cox`` (printed for every method, peers and
  samplers alike, when both references are among the methods).

Everything lives in one storage: a finished study is read back (a second run does no search), and
a summary study ``benchmark/<settings>`` holds the table (user attributes, a note) and the rank plot
(``optuna_dashboard.save_plotly_graph_object``), shown by optuna-dashboard. The fixed transforms'
scores are kept as ``compare`` keeps them (a study ``<dataset>/<classifier>/fixed/<tags>``).

Data sets by name (all but sonar work offline):

- ``breast_cancer``, ``iris``, ``wine`` (scikit-learn), ``sonar`` (OpenML):
  :func:`optuna_boxcox.datasets.load_dataset`;
- ``digits``: scikit-learn's ``load_digits`` (1,797 images of 8 × 8 pixels, 10 classes) with each
  image summed over 2 × 2 pixel blocks: 16 features ``block<r><c>`` instead of 64, of which many
  are constant;
- ``gaussian_quantiles``, ``moons``, ``blobs``, ``random``: the paper's Figure 1 sets (1,000 × 2,
  binary, seed 1; ``random`` is ``make_classification``), ``moons:7`` for another seed;
- ``csv:path/to/file.csv``: a CSV with a header row and the class in column ``label`` (default
  ``y``), named after the file; ``csv:path/to/folder`` is every ``.csv`` file in the folder;
- ``dev-a``, ``dev-b``, ``dev``: the 25 development sets in two fixed halves
  (:data:`~optuna_boxcox.experiments._benchmark_data.HALVES`), so that a change is designed on one
  and confirmed on the other, never tuned to all 25. Design half ``dev-a`` (13):
  abalone9-18, breast_cancer, cm1, digits, hepatitis, iris, kc1, magic, optdigits,
  page-blocks-1-3-vs-4, penbased, ring, saheart. Confirm half ``dev-b`` (12): movement_libras, pc1,
  satimage, segment, shuttle-c0-vs-c4, sonar, spambase, texture, titanic, twonorm, wine,
  winequality-red-4. ``dev`` is both. ``dev2`` is the second folder's 39 tables
  (:data:`~optuna_boxcox.experiments._benchmark_data.DEV2`: KEEL and R packages' data, like users'
  own), ``dev-all`` all 64; over both folders the report adds the paired differences and loss
  rates of each folder. breast_cancer, digits, iris and wine come with scikit-learn;
  the others are CSV files (class column ``y``) in a folder the caller names with ``data_dir``
  (``--data-dir``), read as ``DIR/NAME.csv``, ``DIR/dev/NAME.csv`` or ``DIR/dev2/NAME.csv`` (the package never looks
  for them by itself; every missing file is named in one error). With ``data_dir`` any name
  that is not in the package is read that way. When the data sets are exactly a half, the table's
  first line and the summary study's name say which.

A data set of more than ``max_rows`` rows (default 1,500) is replaced by a stratified, seeded
sample of that many (:func:`subsample`; its name gets ``-r<N>``), so that a benchmark over the
large development sets stays within hours: a search's cost grows with rows × features.

Budget: by default each paper sampler runs its whole plan (the coordinate search: E·p·L trials,
p features) and each of Optuna's samplers gets as many trials as the coordinate search's plan on
that data set; the table lists the trials per search.

Example::

    from optuna_boxcox.experiments.benchmark import benchmark, format_benchmark
    result = benchmark(["iris", "wine", "moons"], ["knn", "bayes"], n_trials=50)
    print(format_benchmark(result))
    # the design half, outer stratified 5-fold, against all ten fixed transforms
    result = benchmark(["dev-a"], ["logistic"], ["guarded"], data_dir="path/to/data",
                       outer_cv="1x5")
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from scipy import stats

from optuna_boxcox._lifecycle._guard import search_sampler
from optuna_boxcox._lifecycle._open import open_study
from optuna_boxcox.classifiers import ALL_CLASSIFIERS
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.experiments._benchmark_data import DEFAULT_MAX_ROWS
from optuna_boxcox.experiments._benchmark_data import DEV_A
from optuna_boxcox.experiments._benchmark_data import DEV_B
from optuna_boxcox.experiments._benchmark_data import HALF_ROLES
from optuna_boxcox.experiments._benchmark_data import HALVES
from optuna_boxcox.experiments._benchmark_data import NAMED_DATASETS
from optuna_boxcox.experiments._benchmark_data import SUBSAMPLE_SEED
from optuna_boxcox.experiments._benchmark_data import expand_datasets
from optuna_boxcox.experiments._benchmark_data import folder_of
from optuna_boxcox.experiments._benchmark_data import half_of
from optuna_boxcox.experiments._benchmark_data import load_benchmark_data
from optuna_boxcox.experiments._benchmark_data import resolve_name
from optuna_boxcox.experiments._benchmark_data import subsample
from optuna_boxcox.experiments._peers import PEER_TRANSFORMS
from optuna_boxcox.experiments._peers import MissingPeerError
from optuna_boxcox.experiments._peers import available_peers
from optuna_boxcox.experiments._peers import require_peers
from optuna_boxcox.experiments._problems import ALL_TRANSFORMS
from optuna_boxcox.experiments._problems import outer_tag
from optuna_boxcox.experiments.compare import FIXED_TRANSFORMS
from optuna_boxcox.experiments.compare import Problem
from optuna_boxcox.experiments.compare import RunSettings
from optuna_boxcox.experiments.compare import held_out_metric
from optuna_boxcox.experiments.compare import outer_splits
from optuna_boxcox.experiments.compare import parse_outer_cv
from optuna_boxcox.experiments.compare import run_problems
from optuna_boxcox.experiments.compare import text_table
from optuna_boxcox.figures import attach_figures
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import DEFAULT_STORAGE
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from collections.abc import Sequence

    import plotly.graph_objects as go

#: Study user attribute of the summary study: the settings, the scores, the ranks, the p-values.
SUMMARY_ATTR = "benchmark"
#: Graph id of the rank plot in the summary study, and the file name of its HTML and PNG.
RANK_PLOT = "benchmark-ranks"
#: The loss rate's references: a user's fixed one-line transforms a search must not fall behind.
LOSS_REFERENCES = ("standard", "box-cox")
#: A method loses on a data set when it scores more than this below the better reference (one
#: point of accuracy).
LOSS_MARGIN = 0.01


@dataclass
class BenchmarkResult:
    """What :func:`benchmark` found.

    ``scores[(dataset, classifier, method)]`` is the mean held-out score over the folds (the folds'
    own in ``fold_scores``); ``ranks[classifier][method]`` the average rank (and ``ranks["all"]``
    over every pair); ``best_fixed[classifier]`` the reference of ``p_values[classifier][method]``
    (None for the reference itself, or without a fixed transform); ``winner[classifier]`` the method
    of lowest average rank; ``loss_rates[classifier][method]`` the share of data sets where the
    method scores more than :data:`LOSS_MARGIN` below the better of :data:`LOSS_REFERENCES`
    (:func:`loss_rates`; empty when a reference is not among the methods).
    ``hindsight_best[classifier]`` is the fixed method of highest mean score over the data sets
    (the best a user could have picked knowing the results) and
    ``differences[classifier][method]`` each method's paired mean score minus its
    (:func:`paired_differences`): among near-ties an average rank is noise, this is not.
    ``trials[(dataset, sampler)]`` is the trials of each of its searches
    (the most of any fold). ``fit_seconds[(dataset, classifier, method)]`` is the median over the
    folds of a method's fit as a user pays it (a fixed transform's pipeline; a sampler's search,
    gate and final fit; NaN where a study read back did not record it), and
    ``price[classifier][method]`` the median over the data sets of its ratio to
    :data:`PRICE_REFERENCE`'s (:func:`price_ratios`): measured, so it varies with the machine's
    load, and it decides nothing.
    """

    datasets: list[str]
    classifiers: list[str]
    methods: list[str]
    fixed: list[str]
    metric: str
    protocol: str
    scores: dict[tuple[str, str, str], float] = field(default_factory=dict)
    fold_scores: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    trials: dict[tuple[str, str], int] = field(default_factory=dict)
    winner: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, dict[str, float]] = field(default_factory=dict)
    best_fixed: dict[str, str | None] = field(default_factory=dict)
    p_values: dict[str, dict[str, float | None]] = field(default_factory=dict)
    loss_rates: dict[str, dict[str, float]] = field(default_factory=dict)
    hindsight_best: dict[str, str | None] = field(default_factory=dict)
    differences: dict[str, dict[str, float]] = field(default_factory=dict)
    fit_seconds: dict[tuple[str, str, str], float] = field(default_factory=dict)
    price: dict[str, dict[str, float]] = field(default_factory=dict)
    studies_run: int = 0
    studies_read: int = 0
    studies_fixed: int = 0  # splits on which the fixed transforms were scored or read back
    wall_seconds: float = 0.0
    summary_study: str = ""
    half: str | None = None  # the HALVES key when the data sets are exactly one of them
    figure: go.Figure | None = None

    def score_table(self, classifier: str) -> np.ndarray:
        """Scores as a (data sets × methods) array for one classifier."""
        return np.array(
            [[self.scores[(d, classifier, m)] for m in self.methods] for d in self.datasets]
        )


def default_transforms() -> list[str]:
    """The fixed methods a benchmark scores when none are named: every one of
    :data:`~optuna_boxcox.experiments.compare.FIXED_TRANSFORMS` and every peer that can be built
    here (all ten with the extra ``peers`` installed; skew-rule needs no extra)."""
    return [*FIXED_TRANSFORMS, *available_peers()]


def average_ranks(table: np.ndarray) -> np.ndarray:
    """Mean over rows (data sets) of each column's (method's) rank within the row: 1 = the highest
    score, ties share the mean of the ranks they span."""
    table = np.atleast_2d(np.asarray(table, dtype=float))
    return np.mean([stats.rankdata(-row, method="average") for row in table], axis=0)


def loss_rates(table: np.ndarray, methods: Sequence[str]) -> dict[str, float]:
    """Per method, the share of rows (data sets) where it scores more than :data:`LOSS_MARGIN`
    below the better of the :data:`LOSS_REFERENCES` on that row; {} without both references.

    Average ranks say who wins most often; the loss rate says how often a user following the
    method would have done clearly worse than a fixed one-line transform.
    """
    if not all(r in methods for r in LOSS_REFERENCES):
        return {}
    columns = list(methods)
    reference = np.max(table[:, [columns.index(r) for r in LOSS_REFERENCES]], axis=1)
    # A small tolerance: "more than one point" must not flip on the last bit of a float.
    lost = table < reference[:, None] - LOSS_MARGIN - 1e-12
    return dict(zip(columns, (float(v) for v in lost.mean(axis=0))))


def paired_differences(
    table: np.ndarray, methods: Sequence[str], fixed: Sequence[str]
) -> tuple[str | None, dict[str, float]]:
    """The fixed method of highest mean over the rows (data sets), chosen in hindsight, and each
    method's mean over the rows of its score minus that method's; (None, {}) without a fixed
    method. The first fixed method in ``fixed``'s order wins a tie of means."""
    columns = list(methods)
    candidates = [m for m in fixed if m in columns]
    if not candidates:
        return None, {}
    means = table.mean(axis=0)
    best = max(candidates, key=lambda m: (means[columns.index(m)], -candidates.index(m)))
    reference = table[:, columns.index(best)]
    return best, {m: float(np.mean(table[:, j] - reference)) for j, m in enumerate(columns)}


#: The method whose fit time the others' are given as multiples of: StandardScaler then the
#: classifier, what a user fits without this package.
PRICE_REFERENCE = "standard"


def price_ratios(seconds: np.ndarray, methods: Sequence[str]) -> dict[str, float]:
    """Per method, the median over the data sets (rows of ``seconds``) of its fit seconds over
    :data:`PRICE_REFERENCE`'s on the same set; empty without the reference; NaN where no set has
    both."""
    if PRICE_REFERENCE not in methods:
        return {}
    reference = seconds[:, list(methods).index(PRICE_REFERENCE)]
    ratios = {}
    for j, method in enumerate(methods):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = seconds[:, j] / reference
        ratio = ratio[np.isfinite(ratio)]
        ratios[method] = float(np.median(ratio)) if len(ratio) else float("nan")
    return ratios


def wilcoxon_p(scores: Sequence[float], reference: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired scores against a reference's; 1 when
    every pair is equal (see the module's notes on zero differences)."""
    differences = np.subtract(scores, reference)
    if np.all(differences == 0):
        return 1.0
    return float(stats.wilcoxon(scores, reference, zero_method="zsplit").pvalue)


def benchmark(
    datasets: Sequence[str],
    classifiers: Sequence[str],
    samplers: Sequence[str] = ("coordinate", "tpe"),
    transforms: Sequence[str] | None = None,
    *,
    label: str = "y",
    data_dir: str | Any | None = None,
    features: int | None = None,
    max_rows: int | None = DEFAULT_MAX_ROWS,
    n_trials: int | None = None,
    scoring: str = "accuracy",
    cv: int | None = None,
    outer_cv: str | None = "5x2",
    test_size: float | None = None,
    seed: int = 0,
    storage: str | Any = DEFAULT_STORAGE,
    n_jobs: int = 1,
    progress: bool = False,
) -> BenchmarkResult:
    """Run (or read back) every (data set, classifier, sampler, fold) study, score every method on
    held-out data, rank the methods per classifier and test them against the best fixed transform.

    Args:
        datasets: Data set names, ``csv:<path>``, ``csv:<folder>`` (every CSV in it) or a half of
            the development sets (``dev-a``, ``dev-b``, ``dev``, ``dev2``, ``dev-all``; see the module's list); at least
            two.
        classifiers: The paper's classifiers by name (``linear``, ``knn``, ``bayes``, ``svc``,
            ``nn``).
        samplers: Registry names of the searches (:func:`~optuna_boxcox.make_sampler`).
        transforms: Keys of the fixed methods,
            :data:`~optuna_boxcox.experiments.compare.FIXED_TRANSFORMS` and the peers
            (``kdi``, ``squashing``, ``skew-rule``); default :func:`default_transforms`. A peer
            asked for whose library is missing raises
            :class:`MissingPeerError` before anything runs.
        label: The class column of the ``csv:`` data sets.
        data_dir: The folder of the development sets' CSV files: a name that is not in the
            package (nor ``csv:``) is read from ``data_dir/NAME.csv``, ``data_dir/dev/NAME.csv`` or
            ``data_dir/dev2/NAME.csv``.
        features: Use only the first N features of every data set (quick runs).
        max_rows: A larger data set is replaced by a stratified sample of this many rows
            (:func:`subsample`); None keeps every row.
        n_trials: Trials per study. By default every paper sampler runs its whole plan and every
            Optuna sampler gets as many trials as the coordinate search's plan on that data set
            (E·p·L); given, every sampler gets this budget and a longer plan stops there.
        scoring, cv: The searches' score (see :class:`~optuna_boxcox.BoxCoxObjective`); held-out
            scores use the same metric (accuracy for a classifier-free criterion).
        outer_cv: Repeated stratified k-fold as ``"RxK"`` (default ``"5x2"``); ignored when
            ``test_size`` is given.
        test_size: One seeded stratified holdout of this fraction instead.
        seed: The samplers' seed.
        storage: Where the studies live (URL).
        n_jobs: Studies run at once, each in a process of its own (-1: one per CPU).
        progress: Show progress over the studies, with the time left.
    """
    started = time.perf_counter()
    fixed = default_transforms() if transforms is None else list(transforms)
    unknown = [t for t in fixed if t not in ALL_TRANSFORMS]
    if unknown:
        raise ValueError(
            f"unknown fixed transform(s) {unknown}; choose from {list(ALL_TRANSFORMS)}"
        )
    require_peers(fixed)
    for name in classifiers:
        if name not in ALL_CLASSIFIERS:
            raise ValueError(
                f"unknown classifier {name!r}; choose one of {', '.join(ALL_CLASSIFIERS)}"
            )
    for name in samplers:
        make_sampler(search_sampler(name))  # an unknown name fails here, before any study
    if test_size:
        outer_cv = None
    elif outer_cv is None:
        raise ValueError("a benchmark needs held-out scores: give outer_cv or test_size")
    if n_jobs == 1 and not hasattr(storage, "get_all_trials"):
        storage = open_storage(storage)  # once, for the studies and the summary
    datasets = expand_datasets(datasets, data_dir)
    half = half_of(datasets)
    if len(datasets) < 2:
        raise ValueError("a benchmark ranks methods across data sets: give at least two")
    loaded = [
        load_benchmark_data(spec, label=label, features=features, max_rows=max_rows)
        for spec in datasets
    ]
    names = [name for name, _, _ in loaded]
    if len(set(names)) != len(names):
        raise ValueError(f"data sets named twice: {names}")
    problems = [
        Problem(
            name,
            classifier,
            X,
            y,
            make_classifier(classifier),
            outer_splits(y, outer_cv=outer_cv, test_size=test_size),
        )
        for name, X, y in loaded
        for classifier in classifiers
    ]
    settings = RunSettings(
        samplers=tuple(samplers),
        seeds=(seed,),
        transforms=tuple(fixed),
        n_trials=n_trials,
        scoring=scoring,
        cv=cv,
        test_size=test_size,
        outer_cv=outer_cv,
        storage=storage,
        n_jobs=n_jobs,
        progress=progress,
        progress_label="benchmark",
    )
    found = run_problems(problems, settings)
    result = BenchmarkResult(
        datasets=names,
        classifiers=list(classifiers),
        methods=[*fixed, *samplers],
        fixed=fixed,
        metric=held_out_metric(scoring)[0],
        protocol=_protocol(outer_cv, test_size),
        half=half,
    )
    for p, problem in enumerate(problems):
        splits = range(len(problem.splits))
        result.studies_fixed += len(splits)  # the fixed transforms scored on each split
        for key in fixed:
            scored = [found[("fixed", p, s)][key] for s in splits]
            result.fold_scores[(problem.dataset, problem.classifier, key)] = [
                score.held_out for score in scored
            ]
            result.fit_seconds[(problem.dataset, problem.classifier, key)] = _median(
                [score.fit_seconds for score in scored]
            )
        for sampler in samplers:
            summaries = [found[("search", p, s, sampler, seed)] for s in splits]
            folds = [summary["held_out"] for summary in summaries]
            result.fold_scores[(problem.dataset, problem.classifier, sampler)] = folds
            result.trials[(problem.dataset, sampler)] = max(s["trials"] for s in summaries)
            result.fit_seconds[(problem.dataset, problem.classifier, sampler)] = _median(
                [summary["fit_seconds"] for summary in summaries]
            )
            result.studies_run += sum(summary["ran"] for summary in summaries)
            result.studies_read += sum(not summary["ran"] for summary in summaries)
    result.scores = {key: float(np.mean(folds)) for key, folds in result.fold_scores.items()}
    _rank_and_test(result)
    result.figure = rank_figure(result)
    result.summary_study = _save_summary(
        result,
        storage,
        tags=[
            *([half] if half else []),
            str(scoring),
            *([f"cv{cv}"] if cv else []),
            f"test{test_size:g}" if test_size else outer_tag(outer_cv),
            *([f"n{n_trials}"] if n_trials else []),
            f"seed{seed}",
            *([f"f{features}"] if features else []),
        ],
    )
    result.wall_seconds = time.perf_counter() - started
    return result


def _median(values: Sequence[float]) -> float:
    """The median of the finite values (NaN when none is)."""
    finite = [v for v in values if np.isfinite(v)]
    return float(np.median(finite)) if finite else float("nan")


def _protocol(outer_cv: str | None, test_size: float | None) -> str:
    """How held-out scores were made, in words for the table and the plot."""
    if test_size:
        return f"one stratified holdout of {test_size:g} (random_state 0)"
    repeats, folds = parse_outer_cv(outer_cv)
    return (
        f"mean over the {repeats * folds} folds of {repeats}×{folds} stratified CV "
        "(random_state 0)"
    )


def _rank_and_test(result: BenchmarkResult) -> None:
    """Average ranks per classifier and over all pairs; p-values against the best fixed one."""
    tables = {c: result.score_table(c) for c in result.classifiers}
    for classifier, table in tables.items():
        result.ranks[classifier] = dict(zip(result.methods, average_ranks(table)))
    result.ranks["all"] = dict(
        zip(result.methods, average_ranks(np.vstack(list(tables.values()))))
    )
    for classifier, table in tables.items():
        ranks = result.ranks[classifier]
        means = dict(zip(result.methods, table.mean(axis=0)))
        result.winner[classifier] = min(result.methods, key=lambda m: (ranks[m], -means[m]))
        best = min(result.fixed, key=lambda m: (ranks[m], -means[m]), default=None)
        result.best_fixed[classifier] = best
        column = {m: table[:, j] for j, m in enumerate(result.methods)}
        result.p_values[classifier] = {
            m: None if best is None or m == best else wilcoxon_p(column[m], column[best])
            for m in result.methods
        }
        result.loss_rates[classifier] = loss_rates(table, result.methods)
        best, differences = paired_differences(table, result.methods, result.fixed)
        result.hindsight_best[classifier], result.differences[classifier] = best, differences
        seconds = np.array(
            [
                [result.fit_seconds.get((d, classifier, m), np.nan) for m in result.methods]
                for d in result.datasets
            ]
        )
        result.price[classifier] = price_ratios(seconds, result.methods)


def rank_figure(result: BenchmarkResult) -> go.Figure:
    """Average rank of every method (x, best overall on the left) per classifier (one colour each,
    ``all`` as black diamonds) on the scale of all ranks, 1 at the top. Hovering a point shows its
    p-value against the classifier's best fixed transform."""
    import plotly.graph_objects as go

    order = sorted(result.methods, key=lambda m: result.ranks["all"][m])
    figure = go.Figure()
    for classifier in [*result.classifiers, "all"]:
        ranks = result.ranks[classifier]
        p_values = result.p_values.get(classifier, {})
        best = result.best_fixed.get(classifier)
        hover = [
            f"{classifier}: {m} average rank {ranks[m]:.2f}"
            + (
                f"<br>Wilcoxon p vs {best}: {p_values[m]:.3f}"
                if p_values.get(m) is not None
                else ("<br>best fixed transform" if m == best else "")
            )
            for m in order
        ]
        figure.add_trace(
            go.Scatter(
                x=order,
                y=[ranks[m] for m in order],
                mode="markers",
                name=classifier if classifier != "all" else "all classifiers",
                text=hover,
                hoverinfo="text",
                marker=(
                    {"size": 14, "color": "black", "symbol": "diamond"}
                    if classifier == "all"
                    else {"size": 10, "opacity": 0.85}
                ),
            )
        )
    figure.update_layout(
        title={
            "text": f"Average rank over {len(result.datasets)} data sets"
            + (f" ({result.half})" if result.half else "")
            + " (1 = best)<br>"
            f"<sup>held-out {result.metric}, {result.protocol}</sup>"
        },
        xaxis_title="method",
        yaxis_title="average rank",
        yaxis={"range": [len(order) + 0.5, 0.5], "dtick": 1},
        template="plotly_white",
    )
    return figure


def _save_summary(result: BenchmarkResult, storage: Any, tags: Sequence[str]) -> str:
    """The summary study: the table as user attributes and a note, the rank plot as a graph."""
    name = "benchmark/" + "-".join(tags)
    store = storage if hasattr(storage, "get_all_trials") else open_storage(storage)
    study = open_study(store, name)
    study.set_user_attr(
        SUMMARY_ATTR,
        {
            "datasets": result.datasets,
            "classifiers": result.classifiers,
            "methods": result.methods,
            "metric": result.metric,
            "protocol": result.protocol,
            "half": result.half,
            "held_out": {
                c: {
                    d: {m: result.scores[(d, c, m)] for m in result.methods}
                    for d in result.datasets
                }
                for c in result.classifiers
            },
            "average_ranks": result.ranks,
            "best_fixed": result.best_fixed,
            "winner": result.winner,
            "trials": {f"{d}/{m}": n for (d, m), n in result.trials.items()},
            "wilcoxon_p": result.p_values,
            "loss_rates": result.loss_rates,
            "hindsight_best": result.hindsight_best,
            "paired_differences": result.differences,
            "fit_time_multiple": result.price,
        },
    )
    note = f"# Benchmark\n\n```\n{format_benchmark(result)}\n```\n"
    attach_figures(study, {RANK_PLOT: result.figure}, note)
    return name


def format_benchmark(result: BenchmarkResult) -> str:
    """The held-out scores, the average ranks and the Wilcoxon p-values as text tables."""
    methods = result.methods
    scores = [
        [d, c, *(f"{result.scores[(d, c, m)]:.4f}" for m in methods)]
        for c in result.classifiers
        for d in result.datasets
    ]
    ranks = [
        [c, *(f"{result.ranks[c][m]:.2f}" for m in methods)] for c in [*result.classifiers, "all"]
    ]
    p_values = [
        [
            c,
            result.winner[c],
            result.best_fixed[c] or "—",
            *(
                "—" if result.p_values[c][m] is None else f"{result.p_values[c][m]:.3f}"
                for m in methods
            ),
        ]
        for c in result.classifiers
    ]
    n = len(result.datasets)
    losses = [
        [c, *(f"{100 * result.loss_rates[c][m]:.0f} %" for m in methods)]
        for c in result.classifiers
        if result.loss_rates.get(c)
    ]
    differences = [
        [
            c,
            result.hindsight_best[c],
            *(f"{100 * result.differences[c][m]:+.2f}" for m in methods),
        ]
        for c in result.classifiers
        if result.hindsight_best.get(c)
    ]
    prices = [
        [
            c,
            *(
                "—" if np.isnan(result.price[c][m]) else f"{result.price[c][m]:.1f}×"
                for m in methods
            ),
        ]
        for c in result.classifiers
        if any(np.isfinite(v) for v in result.price.get(c, {}).values())
    ]
    samplers = [m for m in methods if m not in result.fixed]
    budget = [
        [d, *(str(result.trials[(d, m)]) for m in samplers)] for d in result.datasets if samplers
    ]
    peers = [m for m in result.fixed if m in PEER_TRANSFORMS]
    return "\n".join(
        [
            *(
                [f"data sets: {result.half} ({HALF_ROLES[result.half]}, {n} sets)"]
                if result.half
                else []
            ),
            f"held-out {result.metric}, {result.protocol}",
            *text_table(["data set", "classifier", *methods], scores),
            *(
                [
                    "",
                    "trials per search (one search per data set × classifier × outer fold)",
                    *text_table(["data set", *samplers], budget),
                ]
                if samplers
                else []
            ),
            "",
            f"average rank over {n} data sets (1 = best, ties share their mean rank)",
            *text_table(["classifier", *methods], ranks),
            "",
            f"Wilcoxon signed-rank p (two-sided, zero_method='zsplit', {n} data sets) of each "
            f"method against the best other method: the fixed method of lowest average rank "
            f"among the {len(result.fixed)}"
            + (f" (peers {', '.join(peers)} included)" if peers else ""),
            *text_table(["classifier", "winner", "best fixed", *methods], p_values),
            *(
                [
                    "",
                    f"loss rate: share of the {n} data sets where a method is more than "
                    f"{100 * LOSS_MARGIN:g} point below the better of "
                    f"{' and '.join(LOSS_REFERENCES)}",
                    *text_table(["classifier", *methods], losses),
                ]
                if losses
                else []
            ),
            *(
                [
                    "",
                    f"paired mean difference in points from the best fixed method in hindsight "
                    f"(the fixed method of highest mean {result.metric} over the {n} data sets)",
                    *text_table(["classifier", "best in hindsight", *methods], differences),
                ]
                if differences
                else []
            ),
            *_per_folder(result),
            *(
                [
                    "",
                    f"fit time as a multiple of the {PRICE_REFERENCE} pipeline's (median over the "
                    f"{n} data sets of each set's median fold; measured, not a fixed figure)",
                    *text_table(["classifier", *methods], prices),
                ]
                if prices
                else []
            ),
        ]
    )


def _per_folder(result: BenchmarkResult) -> list[str]:
    """Lines of the paired difference from each folder's own best fixed method in hindsight and
    of the loss rate, per classifier and development folder, when the data sets span more than
    one folder (``dev-all``): a rule must hold on each, not only on all of them together."""
    folders: dict[str, list[int]] = {}
    for i, dataset in enumerate(result.datasets):
        folder = folder_of(dataset)
        if folder is not None:
            folders.setdefault(folder, []).append(i)
    if len(folders) < 2:
        return []
    methods = result.methods
    differences, losses = [], []
    for c in result.classifiers:
        table = result.score_table(c)
        for folder, rows in folders.items():
            best, diff = paired_differences(table[rows], methods, result.fixed)
            if best is not None:
                label = f"{folder} ({len(rows)})"
                differences.append([c, label, best, *(f"{100 * diff[m]:+.2f}" for m in methods)])
            rates = loss_rates(table[rows], methods)
            if rates:
                losses.append(
                    [c, f"{folder} ({len(rows)})", *(f"{100 * rates[m]:.0f} %" for m in methods)]
                )
    lines = []
    if differences:
        lines += [
            "",
            "per folder: paired mean difference in points from the folder's best fixed method in "
            "hindsight",
            *text_table(
                ["classifier", "folder (sets)", "best in hindsight", *methods], differences
            ),
        ]
    if losses:
        lines += [
            "",
            f"per folder: loss rate (more than {100 * LOSS_MARGIN:g} point below the better of "
            f"{' and '.join(LOSS_REFERENCES)})",
            *text_table(["classifier", "folder (sets)", *methods], losses),
        ]
    return lines


__all__ = [
    "DEFAULT_MAX_ROWS",
    "DEV_A",
    "DEV_B",
    "HALVES",
    "NAMED_DATASETS",
    "PRICE_REFERENCE",
    "SUBSAMPLE_SEED",
    "BenchmarkResult",
    "MissingPeerError",
    "average_ranks",
    "benchmark",
    "default_transforms",
    "expand_datasets",
    "format_benchmark",
    "load_benchmark_data",
    "loss_rates",
    "paired_differences",
    "price_ratios",
    "rank_figure",
    "resolve_name",
    "subsample",
    "wilcoxon_p",
]
