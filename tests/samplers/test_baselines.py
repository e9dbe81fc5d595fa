"""Optuna's samplers by name mean the same sampler on every Optuna the package supports.

Optuna 5 changed TPE's defaults (multivariate with the constant liar for one objective; TPE
instead of NSGA-II as the multi-objective default), so a ``tpe`` row built from defaults was a
different sampler on 4.x and 5.x. The registry builds them with explicit arguments, which
``search``, ``compare``, ``benchmark`` and the meta-study record in the study (user attribute
``boxcox_sampler``, shown in the dashboard); a study recorded with other arguments is refused.
These tests run unchanged on the lowest and the newest Optuna (the compatibility run).
"""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest

from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.samplers import record_sampler

#: What each name records, literally: the same dictionaries on Optuna 4.2 and 5.x.
EXPECTED = {
    "tpe": {
        "name": "tpe",
        "class": "TPESampler",
        "settings": {
            "seed": 5,
            "constant_liar": True,
            "group": False,
            "multivariate": True,
            "n_ei_candidates": 24,
            "n_startup_trials": 10,
        },
    },
    "random": {"name": "random", "class": "RandomSampler", "settings": {"seed": 5}},
    "cmaes": {
        "name": "cmaes",
        "class": "CmaEsSampler",
        "settings": {
            "seed": 5,
            "consider_pruned_trials": False,
            "lr_adapt": False,
            "n_startup_trials": 1,
            "popsize": None,
            "restart_strategy": None,
            "use_separable_cma": False,
            "warn_independent_sampling": False,
            "with_margin": False,
        },
    },
    "qmc": {
        "name": "qmc",
        "class": "QMCSampler",
        "settings": {"seed": 5, "qmc_type": "sobol", "scramble": False},
    },
    "nsga2": {
        "name": "nsga2",
        "class": "NSGAIISampler",
        "settings": {
            "seed": 5,
            "crossover_prob": 0.9,
            "mutation_prob": None,
            "population_size": 50,
            "swapping_prob": 0.5,
        },
    },
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_named_optuna_sampler_records_its_explicit_arguments(name):
    sampler = make_sampler(name, seed=5)
    study = optuna.create_study(sampler=sampler)
    record_sampler(study, sampler)
    assert study.user_attrs["boxcox_sampler"] == {**EXPECTED[name], "optuna": optuna.__version__}


def test_a_study_made_with_other_arguments_is_not_continued():
    # As if made by a build that took Optuna 4's defaults for TPE (no constant liar).
    study = optuna.create_study()
    made = {**EXPECTED["tpe"], "optuna": "4.2.0"}
    made["settings"] = {**made["settings"], "seed": 0, "constant_liar": False}
    study.set_user_attr("boxcox_sampler", made)
    with pytest.raises(ValueError, match="constant_liar"):
        record_sampler(study, make_sampler("tpe", seed=0))
    with pytest.raises(ValueError, match="name"):
        record_sampler(study, make_sampler("random", seed=0))
    # The same arguments recorded under another Optuna are the same sampler: continued.
    made["settings"]["constant_liar"] = True
    study.set_user_attr("boxcox_sampler", made)
    record_sampler(study, make_sampler("tpe", seed=0))
    assert study.user_attrs["boxcox_sampler"]["optuna"] == optuna.__version__


def test_a_sampler_the_registry_did_not_build_is_not_recorded():
    study = optuna.create_study()
    record_sampler(study, optuna.samplers.TPESampler(seed=0))
    assert "boxcox_sampler" not in study.user_attrs


def _compare(url: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "optuna_boxcox.cli", "compare", "--dataset", "wine"]
    command += ["--features", "2", "--classifier", "bayes", "--samplers", "tpe", "--seeds", "1"]
    command += [
        "--n-trials",
        "12",
        "--storage",
        url,
        "--plot",
        url.replace("sqlite:///", "") + ".html",
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_compare_tpe_records_the_same_arguments_on_every_optuna_and_refuses_others(tmp_path):
    url = f"sqlite:///{tmp_path / 'compare.db'}"
    first = _compare(url)
    assert first.returncode == 0, first.stderr
    (summary,) = [s for s in optuna.get_all_study_summaries(url) if "/tpe/" in s.study_name]
    study = optuna.load_study(study_name=summary.study_name, storage=url)
    recorded = study.user_attrs["boxcox_sampler"]
    assert recorded == {**EXPECTED["tpe"], "optuna": optuna.__version__} | {
        "settings": {**EXPECTED["tpe"]["settings"], "seed": 0}
    }
    # A study made under other arguments (Optuna 4's TPE defaults) is not silently continued.
    recorded["settings"]["constant_liar"] = False
    study.set_user_attr("boxcox_sampler", recorded)
    again = _compare(url)
    assert again.returncode != 0
    assert "constant_liar" in again.stderr, again.stderr
