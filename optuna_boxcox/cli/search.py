"""``search``, ``worker`` and ``demo``: one study, run or resumed, and reported."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from optuna_boxcox._defaults import DEFAULT_OPEN_ENDED_TRIALS
from optuna_boxcox._defaults import DEFAULT_PRUNER
from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import add_data_arguments
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_objective_arguments
from optuna_boxcox.cli._args import add_scale_arguments
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._args import check_cv
from optuna_boxcox.cli._args import check_max_memory
from optuna_boxcox.cli._args import dropped_columns
from optuna_boxcox.cli._args import flag_of
from optuna_boxcox.cli._args import load_data
from optuna_boxcox.cli._args import parse_fidelity
from optuna_boxcox.cli._args import positive
from optuna_boxcox.cli._space_args import add_space_arguments
from optuna_boxcox.cli._space_args import space_options

if TYPE_CHECKING:
    from optuna_boxcox._lifecycle._search import RunOptions
    from optuna_boxcox._lifecycle._search import SearchRun
    from optuna_boxcox._lifecycle._search import Where
    from optuna_boxcox._study._spec import SearchSpec

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

#: How ``search`` starts a refused study over (the library's refusals end with it).
START_OVER_SEARCH = "use another --study-name, or --restart, to start it over"
#: Settings of the paper's grid samplers that ``search`` offers as options.
GRID_SETTINGS = ("grid_size", "grid_range")
COORDINATE_SETTINGS = ("epochs", "shift_epoch", "shuffle_epoch", "finer_epoch")


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_objective_arguments(parser)
    add_scale_arguments(parser)
    parser.add_argument(
        "--sampler",
        default="guarded",
        help="guarded (the default: the coordinate search, then a gate that keeps its Λ only if "
        "it beats the MLE and λ = 1 anchors on cross-validated rows, else uses the better "
        "anchor), coordinate (the paper's iterative grid search), a Table-4 preset (iterative, "
        "shift, shuffle, finer, combined1, combined2), spherical, diagonal, grid, mle, "
        "nelder-mead, or one of Optuna's: tpe, random, cmaes, qmc, gp, nsga2",
    )
    settings = parser.add_argument_group(
        "settings of the paper's samplers (override the preset's; recorded in the study)"
    )
    settings.add_argument("--grid-size", type=positive(int), help="L, grid points per sweep")
    settings.add_argument(
        "--grid-range", help="LOW,HIGH of the global grid (the paper's: -5,5)", metavar="LOW,HIGH"
    )
    settings.add_argument("--epochs", type=positive(int), help="E, passes over all features")
    settings.add_argument("--shift-epoch", type=positive(int), help="Shift every s epochs")
    settings.add_argument("--shuffle-epoch", type=positive(int), help="Shuffle every h epochs")
    settings.add_argument("--finer-epoch", type=positive(int), help="Finer every f epochs")
    parser.add_argument(
        "--pruner",
        default=None,
        metavar="NAME",
        help="Optuna's pruner for a search with a --fidelity through study.optimize (Optuna's "
        "samplers, --no-batch): successive-halving, hyperband, median or none (default "
        f"{DEFAULT_PRUNER}, from the fidelity's rows and η); the paper's samplers run batch by "
        "batch halve each sweep themselves",
    )
    add_storage_argument(parser)
    parser.add_argument(
        "--study-name",
        default=None,
        help="default: <dataset>/<classifier>/<sampler>; data from --csv add @<fingerprint> of "
        "the data, so an edited file starts a new study",
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="delete the study of this name first and search again (for a study that holds "
        "another experiment, or to start over)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampler and inner folds")
    add_jobs_argument(
        parser,
        "processes scoring each batch of the paper's samplers (the first worker also writes); "
        "--no-batch and Optuna's samplers: threads of study.optimize",
    )
    parser.add_argument(
        "--n-trials",
        type=positive(int),
        default=None,
        help="the study's total of finished trials (COMPLETE or PRUNED), not new ones: the same "
        "command again runs only those still missing, and none once the study holds them "
        "(default: the paper's samplers run their plan; others "
        f"{DEFAULT_OPEN_ENDED_TRIALS})",
    )
    parser.add_argument(
        "--timeout",
        type=positive(float),
        default=None,
        help="stop after this many seconds (between batches); the same command resumes",
    )
    parser.add_argument(
        "--allow-large",
        action="store_true",
        help="run a plan of more than 100,000 trials or 2 GB of study data (wide data: refused "
        "otherwise, in one line, before the first trial)",
    )
    parser.add_argument(
        "--no-figures",
        action="store_true",
        help="do not attach the search's figures to the study (its note, shown by "
        "optuna-dashboard with the Λ used, is attached still)",
    )
    parser.add_argument(
        "--report-timings",
        type=Path,
        default=None,
        help=argparse.SUPPRESS,  # for the end-to-end benchmark: when the last trial was written
    )
    parser.add_argument(
        "--no-batch",
        action="store_true",
        help="one trial at a time through study.optimize (to share a study with other workers); "
        "by default the paper's samplers run batch by batch with one write per batch",
    )
    add_space_arguments(parser)
    add_declared_arguments(parser)


def add_declared_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``SearchSpec`` declares with its fields (``--field-name``, argparse's own rule
    from a flag to its parameter), with the field's default."""
    from optuna_boxcox._study._spec import flags

    group = parser.add_argument_group("the experiment (recorded in the study's identity)")
    for name, flag, default in flags():
        group.add_argument(
            flag_of(name),
            dest=name,
            default=None,
            metavar=flag.metavar,
            help=f"{flag.help} (default {default})",
        )


def declared_options(args: argparse.Namespace) -> dict[str, Any]:
    """The values of the options ``SearchSpec`` declares that were given, parsed as declared."""
    from optuna_boxcox._study._spec import flags

    given = {}
    for name, flag, _ in flags():
        text = getattr(args, name, None)
        if text is None:
            continue
        try:
            given[name] = flag.parse(text)
        except ValueError as error:
            raise UsageError(f"{flag_of(name)}: {error}") from None
    return given


def sampler_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The sampler settings given on the command line (refused where the sampler has none)."""
    from optuna_boxcox._lifecycle._guard import search_sampler
    from optuna_boxcox.samplers import PRESETS

    given: dict[str, Any] = {}
    for name in (*GRID_SETTINGS, *COORDINATE_SETTINGS):
        value = getattr(args, name, None)
        if value is not None:
            given[name] = value
    if "grid_range" in given:
        given["grid_range"] = parse_grid_range(given["grid_range"])
    # The guarded default searches with the coordinate search, and takes its settings.
    name = search_sampler(args.sampler.strip().lower()).removeprefix("coordinate:")
    coordinate = name == "coordinate" or name in PRESETS
    grid = coordinate or name in ("spherical", "diagonal", "grid")
    wrong = [k for k in given if not grid or (k in COORDINATE_SETTINGS and not coordinate)]
    if wrong:
        options = ", ".join(flag_of(k) for k in wrong)
        verb = "does" if len(wrong) == 1 else "do"
        raise UsageError(f"{options} {verb} not apply to the {args.sampler!r} sampler")
    return given


def parse_grid_range(text: str) -> tuple[float, float]:
    """``"-5,5"`` (or ``"-5:5"``) → (-5.0, 5.0): two finite numbers, the first below the second."""
    try:
        low, high = (float(p) for p in text.replace(":", ",").split(","))
    except ValueError:
        raise UsageError(f"--grid-range must be LOW,HIGH (e.g. -5,5), got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise UsageError(
            f"--grid-range must be two finite numbers LOW,HIGH with LOW < HIGH, got {text!r}"
        )
    return low, high


def search_spec(args: argparse.Namespace) -> SearchSpec:
    """The search the command line asks for (data source included, data not yet read)."""
    from optuna_boxcox._study._fidelity import Exact
    from optuna_boxcox._study._spec import SearchSpec

    options = space_options(args)
    fidelity = parse_fidelity(getattr(args, "fidelity", None))
    pruner = getattr(args, "pruner", None)
    if pruner is not None:
        from optuna_boxcox._objective._rungs import PRUNERS

        if pruner not in PRUNERS:
            raise UsageError(f"--pruner must be one of {', '.join(PRUNERS)}, got {pruner!r}")
        if isinstance(fidelity, Exact):
            raise UsageError(
                "--pruner needs --fidelity auto or N: an exact search has no rungs to prune at"
            )
    source = {
        "dataset": None if args.csv is not None else (args.dataset or "breast_cancer"),
        "csv": None if args.csv is None else str(args.csv),
        "label": args.label,
        "features": args.features,
    }
    dropped = dropped_columns(args)
    if dropped:  # recorded only when given: a study made before reads the same
        source["drop_columns"] = dropped
    return SearchSpec(
        args.classifier,
        scoring=args.scoring,
        cv=args.cv,
        transforms=options.get("transforms"),
        estimator_params=options.get("estimator_params", {}),
        objectives=options.get("objectives", ("score",)),
        subsample=getattr(args, "subsample", None),
        fidelity=fidelity,
        sampler=args.sampler.strip().lower(),  # as --classifier: TPE is tpe, not a study of its own
        sampler_settings=sampler_settings(args),
        pruner=pruner,
        seed=args.seed,
        source=source,
        **declared_options(args),
    )


def run_search(args: argparse.Namespace) -> SearchRun:
    """Run (or resume) the study the command line names and return what was found."""
    X, y, data_name = load_data(args)
    check_cv(args.cv, y)
    spec = search_spec(args)
    from optuna_boxcox._lifecycle._search import PlanTooLarge
    from optuna_boxcox._lifecycle._search import RunOptions
    from optuna_boxcox._lifecycle._search import Where
    from optuna_boxcox._objective._arguments import check_data

    where = Where(
        storage=args.storage,
        study_name=args.study_name,
        data_name=data_name,
        restart=args.restart,
    )
    options = RunOptions(
        memory_limit=check_max_memory(args.max_memory),
        n_jobs=args.n_jobs,
        n_trials=args.n_trials,
        n_trials_total=True,  # the same command again resumes the search, never runs it twice
        timeout=args.timeout,
        batch=not args.no_batch,
        note=True,
        figures=not args.no_figures,
        # A plan too large to write is refused before anything is computed (--allow-large).
        refuse_large=not args.allow_large,
    )
    from optuna_boxcox._objective._memory import MemoryLimitTooSmall

    try:
        return run_spec(spec, check_data(X, y), where, options)
    except PlanTooLarge as large:
        fewer = "--features N, --grid-size, --epochs, --n-trials N or --sampler spherical"
        raise UsageError(large.size.refusal(fewer, "--allow-large")) from None
    except MemoryLimitTooSmall as small:
        # The library's memory_limit is this command's --max-memory.
        flag = {"memory_limit": "--max-memory"}
        raise UsageError(small.worded(lambda name: flag.get(name, flag_of(name)))) from None


def run_spec(spec: SearchSpec, data: Any, where: Where, options: RunOptions) -> SearchRun:
    """:func:`~optuna_boxcox._lifecycle._search.run_search` as a command runs it: with progress,
    and the fidelity printed once decided, before the first trial. The library's refusals and
    interruptions reach :func:`optuna_boxcox.cli.main`, which words them with the command's
    options."""
    from optuna_boxcox._lifecycle._search import run_search as run

    options = dataclasses.replace(options, progress=True, announce=print_fidelity)
    return run(spec, data, where, options)


def print_search(found: SearchRun) -> None:
    from optuna_boxcox.storage import redact

    if found.front is not None:
        print_pareto_search(found)
        return
    objective = found.objective
    result = found.result
    if found.new_trials == 0 and (result.finished or not found.ran):
        timing = "finished earlier: nothing to do"
    elif found.new_trials == 0:
        timing = "nothing new to do"
    else:
        timing = f"{found.elapsed:.1f} s"
    print(f"study      {found.study_name}  ({_trials(found.n_trials)}, {timing})")
    print(f"storage    {redact(found.storage)}")
    described = objective.describe()
    if described["subsample"] is not None:
        print(
            f"subsample  every Λ scored on {described['n_scored']:,} of "
            f"{described['n_samples']:,} rows (stratified); a model with these λ is fitted on all "
            "rows"
        )
    # A search that ran said its fidelity before its first trial; one read back says it here.
    fidelity_line = None if found.ran else fidelity_summary(objective)
    if fidelity_line is not None:
        print(f"fidelity   {fidelity_line}")
    # The score of the Λ used comes first, named: the gate may have used an anchor instead of
    # the searched Λ, and the λ printed below are the ones used.
    print(f"score      {found.best:.4f} with the Λ used: {_used_in_words(found.decision)}")
    scores = f"           base (λ = 1) {found.base:.4f}   MLE {found.mle:.4f}"
    # A default that searches no Λ (the MLP's rule) ran the MLE as its one trial.
    if found.decision is None or found.decision.judged_by.search:
        best = found.best if found.search_best is None else found.search_best
        scores += f"   Box-Cox search {best:.4f}"
    print(scores)
    if found.decision is not None:
        print(f"decision   {found.decision.describe()}")
    confirmed = getattr(result, "confirmed", None)
    if confirmed is not None:
        # A tie keeps the found Λ.
        found_kept = confirmed["value"] == confirmed["found_value"]
        kept = "the found Λ" if found_kept else "the starting point G"
        print(
            f"confirmed  on all {confirmed['rows']:,} rows (the search's top rung had fewer): "
            f"found Λ {confirmed['found_value']:.4f}, start G {confirmed['start_value']:.4f}; "
            f"{kept} is the result"
        )
    from optuna_boxcox.samplers import PlanSampler

    if not result.finished and result.budget is None and isinstance(found.sampler, PlanSampler):
        from optuna_boxcox._lifecycle._open import trials_left

        if found.total is not None and trials_left(found.study, found.total) == 0:
            print(
                f"           (the plan is not finished: it stopped at --n-trials {found.total}; "
                "a larger --n-trials continues it)"
            )
        else:
            print("           (the plan is not finished: run the same command to continue it)")
    print("λ by feature:")
    from optuna_boxcox._system._text import display_width
    from optuna_boxcox._system._text import ljust

    width = max(display_width(n) for n in ("feature", *objective.param_names))
    mle = objective.mle_params
    print(f"  {ljust('feature', width)}  {'λ':>8}  {'λ_MLE':>8}")
    for name in objective.param_names:
        print(f"  {ljust(name, width)}  {found.params[name]:8.3f}  {mle[name]:8.3f}")
    print_choices(objective, found.params)


def _used_in_words(decision: Any) -> str:
    """Which Λ a search's result uses, and who chose it."""
    from optuna_boxcox._study._decision import NAMES

    if decision is None:
        return "the searched Λ"
    if not decision.gated:
        return f"{NAMES[decision.chosen]}, used without a gate"
    if not decision.judged_by.search:
        return f"{NAMES[decision.chosen]}, the better anchor (no Λ search for this classifier)"
    if decision.chosen == "searched":
        return "the searched Λ, kept by the gate"
    return f"{NAMES[decision.chosen]}, chosen by the gate over the searched Λ"


def print_fidelity(objective: Any) -> None:
    """The fidelity decided, in one line before the search starts (nothing for an exact search
    asked as such)."""
    line = fidelity_summary(objective)
    if line is not None:
        print(f"fidelity   {line}", flush=True)


def fidelity_summary(objective: Any) -> str | None:
    """What the search's fidelity is and why, in one line; None for an exact search asked as such
    (the paper's search, nothing to say)."""
    choice = objective.fidelity_choice
    if choice.fidelity is None and choice.requested != "auto":
        return None
    return choice.summary(objective.n_samples, type(objective.estimator).__name__)


def print_pareto_search(found: SearchRun) -> None:
    from optuna_boxcox.storage import redact

    objective = found.objective
    print(f"study      {found.study_name}  ({_trials(found.n_trials)}, {found.elapsed:.1f} s)")
    print(f"storage    {redact(found.storage)}")
    print(f"Pareto front of {objective.metric_name} and features kept:")
    print(f"  {'kept':>4}  {objective.metric_name:>10}  trial  features")
    for trial in found.front:
        transforms = objective.configuration(trial.params).transforms
        kept = [n for n, t in zip(objective.param_names, transforms) if t != "drop"]
        shown = ", ".join(kept[:4]) + (f", … ({len(kept) - 4} more)" if len(kept) > 4 else "")
        print(f"  {trial.values[1]:4g}  {trial.values[0]:10.4f}  {trial.number:5d}  {shown}")


def print_choices(objective: Any, params: dict[str, Any]) -> None:
    """The transform chosen for each feature and the classifier settings, where searched."""
    configuration = objective.configuration(params)
    if len(objective.transforms) > 1:
        chosen = dict(zip(objective.param_names, configuration.transforms))
        by_kind = {t: [n for n, c in chosen.items() if c == t] for t in objective.transforms}
        for kind, names in by_kind.items():
            if names:
                print(f"{kind:<12} {len(names)} feature(s): {', '.join(names)}")
    if configuration.settings:
        settings = ", ".join(f"{k} = {v!r}" for k, v in configuration.settings.items())
        print(f"settings   {settings}")


def dashboard_hint(storage: str) -> str:
    from optuna_boxcox.cli._command import command
    from optuna_boxcox.storage import redact

    hint = f"open it in optuna-dashboard:  {command()} dashboard {redact(storage)}"
    dashboard = command("optuna-dashboard")
    if dashboard is not None:
        hint += f"    (or: {dashboard} {redact(storage)})"
    return hint


def cmd_search(args: argparse.Namespace) -> int:
    found = run_search(args)
    print_search(found)
    print(dashboard_hint(found.storage))
    if args.report_timings is not None:
        import json

        from optuna_boxcox._system._process import peak_rss_kib

        timings = {
            "written_at": found.written_at,
            "peak_kib": peak_rss_kib(),
            "search_seconds": found.elapsed,
        }
        args.report_timings.write_text(json.dumps(timings))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Join an existing study as one more worker, trial by trial, with the study's own spec."""
    from optuna_boxcox._lifecycle._open import load_study
    from optuna_boxcox._lifecycle._search import RunOptions
    from optuna_boxcox._lifecycle._search import Where
    from optuna_boxcox._lifecycle._search import attach_note
    from optuna_boxcox._lifecycle._search import recorded_total
    from optuna_boxcox._objective._arguments import check_data
    from optuna_boxcox._study._spec import SearchSpec
    from optuna_boxcox.cli._args import load_data_source
    from optuna_boxcox.samplers import PlanSampler
    from optuna_boxcox.storage import open_storage
    from optuna_boxcox.storage import redact

    storage = open_storage(args.storage, create=False)
    try:
        study = load_study(storage, args.study_name)
    except KeyError:
        raise UsageError(
            f"no study {args.study_name!r} in {redact(args.storage)}; start it with 'search'"
        ) from None
    spec = SearchSpec.of_study(study)
    if spec is None or spec.sampler is None or not spec.source:
        raise UsageError(
            f"study {args.study_name!r} was not created by 'optuna-boxcox search'; cannot join it"
        )
    source = dict(spec.source)
    if args.csv is not None:
        source.update(dataset=None, csv=str(args.csv), label=args.label or source.get("label"))
    elif source.get("csv"):
        # A study's record is no licence to open a file: a crafted study could name any file
        # and have its first line printed in the error.
        raise UsageError(
            f"study {args.study_name!r} was made from a CSV file (recorded as "
            f"{str(source['csv'])!r}); pass that file with --csv PATH: a worker opens only the "
            "data it is given"
        )
    X, y, _ = load_data_source(
        dataset=source.get("dataset"),
        csv=source.get("csv"),
        label=source.get("label"),
        features=source.get("features"),
        drop_columns=source.get("drop_columns"),
    )
    # The study's total, as search counts it: each worker stops once the study holds it.
    total = args.n_trials if args.n_trials is not None else recorded_total(study)
    found = run_spec(
        spec,
        check_data(X, y),
        Where(storage=args.storage, study_name=args.study_name),
        RunOptions(
            n_jobs=args.n_jobs, n_trials=total, n_trials_total=True, batch=False, figures=False
        ),
    )
    # Figures stay off (each worker would draw them again), but the study gets its note, the Λ
    # used and the decision: from the worker that finds the plan finished (the one that writes
    # boxcox_result), or from each worker of an Optuna sampler, whose trials have no end but the
    # workers' (the last one's note counts them all).
    if found.result.finished or not isinstance(found.sampler, PlanSampler):
        attach_note(found)
    print(f"worker done: study {args.study_name!r} has {found.n_trials} trials")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from optuna_boxcox._lifecycle._search import RunOptions
    from optuna_boxcox._lifecycle._search import Where
    from optuna_boxcox._objective._arguments import check_data
    from optuna_boxcox._study._fidelity import DEFAULT_REQUEST
    from optuna_boxcox._study._spec import SearchSpec
    from optuna_boxcox.cli._args import load_data_source
    from optuna_boxcox.storage import redact

    print(
        "optuna-boxcox demo: the paper's iterative coordinate grid search (Algorithm 6) "
        "choosing one"
    )
    print(
        "Box-Cox λ per feature of scikit-learn's wine data for a k-nearest-neighbours "
        "classifier.\n"
    )
    source = {"dataset": "wine", "csv": None, "label": None, "features": None}
    # No fidelity asked for: the default (exact on the wine data's 178 rows), as search's.
    spec = SearchSpec("knn", sampler="coordinate", source=source, fidelity=DEFAULT_REQUEST)
    X, y, _ = load_data_source(**source)
    # The note and figures a search attaches, for the dashboard the demo points to.
    where = Where(storage=args.storage, study_name="demo/wine/knn/coordinate")
    found = run_spec(spec, check_data(X, y), where, RunOptions(figures=True))
    print_search(found)
    print(f"\nthe study is in {redact(found.storage)} as {found.study_name!r}")
    print(dashboard_hint(found.storage))
    return 0


def register(subparsers: Any) -> None:
    search = subparsers.add_parser(
        "search", help="run or resume one study (one data set, classifier, sampler)"
    )
    add_search_arguments(search)
    search.set_defaults(func=cmd_search, start_over=START_OVER_SEARCH)

    worker = subparsers.add_parser(
        "worker",
        help="join an existing study as one more worker (e.g. many machines on PostgreSQL)",
    )
    worker.add_argument("--storage", required=True, help="the study's storage URL")
    worker.add_argument("--study-name", required=True, help="the study to join")
    worker.add_argument(
        "--csv",
        type=Path,
        default=None,
        help="the study's data, when it was made from a CSV file (a worker opens no file the "
        "study names; a file of other data is refused)",
    )
    worker.add_argument("--label", default=None, help="the class column of --csv")
    worker.add_argument(
        "--n-trials",
        type=positive(int),
        default=None,
        help="the study's total of finished trials, as search's --n-trials: the worker stops "
        "once the study holds them (default: the total its search was given; the paper's "
        "samplers run their plan)",
    )
    add_jobs_argument(worker, "threads of study.optimize in this worker")
    worker.set_defaults(
        func=cmd_worker,
        start_over="pass the data the study was made from (--csv, --label), or 'search "
        "--restart', to start it over",
    )

    demo = subparsers.add_parser(
        "demo", help="a real search on a bundled data set, recorded in SQLite"
    )
    add_storage_argument(demo)
    demo.set_defaults(func=cmd_demo)


def _trials(n: int) -> str:
    return f"{n} trial" if n == 1 else f"{n} trials"
