"""The guarded default's decision, as a study records it: which of the searched Λ and the
anchors (the MLE Λ, Λ = 1) is used, the scores that decided, and the rule that judged
(:class:`Rule`). A value: the gate that makes it is ``optuna_boxcox._lifecycle._guard``, the
figures and the note that show it read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Study user attribute holding the decision.
DECISION_ATTR = "boxcox_decision"
#: Inner folds × repeats of the gate's cross-validation.
SPLITS = 5
REPEATS = 2
#: How many corrected standard errors the searched Λ must beat the better anchor by.
MARGIN = 1.0
#: The anchors the default rule judges the searched Λ against.
ANCHORS = ("mle", "ones")
#: Anchors min-max scaled into [0, 1] after the power step instead of standard scaled
#: (``BoxCoxTransformer(range_scale=True)``), each with the Λ it shares: with Λ = 1 that is
#: MinMaxScaler. A classifier's rule may judge them (the MLP's, whose winners among the fixed
#: transforms are range scalers).
RANGE_SCALED = {"mle_minmax": "mle", "minmax": "ones"}
#: Every anchor a rule may judge, in the order a tie goes.
ALL_ANCHORS = (*ANCHORS, *RANGE_SCALED)
#: Λ = 1 alone (k-NN's): where the MLE Λ and Λ = 1 are near-tied, the better of the two by a noisy
#: criterion only raises the bar the searched Λ must clear.
ONES_ONLY = ("ones",)


CV = f"{SPLITS}x{REPEATS} cv"
#: An ungated decision's rule ends with what it used.
_KEPT = {"searched": "the searched Λ is kept", "ones": "Λ = 1 (standard scaling) is used"}
LOO = "leave-one-out"
#: The candidates in words (the decision's explanation, the study's note).
NAMES = {
    "searched": "the searched Λ",
    "mle": "the per-feature MLE Λ",
    "ones": "Λ = 1 (standard scaling)",
    "mle_minmax": "the per-feature MLE Λ, min-max scaled",
    "minmax": "Λ = 1, min-max scaled (MinMaxScaler)",
}


def lambda_source(name: str) -> str:
    """The candidate whose Λ ``name`` uses (a range-scaled anchor shares its anchor's)."""
    return RANGE_SCALED.get(name, name)


@dataclass(frozen=True)
class Rule:
    """How a classifier's searched Λ is judged: by ``criterion`` (:data:`CV` or :data:`LOO`),
    kept when it beats the best of ``anchors`` by more than ``margin`` standard errors (and, with
    ``confirm``, when its 5×2 CV score is above that anchor's too); where it is kept, a
    ``fallback`` candidate scoring at least as well by ``criterion`` is used instead. Without
    ``search`` the default does not search Λ: the best of ``anchors`` by ``criterion`` is used."""

    criterion: str = CV
    margin: float = MARGIN
    confirm: bool = False
    anchors: tuple[str, ...] = ANCHORS
    search: bool = True
    fallback: str | None = None

    @property
    def judged(self) -> tuple[str, ...]:
        """Every candidate the rule scores: the searched Λ (where it searches), the anchors and
        the fallback."""
        fallback = (self.fallback,) if self.fallback and self.fallback not in self.anchors else ()
        return (("searched",) if self.search else ()) + self.anchors + fallback

    def describe(self) -> str:
        if not self.search:
            return (
                f"no search: the best {SPLITS}-fold x{REPEATS} CV score of "
                f"{', '.join(self.anchors)} (ties to the first)"
            )
        if self.criterion == LOO:
            if len(self.anchors) == 1:
                which = f"the anchor ({self.anchors[0]})"
            else:
                names = "mle or ones" if self.anchors == ANCHORS else ", ".join(self.anchors)
                which = f"the better anchor ({names}, by leave-one-out)"
            text = (
                f"searched kept if its exact leave-one-out accuracy beats {which} by more than "
                f"{self.margin:g} standard error of the paired per-row differences"
            )
        elif self.margin == 0 and self.anchors == ANCHORS:
            text = f"the best {SPLITS}-fold x{REPEATS} CV score of searched, mle and ones (ties to the anchor)"
        elif self.margin == 0:
            text = (
                f"the best {SPLITS}-fold x{REPEATS} CV score of searched, "
                f"{', '.join(self.anchors)} (ties to an anchor)"
            )
        else:
            anchors = (
                "the better anchor (mle or ones)"
                if self.anchors == ANCHORS
                else f"the best anchor ({', '.join(self.anchors)})"
            )
            text = (
                f"searched kept if its {SPLITS}-fold x{REPEATS} CV score beats {anchors} "
                f"by more than {self.margin:g} corrected standard error"
            )
        if self.confirm:
            text += f", and its {SPLITS}-fold x{REPEATS} CV score is above that anchor's"
        if self.fallback:
            text += (
                f"; where it is kept, {self.fallback} instead if its "
                f"{'leave-one-out accuracy' if self.criterion == LOO else 'score'} is as high"
            )
        return text

    @classmethod
    def from_description(cls, criterion: str, text: str) -> Rule:
        """The rule whose :meth:`describe` is ``text`` (a recorded decision's), of the margins and
        confirmations a rule may have; else the default rule of ``criterion``."""
        for margin in (MARGIN, 0.0):
            for confirm in (False, True):
                for anchors in (ANCHORS, ALL_ANCHORS, ONES_ONLY):
                    for search in (True, False):
                        for fallback in (None, "mle"):
                            rule = cls(criterion, margin, confirm, anchors, search, fallback)
                            if rule.describe() == text:
                                return rule
        return Rule(criterion)


@dataclass(frozen=True)
class Decision:
    """What the gate chose and the scores that decided it.

    ``chosen`` is ``"searched"`` or an anchor (``"mle"``, ``"ones"``, or a range-scaled one of
    :data:`RANGE_SCALED`); ``scores`` the mean cross-validated score of each candidate judged;
    ``anchor`` the best anchor; ``difference`` the searched Λ's score minus the anchor's,
    ``threshold`` what it had to exceed (``margin`` corrected standard errors); both NaN when the
    rule does not search.
    """

    chosen: str
    lambdas: np.ndarray
    scores: dict[str, float]
    anchor: str
    difference: float
    threshold: float
    folds: int
    gated: bool = True
    reason: str = ""
    #: The rule that judged (the gate's ``rule_of``).
    rule: Rule | None = None
    #: The leave-one-out rule's confirmation: the 5×2 CV scores of the searched Λ and the anchor.
    confirmation: dict[str, float] | None = None
    #: What the decision was made with (the gate's ``settings``), when a study records it.
    settings: dict[str, Any] | None = None
    #: (rows judged on, rows given) when the gate judged a sample (the gate's ``MAX_ROWS``).
    sample: tuple[int, int] | None = None

    @property
    def judged_by(self) -> Rule:
        """The rule the decision was made by (a record without one was made by the default)."""
        return self.rule or Rule()

    @property
    def fell_back(self) -> bool:
        """Whether the rule's fallback was used where the searched Λ had beaten the anchor."""
        return self.chosen == self.judged_by.fallback and self.chosen != self.anchor

    @property
    def range_scaled(self) -> bool:
        """Whether the model min-max scales after the power step (a range-scaled anchor won)."""
        return self.chosen in RANGE_SCALED

    def to_dict(self) -> dict[str, Any]:
        attr = self._to_dict()
        if self.settings is not None:
            attr["settings"] = self.settings
        return attr

    def _to_dict(self) -> dict[str, Any]:
        if not self.gated:
            return {
                "chosen": self.chosen,
                "lambdas": [float(v) for v in self.lambdas],
                "gated": False,
                "rule": f"not gated: {self.reason}; {_KEPT[self.chosen]}",
            }
        rule = self.judged_by
        attr = {
            "chosen": self.chosen,
            "gated": True,
            "lambdas": [float(v) for v in self.lambdas],
            "criterion": rule.criterion,
            "scores": {k: float(v) for k, v in self.scores.items()},
            "anchor": self.anchor,
            "difference": float(self.difference),
            "threshold": float(self.threshold),
            "folds": self.folds,
            "rule": rule.describe(),
        }
        if self.confirmation is not None:
            attr["confirmation"] = {k: float(v) for k, v in self.confirmation.items()}
        if self.sample is not None:
            attr["rows"] = {"judged": self.sample[0], "of": self.sample[1]}
        return attr

    def record(self, study: Any) -> None:
        """Write the decision into the study's user attributes."""
        study.set_user_attr(DECISION_ATTR, self.to_dict())

    @classmethod
    def from_dict(cls, attr: dict[str, Any]) -> Decision:
        """The decision :meth:`to_dict` wrote."""
        nan = float("nan")
        if not attr["gated"]:
            reason = attr["rule"].removeprefix("not gated: ")
            reason = reason.removesuffix(f"; {_KEPT.get(attr['chosen'], '')}")
            lambdas = np.asarray(attr["lambdas"], dtype=float)
            return cls(
                attr["chosen"],
                lambdas,
                {},
                "",
                nan,
                nan,
                0,
                gated=False,
                reason=reason,
                settings=attr.get("settings"),
            )
        return cls(
            chosen=attr["chosen"],
            lambdas=np.asarray(attr["lambdas"], dtype=float),
            scores=dict(attr["scores"]),
            anchor=attr["anchor"],
            difference=float(attr["difference"]),
            threshold=float(attr["threshold"]),
            folds=int(attr["folds"]),
            rule=Rule.from_description(attr.get("criterion", CV), attr["rule"]),
            confirmation=attr.get("confirmation"),
            settings=attr.get("settings"),
            sample=None if "rows" not in attr else (attr["rows"]["judged"], attr["rows"]["of"]),
        )

    def describe(self) -> str:
        """One line for ``search``'s report."""
        if not self.gated:
            verdict = (
                "searched Λ kept" if self.chosen == "searched" else f"anchor {self.chosen} used"
            )
            return f"{verdict}, not gated ({self.reason})"
        scores = ", ".join(f"{k} {v:.4f}" for k, v in self.scores.items())
        verdict = "searched Λ kept" if self.chosen == "searched" else f"anchor {self.chosen} used"
        if self.fell_back:
            verdict = f"{self.chosen} used (it scored as high as the searched Λ)"
        if not self.judged_by.search:
            line = f"{verdict}: {CV} {scores}; no Λ search for this classifier"
        else:
            line = (
                f"{verdict}: {self.judged_by.criterion} {scores}; searched − "
                f"{self.anchor} = {self.difference:+.4f}, needed > {self.threshold:.4f}"
            )
        if self.confirmation is not None:
            line += f"; {CV} searched − {self.anchor} = {self._confirmed_difference():+.4f}, needed > 0"
        if self.sample is not None:
            line += f" (on a stratified sample of {self.sample[0]:,} of {self.sample[1]:,} rows)"
        return line

    def explain(self) -> str:
        """The decision in words, with the scores that made it (the study's note and record)."""
        if not self.gated:
            return f"{NAMES[self.chosen].capitalize()} is used without a gate: {self.reason}."
        rule = self.judged_by
        if rule.criterion == LOO:
            criterion, label = "exact leave-one-out accuracy", "Leave-one-out accuracy"
            error = "standard error of the paired per-row differences"
        else:
            criterion = f"{self.folds // REPEATS}-fold × {REPEATS} CV score"
            label = f"{criterion}s"
            error = "corrected standard error of the paired fold differences"
        if not rule.search:
            return self._explain_anchors(criterion, label)
        searched, anchor = self.scores["searched"], self.scores[self.anchor]
        margin = "one" if rule.margin == 1 else f"{rule.margin:g}"
        needed = f"{self.threshold:.4f} ({margin} {error})"
        if rule.margin == 0:
            text = (
                f"The gate chose {NAMES[self.chosen]}: the best {criterion} of the three, "
                "a tie going to an anchor."
            )
        elif self.fell_back:
            fallback = self.scores[self.chosen]
            text = (
                f"The gate chose {NAMES[self.chosen]}: the searched Λ's {criterion} "
                f"{searched:.4f} beat {NAMES[self.anchor]} ({anchor:.4f}) by "
                f"{self.difference:.4f}, more than the {needed} it needed, but "
                f"{NAMES[self.chosen]} scored {fallback:.4f}, as high, and the searched Λ was "
                "tuned on these rows."
            )
        elif self.chosen == "searched":
            text = (
                f"The gate kept the searched Λ: its {criterion} {searched:.4f} beat "
                f"{'the better anchor, ' if len(rule.anchors) > 1 else ''}"
                f"{NAMES[self.anchor]} ({anchor:.4f}), by {self.difference:.4f}, more than the "
                f"{needed} it needed"
            )
            if self.confirmation is not None:
                text += (
                    f", and its {SPLITS}-fold × {REPEATS} CV score "
                    f"{self.confirmation['searched']:.4f} was above the anchor's "
                    f"{self.confirmation[self.anchor]:.4f}"
                )
            text += "."
        elif self.difference > self.threshold:  # the cross-validation did not confirm it
            text = (
                f"The gate chose {NAMES[self.anchor]}: the searched Λ's {criterion} "
                f"{searched:.4f} beat its {anchor:.4f} by {self.difference:.4f}, more than the "
                f"{needed} needed, but its {SPLITS}-fold × {REPEATS} CV score "
                f"{self.confirmation['searched']:.4f} was not above the anchor's "
                f"{self.confirmation[self.anchor]:.4f}."
            )
        elif self.difference <= 0:
            lead = (
                f"its {criterion} {anchor:.4f} beat the searched Λ's {searched:.4f} by "
                f"{-self.difference:.4f}"
                if self.difference < 0
                else f"the searched Λ's {criterion} {searched:.4f} tied with its {anchor:.4f}"
            )
            text = (
                f"The gate chose {NAMES[self.anchor]}: {lead}; the searched Λ needed to beat it "
                f"by more than {needed}."
            )
        else:
            text = (
                f"The gate chose {NAMES[self.anchor]}: the searched Λ's {criterion} "
                f"{searched:.4f} beat its {anchor:.4f} by only {self.difference:.4f}, not more "
                f"than the {needed} it needed."
            )
        return text + self._scores_in_words(label)

    def _explain_anchors(self, criterion: str, label: str) -> str:
        """A rule without search: the best anchor is used."""
        text = (
            f"The gate chose {NAMES[self.chosen]}: the best {criterion} of the fixed candidates "
            "(this classifier's default searches no Λ: its fits cost too much for a search)."
        )
        return text + self._scores_in_words(label)

    def _scores_in_words(self, label: str) -> str:
        scores = ", ".join(
            f"{NAMES[name].removeprefix('the ')} {value:.4f}"
            for name, value in self.scores.items()
        )
        text = f" {label}: {scores}."
        if self.sample is not None:
            text += (
                f" Judged on a stratified sample of {self.sample[0]:,} of {self.sample[1]:,} rows."
            )
        return text

    def _confirmed_difference(self) -> float:
        return self.confirmation["searched"] - self.confirmation[self.anchor]
