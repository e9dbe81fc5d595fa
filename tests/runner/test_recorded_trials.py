"""Every paper preset writes the same trials as before the redesign of the runner and objective.

The reference digests in tests/runner/data/recorded_trials.json were recorded by tests/runner/recorded_trials.py
on the code before the change; a digest hashes every trial's number, state, parameters and value.
"""

from __future__ import annotations

import json

import pytest
import recorded_trials as rec

RECORDED = json.loads(rec.RECORD.read_text())
#: Small enough for CI: one data set and classifier over every preset, and the sonar cases that
#: finish in seconds. The whole matrix runs under ``-m slow``.
QUICK = {
    *(f"breast_cancer/bayes/{s}" for s in rec.SAMPLERS),
    *(f"sonar/knn/{s}" for s in ("iterative", "spherical", "diagonal", "mle")),
}


def _params(case: str):
    marks = () if case in QUICK else (pytest.mark.slow,)
    return pytest.param(case, marks=marks, id=case)


@pytest.mark.parametrize("case", [_params("/".join(c)) for c in rec.cases()])
def test_preset_writes_the_trials_recorded_before(case, tmp_path):
    dataset = case.split("/")[0]
    if dataset == "sonar" and not rec.SONAR.exists():
        pytest.skip(
            f"sonar not found at {rec.SONAR} (the shared data folder is not beside the repo)"
        )
    got = rec.run(*case.split("/"), f"sqlite:///{tmp_path}/s.db")
    want = RECORDED[case]
    assert (got["n_trials"], got["best_value"], got["best_params"]) == (
        want["n_trials"],
        want["best_value"],
        want["best_params"],
    ), f"{case}: the search now ends elsewhere than before"
    assert got["sha256"] == want["sha256"], f"{case}: same end, but other trials than before"
