"""The data users have: the default fit against the pipelines as the rows grow.

    optuna-boxcox bench --sections rows --rows-sizes 10000,100000,1000000 --rows-features 20

For each size, the data are ``make_classification(n + 100,000, features, n_informative=10,
random_state=0)`` then ``exp(X / 2)``; the last 100,000 rows are held out. They are made once
per size by a process of their own and saved as ``.npy`` files, so that a fit's process holds
the training array as a user's would (read whole) and its peak memory is the fit's, not the
generator's. Each fit is then a fresh process (imports included, nothing fitted before) that
times one of:

- ``pipeline``: ``make_pipeline(StandardScaler(), clf).fit``;
- ``mle``: ``make_pipeline(BoxCoxTransformer(lambdas="mle"), clf).fit`` (the MLE Λ of all rows);
- ``default``: ``BoxCoxClassifier(clf).fit``;

and prints its seconds, held-out accuracy and peak resident memory. The kinds alternate for
``repeats`` rounds (medians). Printed per classifier and size: the three times, default/pipeline,
the three held-out accuracies, each fit's peak memory as a multiple of the training array, and
what the default searched on (all rows, or the sample the plan chose). Beneath each classifier:
whether any size took longer than the largest (a hump in the cost curve).
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
from typing import Any

#: Rows held out beyond the training rows of every size.
HELD_OUT = 100_000
KINDS = ("pipeline", "mle", "default")


@dataclass(frozen=True)
class Cell:
    """One classifier at one size: medians over the rounds."""

    classifier: str
    rows: int
    features: int
    seconds: dict[str, float]
    accuracy: dict[str, float]
    peak: dict[str, float]  # each kind's peak resident memory / the training array's bytes
    searched: str

    @property
    def ratio(self) -> float:
        return self.seconds["default"] / self.seconds["pipeline"]


HEADER = (
    f"{'classifier':<11} {'rows':>10} {'pipeline':>9} {'mle':>8} {'default':>8} {'ratio':>6}  "
    f"{'held-out: default / std / mle':<29} {'peak: default / std / mle':<26} searched on"
)


def format_cell(cell: Cell) -> str:
    s, a = cell.seconds, cell.accuracy
    return (
        f"{cell.classifier:<11} {cell.rows:>10,} {s['pipeline']:>8.2f}s {s['mle']:>7.2f}s "
        f"{s['default']:>7.2f}s {cell.ratio:>5.1f}x  "
        f"{100 * a['default']:>5.1f} / {100 * a['pipeline']:>5.1f} / {100 * a['mle']:>5.1f}"
        f"{'':<10} {cell.peak['default']:>4.1f}x / {cell.peak['pipeline']:>4.1f}x / "
        f"{cell.peak['mle']:>4.1f}x{'':<6} {cell.searched}"
    )


def hump(cells: list[Cell]) -> str:
    """The sizes (of one classifier) where the default took longer than at the largest."""
    largest = max(cells, key=lambda c: c.rows)
    over = [
        c
        for c in cells
        if c.rows < largest.rows and c.seconds["default"] > largest.seconds["default"]
    ]
    if not over:
        return (
            f"no size took longer than {largest.rows:,} rows ({largest.seconds['default']:.1f} s)"
        )
    listed = ", ".join(f"{c.rows:,} rows {c.seconds['default']:.1f} s" for c in over)
    return f"HUMP: longer than at {largest.rows:,} rows ({largest.seconds['default']:.1f} s): {listed}"


def make_data(folder: Path, rows: int, features: int) -> Path:
    """The .npy files of one size (made by a process of its own), reused when present."""
    stem = folder / f"rows{rows}x{features}"
    if not (stem.parent / f"{stem.name}.done").exists():
        code = (
            "import sys, numpy as np\n"
            "from sklearn.datasets import make_classification\n"
            "n, p, stem = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]\n"
            "k = min(10, p)  # scikit-learn's 2 redundant features where there is room\n"
            f"X, y = make_classification(n + {HELD_OUT}, p, n_informative=k, "
            "n_redundant=min(2, p - k), random_state=0)\n"
            "X = np.exp(X / 2)\n"
            "np.save(stem + '-X.npy', X[:n]); np.save(stem + '-y.npy', y[:n])\n"
            "np.save(stem + '-Xt.npy', X[n:]); np.save(stem + '-yt.npy', y[n:])\n"
            "open(stem + '.done', 'w').close()\n"
        )
        subprocess.run(
            [sys.executable, "-c", code, str(rows), str(features), str(stem)], check=True
        )
    return stem


def measure(classifier: str, stem: Path, *, repeats: int, timeout: float) -> Cell:
    """One classifier at one size: the kinds alternating, ``repeats`` rounds of fresh processes."""
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for _ in range(repeats):
        for kind in KINDS:
            runs[kind].append(_child(classifier, stem, kind, timeout))
    last = runs["default"][-1]
    return Cell(
        classifier,
        int(last["rows"]),
        int(last["features"]),
        {kind: statistics.median(r["seconds"] for r in runs[kind]) for kind in KINDS},
        {kind: statistics.median(r["accuracy"] for r in runs[kind]) for kind in KINDS},
        {
            kind: statistics.median(r["peak_bytes"] / r["input_bytes"] for r in runs[kind])
            for kind in KINDS
        },
        str(last.get("searched", "")),
    )


def _child(classifier: str, stem: Path, kind: str, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.bench.rows", classifier, str(stem), kind],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{kind} fit of {classifier} on {stem.name} failed: {done.stderr.strip()[-500:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fit(classifier: str, stem: str, kind: str) -> dict[str, Any]:
    import resource
    import time
    import warnings

    import numpy as np
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from optuna_boxcox import BoxCoxClassifier
    from optuna_boxcox import BoxCoxTransformer
    from optuna_boxcox.classifiers import make_classifier

    warnings.simplefilter("ignore")
    X, y = np.load(stem + "-X.npy"), np.load(stem + "-y.npy")
    clf = make_classifier(classifier)
    if kind == "pipeline":
        model = make_pipeline(StandardScaler(), clf)
    elif kind == "mle":
        model = make_pipeline(BoxCoxTransformer(lambdas="mle"), clf)
    else:
        model = BoxCoxClassifier(clf)
    started = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    searched = ""
    if kind == "default":
        searched = model.fidelity_.get("summary", "").split(" (")[0]
        if model.decision_ is not None:
            searched += f"; {model.decision_.get('chosen')}"
    del X
    Xt, yt = np.load(stem + "-Xt.npy"), np.load(stem + "-yt.npy")
    return {
        "rows": len(y),
        "features": Xt.shape[1],
        "seconds": seconds,
        "accuracy": float(model.score(Xt, yt)),
        "peak_bytes": peak,
        "input_bytes": len(y) * Xt.shape[1] * 8,
        "searched": searched,
    }


if __name__ == "__main__":
    print(json.dumps(_fit(*sys.argv[1:4])))
