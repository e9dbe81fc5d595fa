"""The data of the paper's experiments: Figure 1's synthetic sets and the two real data sets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn import datasets as _sk

from optuna_boxcox.datasets import load_csv
from optuna_boxcox.datasets import load_dataset
from optuna_boxcox.experiments._names import SYNTHETIC_NAMES


@dataclass(frozen=True)
class SyntheticSet:
    """One 2-D binary problem of the paper's Figure 1."""

    key: str
    label: str  # the paper's name (Table 2 section)
    make: Callable[[int], tuple[np.ndarray, np.ndarray]]


def _gaussian_quantiles(seed: int) -> tuple[np.ndarray, np.ndarray]:
    return _sk.make_gaussian_quantiles(
        cov=3.0, n_samples=1000, n_features=2, n_classes=2, random_state=seed
    )


def _moons(seed: int) -> tuple[np.ndarray, np.ndarray]:
    return _sk.make_moons(n_samples=1000, noise=0.1, random_state=seed)


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    return _sk.make_blobs(n_samples=1000, centers=[(1, 1), (2, 2)], random_state=seed)


def _random(seed: int) -> tuple[np.ndarray, np.ndarray]:
    return _sk.make_classification(
        n_samples=1000,
        n_features=2,
        n_informative=2,
        n_redundant=0,
        n_repeated=0,
        n_classes=2,
        random_state=seed,
    )


#: Figure 1 of the paper, (A)–(D). The paper names the generators only (Gaussian quantiles,
#: interleaving half circles, isotropic Gaussian blobs, a random classification problem), all 2-D and
#: binary; sizes, noise, centres and the seed (1) are those of the authors' published script
#: (``experiments/2d.py`` of github.com/Luca-Blum/Box-Cox-for-machine-learning):
#:
#: - ``make_gaussian_quantiles(cov=3.0, n_samples=1000, n_features=2, n_classes=2)``
#: - ``make_moons(n_samples=1000, noise=0.1)``
#: - ``make_blobs(n_samples=1000, centers=[(1, 1), (2, 2)])`` (unit standard deviation)
#: - ``make_classification(n_samples=1000, n_features=2, n_informative=2, n_redundant=0,
#:   n_repeated=0, n_classes=2)``
SYNTHETIC: dict[str, SyntheticSet] = {
    s.key: s
    for s in (
        SyntheticSet("gaussian_quantiles", "Gaussian quantiles", _gaussian_quantiles),
        SyntheticSet("moons", "Interleaving half circles", _moons),
        SyntheticSet("blobs", "Isotropic Gaussian blobs", _blobs),
        SyntheticSet("random", "Random dataset", _random),
    )
}
#: Seed of Figure 1's data sets (the authors' script).
FIGURE1_SEED = 1
# Table 3 regenerates the random data set "10 times with different random seeds" (the paper does not
# say which); we use 1–10 (TABLE3_SEEDS), so the first is Figure 1D itself.
assert tuple(SYNTHETIC) == SYNTHETIC_NAMES


def synthetic(key: str, seed: int = FIGURE1_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64, n × 2) and labels of one Figure 1 data set."""
    if key not in SYNTHETIC:
        raise ValueError(
            f"unknown synthetic data set {key!r}; choose one of {', '.join(SYNTHETIC)}"
        )
    X, y = SYNTHETIC[key].make(seed)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def paper_features(
    dataset: str, *, csv: str | Path | None = None, label: str = "y"
) -> tuple[np.ndarray, np.ndarray]:
    """A real data set as the authors fed it: features cast to float32 (their script), then float64.

    ``sonar`` comes from OpenML unless ``csv`` names a local copy (label column ``label``).
    """
    if csv is not None:
        X, y = load_csv(csv, label)
    else:
        X, y = load_dataset(dataset)
    X = np.asarray(X, dtype=np.float64).astype(np.float32).astype(np.float64)
    return X, np.asarray(y)
