"""k-NN's traits for the guarded default's gate: its rule (:data:`GATE_RULE`), held-out predictions
and exact leave-one-out by NumPy distance matrices.

scikit-learn's k-NN answers the same (``tests/estimator/test_guard.py`` holds it as the oracle),
but its fit and predict cost ~25 ms of overhead each on a few hundred rows — the gate's 30 of them
more than the search itself. Distances are computed a block of rows at a time
(:data:`BLOCK_BYTES`), so the memory does not grow with the square of the rows; a row whose k-th
neighbour is not clear-cut up to rounding is answered by scikit-learn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox._objective._evaluators.knn import BlockwiseKNeighborsScorer
from optuna_boxcox._study._decision import LOO
from optuna_boxcox._study._decision import MARGIN
from optuna_boxcox._study._decision import ONES_ONLY
from optuna_boxcox._study._decision import Rule

#: k-NN's gate rule: exact leave-one-out (a row is not its own neighbour), the searched Λ kept when
#: it beats Λ = 1 by more than one standard error of the paired per-row differences, confirmed by
#: 5×2 CV. The search tuned the neighbours of these same rows, and on permuted labels the
#: leave-one-out win alone is often that tuning, while the CV score rarely agrees. The MLE Λ is no
#: anchor: on the development sets its held-out accuracy was Λ = 1's where leave-one-out chose it,
#: so the better of the two only raised the searched Λ's bar by their noise. Where the searched Λ
#: is kept, the MLE Λ is used instead if its leave-one-out accuracy is as high (the searched Λ's is
#: optimistic: it was tuned on these rows).
GATE_RULE = Rule(LOO, MARGIN, confirm=True, anchors=ONES_ONLY, fallback="mle")


def gate_rule_applies(estimator: Any, metric: Any, y: np.ndarray) -> bool:
    """:data:`GATE_RULE` judges the k-NN the fast evaluator reproduces, scored by accuracy, on at
    least k + 2 rows; any other k-NN is judged by the default rule."""
    k = neighbours(estimator, y)
    return metric is accuracy_score and k is not None and k + 1 < len(y)


def neighbour_predictions(
    estimator: Any, X: np.ndarray, y: np.ndarray, X_test: np.ndarray
) -> np.ndarray | None:
    """``KNeighborsClassifier(...).fit(X, y).predict(X_test)`` by one NumPy distance matrix, for
    the k-NN the fast evaluator scores (Euclidean, uniform votes); None for any other estimator
    or when a row's k-th neighbour is not clear-cut (then scikit-learn answers).

    scikit-learn's fit and predict cost ~25 ms of overhead each on a few hundred rows, the gate's
    30 of them more than the search itself. The votes are scikit-learn's (:func:`_votes`).
    """
    k = neighbours(estimator, y)
    if k is None or k >= len(y) or not (np.all(np.isfinite(X)) and np.all(np.isfinite(X_test))):
        return None
    classes, codes = np.unique(y, return_inverse=True)
    scale = _norms(X_test) + np.max(_norms(X))
    predicted = np.empty(len(X_test), dtype=np.intp)
    for rows in _blocks(len(X_test), len(X)):
        votes, unsure = _votes(
            _squared_distances(X_test[rows], X), codes, len(classes), k, scale[rows]
        )
        if len(unsure):
            return None
        predicted[rows] = np.argmax(votes, axis=1)
    return classes[predicted]


def leave_one_out_correct(estimator: Any, T: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per row of the transformed rows ``T``, 1.0 if the k-NN fitted on the other rows predicts
    its class, else 0.0: exact leave-one-out, a row is not its own neighbour (resubstitution
    counts it among them). Distances a block of rows at a time (:data:`BLOCK_BYTES`); a row whose k-th neighbour is not clear-cut is
    answered by scikit-learn fitted without it."""
    k = neighbours(estimator, y)
    classes, codes = np.unique(y, return_inverse=True)
    norms = _norms(T)
    predicted = np.empty(len(T), dtype=np.intp)
    unsure = []
    for rows in _blocks(len(T), len(T)):
        squared = _squared_distances(T[rows], T)
        squared[np.arange(rows.stop - rows.start), np.arange(rows.start, rows.stop)] = np.inf
        votes, block_unsure = _votes(squared, codes, len(classes), k, norms[rows] + np.max(norms))
        predicted[rows] = np.argmax(votes, axis=1)
        unsure.extend(rows.start + block_unsure)
    others = np.ones(len(y), dtype=bool)
    for i in unsure:
        others[i] = False
        model = clone(estimator).fit(T[others], y[others])
        predicted[i] = np.searchsorted(classes, model.predict(T[i : i + 1])[0])
        others[i] = True
    return (predicted == codes).astype(float)


def neighbours(estimator: Any, y: np.ndarray) -> int | None:
    """k of a k-NN the fast evaluator reproduces on labels ``y`` (its own test), else None."""
    if type(estimator) is not KNeighborsClassifier:
        return None
    scorer = BlockwiseKNeighborsScorer.from_estimator(estimator, y, _none)
    if scorer is None:
        return None
    return scorer.n_neighbors


def _none(*_: Any) -> float:
    return 0.0


def _norms(A: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", A, A)


def _votes(
    squared: np.ndarray, codes: np.ndarray, n_classes: int, k: int, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``squared`` (its squared distances to the training rows), the class votes of
    its k nearest training rows, and the rows whose votes depend on rounding.

    scikit-learn's k-NN: the k nearest rows vote, the most frequent class wins, ties to the
    smallest class. Which rows are the k nearest is only up to rounding and tie order when the
    k-th and (k+1)-th distances lie within a relative 1e-9 of each other (``scale``, the squared
    norms involved, bounds every computation's rounding); such a row is answered when every row
    in that band has one class (tied distances are common on lattice data such as iris), else it
    is returned as unsure.
    """
    rows = np.arange(len(squared))
    order = np.argpartition(squared, (k - 1, k), axis=1)
    kth, following = squared[rows, order[:, k - 1]], squared[rows, order[:, k]]
    margin = 1e-9 * (np.where(np.isfinite(following), following, 0.0) + scale)
    votes = np.zeros((len(squared), n_classes), dtype=np.intp)
    np.add.at(votes, (np.repeat(rows, k), codes[order[:, :k]].ravel()), 1)
    unsure = []
    for i in np.flatnonzero(following - kth <= margin):
        certain = squared[i] < kth[i] - margin[i]
        band = ~certain & (squared[i] <= kth[i] + margin[i])
        band_classes = np.unique(codes[band])
        if len(band_classes) > 1:
            unsure.append(i)
            continue
        votes[i] = np.bincount(codes[certain], minlength=n_classes)
        votes[i, band_classes[0]] += k - np.count_nonzero(certain)
    return votes, np.asarray(unsure, dtype=np.intp)


#: Bytes of one block of squared distances (and as much again for the votes' work arrays): the
#: gate's memory does not grow with the square of the rows.
BLOCK_BYTES = 32 << 20


def _blocks(n_rows: int, n_columns: int) -> list[slice]:
    """Row slices of at most ``BLOCK_BYTES`` of float64 distances to ``n_columns`` rows each."""
    size = max(1, BLOCK_BYTES // (8 * max(1, n_columns)))
    return [slice(start, min(start + size, n_rows)) for start in range(0, n_rows, size)]


def _squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of A and B as ‖a‖² − 2a·b + ‖b‖² (one matrix
    product). Its rounding is at most a few times p·ε·(‖a‖² + ‖b‖²), p the columns — below
    1e-11 of the squared norms for up to 10,000 columns, far inside the 1e-9 band within which
    :func:`_votes` treats two distances as tied — so it decides what distances summed column by
    column would, ten times faster on 30 columns. Rows whose squared norms overflow (values
    past ~1e150, which an extreme λ can give) are summed column by column."""
    with np.errstate(over="ignore", invalid="ignore"):
        squared = _norms(A)[:, None] - 2.0 * (A @ B.T)
        squared += _norms(B)[None, :]
    if np.all(np.isfinite(squared)):
        return np.maximum(squared, 0.0, out=squared)
    squared = np.zeros((len(A), len(B)))
    with np.errstate(over="ignore"):
        for j in range(A.shape[1]):
            squared += np.square(A[:, j, None] - B[None, :, j])
    return squared
