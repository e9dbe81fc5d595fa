"""The price of a default fit: ``BoxCoxClassifier(clf).fit`` against ``make_pipeline(StandardScaler(), clf)``.

    optuna-boxcox bench --sections price --csv saheart.csv

Each measurement is a fresh process that imports, reads the CSV and times three fits of one kind,
nothing fitted before it; the two kinds alternate for ``rounds`` rounds. A kind's time is the
median over rounds of each process's median of three fits (the issue's "median of 3, in fresh
processes"); a process's first default fit, which also pays what a process pays once (imports,
Numba's start-up, the compiled code read from its cache), is printed beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
import statistics
import subprocess
import sys


@dataclass(frozen=True)
class PriceRow:
    classifier: str
    pipeline: float  # seconds
    default: float
    first: float  # a process's first default fit

    @property
    def ratio(self) -> float:
        return self.default / self.pipeline


def measure(csv: str, label: str, classifier: str, *, rounds: int, numpy: bool) -> PriceRow:
    """One classifier's row: ``rounds`` alternating pairs of fresh processes."""
    runs: dict[str, list[list[float]]] = {"pipeline": [], "default": []}
    for _ in range(rounds):
        for kind in runs:
            runs[kind].append(_child(csv, label, kind, classifier, numpy=numpy))
    return PriceRow(
        classifier,
        statistics.median(statistics.median(fits) for fits in runs["pipeline"]),
        statistics.median(statistics.median(fits) for fits in runs["default"]),
        statistics.median(fits[0] for fits in runs["default"]),
    )


def format_row(row: PriceRow) -> str:
    return (
        f"{row.classifier:<12} {1e3 * row.pipeline:>8.2f} ms {row.default:>7.3f} s "
        f"{row.ratio:>5.0f}x {row.first:>8.3f} s {row.first / row.pipeline:>14.0f}x"
    )


HEADER = (
    f"{'classifier':<12} {'pipeline':>11} {'default':>9} {'ratio':>6} {'first fit':>10} "
    f"{'first/pipeline':>15}"
)


def _child(csv: str, label: str, kind: str, classifier: str, *, numpy: bool) -> list[float]:
    command = [sys.executable, "-m", "optuna_boxcox.bench.price", csv, label, kind, classifier]
    done = subprocess.run(
        command + (["numpy"] if numpy else []), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the {kind} process for {classifier} failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fits(csv: str, label: str, kind: str, classifier: str, *, numpy: bool) -> list[float]:
    """Seconds of three fits of ``kind`` in this process."""
    import time
    import warnings

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from optuna_boxcox import BoxCoxClassifier
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.datasets import load_csv

    warnings.simplefilter("ignore")  # a convergence warning is not what is measured
    X, y = load_csv(csv, label)
    if numpy:
        X, y = X.to_numpy(dtype=float), y.to_numpy()
    seconds = []
    for _ in range(3):
        started = time.perf_counter()
        if kind == "pipeline":
            make_pipeline(StandardScaler(), make_classifier(classifier)).fit(X, y)
        else:
            BoxCoxClassifier(make_classifier(classifier)).fit(X, y)
        seconds.append(time.perf_counter() - started)
    return seconds


if __name__ == "__main__":  # one measured process: CSV LABEL KIND CLASSIFIER [numpy]
    csv, label, kind, classifier, *numpy = sys.argv[1:]
    print(json.dumps(_fits(csv, label, kind, classifier, numpy=bool(numpy))))
