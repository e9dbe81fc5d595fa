"""Names the command line offers, without importing what they name (scikit-learn, plotly)."""

from __future__ import annotations

from optuna_boxcox._study._presets import PRESETS

#: Figure 1's synthetic data sets (``experiments._data.SYNTHETIC`` holds their generators).
SYNTHETIC_NAMES = ("gaussian_quantiles", "moons", "blobs", "random")
#: Table 3 regenerates the random data set with these seeds.
TABLE3_SEEDS = tuple(range(1, 11))
#: The search strategies of Tables 5–8 besides the base, in the paper's order
#: (``experiments._protocol.ROWS`` holds their samplers).
ROW_KEYS = ("diagonal", "diagonal-alg8", "spherical", "mle", "grid", *PRESETS)
