"""Opening a study: the first steps of every study's lifecycle, written once.

Create the study or resume it (deleting it first to start over), refuse it if it holds another
experiment — before anything is written into it —, then record what it is continued with: the
caller's settings and the arguments of the Optuna sampler that searches it, each refused when
the study was run with others. :func:`~optuna_boxcox._lifecycle._search.run_search` opens every search's
study here; the studies that are not searches of Λ (a meta-study over search settings, the fixed
transforms' scores, a reproduction's experiment studies) open theirs here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import optuna
from optuna.trial import TrialState

from optuna_boxcox._optuna import count_trials
from optuna_boxcox._optuna._capabilities import refuse_long_names
from optuna_boxcox._study._settings import record_settings
from optuna_boxcox.samplers import record_sampler

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.storages import BaseStorage


@dataclass(frozen=True)
class Recorded:
    """Settings a study records (user attribute ``attr``) and may only be continued with.

    Attributes:
        attr: The study user attribute holding them (shown in the dashboard).
        values: The settings, JSON-ready.
        alternative: What would continue the study instead, in the refusal's message.
    """

    attr: str
    values: Mapping[str, Any]
    alternative: str = "use the same settings to continue it"


def open_study(
    storage: BaseStorage | None,
    study_name: str | None,
    *,
    directions: Sequence[str] = ("maximize",),
    sampler: optuna.samplers.BaseSampler | None = None,
    restart: bool = False,
    check: Callable[[optuna.Study], Any] | None = None,
    settings: Recorded | None = None,
    param_names: Sequence[str] = (),
) -> optuna.Study:
    """Create the study ``study_name``, or resume it when it exists.

    Args:
        storage: An opened storage (None: in memory).
        study_name: The study's name (None: Optuna makes one up).
        directions: The study's directions.
        sampler: The sampler searching it; the arguments of one of Optuna's samplers that
            :func:`~optuna_boxcox.samplers.make_sampler` built are recorded.
        restart: Delete the study of this name first.
        check: Refuses a study of another experiment (raises), called before anything is
            written into it.
        settings: Settings the study records and may only be continued with.
        param_names: The parameters its trials will have (a search's columns): a name longer
            than the storage keeps is refused before the study is created.

    Raises:
        ValueError: The study was run with other settings or another sampler (or ``check``'s
            own error), or its name or a parameter's is longer than the storage keeps.
    """
    refuse_long_names(storage, [] if study_name is None else [study_name], "study")
    refuse_long_names(storage, param_names, "column")
    if restart and study_name is not None:
        try:
            optuna.delete_study(study_name=study_name, storage=storage)
        except KeyError:
            pass  # nothing to start over
    study = optuna.create_study(
        storage=storage,
        study_name=study_name,
        sampler=sampler,
        directions=list(directions),
        load_if_exists=True,
    )
    return prepare_study(study, check=check, settings=settings)


def load_study(storage: BaseStorage, study_name: str) -> optuna.Study:
    """The study ``study_name`` as it is in ``storage`` (to read it, or to join it with the spec it
    records); KeyError when there is none. Studies are created or resumed by :func:`open_study`."""
    return optuna.load_study(study_name=study_name, storage=storage)


def prepare_study(
    study: optuna.Study,
    *,
    check: Callable[[optuna.Study], Any] | None = None,
    settings: Recorded | None = None,
) -> optuna.Study:
    """What :func:`open_study` does to a study once it is open, for a study given as it is:
    ``check`` it, record ``settings`` and its sampler's arguments (each refused when the study was
    run with others)."""
    if check is not None:
        check(study)
    recorded = study.user_attrs
    if settings is not None:
        record_settings(
            study,
            settings.attr,
            settings.values,
            recorded=recorded,
            alternative=settings.alternative,
        )
    record_sampler(study, study.sampler, recorded=recorded)
    return study


#: The trials a study's budget counts: those that were scored. A failed trial (a claim of a
#: worker that died, say) is run again, and one put back WAITING is scored by the next run.
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def trials_left(study: optuna.Study, total: int) -> int:
    """How many trials a study must still finish to hold ``total`` finished ones (COMPLETE or
    PRUNED: a pruned trial was scored, on fewer rows)."""
    return max(0, int(total) - count_trials(study, FINISHED))
