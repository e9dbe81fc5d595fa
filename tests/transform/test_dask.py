"""Dask input (optuna_boxcox._dask, the optional extra ``dask``): BoxCoxTransformer fitted and
applied chunk by chunk, with the values of its NumPy fit, on a local cluster of worker processes
whose memory is smaller than the data; estimators fitted block by block."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from shared import local_dask_client
from sklearn.linear_model import LogisticRegression
from sklearn.linear_model import SGDClassifier
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import _dask
from optuna_boxcox._math import _numerics
from optuna_boxcox._math._transform import BoxCoxTransformer

REASON = "Dask is the optional extra 'dask' (pip install -e '.[dask]'), not installed here"
distributed = pytest.importorskip("distributed", reason=REASON)
da = pytest.importorskip("dask.array", reason=REASON)
dd = pytest.importorskip("dask.dataframe", reason=REASON)
from dask.utils import parse_bytes  # noqa: E402 (after the skip)

#: Each worker's memory limit: the big array below is larger than both workers' together.
WORKER_MEMORY = "400MB"
#: 16 million rows × 8 float64 columns = 1.02 GB, in 128 chunks of 8 MB: each task costs the
#: scheduler round trips, so chunks are large, but the transform's temporaries of twice that
#: size brought a worker near its limit, where it is restarted.
BIG_ROWS, BIG_COLUMNS, BIG_CHUNK = 16_000_000, 8, 125_000


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes on loopback, each limited to :data:`WORKER_MEMORY`:
    every computation of this module runs there (the Client is the default scheduler)."""
    with local_dask_client(WORKER_MEMORY) as client:
        yield client


def _sample(n: int = 3000, seed: int = 0) -> np.ndarray:
    """Columns of every kind of skew: right and left, mild and extreme (λ near ±1000), integers."""
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            rng.lognormal(0.0, 0.5, n),
            rng.lognormal(0.0, 1.5, n),
            rng.normal(5.0, 2.0, n),
            -rng.lognormal(0.0, 1.0, n),
            -rng.lognormal(0.0, 2.5, n),  # λ ≈ +800: the scaled form of the likelihood
            rng.lognormal(0.0, 4.0, n),  # λ ≈ -1000
            rng.integers(0, 7, n).astype(np.float64),
        ]
    )


def _lazy(X: np.ndarray, rows: int = 400) -> da.Array:
    """X as a Dask Array whose columns are split over chunks too (they are merged block by block)."""
    return da.from_array(X, chunks=(rows, 3))


def _frame(X: np.ndarray, partitions: int = 7) -> dd.DataFrame:
    columns = [f"f{j}" for j in range(X.shape[1])]
    return dd.from_pandas(pd.DataFrame(X, columns=columns), npartitions=partitions)


def _assert_same_fit(got: BoxCoxTransformer, want: BoxCoxTransformer, rtol: float = 1e-10):
    for name in ("data_min_", "data_range_", "lambdas_", "mean_", "scale_", "power_min_"):
        if hasattr(want, name):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=rtol)
    if hasattr(want, "power_range_"):
        np.testing.assert_allclose(got.power_range_, want.power_range_, rtol=rtol)
    assert got.n_features_in_ == want.n_features_in_


@contextlib.contextmanager
def _no_warnings():
    # The sample has extreme columns on purpose (λ near ±1000): the NumPy fit warns about them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# -- without Dask ---------------------------------------------------------------------------------


def test_the_package_imports_and_fits_without_dask():
    # sys.modules[name] = None makes `import name` fail as if it were not installed.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["dask"] = None
        import numpy as np
        from optuna_boxcox import _dask
        from optuna_boxcox._math._transform import BoxCoxTransformer
        X = np.arange(12.0).reshape(6, 2) ** 2
        assert not _dask.is_dask(X)
        print(BoxCoxTransformer([1.0, 0.5]).fit_transform(X).shape)
        assert not any(m.startswith("dask.") for m in sys.modules), "dask was imported"
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(6, 2)"


def test_is_dask_tells_dask_collections_from_in_memory_data():
    X = _sample(20)
    frame = _frame(X, 2)
    assert _dask.is_dask(_lazy(X)) and _dask.is_dask(frame) and _dask.is_dask(frame["f0"])
    assert not any(_dask.is_dask(v) for v in (X, pd.DataFrame(X), X.tolist(), None))


# -- the transformer ------------------------------------------------------------------------------

SETTINGS = {
    "given": dict(lambdas=[0.5, -1.0, 2.0, 0.0, 1.0, 0.3, -0.2]),
    "dict": dict(lambdas={f"x{j}": lam for j, lam in enumerate(np.linspace(-2, 2, 7))}),
    "range_scale": dict(lambdas=np.linspace(-1, 1, 7), range_scale=True),
    "unscaled": dict(lambdas=np.linspace(-1, 1, 7), standardize=False),
    "clip": dict(lambdas=np.linspace(-3, 3, 7), extrapolation="clip"),
    "yeo-johnson": dict(lambdas=np.linspace(-1, 2, 7), method="yeo-johnson"),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_given_lambdas_fit_and_transform_as_numpy_does(client, setting):
    X = _sample()
    unseen = _sample(500, seed=1) * 1.5  # values beyond the training range: extrapolation
    want = BoxCoxTransformer(**SETTINGS[setting])
    got = BoxCoxTransformer(**SETTINGS[setting])
    with _no_warnings():
        train = want.fit_transform(X)
        lazy = _dask.fit_transformer(got, _lazy(X))
    assert isinstance(lazy, da.Array) and lazy.shape == X.shape
    _assert_same_fit(got, want)
    np.testing.assert_allclose(lazy.compute(), train, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        _dask.transform(got, _lazy(unseen, 128)).compute(),
        want.transform(unseen),
        rtol=1e-10,
        atol=1e-12,
    )


def test_mle_lambdas_are_scipys_and_the_transform_numpys(client, monkeypatch):
    X = _sample(4000)
    constant = np.column_stack([X, np.full(len(X), 3.0)])  # a constant column: λ = 1, warned
    passes = []
    per_block = _dask._per_block
    monkeypatch.setattr(_dask, "_per_block", lambda *a: passes.append(a[0]) or per_block(*a))
    got = BoxCoxTransformer()
    with pytest.warns(_numerics.ConstantColumnWarning, match="'x7'"):
        _dask.fit_transformer(got, _lazy(constant, 512))
    assert got.lambdas_[-1] == 1.0
    # One pass for the range, a few for the λ of every column at once, one for the scaling.
    assert len(passes) <= 20, len(passes)
    Z = 1.0 + (X - X.min(axis=0)) / np.ptp(X, axis=0)
    with _no_warnings():
        scipy_lambdas = [stats.boxcox_normmax(Z[:, j], method="mle") for j in range(X.shape[1])]
        want = BoxCoxTransformer().fit(constant)
    np.testing.assert_allclose(got.lambdas_[:-1], scipy_lambdas, rtol=1e-6)
    assert got.lambdas_[4] > 500 and got.lambdas_[5] < -500, got.lambdas_  # the extreme ones
    # The rest of the fit and the transform are NumPy's for these λ, to rounding.
    with _no_warnings():
        same = BoxCoxTransformer(lambdas=got.lambdas_).fit(constant)
    _assert_same_fit(got, same)
    out = _dask.transform(got, _lazy(constant)).compute()
    np.testing.assert_allclose(out, same.transform(constant), rtol=1e-10, atol=1e-12)
    # ... and close to the NumPy MLE fit's, whose λ differ within scipy's tolerance (except where
    # λ near ±1000 multiplies that difference into the powers' last digits).
    moderate = [0, 1, 2, 3, 6, 7]
    np.testing.assert_allclose(
        out[:, moderate], want.transform(constant)[:, moderate], rtol=1e-6, atol=1e-6
    )


def test_a_dataframe_gives_a_dataframe_with_the_feature_names(client):
    X = _sample(2000)
    frame = _frame(X)
    lambdas = {f"f{j}": lam for j, lam in enumerate(np.linspace(-2, 2, 7))}
    got = BoxCoxTransformer(lambdas=lambdas)
    with _no_warnings():
        want = BoxCoxTransformer(lambdas=lambdas).fit(frame.compute())
        lazy = _dask.fit_transformer(got, frame)
    assert isinstance(lazy, dd.DataFrame) and lazy.npartitions == frame.npartitions
    assert list(got.feature_names_in_) == list(lazy.columns) == list(frame.columns)
    _assert_same_fit(got, want)
    out = lazy.compute()
    assert out.index.equals(frame.index.compute())
    np.testing.assert_allclose(
        out.to_numpy(), want.transform(frame.compute()), rtol=1e-10, atol=1e-12
    )
    renamed = frame.rename(columns={"f0": "g0"})
    with pytest.raises(ValueError, match="feature names should match"):
        _dask.transform(got, renamed)


def test_what_the_numpy_fit_refuses_dask_refuses(client):
    X = _sample(300)
    with pytest.raises(ValueError, match="NaN or infinity"):
        _dask.fit_transformer(BoxCoxTransformer(), _lazy(np.where(X > 4, np.nan, X)))
    with pytest.raises(ValueError, match="lambdas has shape"):
        _dask.fit_transformer(BoxCoxTransformer([1.0, 2.0]), _lazy(X))
    with pytest.raises(ValueError, match="2-D"):
        _dask.fit_transformer(BoxCoxTransformer(), _lazy(X)[:, 0])
    with pytest.raises(ValueError, match="non-numeric"):
        _dask.fit_transformer(BoxCoxTransformer(), _frame(X).astype({"f2": "string"}))
    with pytest.raises(NotImplementedError, match="yeo-johnson"):
        _dask.fit_transformer(BoxCoxTransformer(method="yeo-johnson"), _lazy(X))
    with pytest.raises(ValueError, match="span more than the largest float64"):
        _dask.fit_transformer(BoxCoxTransformer(), _lazy(np.array([[-1e308], [1e308]])))
    fitted = BoxCoxTransformer(lambdas=np.ones(7))
    _dask.fit_transformer(fitted, _lazy(X))
    with pytest.raises(ValueError, match="expecting 7 features"):
        _dask.transform(fitted, _lazy(X[:, :3]))
    lazy = _dask.transform(fitted, _lazy(np.where(X > 4, np.inf, X)))  # lazy: raises when computed
    with pytest.raises(ValueError, match="NaN or infinity"):
        lazy.compute()


def test_the_transformer_fits_dask_input_through_its_own_methods(client):
    # BoxCoxTransformer.fit, fit_transform and transform hand Dask input to optuna_boxcox._dask,
    # and its warnings point at the caller's line as the NumPy fit's do.
    X = np.column_stack([_sample(1000), np.ones(1000)])
    with pytest.warns(_numerics.ConstantColumnWarning) as caught:
        bc = BoxCoxTransformer(lambdas=np.linspace(-1, 1, 8)).fit(_lazy(X))
    assert caught[0].filename == __file__
    assert isinstance(bc.transform(_lazy(X)), da.Array)
    with _no_warnings():
        lazy = BoxCoxTransformer(lambdas=np.linspace(-1, 1, 8)).fit_transform(_lazy(X))
        want = BoxCoxTransformer(lambdas=np.linspace(-1, 1, 8)).fit_transform(X)
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), want, rtol=1e-10, atol=1e-12)


# -- the one-pass helpers -------------------------------------------------------------------------


def test_column_range_and_moments_are_numpys(client):
    X = np.column_stack([_sample(1000), np.full(1000, -2.0)])
    low, span = _dask.column_range(_lazy(X, 128))
    want_low, want_span = _numerics.fit_range(X)
    np.testing.assert_array_equal(low, want_low)
    np.testing.assert_array_equal(span, want_span)
    assert span[-1] == 1.0  # a constant column's range is 1, as fit_range makes it
    mean, var = _dask.moments(_frame(X), np.square)  # a partition is a pandas DataFrame
    np.testing.assert_allclose(mean, np.square(X).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var, np.square(X).var(axis=0), rtol=1e-10)


def test_take_rows_computes_only_the_rows_asked_for(client):
    X = _sample(1000)
    rows = np.array([0, 1, 399, 400, 401, 777, 999])
    np.testing.assert_array_equal(_dask.take_rows(_lazy(X), rows), X[rows])
    # A DataFrame's partition lengths are unknown to Dask: they are counted first.
    np.testing.assert_array_equal(_dask.take_rows(_frame(X), rows), X[rows])
    assert _dask.take_rows(_lazy(X), []).shape == (0, 7)
    with pytest.raises(ValueError, match="increasing order"):
        _dask.take_rows(_lazy(X), [5, 2])
    with pytest.raises(IndexError, match="1000 rows"):
        _dask.take_rows(_lazy(X), [1000])


def test_lazy_maps_and_labels(client):
    X = _sample(1000)
    out = _dask.transform_blocks(lambda b: np.asarray(b)[:, :2] * 2.0, _lazy(X), 2)
    assert isinstance(out, da.Array) and out.chunks[1] == (2,)
    np.testing.assert_array_equal(out.compute(), X[:, :2] * 2.0)
    named = _dask.transform_blocks(lambda b: b.to_numpy()[:, :2], _frame(X), 2, ["a", "b"])
    assert list(named.columns) == ["a", "b"]
    np.testing.assert_array_equal(named.compute().to_numpy(), X[:, :2])
    predicted = _dask.predict_blocks(lambda b: np.asarray(b)[:, 6] > 3, _frame(X), dtype=bool)
    assert isinstance(predicted, da.Array) and predicted.ndim == 1
    np.testing.assert_array_equal(predicted.compute(), X[:, 6] > 3)
    y = _frame(X)["f6"]
    np.testing.assert_array_equal(_dask.labels(y), X[:, 6])
    np.testing.assert_array_equal(_dask.labels(_lazy(X)[:, 6]), X[:, 6])


# -- estimators fitted block by block -------------------------------------------------------------


@pytest.mark.parametrize(
    "make", [lambda: SGDClassifier(loss="log_loss", random_state=0), GaussianNB], ids=["sgd", "nb"]
)
def test_partial_fit_blocks_fits_as_partial_fit_on_each_block(client, make):
    X = _sample(2000)[:, :4]
    y = (X[:, 0] + X[:, 2] / 4 > 2.3).astype(int)
    bc = BoxCoxTransformer(lambdas=np.linspace(-1, 1, 4)).fit(X)
    want = make()
    for start in range(0, len(X), 400):
        block = slice(start, start + 400)
        want.partial_fit(bc.transform(X[block]), y[block], classes=[0, 1])
    lazy_y = da.from_array(y, chunks=400)
    for labels in (lazy_y, y, da.from_array(y, chunks=250)):  # lazy, in memory, rechunked
        got = _dask.partial_fit_blocks(make(), bc.transform, _lazy(X), labels, classes=[0, 1])
        _assert_same_estimator(got, want)
    # A DataFrame's blocks reach the transformer as DataFrames, with the names it was fitted on.
    frame = dd.from_pandas(_frame(X).compute().assign(y=y), npartitions=5)
    features = frame.drop(columns="y")
    named = BoxCoxTransformer(lambdas=np.linspace(-1, 1, 4)).fit(features.compute())
    want = make()
    for part in frame.partitions:
        part = part.compute()
        want.partial_fit(named.transform(part.drop(columns="y")), part["y"], classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "X does not have valid feature names"
        got = _dask.partial_fit_blocks(make(), named.transform, features, frame["y"], None)
    _assert_same_estimator(got, want)
    np.testing.assert_array_equal(got.classes_, [0, 1])  # classes=None: those of y
    predicted = _dask.predict_blocks(
        lambda b: got.predict(named.transform(b)), features, got.classes_.dtype
    )
    assert isinstance(predicted, da.Array)
    in_memory = got.predict(named.transform(features.compute()))
    np.testing.assert_array_equal(predicted.compute(), in_memory)


def _assert_same_estimator(got, want):
    for name in ("coef_", "intercept_", "theta_", "var_", "class_prior_"):
        if hasattr(want, name):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


def test_partial_fit_blocks_says_what_to_do_for_an_estimator_without_partial_fit(client):
    with pytest.raises(TypeError) as raised:
        _dask.partial_fit_blocks(LogisticRegression(), None, _lazy(_sample(100)), np.zeros(100))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("LogisticRegression has no partial_fit")
    assert "SGDClassifier(loss='log_loss')" in message and "fits in memory" in message


# -- bigger than the workers' memory --------------------------------------------------------------


def _big() -> da.Array:
    """A 1 GB array made chunk by chunk on the workers (Dask seeds each chunk's generator); it
    never exists whole anywhere. Its columns are exponential, right-skewed, of different scales."""
    exponential = da.random.default_rng(2024).standard_exponential(
        size=(BIG_ROWS, BIG_COLUMNS), chunks=(BIG_CHUNK, BIG_COLUMNS)
    )
    return exponential * np.geomspace(1e-3, 1e3, BIG_COLUMNS)


@pytest.mark.long
def test_data_bigger_than_the_workers_memory_fits_and_transforms_chunk_by_chunk(client):
    X = _big()
    limit = parse_bytes(WORKER_MEMORY)
    assert X.nbytes > 2 * limit
    workers = set(client.scheduler_info()["workers"])
    bc = BoxCoxTransformer(lambdas=np.linspace(-1, 1, BIG_COLUMNS))
    lazy = _dask.fit_transformer(bc, X)  # two passes: range, then mean and variance
    assert isinstance(lazy, da.Array) and lazy.shape == X.shape
    assert np.all(bc.data_range_ > 0) and np.all(bc.scale_ > 0)
    # The transform of the training data is standardised: one more pass, reduced on the workers.
    mean, std = da.compute(lazy.mean(axis=0), lazy.std(axis=0))
    np.testing.assert_allclose(mean, 0.0, atol=1e-9)
    np.testing.assert_allclose(std, 1.0, rtol=1e-9)
    rows = np.array([0, BIG_CHUNK - 1, BIG_CHUNK, 7_777_777, BIG_ROWS - 1])
    np.testing.assert_array_equal(_dask.take_rows(X, rows), X[rows].compute())
    # No worker ran out of memory (a restarted one would have a new address).
    assert set(client.scheduler_info()["workers"]) == workers
