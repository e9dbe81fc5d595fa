"""Every paper preset writes the trials of its plan, point for point, on any machine.

Two oracles: the plan driven by a plain loop on this machine (every candidate in order, its
value), and the digests in tests/runner/data/recorded_trials.json recorded by
tests/runner/recorded_trials.py. A digest hashes every trial's number, state, parameters and value,
and holds only where this machine computes the recorded MLE start point bit for bit (see
recorded_trials.py); where it does not, the search must still end with the recorded score.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import recorded_trials as rec

from optuna_boxcox.bench.components import plain_loop_score
from optuna_boxcox.classifiers import make_classifier

RECORDED = json.loads(rec.RECORD.read_text())
#: Small enough for CI: one data set and classifier over every preset, and the sonar cases that
#: finish in seconds. The whole matrix runs under ``-m slow``.
QUICK = {
    # Nelder–Mead (not a paper preset, 56 s here) is checked against scipy's in test_nelder_mead.
    *(f"breast_cancer/bayes/{s}" for s in rec.SAMPLERS if s != "nelder-mead"),
    *(f"sonar/knn/{s}" for s in ("iterative", "spherical", "diagonal", "mle")),
}
#: Samplers whose own arithmetic moves with the CPU's vector units: Nelder–Mead's simplex steps
#: (NumPy's reductions) end in other last bits with AVX2 disabled, whatever the start point.
CPU_BITS = {"nelder-mead"}
#: Values checked against the paper's pseudo-code (scipy's Box-Cox, a fresh StandardScaler and
#: classifier) at this many points of each plan, spread over it.
PAPER_CHECKS = 12


def _params(case: str):
    marks = () if case in QUICK else (pytest.mark.slow,)
    return pytest.param(case, marks=marks, id=case)


@pytest.mark.long
@pytest.mark.parametrize("case", [_params("/".join(c)) for c in rec.cases()])
def test_preset_writes_its_plan_and_the_recorded_trials(case, tmp_path):
    dataset, classifier, sampler = case.split("/")
    if dataset == "sonar" and not rec.SONAR.exists():
        pytest.skip(
            f"sonar not found at {rec.SONAR} (the shared data folder is not beside the repo)"
        )
    study, result = rec.search(dataset, classifier, sampler, f"sqlite:///{tmp_path}/s.db")
    names, candidates, seen = rec.plain_loop(dataset, classifier, sampler)

    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    assert len(trials) == len(candidates), (
        f"{case}: {len(trials)} trials, the plan has {len(candidates)}"
    )
    for trial, x in zip(trials, candidates):
        got = np.array([trial.params[n] for n in names])
        assert np.array_equal(got, x), f"{case}: trial {trial.number} is not the plan's point"
        assert trial.value == seen[x.tobytes()], f"{case}: trial {trial.number}'s value"

    X, y = rec.load(dataset)
    X, y = X.to_numpy(dtype=np.float64), np.asarray(y)
    unique = list(seen)
    for key in unique[:: max(1, len(unique) // PAPER_CHECKS)]:
        x = np.frombuffer(key)
        assert seen[key] == plain_loop_score(X, y, x, make_classifier(classifier)), (
            f"{case}: the objective's value at {x} is not the paper's pseudo-code's"
        )

    got, want = rec.summary(study, result, dataset), RECORDED[case]
    assert (got["n_trials"], got["best_value"]) == (want["n_trials"], want["best_value"]), (
        f"{case}: the search now ends elsewhere than before"
    )
    if got["start"] != want["start"] or sampler in CPU_BITS:
        # Another CPU's last bits: the plan matched the plain loop above; the end must be the
        # record's up to those bits.
        for name, value in want["best_params"].items():
            assert got["best_params"][name] == pytest.approx(value, abs=1e-5), f"{case}: {name}"
        return
    assert got["best_params"] == want["best_params"], f"{case}: the search now ends elsewhere"
    assert got["sha256"] == want["sha256"], f"{case}: same end, but other trials than before"
