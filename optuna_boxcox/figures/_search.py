"""One search's figures and notes: which figures a search gets, its Markdown note, and where they
go (the study, for optuna-dashboard, or files)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
import tempfile
from typing import TYPE_CHECKING
from typing import Any
import warnings

import optuna
from optuna.artifacts import upload_artifact
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import plotly.graph_objects as go
import plotly.io as pio

from optuna_boxcox._study._decision import NAMES
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox._system._markup import md_code
from optuna_boxcox._system._markup import md_text
from optuna_boxcox.figures._draw import best_so_far
from optuna_boxcox.figures._draw import finished_trials
from optuna_boxcox.figures._draw import grid_heatmap
from optuna_boxcox.figures._draw import lambda_trajectory
from optuna_boxcox.figures._draw import minimises
from optuna_boxcox.figures._draw import pareto_front
from optuna_boxcox.figures._draw import pareto_optimal
from optuna_boxcox.figures._draw import transform_curves
from optuna_boxcox.figures._scores import note_scores
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers._plan import SAMPLER_ATTR

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optuna.samplers import BaseSampler

    from optuna_boxcox._objective._objective import BoxCoxObjective
    from optuna_boxcox._optuna import ArtifactStore
    from optuna_boxcox._study._decision import Decision
    from optuna_boxcox.samplers import SearchResult

    #: One search's finished trials: the study, or the trials themselves.
    Run = optuna.Study | Sequence[FrozenTrial]


def pareto_note(
    study: optuna.Study,
    objective: BoxCoxObjective,
    *,
    trials: Sequence[FrozenTrial] | None = None,
    user_attrs: Mapping[str, Any] | None = None,
) -> str:
    """Markdown: the search (as :func:`search_note`) and its Pareto front, one row per point with
    the features it keeps."""
    if trials is None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    finished = [t for t in finished_trials(trials) if t.values and len(t.values) == 2]
    head = search_note(
        study, objective, None, n_finished=len(finished), user_attrs=user_attrs
    ).rstrip("\n")
    front = sorted(
        pareto_optimal(finished, study.directions), key=lambda t: (t.values[1], -t.values[0])
    )
    lines = [head, "", "| features kept | score | trial | kept |", "| ---: | ---: | ---: | --- |"]
    for t in front:
        transforms = objective.configuration(t.params).transforms
        kept = [n for n, tr in zip(objective.param_names, transforms) if tr != "drop"]
        shown = ", ".join(map(md_code, kept[:6]))
        shown += f", … ({len(kept) - 6} more)" if len(kept) > 6 else ""
        lines.append(f"| {t.values[1]:g} | {t.values[0]:.4f} | {t.number} | {shown} |")
    return "\n".join(lines) + "\n"


# -- one search ---------------------------------------------------------------------------------
def search_figures(
    study: optuna.Study,
    objective: BoxCoxObjective,
    sampler: BaseSampler | None = None,
    *,
    result: SearchResult | None = None,
    trials: Sequence[FrozenTrial] | None = None,
    user_attrs: Mapping[str, Any] | None = None,
    base_score: float | None = None,
    mle_score: float | None = None,
    decision: Decision | None = None,
    used_trial: int | None = None,
    draw: bool = True,
) -> tuple[dict[str, go.Figure], str]:
    """The figures for one finished search, by dashboard id, and a Markdown note describing it.

    The λ trajectory when the search is one of the paper's (it has a history), the best-so-far
    curve, the transform at the chosen λ, and the grid heatmap when there are two features. The
    trajectory and the transform colour the features whose λ moved from the objective's starting
    point (:attr:`~optuna_boxcox.BoxCoxObjective.initial_params`). A two-objective study gets its
    Pareto front (:func:`pareto_front`, id ``"pareto-front"``) and :func:`pareto_note`.

    The search that wrote the study passes what it holds, and nothing is read from the storage:
    its ``result`` (:class:`~optuna_boxcox.samplers.SearchResult`), every trial it wrote
    (``trials``), the study's user attributes and the scores at λ = 1 and at the MLE, which are
    otherwise computed again. Anything not given is read from the study once: ``result`` from
    ``sampler`` when it is a :class:`~optuna_boxcox.samplers.PlanSampler`.

    After the guarded default's gate, its ``decision`` says which Λ is used: the transform is
    drawn at it, the grid marks it beside the searched Λ, and the note leads with it
    (:func:`search_note`; ``used_trial`` the trial holding it, if any).

    With ``draw`` False only the note is written (the figures are ``{}``).
    """
    if trials is None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(study.directions) > 1:
        drawn = {"pareto-front": pareto_front(study, trials=trials)} if draw else {}
        return drawn, pareto_note(study, objective, trials=trials, user_attrs=user_attrs)
    if result is None and isinstance(sampler, PlanSampler):
        result = sampler.result(study)
    finished = finished_trials(trials)
    params, chosen_score = _chosen(result, finished, study.direction)
    figures = _draw(study, objective, result, finished, params, decision) if draw else {}
    if decision is None and used_trial is None and params is not None:
        used_trial = next((t.number for t in finished if t.params == params), None)
    note = search_note(
        study,
        objective,
        params,
        n_finished=len(finished),
        user_attrs=user_attrs,
        base_score=base_score,
        mle_score=mle_score,
        chosen_score=chosen_score,
        decision=decision,
        used_trial=used_trial,
    )
    return figures, note


def _draw(
    study: optuna.Study,
    objective: BoxCoxObjective,
    result: SearchResult | None,
    finished: Sequence[FrozenTrial],
    params: Mapping[str, float] | None,
    decision: Decision | None,
) -> dict[str, go.Figure]:
    """The figures of one single-objective search (see :func:`search_figures`)."""
    figures: dict[str, go.Figure] = {}
    start = objective.initial_params
    if result is not None and result.history:
        # The λ only: transform choices and settings are no line on a λ axis.
        lambdas = objective.param_names
        figures["lambda-trajectory"] = lambda_trajectory(
            [{n: h[n] for n in lambdas} for h in result.history],
            start={n: start[n] for n in lambdas},
        )
    if finished:
        figures["best-so-far"] = best_so_far(
            {study.study_name: finished}, direction=study.direction
        )
    used = params
    if decision is not None and params is not None:
        used = objective.to_params(decision.lambdas)
    if used is not None:
        figures["transform"] = transform_curves(objective, used, start=start)
    if objective.space.dim == 2 and objective.space.lambdas_only:
        markers = {"MLE": objective.mle_params}
        if used is not None:
            markers["chosen Λ"] = used
        if decision is not None and decision.chosen != "searched":
            markers["searched Λ"] = params
        figures["grid"] = grid_heatmap(objective, trials=finished, markers=markers)
    return figures


def _chosen(
    result: SearchResult | None, finished: Sequence[FrozenTrial], direction: StudyDirection
) -> tuple[dict[str, float] | None, float | None]:
    """The chosen Λ and its score: the plan's Λopt, else the best finished trial's."""
    if result is not None and result.params is not None:
        return result.params, result.best_value
    if not finished:
        return None, None
    pick = min if minimises(direction) else max
    best = pick(finished, key=lambda t: t.value)
    return best.params, best.value


def search_note(
    study: optuna.Study,
    objective: BoxCoxObjective,
    params: Mapping[str, float] | None,
    *,
    n_finished: int | None = None,
    user_attrs: Mapping[str, Any] | None = None,
    base_score: float | None = None,
    mle_score: float | None = None,
    chosen_score: float | None = None,
    decision: Decision | None = None,
    used_trial: int | None = None,
) -> str:
    """Markdown: data set, classifier, scoring, sampler and its settings, scores and the chosen λ.

    ``user_attrs`` are the study's (its search spec and the sampler's record), ``n_finished`` its
    finished trials; either is read from the study when not given. The scores at λ = 1, at the
    MLE and at ``params`` are computed with ``objective`` when not given.

    With the guarded default's ``decision``, ``params`` are the searched Λ and the note leads with
    the Λ used (the decision's), the decision in words, which trial holds it (``used_trial``)
    and the λ used beside the searched λ. Without one, it leads with the searched Λ as the Λ used,
    no gate having judged it.
    """
    if user_attrs is None:
        user_attrs = study.user_attrs
    if n_finished is None:
        n_finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    spec = SearchSpec.from_dict(user_attrs.get(SPEC_ATTR) or objective.spec.to_dict())
    sampler = user_attrs.get(SAMPLER_ATTR, {})
    source = spec.source or {}
    dataset = source.get("dataset") or (Path(source["csv"]).name if source.get("csv") else "—")
    classifier = spec.to_dict()["classifier"]
    scoring = spec.to_dict()["scoring"]
    cv = "resubstitution" if spec.cv is None else f"{spec.cv}-fold"
    n_samples = spec.n_samples or objective.n_samples
    settings = sampler.get("settings", {})
    # Names are the user's (a study's, a file's, the columns'): code spans, never markup.
    lines = [f"## Box-Cox λ search {md_code(study.study_name, cell=False)}", ""]
    if decision is not None and params is not None:
        lines += _decision_lines(objective, params, decision, used_trial)
    elif params is not None:
        held = f"trial {used_trial}" if used_trial is not None else "the search's best"
        lines += [
            f"**Λ used: {NAMES['searched']}** ({held}). No gate judged it: "
            "the search's best Λ is used as it is.",
            "",
        ]
    lines += [
        "| | |",
        "| --- | --- |",
        f"| data set | {md_code(dataset)} ({n_samples} samples × "
        f"{len(objective.param_names)} features) |",
        f"| classifier | {md_text(classifier['name'] or classifier['class'].rsplit('.', 1)[-1])} |",
        f"| scoring | {scoring}, {cv} |",
        f"| sampler | {md_text(sampler.get('name', spec.sampler or '—'))} |",
        f"| settings | {', '.join(f'{k} = {v}' for k, v in settings.items()) or '—'} |",
        f"| trials | {n_finished} finished |",
    ]
    if params is not None:
        base, mle, chosen = note_scores(
            objective,
            params,
            base_score=base_score,
            mle_score=mle_score,
            chosen_score=chosen_score,
        )
        if decision is None:
            lines.append(f"| score | {chosen:.4f} (λ = 1: {base:.4f}, λ_MLE: {mle:.4f}) |")
        else:
            others = f"searched Λ: {chosen:.4f}, λ = 1: {base:.4f}, λ_MLE: {mle:.4f}"
            if decision.range_scaled:
                # Min-max scaled, its model is not a point the objective scores: the gate's
                # CV score above is its score.
                lines.append(f"| score | {others} (standard scaled) |")
            else:
                used = {"searched": chosen, "mle": mle, "ones": base}[decision.chosen]
                lines.append(f"| score | Λ used {used:.4f} ({others}) |")
        configuration = objective.configuration(params)
        if configuration.settings:
            settings = ", ".join(
                f"{md_text(k)} = {md_text(v)}" for k, v in configuration.settings.items()
            )
            lines.append(f"| classifier settings | {settings} |")
        mle_params = objective.mle_params
        if len(objective.transforms) > 1:
            lines += ["", "| feature | transform | λ | λ_MLE |", "| --- | --- | ---: | ---: |"]
            lines += [
                f"| {md_code(n)} | {t} | {params[n]:.3f} | {mle_params[n]:.3f} |"
                for n, t in zip(objective.param_names, configuration.transforms)
            ]
        elif decision is None:  # a guarded search's note leads with its λ
            lines += ["", "| feature | λ | λ_MLE |", "| --- | ---: | ---: |"]
            lines += [
                f"| {md_code(n)} | {params[n]:.3f} | {mle_params[n]:.3f} |"
                for n in objective.param_names
            ]
    return "\n".join(lines) + "\n"


def _decision_lines(
    objective: BoxCoxObjective,
    searched: Mapping[str, float],
    decision: Decision,
    used_trial: int | None,
) -> list[str]:
    """The head of a guarded search's note: the Λ used, why, which trial holds it, and its λ
    beside the searched λ."""
    used = objective.to_params(decision.lambdas)
    if used_trial is not None:
        held = f"trial {used_trial}"
    else:
        held = "no trial holds it: the study's best trial is the searched Λ"
    lines = [f"**Λ used: {NAMES[decision.chosen]}** ({held}). {decision.explain()}", ""]
    mle = objective.mle_params
    lines += ["| feature | λ used | λ searched | λ_MLE |", "| --- | ---: | ---: | ---: |"]
    lines += [
        f"| {md_code(n)} | {used[n]:.3f} | {searched[n]:.3f} | {mle[n]:.3f} |"
        for n in objective.param_names
    ]
    return [*lines, ""]


# -- where figures go ---------------------------------------------------------------------------
def attach_figures(
    study: optuna.Study,
    figures: Mapping[str, go.Figure],
    note: str,
    artifact_store: ArtifactStore | None = None,
) -> None:
    """Store the figures and the note in the study; optuna-dashboard shows them on the study page.

    Each figure is saved with :func:`optuna_dashboard.save_plotly_graph_object` under its key as the
    graph id (letters, digits, ``-``, ``_``, ``:``, ``.``), so attaching again replaces it. With an
    ``artifact_store`` the figures are also uploaded as study artifacts (PNG when it can be
    rendered, otherwise self-contained HTML).
    """
    # optuna-dashboard is imported where a note or graph is saved, in this whole module: it loads
    # its web server's modules, the slowest import of the package (docs/performance_log.md, imports).
    from optuna_dashboard import save_note
    from optuna_dashboard import save_plotly_graph_object

    for key, figure in figures.items():
        save_plotly_graph_object(study, figure, graph_object_id=key)
    save_note(study, note)
    if artifact_store is not None:
        with tempfile.TemporaryDirectory() as directory:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                paths = write_figures(figures, directory, formats=("png",))
            if not paths:
                paths = write_figures(figures, directory, formats=("html",), include_plotlyjs=True)
            for path in paths:
                upload_artifact(
                    artifact_store=artifact_store, file_path=str(path), study_or_trial=study
                )


def write_figures(
    figures: Mapping[str, go.Figure],
    directory: str | Path,
    formats: Sequence[str] = ("html", "png"),
    *,
    include_plotlyjs: bool | str = "directory",
) -> list[Path]:
    """Write every figure as ``<directory>/<key>.<format>``; returns the files written.

    HTML pages share one ``plotly.min.js`` in ``directory`` (they open without a network). PNG needs
    kaleido, which drives a Chrome or Chromium installed on the machine; without them the PNGs are
    left out with a :class:`RuntimeWarning` saying why, and the HTML is still written.
    """
    unknown = set(formats) - {"html", "png"}
    if unknown:
        raise ValueError(f"formats must be 'html' and/or 'png', got {sorted(unknown)}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    if "html" in formats:
        for key, figure in figures.items():
            path = directory / f"{key}.html"
            figure.write_html(str(path), include_plotlyjs=include_plotlyjs)
            written.append(path)
    if "png" in formats and figures:
        written += _write_pngs(figures, directory)
    return written


def _write_pngs(figures: Mapping[str, go.Figure], directory: Path) -> list[Path]:
    paths = [directory / f"{key}.png" for key in figures]
    try:
        # One browser for all figures: kaleido starts Chromium once per call. On a loaded machine
        # its browser can leave a figure unwritten without a word: those are written once more.
        pio.write_images(list(figures.values()), [str(p) for p in paths], width=900, height=550)
        missing = [j for j, path in enumerate(paths) if not path.is_file()]
        if missing:
            figures_left = list(figures.values())
            pio.write_images(
                [figures_left[j] for j in missing],
                [str(paths[j]) for j in missing],
                width=900,
                height=550,
            )
    except Exception as error:  # kaleido missing, or no Chrome/Chromium for it to drive
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reason = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
        warnings.warn(
            f"PNG figures not written ({reason}); PNG export needs "
            "`pip install kaleido` and a Chrome or Chromium (Debian: apt-get install chromium)",
            RuntimeWarning,
            stacklevel=3,
        )
        return []
    unwritten = [path.name for path in paths if not path.is_file()]
    if unwritten:
        warnings.warn(
            f"PNG figures not written by kaleido: {', '.join(unwritten)}",
            RuntimeWarning,
            stacklevel=3,
        )
    return [path for path in paths if path.is_file()]
