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

from collections.abc import Callable
import dataclasses
from dataclasses import KW_ONLY
from dataclasses import dataclass
from dataclasses import field
import math
import numbers
import re
from typing import TYPE_CHECKING
from typing import Any
import warnings

from optuna_boxcox._study._fidelity import EXACT
from optuna_boxcox._study._fidelity import Exact
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._fidelity import FidelityRequest
from optuna_boxcox._study._fidelity import fidelity_identity
from optuna_boxcox._study._fidelity import may_halve
from optuna_boxcox._study._fidelity import parse_fidelity
from optuna_boxcox._study._settings import StudyRefusal
from optuna_boxcox.classifiers import make_classifier

# NumPy and Optuna are imported where they are used: the command line builds its options from
# the fields declared here, and ``--help`` loads neither.
if TYPE_CHECKING:
    from collections.abc import Mapping

    import optuna


#: Study user attribute holding :meth:`SearchSpec.to_dict`.
SPEC_ATTR = "boxcox_spec"
#: Study user attribute holding the λ search space an objective records (``_study._space``).
SPACE_ATTR = "boxcox_search_space"
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


#: A declaration's ``missing`` that reads an absent record as the field's default.
DEFAULT = type("Default", (), {"__repr__": lambda self: "DEFAULT"})()


@dataclass(frozen=True)
class Flag:
    """A field's option of the ``search`` command, declared with the field: the command adds it
    as ``--field-name`` (argparse's own rule from a flag to its parameter) and puts its value in
    the spec.

    Args:
        help: The option's help (its default is the field's, shown after it).
        metavar: How the help shows the value.
        parse: The value from its text; a ``ValueError`` is the user's mistake, one line.
    """

    help: str
    metavar: str | None = None
    parse: Callable[[str], Any] = str


@dataclass(frozen=True)
class Declared:
    """How a :class:`SearchSpec` field is recorded in a study, compared with a study's record and
    asked for on the command line: its one declaration, in the field's metadata (``spec_field``).

    Args:
        label: Its name in :meth:`SearchSpec.identity` (None: not part of the experiment; a
            tuple: the labels of the tuple ``identity`` gives).
        identity: ``spec -> value`` of the identity where it is not the record (None: the record).
        encode: The value as JSON, for the record.
        decode: The value from the record.
        missing: What a record without it (an older study's) reads as (:data:`DEFAULT`: the
            field's default).
        kept: ``spec -> bool``: whether the record holds it (None: always); a field added later
            is recorded only where it is not its default, so older studies keep their record.
        flag: Its option of the ``search`` command, if it has one declared here.
    """

    label: str | tuple[str, ...] | None = None
    identity: Callable[[SearchSpec], Any] | None = None
    encode: Callable[[Any], Any] = lambda value: _plain(value)
    decode: Callable[[Any], Any] = lambda value: value
    missing: Any = DEFAULT
    kept: Callable[[SearchSpec], bool] | None = None
    flag: Flag | None = None

    def identified(self, spec: SearchSpec, value: Any) -> dict[str, Any]:
        if self.label is None:
            return {}
        given = self.encode(value) if self.identity is None else self.identity(spec)
        return (
            dict(zip(self.label, given)) if isinstance(self.label, tuple) else {self.label: given}
        )


def spec_field(default: Any = dataclasses.MISSING, *, factory: Any = None, **declared: Any) -> Any:
    """A :class:`SearchSpec` field with its :class:`Declared` codecs, label and flag."""
    metadata = {"declared": Declared(**declared)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def declared_fields() -> list[tuple[str, Declared, Any]]:
    """Each field of :class:`SearchSpec`: its name, declaration and default (MISSING: none)."""
    out = []
    for spec_field_ in dataclasses.fields(SearchSpec):
        default = spec_field_.default
        if spec_field_.default_factory is not dataclasses.MISSING:
            default = spec_field_.default_factory()
        out.append((spec_field_.name, spec_field_.metadata["declared"], default))
    return out


def flags() -> list[tuple[str, Flag, Any]]:
    """The fields the ``search`` command takes by their declaration: name, flag and default."""
    return [(name, d.flag, default) for name, d, default in declared_fields() if d.flag]


def _parse_error_score(text: str) -> Any:
    if text == "raise":
        return text
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be raise or a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be raise or a finite number, got {text!r}")
    return value


def _parse_repeats(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"must be a whole number of at least 1, got {text!r}")
    return int(text)


def _seeded(spec: SearchSpec) -> Any:
    # The seed draws the rows of folds, a subsample and a fidelity's rungs: not part of an
    # ``auto`` study that chose exact (a classifier refitted with random_state=None resumes it).
    seeded = (
        (spec.cv is not None and spec.cv != "resubstitution")
        or spec.subsample is not None
        or may_halve(spec.fidelity, spec.fidelity_choice)
    )
    return spec.seed if seeded else None


def _distributions_record(params: Mapping[str, Any]) -> dict[str, str]:
    from optuna.distributions import distribution_to_json

    return {name: distribution_to_json(d) for name, d in params.items()}


def _distributions_read(record: Mapping[str, str] | None) -> dict[str, Any]:
    from optuna.distributions import json_to_distribution

    return {name: json_to_distribution(text) for name, text in (record or {}).items()}


def _listed(value: Any) -> Any:
    return None if value is None else list(value)


def _tupled(value: Any) -> Any:
    return None if value is None else tuple(value)


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

    Each field is declared once (:class:`Declared`, in its metadata): its record, its label in
    the identity (in the order of the fields: a refusal names the first that differs), how an
    older study's record without it reads, and, where it has one, its option of the ``search``
    command. :meth:`identity`, :meth:`to_dict`, :meth:`from_dict` and the command's options are
    derived from the declarations.

    Example::

        from sklearn.datasets import load_wine
        from optuna_boxcox import BoxCoxObjective, SearchSpec

        X, y = load_wine(return_X_y=True, as_frame=True)
        spec = SearchSpec("knn", sampler="iterative", cv=5)
        objective = BoxCoxObjective.from_spec(spec, X, y)  # its spec holds the data's fingerprint

    Args:
        classifier: A name of :mod:`optuna_boxcox.classifiers` (``"knn"``, ``"bayes"``, …) or a
            scikit-learn classifier. The only positional argument.
        scoring, cv, method, extrapolation, subsample, transforms, estimator_params, objectives:
            As in :class:`~optuna_boxcox.BoxCoxObjective`.
        cv_repeats: Repeats of the inner stratified folds of an integer ``cv``, each shuffled
            anew (scikit-learn's ``RepeatedStratifiedKFold``): part of the experiment.
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
        pruner: The Optuna pruner of a search with a fidelity through ``study.optimize``
            (``successive-halving``, ``hyperband``, ``median`` or ``none``; None: successive
            halving).
        seed: Seed of the sampler, the inner folds and the subsample.
        source: Where the data came from (``dataset``, ``csv``, ``label``, ``features``), so that
            a worker can load them again; not part of the experiment (the fingerprint is).
        columns, fingerprint, n_samples: The data, filled in by
            :meth:`~optuna_boxcox.BoxCoxObjective.from_spec`.
    """

    # The data first: a study of other data is refused for its data, whatever else differs.
    columns: tuple[str, ...] | None = field(
        default=None,
        kw_only=True,
        metadata={
            "declared": Declared(
                "columns",
                identity=lambda spec: list(spec.columns or ()),
                encode=_listed,
                decode=_tupled,
            )
        },
    )
    fingerprint: str | None = field(
        default=None, kw_only=True, metadata={"declared": Declared("data")}
    )
    classifier: Any = field(
        metadata={
            "declared": Declared(
                ("classifier", "classifier parameters"),
                identity=lambda spec: (
                    _classifier_record(spec.classifier)["class"],
                    _classifier_record(spec.classifier)["params"],
                ),
                encode=lambda value: _classifier_record(value),
                # by name as its name; an object as its record (same identity, not rebuilt)
                decode=lambda record: record.get("name") or record,
            )
        }
    )
    _: KW_ONLY
    scoring: Any = spec_field("accuracy", label="scoring", encode=lambda v: _callable_name(v))
    cv: Any = spec_field(
        None,
        label="cv",
        encode=lambda v: _cv_record(v),
        decode=lambda v: None if v == "resubstitution" else v,
    )
    cv_repeats: int = spec_field(
        1,
        label="cv repeats",
        kept=lambda spec: spec.cv_repeats != 1,
        flag=Flag(
            "repeats of the inner stratified folds of cv, each repeat shuffled anew: the mean "
            "over the repeats measures a score with less noise, at that many times the fits",
            metavar="R",
            parse=_parse_repeats,
        ),
    )
    error_score: Any = spec_field(
        "raise",
        label="error_score",
        kept=lambda spec: spec.error_score != "raise",
        flag=Flag(
            "what a classifier fit that fails scores, e.g. 0 for settings the classifier "
            "refuses (shrinkage with LDA's svd solver); raise stops the search",
            metavar="raise|NUMBER",
            parse=_parse_error_score,
        ),
    )
    objectives: tuple[str, ...] = spec_field(
        ("score",),
        label="directions",
        identity=lambda spec: dict(zip(spec.objectives, spec.directions)),
        encode=list,
        decode=tuple,
    )
    transforms: tuple[str, ...] | None = spec_field(
        None,
        label="transforms",
        identity=lambda spec: list(spec.transforms or (spec.method,)),
        encode=_listed,
        decode=_tupled,
    )
    estimator_params: Mapping[str, Any] = spec_field(
        factory=dict,
        label="estimator_params",
        encode=_distributions_record,
        decode=_distributions_read,
    )
    subsample: int | None = spec_field(None, label="subsample")
    # A spec recorded before the bounds were part of it: its λ space record guards them.
    bounds: Any = spec_field(
        None, label="λ bounds", encode=lambda v: _bounds_record(v), missing=UNRECORDED
    )
    fidelity: FidelityRequest = spec_field(
        EXACT,
        label="fidelity",
        encode=fidelity_identity,
        decode=parse_fidelity,
        kept=lambda spec: not isinstance(spec.fidelity, Exact),  # exact: the old record
    )
    method: str = spec_field("box-cox", label="method")
    seed: int | None = spec_field(
        0, label="seed of folds and subsample", identity=_seeded, missing=None
    )
    # How it is searched, and the record's own: not part of the experiment.
    extrapolation: str = spec_field("extrapolate")
    fidelity_choice: FidelityChoice | None = spec_field(
        None,
        encode=lambda choice: None if choice is None else _plain(choice.to_attrs()),
        decode=lambda record: None if record is None else FidelityChoice.from_attrs(record),
        kept=lambda spec: not isinstance(spec.fidelity, Exact),
    )
    sampler: str | None = spec_field(None)
    sampler_settings: Mapping[str, Any] = spec_field(
        factory=dict, encode=lambda v: _plain(dict(v)), decode=lambda v: dict(v or {})
    )
    pruner: str | None = spec_field(None, kept=lambda spec: spec.pruner is not None)
    source: Mapping[str, Any] | None = spec_field(
        None, encode=lambda v: None if v is None else _plain(dict(v))
    )
    n_samples: int | None = spec_field(None)

    def __post_init__(self) -> None:
        # The public edge of a spec: its fidelity parsed once into the typed request, a recorded
        # choice into its value.
        object.__setattr__(self, "fidelity", parse_fidelity(self.fidelity))
        if isinstance(self.fidelity_choice, dict):
            object.__setattr__(
                self, "fidelity_choice", FidelityChoice.from_attrs(self.fidelity_choice)
            )

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
        identity: dict[str, Any] = {}
        for name, declared, _ in declared_fields():
            identity.update(declared.identified(self, getattr(self, name)))
        return identity

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
            name: declared.encode(getattr(self, name))
            for name, declared, _ in declared_fields()
            if declared.kept is None or declared.kept(self)
        }
        record["directions"] = self.directions  # for a reader of the record: not read back
        return _plain(record)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> SearchSpec:
        """The spec :meth:`to_dict` wrote. A classifier recorded by name comes back as its name; one
        recorded as an object, as its record (its :meth:`identity` is the same; it cannot be
        rebuilt). A field the record does not hold (an older study's) reads as its declaration
        says."""
        values = {}
        for name, declared, default in declared_fields():
            if name in record:
                values[name] = declared.decode(record[name])
            elif declared.missing is not DEFAULT:
                values[name] = declared.missing
            elif default is not dataclasses.MISSING:
                values[name] = default
            else:
                raise KeyError(name)  # the classifier: every record holds it
        return cls(**values)

    @classmethod
    def of_study(cls, study: optuna.Study) -> SearchSpec | None:
        """The spec recorded in the study, or None when it has none."""
        record = study.user_attrs.get(SPEC_ATTR)
        return None if record is None else cls.from_dict(record)


def check_study(study: optuna.Study, spec: SearchSpec, recorded: Mapping[str, Any]) -> bool:
    """Refuse a study that holds another experiment than ``spec`` (or one not made by
    optuna-boxcox, unless it is empty); True when the study's record should be (re)written.

    ``recorded`` are the study's user attributes, read once by the caller.
    """
    from optuna.trial import TrialState

    given = [d.name.lower() for d in study.directions]
    if given != spec.directions:
        raise StudyMismatch(study.study_name, "direction", given, spec.directions)
    theirs = recorded.get(SPEC_ATTR)
    if theirs is None:
        # Finished ones: optimize's own first trial is already RUNNING when the objective meets it.
        finished = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
        n_trials = len(study.get_trials(deepcopy=False, states=finished))
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
        from optuna.exceptions import ExperimentalWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExperimentalWarning)
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
    import numpy as np

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
    import numpy as np

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
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        return int(cv)
    return _value_record(cv)


def _plain(value: Any) -> Any:
    """JSON's view of a value (tuples are lists), so a record read back compares equal."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # a NumPy scalar
        return value.item()
    return value


def _quote(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= _QUOTED else text[: _QUOTED - 1] + "…"
