"""BoxCoxClassifier on Dask collections: the default's sample is drawn into memory for the search
and the gate, the transform fitted on all rows and the classifier block by block (partial_fit);
the same λ as the NumPy fit of the same data, on a local cluster whose workers hold less than the
data."""

from __future__ import annotations

import numpy as np
import pytest
from shared import local_dask_client
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxClassifier

REASON = "Dask is the optional extra 'dask' (pip install -e '.[dask]'), not installed here"
distributed = pytest.importorskip("distributed", reason=REASON)
da = pytest.importorskip("dask.array", reason=REASON)
dd = pytest.importorskip("dask.dataframe", reason=REASON)

#: Each worker's memory limit: the long test's array is larger than both workers' together.
WORKER_MEMORY = "400MB"


@pytest.fixture(scope="module")
def client():
    with local_dask_client(WORKER_MEMORY) as client:
        yield client


def _skewed(n: int):
    X, y = make_classification(n, 4, n_informative=3, n_redundant=0, random_state=0)
    return np.exp(X / 2), y


def test_a_dask_fit_searches_the_numpy_fits_sample_and_predicts_lazily(client):
    X, y = _skewed(40_000)
    want = BoxCoxClassifier(GaussianNB()).fit(X, y)
    assert want.fidelity_.get("sample"), "the data must be past the sample threshold"
    Xd, yd = da.from_array(X, chunks=(7_000, 4)), da.from_array(y, chunks=7_000)
    got = BoxCoxClassifier(GaussianNB()).fit(Xd, yd)
    assert got.fidelity_["sample"] == want.fidelity_["sample"]
    np.testing.assert_array_equal(got.lambdas_, want.lambdas_)
    assert got.decision_["chosen"] == want.decision_["chosen"]
    np.testing.assert_allclose(got.transformer_.data_min_, want.transformer_.data_min_)
    np.testing.assert_allclose(got.transformer_.scale_, want.transformer_.scale_, rtol=1e-9)
    # GaussianNB learns block by block what it learns at once (to rounding).
    np.testing.assert_allclose(got.estimator_.theta_, want.estimator_.theta_, rtol=1e-9)
    predicted = got.predict(Xd)
    assert isinstance(predicted, da.Array)
    assert np.mean(predicted.compute() == want.predict(X)) > 0.999
    proba = got.predict_proba(Xd[:100])
    np.testing.assert_allclose(proba.compute(), want.predict_proba(X[:100]), rtol=1e-6)


def test_a_dask_dataframe_keeps_its_column_names(client):
    import pandas as pd

    X, y = _skewed(40_000)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    Xd = dd.from_pandas(frame, npartitions=5)
    yd = dd.from_pandas(pd.Series(y), npartitions=5)
    got = BoxCoxClassifier(GaussianNB()).fit(Xd, yd)
    assert list(got.feature_names_in_) == ["a", "b", "c", "d"]
    assert list(got.best_params_) == ["a", "b", "c", "d"]
    assert (got.predict(Xd).compute() == got.predict(frame)).all()


def test_a_classifier_without_partial_fit_is_refused_in_one_line_before_any_pass(client):
    X, y = _skewed(1_000)
    with pytest.raises(TypeError, match=r"^LogisticRegression has no partial_fit[^\n]*$"):
        BoxCoxClassifier(LogisticRegression()).fit(da.from_array(X, chunks=500), y)
    with pytest.raises(ValueError, match="fidelity cannot be combined with a Dask collection"):
        BoxCoxClassifier(GaussianNB(), fidelity="exact").fit(da.from_array(X, chunks=500), y)


@pytest.mark.long
def test_data_bigger_than_the_workers_memory_fits_and_predicts(client):
    """16 million rows × 8 columns (1 GB) made chunk by chunk on the workers, never whole in
    memory: fitted through the default's sample, then block by block."""
    rows, columns, chunk = 16_000_000, 8, 125_000
    rng = da.random.default_rng(2024)
    X = rng.standard_exponential(size=(rows, columns), chunks=(chunk, columns))
    y = (X[:, 0] + X[:, 1] > 1.7).astype(np.int64)
    workers = set(client.scheduler_info()["workers"])
    clf = BoxCoxClassifier(GaussianNB()).fit(X, y)
    assert clf.fidelity_["sample"] < rows and clf.estimator_.class_count_.sum() == rows
    predicted = clf.predict(X[:200_000])
    assert isinstance(predicted, da.Array)
    accuracy = float((predicted == y[:200_000]).mean().compute())
    assert accuracy > 0.7
    # No worker ran out of memory (a restarted one would have a new address).
    assert set(client.scheduler_info()["workers"]) == workers


def test_the_fingerprint_of_dask_data_changes_with_any_value_label_or_row_order(client):
    from optuna_boxcox import _dask

    X, y = _skewed(2_000)
    base = _dask.range_and_fingerprint(da.from_array(X, chunks=300), y)[2]
    again = _dask.range_and_fingerprint(da.from_array(X, chunks=300), y)[2]
    edited = X.copy()
    edited[1_234, 2] += 1e-9
    flipped = y.copy()
    flipped[7] = 1 - flipped[7]
    assert base == again
    assert base != _dask.range_and_fingerprint(da.from_array(edited, chunks=300), y)[2]
    assert base != _dask.range_and_fingerprint(da.from_array(X, chunks=300), flipped)[2]
    assert base != _dask.range_and_fingerprint(da.from_array(X[::-1], chunks=300), y[::-1])[2]
