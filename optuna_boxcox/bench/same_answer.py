"""Same data, same answer: a default ``BoxCoxClassifier`` fit quiet, then beside two busy processes.

    python -m optuna_boxcox.bench.same_answer nn --rows 5000 --features 8

Fits ``BoxCoxClassifier(clf)`` with its defaults on ``make_classification(rows, features,
random_state=0)`` mapped by ``exp(X / 2)``, once as the machine is and once more while two
processes spin, and prints each fit's seconds and whether ``search_lambdas_``, ``lambdas_``,
``decision_``, ``fidelity_`` and the trial digest are identical (issue 43; the suite's
``tests/estimator/test_same_answer.py`` does the same at 1,200 × 4).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import tempfile
import time
from typing import Any

#: What a fit's answer is, in the order :func:`fit_answer` returns it.
ANSWER = ("search_lambdas_", "lambdas_", "decision_", "fidelity_", "trials")


def busy(seconds: float) -> None:
    """Spin for ``seconds`` (a process that keeps one core busy)."""
    end = os.times().elapsed + seconds
    while os.times().elapsed < end:
        pass


def fit_answer(classifier: Any, X: Any, y: Any, storage: str) -> tuple:
    """A default fit's answer, as bytes and text: :data:`ANSWER`."""
    import numpy as np

    from optuna_boxcox import BoxCoxClassifier

    fitted = BoxCoxClassifier(classifier, storage=storage, study_name="s").fit(X, y)
    digest = hashlib.sha256()
    for t in sorted(fitted.study_.get_trials(deepcopy=False), key=lambda t: t.number):
        digest.update(repr((t.number, t.state.name, sorted(t.params.items()), t.values)).encode())
    return (
        np.asarray(fitted.search_lambdas_).tobytes(),
        np.asarray(fitted.lambdas_).tobytes(),
        repr(fitted.decision_),
        repr(fitted.fidelity_),
        digest.hexdigest(),
    )


def quiet_and_busy(classifier: Any, X: Any, y: Any, folder: str) -> tuple[tuple, tuple, list]:
    """The answers of a fit as the machine is and of one beside two busy processes, and the
    seconds of each."""
    seconds = []
    start = time.perf_counter()
    quiet = fit_answer(classifier, X, y, f"sqlite:///{folder}/quiet.db")
    seconds.append(time.perf_counter() - start)
    context = multiprocessing.get_context("spawn")
    spinning = [context.Process(target=busy, args=(7200.0,), daemon=True) for _ in range(2)]
    for process in spinning:
        process.start()
    try:
        start = time.perf_counter()
        loaded = fit_answer(classifier, X, y, f"sqlite:///{folder}/busy.db")
        seconds.append(time.perf_counter() - start)
    finally:
        for process in spinning:
            process.terminate()
            process.join()
    return quiet, loaded, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("classifier", help="a name of optuna_boxcox.classifiers, or logistic")
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--features", type=int, default=8)
    args = parser.parse_args(argv)

    import numpy as np
    from sklearn.datasets import make_classification

    from optuna_boxcox.classifiers import make_classifier

    X, y = make_classification(args.rows, args.features, random_state=0)
    X = np.exp(X / 2)
    with tempfile.TemporaryDirectory() as folder:
        quiet, loaded, seconds = quiet_and_busy(make_classifier(args.classifier), X, y, folder)
    print(f"quiet fit {seconds[0]:.1f} s, busy fit {seconds[1]:.1f} s")
    for what, one, two in zip(ANSWER, quiet, loaded):
        print(f"{what:16} {'identical' if one == two else 'DIFFERS'}")
    print(f"decision {quiet[2]}\nfidelity {quiet[3]}\ndigest {quiet[4]}")


if __name__ == "__main__":
    main()
