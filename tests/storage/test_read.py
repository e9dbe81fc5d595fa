"""The bulk reader and the caching storage return the trials Optuna's own reader returns."""

from __future__ import annotations

import math

import numpy as np
import optuna
from optuna.storages import RDBStorage
from optuna.trial import TrialState
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import make_sampler
from optuna_boxcox import optimize
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._read import read_trials
from optuna_boxcox._optuna._read import refresh_optuna_cache
from optuna_boxcox._optuna._storage import CachedRDBStorage
from optuna_boxcox.storage import open_storage


def _same(mine: list, theirs: list) -> None:
    """Trial by trial: every field, with NaN equal to NaN, and parameters in the same order."""
    assert [t.number for t in mine] == [t.number for t in theirs]
    for a, b in zip(mine, theirs):
        assert trial_id_of(a) == trial_id_of(b)
        assert a.state == b.state
        assert a.values == b.values or (
            a.values is not None
            and b.values is not None
            and all(
                x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a.values, b.values)
            )
        )
        assert a.datetime_start == b.datetime_start
        assert a.datetime_complete == b.datetime_complete
        assert list(a.params.items()) == list(b.params.items())
        assert a.distributions == b.distributions
        assert a.user_attrs == b.user_attrs
        assert a.system_attrs == b.system_attrs
        ia, ib = a.intermediate_values, b.intermediate_values
        assert list(ia) == list(ib)
        assert all(
            x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(ia.values(), ib.values())
        )


def _every_kind_of_trial(study: optuna.Study) -> None:
    """Complete, pruned, failed and running trials; every distribution; NaN, ±inf; attributes."""

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", -3, 3)
        i = trial.suggest_int("i", 1, 9, log=True)
        c = trial.suggest_categorical("c", ["a", None, 2.5, True])
        q = trial.suggest_float("q", 0, 1, step=0.25)
        trial.set_user_attr("list", [1, {"nested": "λ"}])
        trial.set_user_attr("float", 1.5)
        trial.storage.set_trial_system_attr(trial_id_of(trial), "sys", "z")
        trial.report(0.5, 1)
        trial.report(float("nan"), 2)
        trial.report(float("-inf"), 3)
        if trial.number % 7 == 3:
            raise optuna.TrialPruned()
        if trial.number % 5 == 4:
            raise RuntimeError("a failed trial")
        if trial.number == 2:
            return math.inf
        return x * i + q + (c is None)

    study.optimize(objective, n_trials=25, catch=(RuntimeError,))
    running = study.ask()
    running.suggest_float("x", -3, 3)


def test_the_bulk_reader_reads_every_kind_of_trial_as_optuna_does(url):
    # Written by study.optimize through the package's storage (Optuna 4.2's own cache cannot find
    # the best trial on PostgreSQL with SQLAlchemy 2.1), read back by Optuna's reader.
    study = optuna.create_study(storage=open_storage(url), study_name="kinds")
    _every_kind_of_trial(study)
    # Another study in between: its trial ids interleave.
    other = optuna.create_study(storage=open_storage(url), study_name="other")
    other.optimize(lambda t: t.suggest_float("y", 0, 1), n_trials=3)
    _every_kind_of_trial(study)
    backend = RDBStorage(url)
    theirs = backend.get_all_trials(study_id_of(study))
    with backend.engine.connect() as connection:
        mine = read_trials(connection, study_id_of(study))
    assert {t.state for t in mine} >= {
        TrialState.COMPLETE,
        TrialState.PRUNED,
        TrialState.FAIL,
        TrialState.RUNNING,
    }
    _same(mine, theirs)
    # The caching storage, read twice (the second time from its cache plus the unfinished trial).
    cached = open_storage(url)
    assert isinstance(cached, CachedRDBStorage)
    _same(cached.get_all_trials(study_id_of(study)), theirs)
    _same(cached.get_all_trials(study_id_of(study), deepcopy=False), theirs)
    _same(
        cached.get_all_trials(study_id_of(study), states=(TrialState.PRUNED,)),
        [t for t in theirs if t.state == TrialState.PRUNED],
    )


def test_the_caching_storage_sees_what_other_processes_write_and_finish(tmp_path):
    url = f"sqlite:///{tmp_path / 'seen.db'}"
    mine = open_storage(url)
    study = optuna.create_study(storage=mine, study_name="s")
    running = study.ask()
    running.suggest_float("x", 0, 1)
    assert len(mine.get_all_trials(study_id_of(study))) == 1
    # Another process (another storage object) finishes the running trial and adds two.
    theirs = optuna.load_study(study_name="s", storage=url)
    theirs.tell(running.number, 0.5)
    theirs.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    seen = mine.get_all_trials(study_id_of(study))
    _same(seen, RDBStorage(url).get_all_trials(study_id_of(study)))
    assert [t.state for t in seen] == [TrialState.COMPLETE] * 3


def test_trials_handed_to_the_cache_with_a_gap_leave_the_gap_to_be_read(tmp_path):
    """A run that wrote trials 0–1, then (after another process wrote 2–3) trials 4–5, and hands
    all four to the cache at once: the next read still finds 2 and 3."""
    url = f"sqlite:///{tmp_path / 'gap.db'}"
    mine = open_storage(url)
    study = optuna.create_study(storage=mine, study_name="s")
    theirs = optuna.load_study(study_name="s", storage=url)
    backend = RDBStorage(url)

    def add(target: optuna.Study, n: int) -> None:
        for _ in range(n):
            target.add_trial(
                optuna.trial.create_trial(
                    params={"x": 0.5},
                    distributions={"x": optuna.distributions.FloatDistribution(0, 1)},
                    value=1.0,
                )
            )

    add(optuna.load_study(study_name="s", storage=backend), 2)
    add(theirs, 2)
    add(optuna.load_study(study_name="s", storage=backend), 2)
    written = [t for t in backend.get_all_trials(study_id_of(study)) if t.number in (0, 1, 4, 5)]
    mine.add_finished_trials(study_id_of(study), written)
    seen = mine.get_all_trials(study_id_of(study))
    assert [t.number for t in seen] == [0, 1, 2, 3, 4, 5], "the cache skipped others' trials"


def _batched_study(url: str, name: str, X, y, sampler: str, **kwargs) -> optuna.Study:
    study = optuna.create_study(
        storage=open_storage(url),
        study_name=name,
        direction="maximize",
        sampler=make_sampler(sampler, seed=0),
    )
    optimize(study, BoxCoxObjective(X, y, GaussianNB()), **kwargs)
    return study


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_trials_a_batched_run_wrote_are_the_ones_optuna_reads_back(
    tmp_path, breast_cancer, n_jobs
):
    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    url = f"sqlite:///{tmp_path / 'batched.db'}"
    study = _batched_study(url, "b", X, y, "iterative", n_jobs=n_jobs)
    in_memory = study.get_trials(deepcopy=False)  # from the writer's cache: nothing read back
    _same(in_memory, RDBStorage(url).get_all_trials(study_id_of(study)))
    assert len(in_memory) == 4 * 4 * 11


def test_a_batched_study_read_by_a_new_process_equals_optunas_reading(tmp_path, breast_cancer):
    X, y = breast_cancer.data.iloc[:, :5], breast_cancer.target
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    study = _batched_study(url, "b", X, y, "shift", n_trials=300)
    _batched_study(url, "c", X, y, "spherical")  # another study in the same file
    fresh = open_storage(url)
    _same(
        fresh.get_all_trials(study_id_of(study)),
        RDBStorage(url).get_all_trials(study_id_of(study)),
    )
    values = [t.value for t in fresh.get_all_trials(study_id_of(study))]
    assert len(values) == 300 and np.all(np.isfinite(values))


def test_a_cached_trial_past_a_gap_does_not_let_reads_skip_the_gap(tmp_path):
    """The cache read 0–1, another process wrote 2–4, this process looked up trial 3 alone and is
    then handed 3–4: as many trials as the cache lacks, yet number 2 is still unread."""
    url = f"sqlite:///{tmp_path / 'hole.db'}"
    mine = open_storage(url)
    study = optuna.create_study(storage=mine, study_name="s")
    backend = RDBStorage(url)
    theirs = optuna.load_study(study_name="s", storage=backend)

    def add(n: int) -> None:
        for _ in range(n):
            theirs.add_trial(
                optuna.trial.create_trial(
                    params={"x": 0.5},
                    distributions={"x": optuna.distributions.FloatDistribution(0, 1)},
                    value=1.0,
                )
            )

    add(2)
    assert len(mine.get_all_trials(study_id_of(study))) == 2
    add(3)
    stored = backend.get_all_trials(study_id_of(study))
    mine.get_trial(trial_id_of(stored[3]))
    mine.add_finished_trials(study_id_of(study), stored[3:])
    seen = mine.get_all_trials(study_id_of(study))
    assert [t.number for t in seen] == [0, 1, 2, 3, 4], "the cache skipped trial 2"


# -- a study opened by Optuna itself (optuna.create_study(storage=URL)) --------------------------


def _trials_optuna_builds(monkeypatch) -> list[int]:
    """The numbers of the trials Optuna's ORM reader builds from here on, one by one."""
    built: list[int] = []
    build = RDBStorage._build_frozen_trial_from_trial_model

    def counted(self, model):
        trial = build(self, model)
        built.append(trial.number)
        return trial

    monkeypatch.setattr(RDBStorage, "_build_frozen_trial_from_trial_model", counted)
    return built


def test_optunas_own_cache_refreshed_in_bulk_holds_what_optuna_reads(url, monkeypatch):
    study = optuna.create_study(storage=open_storage(url), study_name="kinds")
    _every_kind_of_trial(study)
    theirs = RDBStorage(url).get_all_trials(study_id_of(study))
    loaded = optuna.load_study(study_name="kinds", storage=url)  # Optuna's own cache
    built = _trials_optuna_builds(monkeypatch)
    assert refresh_optuna_cache(storage_of(loaded), study_id_of(loaded))
    _same(loaded.get_trials(deepcopy=False), theirs)
    running = [t.number for t in theirs if t.state == TrialState.RUNNING]
    assert set(built) <= set(running), "Optuna read finished trials again, one by one"
    # Another process finishes the running trial and adds more: read in bulk in their turn.
    study.tell(running[0], 0.25)
    study.optimize(lambda t: t.suggest_float("x", -3, 3), n_trials=3)
    monkeypatch.undo()
    theirs = RDBStorage(url).get_all_trials(study_id_of(study))
    built = _trials_optuna_builds(monkeypatch)
    assert refresh_optuna_cache(storage_of(loaded), study_id_of(loaded))
    _same(loaded.get_trials(deepcopy=False), theirs)
    assert built == [], "Optuna read trials the bulk read had brought up to date"


def test_only_optunas_cache_over_an_rdb_storage_is_refreshed(tmp_path):
    in_memory = optuna.create_study()
    assert not refresh_optuna_cache(storage_of(in_memory), study_id_of(in_memory))
    ours = optuna.create_study(storage=open_storage(f"sqlite:///{tmp_path / 'ours.db'}"))
    assert not refresh_optuna_cache(storage_of(ours), study_id_of(ours))


def test_a_finished_study_a_script_opens_with_optuna_is_read_back_in_bulk(
    tmp_path, breast_cancer, monkeypatch
):
    """examples/quickstart.py run a second time: the search is finished, and reading its trials
    back through Optuna's reader (one ORM object per row) took longer than the search."""
    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    url = f"sqlite:///{tmp_path / 'quickstart.db'}"

    def run() -> tuple:
        study = optuna.create_study(
            direction="maximize",
            sampler=make_sampler("iterative", seed=0),
            storage=url,
            study_name="bc",
            load_if_exists=True,
        )
        result = optimize(study, BoxCoxObjective(X, y, GaussianNB()))
        return study, result

    _, first = run()
    built = _trials_optuna_builds(monkeypatch)
    study, again = run()
    assert built == [], f"Optuna's reader built {len(built)} trials one by one"
    assert (again.params, again.best_value) == (first.params, first.best_value)
    assert len(study.get_trials(deepcopy=False)) == 4 * 4 * 11
    _same(study.get_trials(deepcopy=False), RDBStorage(url).get_all_trials(study_id_of(study)))
