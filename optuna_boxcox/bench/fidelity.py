"""Rows as the fidelity, as a user measures it: whole ``search`` commands on held-out data.

For each data set and classifier the rows are split once, 70 % to search and 30 % held out
(stratified, seed 0). Three whole ``optuna-boxcox search --sampler iterative`` commands run on the
70 %, alternating over the repeats so that the machine's drift hits them alike:

- ``exact``: every candidate scored on all rows (``--fidelity exact``);
- ``auto``: ``--fidelity auto`` (successive halving over row subsets when it pays);
- ``subsample``: ``--subsample N`` with N chosen to take about auto's time: rows scale the cost of
  a search by roughly ``rows ** b``, with the exponent ``b`` that auto measured for this classifier
  (1 when it recorded none); the times printed are the measured ones.

Each chosen Λ (the confirmed one when the search confirmed on all rows) is fitted with the
classifier on the 70 % and scored on the 30 %. The table gives wall seconds (medians), peak
resident memory, held-out accuracy, and auto's accuracy and speed against exact.

What ``auto`` estimated before its search (the time of the search it chose, and of the exact
one) is set beside the search's own time measured after it (``optimize``, without the
command's start-up; medians): :func:`format_estimates`. An estimate ``auto`` made without
timing anything (data small for the classifier) is an upper bound, marked ``≤``. Modes can be
left out (``modes``): the exact search of a 50,000-row case takes hours.
"""

from __future__ import annotations

import json
from pathlib import Path
import sqlite3
import statistics
from typing import Any
import warnings

import numpy as np

from optuna_boxcox.bench.end_to_end import timed_python

#: The modes compared, in the order they run.
MODES = ("exact", "auto", "subsample")
#: How the bench's header names them.
MODE_TITLES = {
    "exact": "exact",
    "auto": "--fidelity auto",
    "subsample": "--subsample at about auto's time",
}
#: Rows of each data set (a larger one is stratified-sampled down to this).
DEFAULT_ROWS = 5000
HELD_OUT = 0.3


def load_case(data: str, rows: int) -> tuple[str, Any, np.ndarray]:
    """``scale`` (the synthetic scale generator) or ``csv:PATH`` (class in the last column named
    ``y``, ``label`` or ``class``, else the last column), cut to ``rows`` rows, stratified."""
    import pandas as pd

    from optuna_boxcox.bench.scale import scale_data
    from optuna_boxcox.experiments.benchmark import subsample

    if data == "scale":
        X, y = scale_data(rows)
        return f"scale{rows}", pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]), y
    if not data.startswith("csv:"):
        raise ValueError(f"fidelity data must be 'scale' or 'csv:PATH', got {data!r}")
    path = Path(data[4:])
    frame = pd.read_csv(path)
    label = next((c for c in ("y", "label", "class") if c in frame.columns), frame.columns[-1])
    y = frame.pop(label).to_numpy()
    if len(y) > rows:
        keep = subsample(y, rows)
        frame, y = frame.iloc[keep].reset_index(drop=True), y[keep]
    return path.stem, frame, y


def _split(X: Any, y: np.ndarray) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=HELD_OUT, stratify=y, random_state=0)


def _search(csv: Path, classifier: str, db: Path, extra: list[str], workdir: Path) -> Any:
    """One whole ``search`` command, timed; its peak memory as the command reports it (it ends
    with ``os._exit``, so no exit hook of the timing wrapper runs)."""
    timings = workdir / "fidelity-timings.json"
    for path in (db, timings):
        path.unlink(missing_ok=True)
    timed = timed_python(
        "optuna_boxcox.cli",
        [
            "search",
            "--csv",
            str(csv),
            "--label",
            "y",
            "--classifier",
            classifier,
            "--sampler",
            "iterative",
            "--storage",
            f"sqlite:///{db}",
            "--study-name",
            "fidelity",
            "--report-timings",
            str(timings),
            *extra,
        ],
        workdir,
    )
    reported = json.loads(timings.read_text())
    timed.peak_mib = reported["peak_kib"] / 1024
    timed.search_seconds = reported.get("search_seconds")
    return timed


def chosen(db: Path) -> tuple[dict[str, float], dict[str, Any]]:
    """The Λ a search chose (confirmed on all rows when it confirmed) and what its objective
    recorded about itself (evaluator, fidelity)."""
    with sqlite3.connect(db) as connection:
        attrs = dict(
            connection.execute("SELECT key, value_json FROM study_user_attributes").fetchall()
        )
    result = json.loads(attrs["boxcox_result"])["params"]
    confirmed = json.loads(attrs.get("boxcox_confirmed", "null"))
    described = json.loads(attrs.get("boxcox_evaluator", "{}"))
    return (confirmed["best"] if confirmed else result), described


def held_out_accuracy(lambdas: dict[str, float], classifier: str, split: tuple) -> float:
    """Λ's transform and the classifier fitted on the searched part, accuracy on the held-out."""
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline

    from optuna_boxcox import BoxCoxTransformer
    from optuna_boxcox.classifiers import make_classifier

    X_train, X_test, y_train, y_test = split
    names = list(X_train.columns)
    model = make_pipeline(
        BoxCoxTransformer(lambdas=[lambdas[n] for n in names]), clone(make_classifier(classifier))
    )
    with warnings.catch_warnings():
        # The search printed the data's warnings already (extreme values, say).
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    return float(np.mean(model.predict(X_test) == y_test))


def _exponent(described: dict[str, Any]) -> float:
    exponent = (described.get("fidelity") or {}).get("exponent")
    return float(exponent) if exponent else 1.0


def measure(
    data: str,
    classifier: str,
    workdir: Path,
    *,
    rows: int = DEFAULT_ROWS,
    repeats: int = 1,
    modes: tuple[str, ...] = MODES,
) -> dict[str, Any]:
    """The searches of ``modes`` on one data set and classifier (see the module's docstring);
    ``subsample`` needs ``exact`` and ``auto`` before it."""
    unknown = [m for m in modes if m not in MODES]
    if unknown or ("subsample" in modes and not {"exact", "auto"} <= set(modes)):
        raise ValueError(
            f"fidelity modes must be among {', '.join(MODES)}, subsample with exact and auto; "
            f"got {','.join(modes)}"
        )
    modes = tuple(m for m in MODES if m in modes)
    name, X, y = load_case(data, rows)
    split = _split(X, y)
    X_train, _, y_train, _ = split
    csv = workdir / f"fidelity-{name}.csv"
    frame = X_train.copy()
    frame["y"] = y_train
    frame.to_csv(csv, index=False)
    n_train = len(y_train)
    # Not timed: the first search on a machine compiles and caches the scorers' machine code.
    _search(csv, classifier, workdir / "fidelity-warm-up.db", ["--n-trials", "3"], workdir)
    times: dict[str, list[float]] = {m: [] for m in modes}
    searched: dict[str, list[float]] = {m: [] for m in modes}
    peaks: dict[str, float] = dict.fromkeys(modes, 0.0)
    accuracy: dict[str, float] = {}
    size = None
    exponent, auto_choice = 1.0, {}
    for k in range(repeats):
        for mode in modes:
            db = workdir / f"fidelity-{name}-{classifier}-{mode}.db"
            if mode == "subsample":
                if size is None:
                    ratio = statistics.median(times["auto"]) / statistics.median(times["exact"])
                    size = int(n_train * ratio ** (1 / max(exponent, 0.5)))
                    size = min(n_train, max(size, 20 * len(np.unique(y_train))))
                extra = ["--subsample", str(size)] if size < n_train else []
            else:
                extra = ["--fidelity", mode]
            timed = _search(csv, classifier, db, extra, workdir)
            times[mode].append(timed.seconds)
            if timed.search_seconds is not None:
                searched[mode].append(timed.search_seconds)
            peaks[mode] = max(peaks[mode], timed.peak_mib)
            if k == 0:
                lambdas, described = chosen(db)
                accuracy[mode] = held_out_accuracy(lambdas, classifier, split)
                if mode == "auto":
                    exponent = _exponent(described)
                    auto_choice = (described.get("fidelity") or {}) if described else {}
    seconds = {m: statistics.median(t) for m, t in times.items()}
    both = "exact" in seconds and "auto" in seconds
    return {
        "data": name,
        "classifier": classifier,
        "rows": n_train,
        "modes": modes,
        "seconds": seconds,
        "search_seconds": {m: statistics.median(t) for m, t in searched.items() if t},
        "peak_mib": peaks,
        "accuracy": accuracy,
        "subsample": size,
        "auto": auto_choice,
        "speedup": seconds["exact"] / seconds["auto"] if both else None,
        "points": 100 * (accuracy["auto"] - accuracy["exact"]) if both else None,
        "repeats": repeats,
    }


def estimates(row: dict[str, Any]) -> dict[str, Any]:
    """What ``auto`` estimated (seconds, priced by the classifier's cost class) for the search it
    chose and for the exact one, and the measured search times they are to be set beside."""
    choice = row.get("auto") or {}
    exact = choice.get("exact_minutes")
    chosen = exact if choice.get("fidelity") is None else choice.get("search_minutes")
    return {
        "auto": None if chosen is None else 60 * chosen,
        "exact": None if exact is None else 60 * exact,
        "chose": "exact" if choice.get("fidelity") is None else "halving",
        "measured": row.get("search_seconds", {}),
    }


def format_estimates(rows: list[dict[str, Any]]) -> str:
    """Estimated against measured search seconds, per case: auto's search and the exact one
    (where it ran); the ratio measured / estimated (the acceptance asks 0.5–2)."""
    from optuna_boxcox.experiments.compare import text_table

    header = ["data", "clf", "rows", "auto chose", "est auto s", "meas auto s", "meas/est"]
    header += ["est exact s", "meas exact s", "meas/est"]
    cells = []
    for r in rows:
        e = estimates(r)
        line = [r["data"], r["classifier"], str(r["rows"]), e["chose"]]
        for mode in ("auto", "exact"):
            est, meas = e[mode], e["measured"].get(mode)
            line += [
                "—" if est is None else _seconds_text(est),
                "—" if meas is None else _seconds_text(meas),
                "—" if est is None or meas is None or est <= 0 else f"{meas / est:.2f}",
            ]
        cells.append(line)
    return "\n".join(text_table(header, cells))


def _seconds_text(seconds: float) -> str:
    """Seconds to a tenth, or to two significant digits under a tenth (a search of a few hundred
    rows takes milliseconds, which a tenth would print as 0.0)."""
    return f"{seconds:.1f}" if seconds >= 0.1 else f"{seconds:.2g}"


def format_rows(rows: list[dict[str, Any]]) -> str:
    from optuna_boxcox.experiments.compare import text_table

    header = ["data", "clf", "rows", "exact s", "auto s", "sub s", "sub N", "MiB e/a/s"]
    header += ["acc exact", "auto", "sub", "auto−exact", "speed-up"]
    cells = []
    for r in rows:
        s, a, m = r["seconds"], r["accuracy"], r["peak_mib"]
        cells.append(
            [
                r["data"],
                r["classifier"],
                str(r["rows"]),
                *(f"{s[mode]:.1f}" if mode in s else "—" for mode in MODES),
                str(r["subsample"]),
                "/".join(f"{m[mode]:.0f}" if mode in m else "—" for mode in MODES),
                *(f"{100 * a[mode]:.2f}" if mode in a else "—" for mode in MODES),
                "—" if r["points"] is None else f"{r['points']:+.2f}",
                "—" if r["speedup"] is None else f"{r['speedup']:.1f}×",
            ]
        )
    lines = text_table(header, cells)
    paired = [r for r in rows if r["points"] is not None]
    if paired:
        points = [r["points"] for r in paired]
        line = (
            f"auto − exact: mean {statistics.mean(points):+.2f} points, worst {min(points):+.2f}"
        )
        subs = [
            100 * (r["accuracy"]["auto"] - r["accuracy"]["subsample"])
            for r in paired
            if "subsample" in r["accuracy"]
        ]
        if subs:
            line += f"; auto − subsample: mean {statistics.mean(subs):+.2f} points"
        lines.append(line)
    return "\n".join(lines)
