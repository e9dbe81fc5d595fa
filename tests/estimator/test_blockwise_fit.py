"""The final GaussianNB fit on many rows, block by block: the fit GaussianNB.fit makes of the
transformed rows, to rounding, without holding them whole."""

import numpy as np
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxTransformer
from optuna_boxcox import _ensemble
from optuna_boxcox._ensemble import fit_final


def _data(n=5_003, p=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = np.exp(rng.normal(size=(n, p)) + y[:, None] * 0.3)
    return X, y


@pytest.mark.parametrize("priors", [None, [0.2, 0.3, 0.5]])
@pytest.mark.parametrize("block", [1_000, 4_999, 10_000])
def test_blocks_equal_gaussian_nb_fit(monkeypatch, priors, block):
    X, y = _data()
    # Labels that are not 0, 1, 2: the blocks map them to the fitted classes_.
    y = np.where(y == 2, 7, y)
    transformer = BoxCoxTransformer(lambdas=np.linspace(-1, 2, X.shape[1])).fit(X)
    plain = GaussianNB(priors=priors).fit(transformer.transform(X), y)
    monkeypatch.setattr(_ensemble, "BLOCKWISE_BYTES", 0)
    monkeypatch.setattr(_ensemble, "BLOCK_ROWS", block)
    blocks = fit_final(GaussianNB(priors=priors), transformer, X, y)
    for name in ("classes_", "theta_", "var_", "class_count_", "class_prior_", "epsilon_"):
        np.testing.assert_allclose(getattr(blocks, name), getattr(plain, name), rtol=1e-10)
    assert blocks.n_features_in_ == plain.n_features_in_
    Xt, _ = _data(seed=1)
    Zt = transformer.transform(Xt)
    np.testing.assert_array_equal(blocks.predict(Zt), plain.predict(Zt))
    np.testing.assert_allclose(blocks.predict_proba(Zt), plain.predict_proba(Zt), rtol=1e-8)


def test_blocks_never_transform_all_rows(monkeypatch):
    X, y = _data(n=3_000, classes=2)
    transformer = BoxCoxTransformer(lambdas=np.ones(X.shape[1])).fit(X)
    seen = []
    original = _ensemble.transform_checked
    monkeypatch.setattr(
        _ensemble, "transform_checked", lambda t, Z: seen.append(len(Z)) or original(t, Z)
    )
    monkeypatch.setattr(_ensemble, "BLOCKWISE_BYTES", 0)
    monkeypatch.setattr(_ensemble, "BLOCK_ROWS", 1_000)
    fit_final(GaussianNB(), transformer, X, y)
    assert max(seen) == 1_000 and sum(seen) == len(X) + 2  # + the one row per class first


def test_small_data_and_other_classifiers_fit_plainly(monkeypatch):
    X, y = _data(n=500)
    transformer = BoxCoxTransformer(lambdas=np.ones(X.shape[1])).fit(X)
    calls = []
    monkeypatch.setattr(_ensemble, "_fit_gaussian_nb_blocks", lambda *a: calls.append(a))
    fit_final(GaussianNB(), transformer, X, y)

    class Subclass(GaussianNB):
        pass

    monkeypatch.setattr(_ensemble, "BLOCKWISE_BYTES", 0)
    fit_final(Subclass(), transformer, X, y)  # a subclass may fit otherwise: fitted as it says
    assert calls == []
