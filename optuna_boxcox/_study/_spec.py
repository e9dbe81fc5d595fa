"""What a study is: the search spec, recorded in the study and read back from it.

A study's trials answer one question: which Λ (and transforms and settings) score best for this
classifier on these data, by this score. :class:`SearchSpec` says that question in full — the data
(column names and a fingerprint of X and y), the classifier and its parameters, scoring, cv, the
objectives and their directions, transforms, estimator parameters, subsample, λ bounds, fidelity —
and how it is searched (the sampler, its settings, the seed). Every command and the estimator build their
objective from a spec, and the objective records the spec in the study (user attribute
``boxcox_spec``, JSON, shown by the dashboard) when it first meets it. A study recorded with
another question is refused with :class:`StudyMismatch`, naming the first field that differs: its
trials would otherwise be reported as the answer to this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import hashlib
import math
import re
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.distributions import distribution_to_json
from optuna.distributions import json_to_distribution
from optuna.trial import TrialState

from optuna_boxcox._study._fidelity import fidelity_identity
from optuna_boxcox._study._fidelity import may_halve
from optuna_boxcox._study._settings import StudyRefusal
from optuna_boxcox._study._space import SPACE_ATTR
from optuna_boxcox.classifiers import make_classifier

if TYPE_CHECKING:
    from collections.abc import Mapping


#: Study user attribute holding :meth:`SearchSpec.to_dict`.
SPEC_ATTR = "boxcox_spec"
#: Study user attribute holding what the objective of the process that ran it last chose
#: (:meth:`~optuna_boxcox.BoxCoxObjective.describe`).
DESCRIPTION_ATTR = "boxcox_evaluator"
#: What a study's objectives may be, with their directions: the score, and the features kept
#: (those whose transform is not "drop").
OBJECTIVES = {"score": "maximize", "n_features": "minimize"}
#: A field a spec recorded by an older optuna-boxcox does not hold (not compared).
UNRECORDED = "(not recorded)"
#: Hex digits of the data fingerprint shown in messages and default study names.
SHORT_FINGERPRINT = 8
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
#: The longest value a refusal quotes (a classifier's parameters can fill a screen).
_QUOTED = 60


class StudyMismatch(StudyRefusal):
    """The study holds another experiment than the one asked for.

    Attributes:
        study_name: The study.
        field: The first field of :meth:`SearchSpec.identity` that differs.
        recorded: Its value recorded in the study.
        given: Its value now.
    """

    def __init__(self, study_name: str, field: str, recorded: Any, given: Any) -> None:
        self.study_name, self.field, self.recorded, self.given = study_name, field, recorded, given
        super().__init__(
            f"study {study_name!r} holds another experiment ({field}: {_quote(recorded)} there, "
            f"{_quote(given)} here)"
        )


class ForeignStudy(StudyRefusal):
    """The study was not made by optuna-boxcox and holds trials of its own."""


@dataclass(frozen=True)
class SearchSpec:
    """What a study is: the experiment its trials score, and how it is searched.

    Build the objective with :meth:`BoxCoxObjective.from_spec
    <optuna_boxcox.BoxCoxObjective.from_spec>` (a spec is a value: it never builds an objective);
    the objective records the spec in the study and
    refuses a study recorded with another experiment (:class:`StudyMismatch`). The experiment —
    :meth:`identity` — is the data, the classifier and its parameters, scoring, cv, error score,
    objectives, transforms, estimator parameters, subsample, λ bounds, fidelity, the transform
    method, and the seed where it changes a score (inner folds, subsample). The sampler, its settings and where the data came
    from are recorded beside it; the sampler's own guard decides which of its settings may
    continue a study.

    Example::

        from sklearn.datasets import load_wine
        from optuna_boxcox import BoxCoxObjective, SearchSpec

        X, y = load_wine(return_X_y=True, as_frame=True)
        spec = SearchSpec("knn", sampler="iterative", cv=5)
        objective = BoxCoxObjective.from_spec(spec, X, y)  # its spec holds the data's fingerprint

    Args:
        classifier: A name of :mod:`optuna_boxcox.classifiers` (``"knn"``, ``"bayes"``, …) or a
            scikit-learn classifier.
        scoring, cv, method, extrapolation, subsample, transforms, estimator_params, objectives:
            As in :class:`~optuna_boxcox.BoxCoxObjective`.
        fidelity: As in :class:`~optuna_boxcox.BoxCoxObjective`. The fidelity asked for is part
            of the experiment (``"auto"`` as such, whatever it chose). ``"default"``: none asked
            for; the lifecycle's ``plan_search`` decides it (a resumed study's own fidelity, else
            ``"auto"``).
        error_score: What a classifier fit that raises scores (``"raise"``: the error stops the
            search; a number, as in scikit-learn's searches): part of the experiment, as it is
            recorded as those trials' values.
        bounds: The λ domain asked for (as in :class:`~optuna_boxcox.BoxCoxObjective`; None: the
            default hull of SPEC §3): part of the experiment, as it decides which Λ may be found.
        fidelity_choice: What the objective made of ``fidelity`` (the rungs, and for ``"auto"``
            the prices by the cost class it chose from), filled in when made; an objective built
            from a spec that holds one uses those rungs without pricing again.
        sampler: A name :func:`~optuna_boxcox.samplers.make_sampler` knows, or None when the
            study's own sampler searches.
        sampler_settings: Settings of the paper's samplers (``epochs``, ``grid_size``, …).
        pruner: The Optuna pruner of a search with a fidelity through ``study.optimize`` (a name
            of :data:`~optuna_boxcox._study._fidelity.PRUNERS`; None: successive halving).
        seed: Seed of the sampler, the inner folds and the subsample.
        source: Where the data came from (``dataset``, ``csv``, ``label``, ``features``), so that
            a worker can load them again; not part of the experiment (the fingerprint is).
        columns, fingerprint, n_samples: The data, filled in by
            :meth:`~optuna_boxcox.BoxCoxObjective.from_spec`.
    """

    classifier: Any
    scoring: Any = "accuracy"
    cv: Any = None
    error_score: Any = "raise"
    method: str = "box-cox"
    extrapolation: str = "extrapolate"
    transforms: tuple[str, ...] | None = None
    estimator_params: Mapping[str, Any] = field(default_factory=dict)
    objectives: tuple[str, ...] = ("score",)
    subsample: int | None = None
    bounds: Any = None
    fidelity: Any = None
    fidelity_choice: Mapping[str, Any] | None = None
    sampler: str | None = None
    sampler_settings: Mapping[str, Any] = field(default_factory=dict)
    pruner: str | None = None
    seed: int | None = 0
    source: Mapping[str, Any] | None = None
    columns: tuple[str, ...] | None = None
    fingerprint: str | None = None
    n_samples: int | None = None

    # -- building ------------------------------------------------------------------------------
    def estimator(self) -> Any:
        """The classifier: made from its name, or the one given."""
        if isinstance(self.classifier, str):
            return make_classifier(self.classifier)
        if isinstance(self.classifier, dict):
            raise ValueError(
                f"the study was made with a {self.classifier.get('class')} object, which cannot "
                "be rebuilt from its record: build the objective with that classifier"
            )
        return self.classifier

    @property
    def directions(self) -> list[str]:
        """The study directions of :attr:`objectives`."""
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def short_fingerprint(self) -> str:
        """The data fingerprint's first hex digits (what messages and default names show)."""
        return (self.fingerprint or "")[:SHORT_FINGERPRINT]

    # -- what the study's trials answer -----------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """The experiment, JSON-ready, in the order a refusal looks for the first difference."""
        # The seed draws the rows of a fidelity's rungs: not part of an ``auto`` study that chose
        # exact (a classifier refitted with random_state=None resumes it).
        seeded = (
            (self.cv is not None and self.cv != "resubstitution")
            or self.subsample is not None
            or may_halve(self.fidelity, self.fidelity_choice)
        )
        return {
            "columns": list(self.columns or ()),
            "data": self.fingerprint,
            "classifier": _classifier_record(self.classifier)["class"],
            "classifier parameters": _classifier_record(self.classifier)["params"],
            "scoring": _callable_name(self.scoring),
            "cv": _cv_record(self.cv),
            "error_score": self.error_score,
            "directions": dict(zip(self.objectives, self.directions)),
            "transforms": list(self.transforms or (self.method,)),
            "estimator_params": {
                name: distribution_to_json(d) for name, d in self.estimator_params.items()
            },
            "subsample": self.subsample,
            "λ bounds": _bounds_record(self.bounds),
            "fidelity": fidelity_identity(self.fidelity),
            "method": self.method,
            "seed of folds and subsample": self.seed if seeded else None,
        }

    def difference(self, other: SearchSpec) -> tuple[str, Any, Any] | None:
        """The first field of :meth:`identity` in which ``other`` differs: (field, other's value,
        this one's), or None for the same experiment."""
        mine, theirs = self.identity(), other.identity()
        for name, value in mine.items():
            if UNRECORDED in (theirs.get(name), value):
                continue
            if _plain(theirs.get(name)) != _plain(value):
                if name == "data":
                    return "data fingerprint", other.short_fingerprint, self.short_fingerprint
                return name, theirs.get(name), value
        return None

    # -- the record in the study --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the experiment and how it is searched (what the study records)."""
        record = {
            "classifier": _classifier_record(self.classifier),
            "scoring": _callable_name(self.scoring),
            "cv": _cv_record(self.cv),
            "method": self.method,
            "extrapolation": self.extrapolation,
            "transforms": None if self.transforms is None else list(self.transforms),
            "estimator_params": {
                name: distribution_to_json(d) for name, d in self.estimator_params.items()
            },
            "objectives": list(self.objectives),
            "directions": self.directions,
            "subsample": self.subsample,
            "bounds": _bounds_record(self.bounds),
            "sampler": self.sampler,
            "sampler_settings": _plain(dict(self.sampler_settings)),
            "seed": self.seed,
            "source": None if self.source is None else _plain(dict(self.source)),
            "columns": None if self.columns is None else list(self.columns),
            "fingerprint": self.fingerprint,
            "n_samples": self.n_samples,
        }
        if fidelity_identity(self.fidelity) is not None:  # exact studies keep their old record
            record["fidelity"] = fidelity_identity(self.fidelity)
            record["fidelity_choice"] = self.fidelity_choice
        if self.pruner is not None:
            record["pruner"] = self.pruner
        if self.error_score != "raise":  # studies that raise keep their old record
            record["error_score"] = self.error_score
        return _plain(record)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> SearchSpec:
        """The spec :meth:`to_dict` wrote. A classifier recorded by name comes back as its name; one
        recorded as an object, as its record (its :meth:`identity` is the same; it cannot be
        rebuilt)."""
        classifier = record["classifier"]
        cv = record.get("cv")
        return cls(
            classifier=classifier.get("name") or classifier,
            scoring=record.get("scoring", "accuracy"),
            cv=None if cv == "resubstitution" else cv,
            error_score=record.get("error_score", "raise"),
            method=record.get("method", "box-cox"),
            extrapolation=record.get("extrapolation", "extrapolate"),
            transforms=None if record.get("transforms") is None else tuple(record["transforms"]),
            estimator_params={
                name: json_to_distribution(text)
                for name, text in (record.get("estimator_params") or {}).items()
            },
            objectives=tuple(record.get("objectives", ("score",))),
            subsample=record.get("subsample"),
            # A spec recorded before the bounds were part of it: its λ space record guards them.
            bounds=record.get("bounds", UNRECORDED),
            fidelity=record.get("fidelity"),
            fidelity_choice=record.get("fidelity_choice"),
            sampler=record.get("sampler"),
            sampler_settings=dict(record.get("sampler_settings") or {}),
            pruner=record.get("pruner"),
            seed=record.get("seed"),
            source=record.get("source"),
            columns=None if record.get("columns") is None else tuple(record["columns"]),
            fingerprint=record.get("fingerprint"),
            n_samples=record.get("n_samples"),
        )

    @classmethod
    def of_study(cls, study: optuna.Study) -> SearchSpec | None:
        """The spec recorded in the study, or None when it has none."""
        record = study.user_attrs.get(SPEC_ATTR)
        return None if record is None else cls.from_dict(record)


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """SHA-256 (hex) of the rows in order: X's shape and float64 values, and the labels (their
    names and each row's), so that any edit of a value, a label, a row or the column order gives
    another fingerprint."""
    digest = hashlib.sha256()
    X = np.ascontiguousarray(X, dtype=np.float64)
    digest.update(repr(X.shape).encode())
    digest.update(X.tobytes())
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    digest.update("\x1f".join(map(repr, classes.tolist())).encode())
    digest.update(np.asarray(codes, dtype=np.int64).tobytes())
    return digest.hexdigest()


def check_study(study: optuna.Study, spec: SearchSpec, recorded: Mapping[str, Any]) -> bool:
    """Refuse a study that holds another experiment than ``spec`` (or one not made by
    optuna-boxcox, unless it is empty); True when the study's record should be (re)written.

    ``recorded`` are the study's user attributes, read once by the caller.
    """
    given = [d.name.lower() for d in study.directions]
    if given != spec.directions:
        raise StudyMismatch(study.study_name, "direction", given, spec.directions)
    theirs = recorded.get(SPEC_ATTR)
    if theirs is None:
        # Finished ones: optimize's own first trial is already RUNNING when the objective meets it.
        n_trials = len(study.get_trials(deepcopy=False, states=_FINISHED))
        if n_trials:
            maker = (
                "an optuna-boxcox older than its search spec"
                if SPACE_ATTR in recorded
                else "someone else (it records no optuna-boxcox search spec)"
            )
            raise ForeignStudy(
                f"study {study.study_name!r} was made by {maker} and holds {n_trials} finished "
                "trial(s), which may answer another question"
            )
        return True
    difference = spec.difference(SearchSpec.from_dict(theirs))
    if difference is not None:
        raise StudyMismatch(study.study_name, *difference)
    # How it is searched may change where the sampler allows it (more epochs, say); a spec that
    # names no sampler (an objective used with the study's own one) leaves the record alone.
    return spec.sampler is not None and _plain(theirs) != spec.to_dict()


def record_search(
    study: optuna.Study,
    recorded: Mapping[str, Any],
    spec: SearchSpec | None,
    space: dict[str, Any],
    metric_names: list[str] | None,
    described: dict[str, Any],
) -> None:
    """Record in the study what an objective searches, for samplers in every worker and the
    dashboard: ``spec`` (None: the record stands, see :func:`check_study`), the λ space (a study
    recorded with another one is refused), the metric names of a multi-objective study and what
    the objective chose (``described``). ``recorded`` are the study's user attributes."""
    if spec is not None:
        study.set_user_attr(SPEC_ATTR, spec.to_dict())
    if recorded.get(SPACE_ATTR) is None:
        study.set_user_attr(SPACE_ATTR, space)
    else:
        _check_space(study.study_name, recorded[SPACE_ATTR], space)
    if metric_names is not None and study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(metric_names)
    if _choices(recorded.get(DESCRIPTION_ATTR)) != _choices(described):
        study.set_user_attr(DESCRIPTION_ATTR, described)


#: What an objective's description says of the memory its process had (its limit, and what the
#: limit sized): workers started together each have their own, and each rewriting the record
#: would only queue them on its row. The record is rewritten when the choices differ.
_MEMORY_FIELDS = ("memory_limit", "estimated_peak_bytes", "memory", "cache_capacity")


def _choices(described: Any) -> Any:
    if not isinstance(described, dict):
        return described
    return {key: value for key, value in described.items() if key not in _MEMORY_FIELDS}


def _check_space(study_name: str, theirs: dict[str, Any], mine: dict[str, Any]) -> None:
    """Refuse a study recorded with another λ space (other bounds, say) than this objective's."""
    if (
        theirs["names"] != mine["names"]
        or not (
            np.allclose(theirs["low"], mine["low"]) and np.allclose(theirs["high"], mine["high"])
        )
        or theirs.get("distributions") != mine.get("distributions")
    ):
        raise StudyMismatch(
            study_name,
            "λ search space",
            f"({len(theirs['names'])} parameters {theirs['names'][:3]}…)",
            f"({len(mine['names'])} parameters {mine['names'][:3]}…)",
        )


def _classifier_record(classifier: Any) -> dict[str, Any]:
    """A classifier as JSON: its name (when given by name), class and parameters."""
    if isinstance(classifier, dict):
        return classifier
    name = classifier if isinstance(classifier, str) else None
    if name is not None:
        classifier = make_classifier(name)
    kind = type(classifier)
    params = classifier.get_params(deep=False) if hasattr(classifier, "get_params") else {}
    return {
        "name": name,
        "class": f"{kind.__module__}.{kind.__qualname__}",
        "params": {k: _value_record(v) for k, v in sorted(params.items())},
    }


def _value_record(value: Any) -> Any:
    """A parameter value as JSON that is the same in every process (no memory addresses)."""
    if hasattr(value, "get_params") and not isinstance(value, type):
        return _classifier_record(value)
    if isinstance(value, (list, tuple)):
        return [_value_record(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value_record(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def _bounds_record(bounds: Any) -> Any:
    """The λ bounds asked for as JSON: None (the default), one ``[low, high]`` for every feature,
    or feature name → ``[low, high]``."""
    if bounds is None or isinstance(bounds, str):
        return bounds
    if hasattr(bounds, "keys"):
        return {str(k): [float(v) for v in bounds[k]] for k in sorted(bounds, key=str)}
    return [float(v) for v in bounds]


def _callable_name(scoring: Any) -> str:
    if isinstance(scoring, str):
        return scoring
    return getattr(scoring, "__qualname__", type(scoring).__name__)


def _cv_record(cv: Any) -> Any:
    if cv is None or cv == "resubstitution":
        return "resubstitution"
    if isinstance(cv, (int, np.integer)):
        return int(cv)
    return _value_record(cv)


def _plain(value: Any) -> Any:
    """JSON's view of a value (tuples are lists), so a record read back compares equal."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _quote(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= _QUOTED else text[: _QUOTED - 1] + "…"
