"""Does the default win on data it never saw? Held-out accuracy of candidate defaults, per data set.

For each data set (at most ``max_rows`` rows, the benchmark's stratified sample), classifier and
outer stratified 5-fold split (shuffled, seed 0), on the training folds only:

- the seven fixed transforms of :data:`~optuna_boxcox.experiments.compare.FIXED_TRANSFORMS`, each fitted with
  the classifier and scored on the test fold;
- the paper's search, ``BoxCoxClassifier(clf, sampler="coordinate")`` (the default before the
  guarded one: coordinate search, resubstitution accuracy), its searched Λ, its whole fit time;
- the anchors: the per-feature MLE Λ (the search's start point) and Λ = 1 (StandardScaler after
  the [1, 2] scaling), each with its held-out accuracy;
- for each of the three Λ (searched, MLE, ones) the per-row correctness of inner repeated
  stratified cross-validation on the training folds (:data:`INNER_SPLITS` × :data:`INNER_REPEATS`),
  so that any rule choosing among them — a margin of one paired standard error, the better anchor —
  is evaluated afterwards without fitting again (:func:`policies`).

Every (data set, classifier, fold) is one JSON line of ``results``: a run resumes where it stopped.
The table gives, per classifier, each method's average rank over the data sets finished for it
(1 = best; ties share the mean rank) and its loss rate: the share of data sets where it is more
than one point below the better of StandardScaler and per-feature MLE.

Run (one process)::

    python -m optuna_boxcox.bench.guard results.jsonl csv:/path/dev knn,svc,bayes,linear
"""

from __future__ import annotations

import json
from pathlib import Path
import sys
import time
from typing import Any
import warnings

import numpy as np

#: Inner folds scoring the three candidate Λ on the training part.
INNER_SPLITS = 5
INNER_REPEATS = 2
OUTER_SPLITS = 5


def _held_out(clf: Any, transform: Any, X_train, y_train, X_test, y_test) -> float:
    from sklearn.base import clone

    t = clone(transform).fit(X_train)
    model = clone(clf).fit(t.transform(X_train), y_train)
    return float(np.mean(model.predict(t.transform(X_test)) == y_test))


def _inner_correct(clf: Any, transform: Any, X: np.ndarray, y: np.ndarray) -> list[list[int]]:
    """Per repeat and row, 1 if the row was predicted right out of fold; ``transform`` is a Λ
    (a :class:`~optuna_boxcox.BoxCoxTransformer` with it) or a transformer."""
    from sklearn.model_selection import RepeatedStratifiedKFold

    from optuna_boxcox import BoxCoxTransformer

    if isinstance(transform, np.ndarray):
        transform = BoxCoxTransformer(lambdas=transform)
    correct = np.zeros((INNER_REPEATS, len(y)), dtype=int)
    splits = RepeatedStratifiedKFold(
        n_splits=INNER_SPLITS, n_repeats=INNER_REPEATS, random_state=0
    ).split(X, y)
    for i, (train, test) in enumerate(splits):
        predicted = _predict(clf, transform, X[train], y[train], X[test])
        correct[i // INNER_SPLITS, test] = np.asarray(predicted) == y[test]
    return correct.tolist()


def _inner_folds(y: np.ndarray) -> list[list[int]]:
    """Per repeat and row, the inner fold that held the row out."""
    from sklearn.model_selection import RepeatedStratifiedKFold

    folds = np.zeros((INNER_REPEATS, len(y)), dtype=int)
    splits = RepeatedStratifiedKFold(
        n_splits=INNER_SPLITS, n_repeats=INNER_REPEATS, random_state=0
    ).split(np.zeros(len(y)), y)
    for i, (_, test) in enumerate(splits):
        folds[i // INNER_SPLITS, test] = i % INNER_SPLITS
    return folds.tolist()


def _predict(clf, transform, X_train, y_train, X_test):
    from sklearn.base import clone

    t = clone(transform).fit(X_train)
    return clone(clf).fit(t.transform(X_train), y_train).predict(t.transform(X_test))


#: The fixed and peer transforms a selection rule may choose, scored by inner CV too (raw data
#: rarely ranks first and Box-Cox's MLE is the ``mle`` anchor).
INNER_FIXED = ("quantile", "yeo-johnson", "kdi", "squashing", "minmax", "maxabs", "standard")
#: The Λ also measured range-scaled: Box-Cox with the Λ, then MinMax to [0, 1] (``<name>_mm``;
#: with Λ = 1 that is MinMaxScaler exactly), the scaling k-NN's distances and the MLP may favour.
RANGE_SCALED = ("searched", "mle", "skew")
#: Peers' transforms a user would pick instead (optional libraries), beside the fixed ones.
PEERS = ("kdi", "squashing")


def skew_lambdas(X: np.ndarray) -> np.ndarray:
    """TabPFN's skew rule as a Λ: the per-feature MLE where |skew| > 0.5, else 1 (standard)."""
    from scipy.stats import skew

    from optuna_boxcox import BoxCoxTransformer

    mle = BoxCoxTransformer(lambdas="mle").fit(X).lambdas_
    with np.errstate(all="ignore"):
        skewed = np.abs(np.nan_to_num(skew(X, axis=0))) > 0.5
    return np.where(skewed, mle, 1.0)


def _all_fixed(n: int) -> dict[str, Any]:
    from optuna_boxcox.experiments.compare import FIXED_TRANSFORMS
    from optuna_boxcox.experiments.compare import fixed_transform

    # The skew rule is a Λ here (``skew``), scored and selectable like the other anchors.
    return {key: fixed_transform(key, n) for key in [*FIXED_TRANSFORMS, *PEERS]}


def measure_one(name: str, X: np.ndarray, y: np.ndarray, classifier: str, fold: int) -> dict:
    from sklearn.model_selection import StratifiedKFold

    from optuna_boxcox import BoxCoxClassifier
    from optuna_boxcox import BoxCoxTransformer
    from optuna_boxcox.classifiers import make_classifier

    train, test = list(StratifiedKFold(OUTER_SPLITS, shuffle=True, random_state=0).split(X, y))[
        fold
    ]
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    clf = make_classifier(classifier)
    record: dict[str, Any] = {"dataset": name, "classifier": classifier, "fold": fold}
    fixed = _all_fixed(len(ytr))
    record["fixed"] = {key: _held_out(clf, t, Xtr, ytr, Xte, yte) for key, t in fixed.items()}
    start = time.perf_counter()
    # Today's default, named: the default itself may be what is measured against it.
    model = BoxCoxClassifier(make_classifier(classifier), sampler="coordinate").fit(Xtr, ytr)
    record["default_seconds"] = time.perf_counter() - start
    record["default_trials"] = len(model.study_.trials)
    record["default_score"] = model.best_score_
    lambdas = {
        "searched": model.lambdas_,
        "mle": BoxCoxTransformer(lambdas="mle").fit(Xtr).lambdas_,
        "ones": np.ones(X.shape[1]),
        "skew": skew_lambdas(Xtr),
    }
    record["lambdas"] = {k: [float(v) for v in lam] for k, lam in lambdas.items()}
    record["held_out"] = {
        k: _held_out(clf, BoxCoxTransformer(lambdas=lam), Xtr, ytr, Xte, yte)
        for k, lam in lambdas.items()
    }
    start = time.perf_counter()
    record["inner"] = {k: _inner_correct(clf, lam, Xtr, ytr) for k, lam in lambdas.items()}
    record["inner_seconds"] = time.perf_counter() - start
    for k in RANGE_SCALED:
        scaled = _range_scaled(lambdas[k])
        record["held_out"][f"{k}_mm"] = _held_out(clf, scaled, Xtr, ytr, Xte, yte)
        record["inner"][f"{k}_mm"] = _inner_correct(clf, scaled, Xtr, ytr)
    record["inner_fixed"] = {k: _inner_correct(clf, fixed[k], Xtr, ytr) for k in INNER_FIXED}
    record["inner_folds"] = _inner_folds(ytr)
    return record


def _range_scaled(lambdas: np.ndarray) -> Any:
    """Box-Cox with ``lambdas`` (no standard scaling), then MinMax to [0, 1]."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler

    from optuna_boxcox import BoxCoxTransformer

    return make_pipeline(BoxCoxTransformer(lambdas=lambdas, standardize=False), MinMaxScaler())


def _loo_correct(lambdas: np.ndarray, X: np.ndarray, y: np.ndarray, k: int = 5) -> list[int]:
    """Per row, 1 if k-NN (uniform votes, ties to the lowest class as scikit-learn) predicts it
    from the other rows: exact leave-one-out, a row is not its own neighbour. The transform is
    fitted on all the rows (it does not see the labels)."""
    from sklearn.neighbors import NearestNeighbors

    from optuna_boxcox import BoxCoxTransformer

    T = BoxCoxTransformer(lambdas=lambdas).fit_transform(X)
    _, indices = NearestNeighbors(n_neighbors=min(k + 1, len(y))).fit(T).kneighbors(T)
    classes, codes = np.unique(y, return_inverse=True)
    correct = []
    for i, row in enumerate(indices):
        others = [j for j in row if j != i][:k]
        votes = np.bincount(codes[others], minlength=len(classes))
        correct.append(int(np.argmax(votes) == codes[i]))
    return correct


def _backfill_loo(path: Path, name: str, X: np.ndarray, y: np.ndarray) -> None:
    """Leave-one-out correctness of the three Λ of every k-NN record of data set ``name``, in the
    side file ``<results>.loo`` (one JSON line per fold)."""
    from sklearn.model_selection import StratifiedKFold

    side = path.with_suffix(path.suffix + ".loo")
    have = set()
    if side.exists():
        have = {(r["dataset"], r["fold"]) for r in map(json.loads, side.read_text().splitlines())}
    splits = list(StratifiedKFold(OUTER_SPLITS, shuffle=True, random_state=0).split(X, y))
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["classifier"] != "knn" or r["dataset"] != name or (name, r["fold"]) in have:
            continue
        train = splits[r["fold"]][0]
        loo = {k: _loo_correct(np.asarray(v), X[train], y[train]) for k, v in r["lambdas"].items()}
        with side.open("a") as f:
            f.write(json.dumps({"dataset": name, "fold": r["fold"], "loo": loo}) + "\n")


def run(
    results: str,
    datasets: list[str],
    classifiers: list[str],
    max_rows: int = 1500,
    data_dir: str | None = None,
) -> None:
    from optuna_boxcox.experiments.benchmark import expand_datasets
    from optuna_boxcox.experiments.benchmark import load_benchmark_data

    path = Path(results)
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["dataset"], r["classifier"], r["fold"]))
    warnings.filterwarnings("ignore")
    # Data set by data set (cheapest first, as listed): every classifier gets the same sets.
    for spec in expand_datasets(datasets, data_dir):
        name, X, y = load_benchmark_data(spec, max_rows=max_rows)
        X = np.asarray(X, dtype=np.float64)
        if "knn" in classifiers and path.exists():
            _backfill_loo(path, name, X, y)
        for classifier in classifiers:
            for fold in range(OUTER_SPLITS):
                if (name, classifier, fold) in done:
                    continue
                record = measure_one(name, X, y, classifier, fold)
                with path.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                if classifier == "knn" and fold == OUTER_SPLITS - 1:
                    _backfill_loo(path, name, X, y)
                print(
                    name,
                    classifier,
                    fold,
                    f"{record['default_seconds']:.1f}s",
                    {k: round(v, 3) for k, v in record["held_out"].items()},
                    flush=True,
                )


def _fold_scores(record: dict) -> dict[str, np.ndarray]:
    """Per candidate, the accuracy of each inner fold of each repeat (folds × repeats values)."""
    folds = np.asarray(record["inner_folds"])
    out = {}
    for name, correct in record["inner"].items():
        c = np.asarray(correct, dtype=float)
        out[name] = np.array(
            [c[r, folds[r] == f].mean() for r in range(len(c)) for f in range(INNER_SPLITS)]
        )
    return out


def guarded_choice(record: dict, margin: float = 1.0, rule: str = "folds") -> str:
    """Which Λ a rule picks: the better anchor by inner CV (MLE on a tie), then the searched Λ
    only if it beats that anchor by more than ``margin`` standard errors — of the per-fold
    differences with Nadeau & Bengio's correction (``folds``), of the per-row differences
    (``rows``), or none (``anchor``: the better anchor always)."""
    if rule == "rows":
        c = {k: np.asarray(v, dtype=float).mean(axis=0) for k, v in record["inner"].items()}
    else:
        c = _fold_scores(record)
    if rule == "trust":
        # The search's own score is trusted unless it flatters: its resubstitution score above
        # the cross-validated score of the same Λ by more than `margin` corrected SE.
        s = c["searched"]
        se = np.sqrt((1 / len(s) + 1 / (INNER_SPLITS - 1)) * np.var(s, ddof=1))
        if record["default_score"] - s.mean() <= margin * se:
            return "searched"
    anchor = "ones" if c["ones"].mean() > c["mle"].mean() else "mle"
    if rule == "anchor":
        return anchor
    d = c["searched"] - c[anchor]
    if rule == "rows":
        se = np.std(d, ddof=1) / np.sqrt(len(d))
    else:
        se = np.sqrt((1 / len(d) + 1 / (INNER_SPLITS - 1)) * np.var(d, ddof=1))
    return "searched" if d.mean() > margin * se else anchor


#: Candidate rules measured: name → guarded_choice keywords.
RULES = {
    "gate-folds1": {"margin": 1.0},
    "gate-folds2": {"margin": 2.0},
    "gate-rows1": {"margin": 1.0, "rule": "rows"},
    "cv-best": {"margin": 0.0},
    "trust1": {"margin": 1.0, "rule": "trust"},
    "trust2": {"margin": 2.0, "rule": "trust"},
    "anchor": {"rule": "anchor"},
}


#: Selection rules: the candidate with the best inner-CV accuracy (the first listed on a tie);
#: ``fixed:`` names a fixed or peer transform, the others a Λ.
SELECTIONS = {
    "sel-anchors": ["ones", "mle", "skew"],
    "sel-3": ["ones", "mle", "searched"],
    "sel-4": ["ones", "mle", "skew", "searched"],
    "sel-sk": ["ones", "mle", "skew", "fixed:yeo-johnson", "fixed:quantile", "searched"],
    "sel-peer": ["ones", "mle", "skew", "fixed:kdi", "searched"],
    "sel-all": [
        "ones",
        "mle",
        "skew",
        "fixed:quantile",
        "fixed:yeo-johnson",
        "fixed:kdi",
        "fixed:squashing",
        "searched",
    ],
}
SELECTIONS["sel-all-nos"] = SELECTIONS["sel-all"][:-1]
SELECTIONS["sel-sk-nos"] = SELECTIONS["sel-sk"][:-1]
SELECTIONS["sel-kdi-nos"] = ["ones", "mle", "skew", "fixed:kdi"]
SELECTIONS["sel-os"] = ["ones", "skew", "searched"]
#: Range-scaled anchors (records with ``RANGE_SCALED`` candidates): MinMax, then Box-Cox with the
#: MLE or skew Λ then MinMax, beside the standard-scaled anchors.
SELECTIONS["sel-mm"] = ["ones", "mle", "fixed:minmax", "searched"]
SELECTIONS["sel-mm-family"] = ["ones", "mle", "fixed:minmax", "mle_mm", "skew_mm", "searched"]
SELECTIONS["sel-mm-family-smm"] = [*SELECTIONS["sel-mm-family"][:-1], "searched_mm", "searched"]


def _measured(record: dict, name: str) -> bool:
    if name.startswith("fixed:"):
        return name[6:] in record["inner_fixed"]
    return name in record["inner"]


def _cv_mean(record: dict, name: str) -> float:
    if name.startswith("fixed:"):
        return float(np.mean(record["inner_fixed"][name[6:]]))
    return float(np.mean(record["inner"][name]))


def _held(record: dict, name: str) -> float:
    if name.startswith("fixed:"):
        return record["fixed"][name[6:]]
    return record["held_out"][name]


def select(record: dict, candidates: list[str], margin: float = 0.0) -> str:
    """The candidate with the best inner-CV accuracy; the searched Λ (listed last) only if it beats
    the best other by more than ``margin`` corrected standard errors of the per-fold differences."""
    others = [c for c in candidates if c != "searched"]
    best = max(others, key=lambda c: _cv_mean(record, c))  # first on a tie
    if "searched" not in candidates:
        return best
    if margin == 0.0:
        return "searched" if _cv_mean(record, "searched") > _cv_mean(record, best) else best
    if best.startswith("fixed:"):
        return "searched" if _cv_mean(record, "searched") > _cv_mean(record, best) else best
    c = _fold_scores(record)
    d = c["searched"] - c[best]
    se = np.sqrt((1 / len(d) + 1 / (INNER_SPLITS - 1)) * np.var(d, ddof=1))
    return "searched" if d.mean() > margin * se else best


def policies(record: dict) -> dict[str, float]:
    """Held-out accuracy of each candidate rule on one record."""
    held = record["held_out"]
    out = {"default": held["searched"]}
    if "inner_fixed" in record:
        for name, candidates in SELECTIONS.items():
            if all(_measured(record, c) for c in candidates):  # older records lack some
                out[name] = _held(record, select(record, candidates))
        out["sel-4-gate"] = _held(record, select(record, SELECTIONS["sel-4"], margin=1.0))
        out["sel-sk-gate"] = _held(record, select(record, SELECTIONS["sel-sk"], margin=1.0))
        if "mle_mm" in record["inner"]:
            for name in ("sel-mm", "sel-mm-family", "sel-mm-family-smm"):
                out[f"{name}-gate"] = _held(record, select(record, SELECTIONS[name], margin=1.0))
    for name, kwargs in RULES.items():
        out[name] = held[guarded_choice(record, **kwargs)]
    # The built default (optuna_boxcox._lifecycle._guard.rule_of): k-NN by leave-one-out against
    # Λ = 1 confirmed by CV, the MLE Λ where it scores as well as a kept searched Λ,
    # the SVC the best of three by CV, linear models ungated, the others the one-SE CV gate.
    classifier = record["classifier"]
    if classifier == "linear":
        chosen = "searched"
    elif classifier == "linear-svc" and "mle_mm" in record["inner"]:
        chosen = _range_scaled_gate(record)
        out["guarded"] = held["mle_mm"] if chosen == "mle_minmax" else _held(record, chosen)
        out["loo-gate"] = out["guarded"]
        return out
    elif classifier == "linear-svc":
        chosen = guarded_choice(record, margin=1.0)
    elif classifier == "svc":
        chosen = guarded_choice(record, margin=0.0)
    elif classifier == "knn" and "loo" in record:
        from optuna_boxcox._objective._evaluators.knn_held_out import GATE_RULE

        # The built rule's own anchors and fallback, replayed on the record.
        chosen = _loo_choice(record, GATE_RULE.confirm, GATE_RULE.anchors, GATE_RULE.fallback)
        out["loo-ones-only"] = held[_loo_choice(record, confirm=True, anchors=("ones",))]
        # The rule before them: the better of the MLE Λ and Λ = 1 as the anchor.
        out["loo-both-anchors"] = held[_loo_choice(record, confirm=True)]
        out["loo-anchor"] = held[_better(record["loo"], ("mle", "ones"))]
        # The MLE Λ the anchor only where it beats Λ = 1 by more than one SE itself.
        anchor = "mle" if _beats(record["loo"], "mle", "ones") else "ones"
        out["loo-nested"] = held[_loo_choice(record, confirm=True, anchors=(anchor,))]
    else:
        chosen = guarded_choice(record, margin=1.0)
    out["guarded"] = held[chosen]
    # k-NN: exact leave-one-out alone (one SE of the paired per-row differences).
    out["loo-gate"] = held[_loo_choice(record)] if "loo" in record else out["guarded"]
    return out


def _range_scaled_gate(record: dict) -> str:
    """LinearSVC's rule (``_evaluators.LINEAR_SVC_RULE``): the best inner-CV score of the MLE Λ,
    Λ = 1, the MLE Λ range-scaled and MinMax (the first on a tie), then the searched Λ if it beats
    that anchor by one corrected standard error. Returns ``searched``, ``mle``, ``ones``,
    ``mle_minmax`` or ``fixed:minmax``."""
    folds = np.asarray(record["inner_folds"])

    def per_fold(correct: Any) -> np.ndarray:
        c = np.asarray(correct, dtype=float)
        return np.array(
            [c[r, folds[r] == f].mean() for r in range(len(c)) for f in range(INNER_SPLITS)]
        )

    scores = {name: per_fold(record["inner"][name]) for name in ("mle", "ones")}
    scores["mle_minmax"] = per_fold(record["inner"]["mle_mm"])
    scores["fixed:minmax"] = per_fold(record["inner_fixed"]["minmax"])
    anchor = max(scores, key=lambda name: scores[name].mean())
    d = per_fold(record["inner"]["searched"]) - scores[anchor]
    n = folds.shape[1]
    n_test = n / INNER_SPLITS
    error = np.sqrt((1 / len(d) + n_test / (n - n_test)) * np.var(d, ddof=1))
    return "searched" if d.mean() > error else anchor


def _better(loo: dict, anchors: tuple[str, ...]) -> str:
    """The anchor of highest mean leave-one-out accuracy (the first on a tie)."""
    return max(anchors, key=lambda name: np.mean(loo[name]))


def _beats(loo: dict, a: str, b: str) -> bool:
    """Leave-one-out: ``a`` above ``b`` by more than one SE of the paired per-row differences."""
    d = np.asarray(loo[a], dtype=float) - np.asarray(loo[b], dtype=float)
    return bool(d.mean() > np.std(d, ddof=1) / np.sqrt(len(d)))


def _mle_anchor_noise(rows: list[dict]) -> str:
    """Where leave-one-out prefers the MLE Λ to Λ = 1, what the held-out rows say of the two: how
    much the MLE anchor is worth to k-NN's rule."""
    chosen = [r for r in rows if "loo" in r and _better(r["loo"], ("mle", "ones")) == "mle"]
    if not chosen:
        return ""
    gain = [100 * (r["held_out"]["mle"] - r["held_out"]["ones"]) for r in chosen]
    se = np.std(gain, ddof=1) / np.sqrt(len(gain))
    return (
        f"  leave-one-out preferred the MLE Λ to Λ = 1 in {len(chosen)} of {len(rows)} folds; "
        f"held-out MLE − ones there {np.mean(gain):+.2f} pt (SE {se:.2f})"
    )


def _loo_choice(
    record: dict,
    confirm: bool = False,
    anchors: tuple[str, ...] = ("mle", "ones"),
    fallback: str | None = None,
) -> str:
    """k-NN's rule: the better of ``anchors`` by leave-one-out (the first on a tie), the searched
    Λ kept if its leave-one-out accuracy beats it by more than one SE of the paired per-row
    differences (and, with ``confirm``, its inner-CV score is above that anchor's); where it is
    kept, ``fallback`` instead if its leave-one-out accuracy is as high."""
    loo = record["loo"]
    anchor = _better(loo, anchors)
    if not _beats(loo, "searched", anchor):
        return anchor
    if confirm:
        folds = _fold_scores(record)
        if folds["searched"].mean() <= folds[anchor].mean():
            return anchor
    if fallback and np.mean(loo[fallback]) >= np.mean(loo["searched"]):
        return fallback
    return "searched"


def table(results: str) -> str:
    from scipy.stats import rankdata

    from optuna_boxcox.experiments.benchmark import wilcoxon_p
    from optuna_boxcox.experiments.compare import FIXED_TRANSFORMS

    rows = [json.loads(line) for line in Path(results).read_text().splitlines()]
    for r in rows:  # arrays once: every rule reads them many times
        for key in ("inner", "inner_fixed"):
            if key in r:
                r[key] = {k: np.asarray(v, dtype=float) for k, v in r[key].items()}
    side = Path(results + ".loo")
    if side.exists():
        loo = {(r["dataset"], r["fold"]): r["loo"] for r in map(json.loads, side.open())}
        for r in rows:
            if r["classifier"] == "knn" and (r["dataset"], r["fold"]) in loo:
                r["loo"] = loo[(r["dataset"], r["fold"])]
    by: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by.setdefault((r["classifier"], r["dataset"]), []).append(r)
    lines = []
    for classifier in dict.fromkeys(r["classifier"] for r in rows):
        sets = {d: rs for (c, d), rs in by.items() if c == classifier and len(rs) == OUTER_SPLITS}
        if not sets:
            continue
        fixed_names = [*FIXED_TRANSFORMS, *PEERS, "skew-rule"]
        # The rules every record of the classifier can answer (older records lack some).
        answered = set.intersection(*(set(policies(r)) for rs in sets.values() for r in rs))
        rules = [m for m in ("default", "guarded", "loo-gate", *RULES) if m in answered]
        extra = [m for m in policies(next(iter(sets.values()))[0]) if m in answered]
        extra = [m for m in extra if m not in rules]
        methods = [*fixed_names, *rules, *extra]
        scores = []
        seconds = []
        gate_seconds = []
        for rs in sets.values():
            per = {m: [] for m in methods}
            for r in rs:
                for k in [*FIXED_TRANSFORMS, *PEERS]:
                    per[k].append(r["fixed"][k])
                per["skew-rule"].append(r["held_out"]["skew"])
                for k, v in policies(r).items():
                    if k in per:
                        per[k].append(v)
            scores.append([100 * np.mean(per[m]) for m in methods])
            seconds.append(sum(r["default_seconds"] for r in rs))
            # The gate's cost: the same 3 candidates x folds x repeats fits as the inner CV here
            # (linear classifiers are not gated).
            gate = 0.0 if classifier == "linear" else sum(r["inner_seconds"] for r in rs)
            gate_seconds.append(gate)
        S = np.array(scores)
        fixed = len(fixed_names)
        ref = np.maximum(S[:, methods.index("standard")], S[:, methods.index("box-cox")])
        loss = ((ref[:, None] - 1.0 > S).mean(axis=0)) * 100
        median = int(np.argsort(seconds)[len(seconds) // 2])
        ratio = (seconds[median] + gate_seconds[median]) / seconds[median]
        lines.append(
            f"{classifier}: {len(sets)} data sets, median data set "
            f"{list(sets)[median]}: paper-search fit {seconds[median] / OUTER_SPLITS:.2f}s, "
            f"guarded {(seconds[median] + gate_seconds[median]) / OUTER_SPLITS:.2f}s "
            f"({ratio:.2f}x, the gate timed as scikit-learn's 5x2 CV: the built k-NN gate is "
            "cheaper, time whole fits); each candidate ranked against the "
            f"{fixed} fixed transforms (fixed ranks: among themselves and the default)"
        )
        fixed_ranks = np.mean([rankdata(-s[:fixed]) for s in S], axis=0)
        # The fixed method of highest mean over the sets: the best a user could have picked.
        hindsight = S[:, :fixed].mean(axis=0).max()
        best = int(np.argmin(fixed_ranks))
        lines[-1] += f"; p: Wilcoxon against the best fixed transform, {methods[best]}"
        for i, m in enumerate(methods):
            if i < fixed:
                cols = [*range(fixed), methods.index("default")]
                at = i
            else:
                cols = [*range(fixed), i]
                at = fixed
            rank = np.mean([rankdata(-s[cols])[at] for s in S])
            p = "" if i == best else f"  p {wilcoxon_p(S[:, i], S[:, best]):.3f}"
            lines.append(
                f"  {m:12s} rank {rank:5.2f}  loss {loss[i]:5.1f}%  mean {S[:, i].mean():6.2f}"
                f"  vs best in hindsight {S[:, i].mean() - hindsight:+5.2f}{p}"
            )
        if classifier == "knn":
            lines.append(_mle_anchor_noise([r for rs in sets.values() for r in rs]))
    return "\n".join(line for line in lines if line)


USAGE = (
    "usage: python -m optuna_boxcox.bench.guard RESULTS.jsonl DATASETS CLASSIFIERS [MAX_ROWS "
    "[DATA_DIR]]\n"
    "       python -m optuna_boxcox.bench.guard table RESULTS.jsonl\n"
    "DATASETS: comma-separated, as benchmark --datasets (dev, dev2, dev-all and CSV names read "
    "from DATA_DIR, as its --data-dir); CLASSIFIERS: comma-separated, of knn, svc, bayes, linear"
)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(argv) == 2 and argv[0] == "table":
        print(table(argv[1]))
        return 0
    if len(argv) in (3, 4, 5) and argv[0] != "table":
        max_rows = int(argv[3]) if len(argv) > 3 else 1500
        run(argv[0], argv[1].split(","), argv[2].split(","), max_rows, *argv[4:])
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
