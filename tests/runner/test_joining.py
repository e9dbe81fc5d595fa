"""Workers finding each other: claims that take what is free, a lone worker whose first batch is
joined while it scores it."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import make_sampler
from optuna_boxcox import optimize
from optuna_boxcox._optuna import _claims
from optuna_boxcox.bench import workers
from optuna_boxcox.bench.workers import SleepClassifier
from optuna_boxcox.bench.workers import WorkersCase
from optuna_boxcox.bench.workers import case_data
from optuna_boxcox.samplers._ledger import POSITION_KEY
from optuna_boxcox.storage import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(url, name="s"):
    return optuna.create_study(
        study_name=name,
        direction="maximize",
        sampler=make_sampler("iterative", 0),
        storage=open_storage(url),
    )


def test_a_claim_takes_at_most_the_first_free_positions(tmp_path):
    X, y = make_classification(200, 3, n_informative=2, n_redundant=0, random_state=0)
    objective = BoxCoxObjective(np.exp(X / 2), y, GaussianNB())
    study = _study(f"sqlite:///{tmp_path}/c.db")
    objective.register(study)
    run = study.sampler.start_run(study)
    names = run.space.names
    claims = [_claims.Claim(p, dict.fromkeys(names, 1.0), {}) for p in range(6)]

    def claim(chunk, owner, at_most=None):
        got = _claims.claim(
            study,
            chunk,
            run.space.distributions(),
            position_key=run.position_key,
            owner=owner,
            at_most=at_most,
        )
        return [c.position for c in got]

    other = "elsewhere:1:1"  # a worker on another machine: never taken for dead
    assert claim(claims[1:3], other) == [1, 2]
    # The first two free ones, in order, past those another worker holds: one transaction.
    assert claim(claims, run.owner, at_most=2) == [0, 3]
    assert claim(claims, run.owner, at_most=5) == [4, 5]
    assert claim(claims, run.owner, at_most=1) == []


def _positions(study):
    return {
        t.system_attrs[POSITION_KEY]: (t.number, t.state, tuple(sorted(t.params.items())), t.value)
        for t in study.get_trials(deepcopy=False)
    }


@pytest.mark.parametrize("joined", [False, True])
def test_a_lone_workers_first_batch_is_shared_with_a_worker_that_joins_while_it_scores(
    tmp_path, monkeypatch, joined
):
    """Workers started together: the first may find nobody yet. It scores its first batch a
    piece at a time and looks for others between pieces: one that joined gets the rest of the
    batch through claims (here a partner that claims nothing, so this worker claims them)."""
    X, y = case_data(WorkersCase("sleep", 200, 3))
    url = f"sqlite:///{tmp_path}/j.db"
    fits = []
    fit = SleepClassifier.fit

    def announcing(self, X, y):
        fits.append(1)
        if joined and len(fits) == 1:  # another worker announces itself during the first fit
            _claims.announce(study, "elsewhere:1:1")
        return fit(self, X, y)

    monkeypatch.setattr(workers.SleepClassifier, "fit", announcing)
    study = _study(url)
    objective = BoxCoxObjective(X, y, SleepClassifier(0.15))
    optimize(study, objective, n_trials=11)  # the first sweep: 11 points of 0.15 s
    assert len(fits) == 11
    found = _positions(study)
    assert sorted(found) == list(range(11))
    assert all(state == optuna.trial.TrialState.COMPLETE for _, state, _, _ in found.values())
    # The oracle: a lone worker's trials, position by position.
    alone = _study(url, "alone")
    optimize(alone, BoxCoxObjective(X, y, SleepClassifier(0.0)), n_trials=11)
    reference = _positions(alone)
    assert {p: v[2:] for p, v in found.items()} == {p: v[2:] for p, v in reference.items()}
    numbers = [found[p][0] for p in range(11)]
    if joined:
        # The first point was scored alone and written after the batch; the other ten were
        # claimed one chunk at a time (numbered first), once the partner was seen.
        assert numbers[0] == 10 and sorted(numbers[1:]) == list(range(10))
    else:
        assert numbers == list(range(11)) == [reference[p][0] for p in range(11)]
