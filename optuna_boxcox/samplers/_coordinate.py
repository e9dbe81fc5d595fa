"""Algorithm 6 of the paper: iterative coordinate-wise grid search with Shift, Shuffle and Finer."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox._study._presets import PRESETS
from optuna_boxcox._study._space import DEFAULT_GRID_RANGE
from optuna_boxcox._study._space import LAMBDA
from optuna_boxcox._study._space import SETTING
from optuna_boxcox._study._space import TRANSFORM
from optuna_boxcox._study._space import LambdaSpace
from optuna_boxcox.samplers._driver import Batch
from optuna_boxcox.samplers._driver import is_positive_int
from optuna_boxcox.samplers._grid import GridPlanSampler

if TYPE_CHECKING:
    from collections.abc import Generator
    from collections.abc import Mapping

    from optuna.distributions import FloatDistribution
    from optuna.samplers import BaseSampler


def coordinate_search(
    space: LambdaSpace,
    *,
    grid_size: int,
    epochs: int,
    shift_epoch: int,
    shuffle_epoch: int,
    finer_epoch: int,
    grid_range: tuple[float, float],
    seed: int,
    authors_shift_quirk: bool = False,
    start: tuple[np.ndarray, float] | None = None,
    first_epoch: int = 0,
) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """Algorithm 6 (SPEC §4) as a plan: one batch per sweep of one direction over the grid.

    Epoch rules follow the authors' code: a Shift epoch (6.1) restarts the working point at random
    and resets the grid; otherwise every ``finer_epoch`` epochs since the last shift the grid is
    halved and attached to Λopt (Finer, 6.3); every ``shuffle_epoch`` epochs the direction order is
    permuted (Shuffle, 6.2). The first maximum in evaluation order wins (ties keep earlier points).

    A space beyond the paper's (:class:`~optuna_boxcox._study._space.LambdaSpace` with transform or
    setting coordinates) is swept the same way, each such coordinate being one more direction whose
    grid is its own (:meth:`~optuna_boxcox._study._space.LambdaSpace.grid`: every choice, or ``grid_size``
    values of a range) in every epoch: Finer leaves it whole, Shift draws one of its grid values. A
    feature's transform is swept right before its λ, and Shuffle moves the two together.

    ``start`` (a point and its score) replaces the starting point G, and only a better score
    replaces it as the best; ``first_epoch`` numbers the epochs in the trials' attributes.
    """
    lo, hi = grid_range
    p = space.dim
    finer_epoch = min(finer_epoch, shift_epoch)
    g = np.linspace(lo, hi, grid_size)
    grid, local = g, False
    own_grids = _own_grids(space, grid_size)
    units = _direction_units(space)
    best_point = space.initial.copy() if start is None else np.array(start[0], dtype=float)
    working = best_point.copy()
    best = -np.inf if start is None else float(start[1])
    order = list(range(len(units)))
    since = 0
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        shift = False
        if epoch > 0:
            since += 1
            if epoch % shift_epoch == 0:  # Shift (6.1)
                since, grid, local, shift = 0, g, False, True
                draw = rng.random(p)
                working = draw * (hi - lo) + lo
                for d, values in own_grids.items():
                    working[d] = values[min(int(draw[d] * len(values)), len(values) - 1)]
            elif since % finer_epoch == 0:  # Finer (6.3)
                grid, local = 0.5 * grid, True
            if epoch % shuffle_epoch == 0:  # Shuffle (6.2)
                rng.shuffle(order)
        phase = "shift" if shift else ("local" if local else "global")
        step = float(grid[1] - grid[0]) if grid_size > 1 else 0.0
        random_start = working.copy()
        improved_in_shift = False
        for d in (d for unit in order for d in units[unit]):
            if d in own_grids:
                candidates = own_grids[d]
                sweep_step = float(candidates[1] - candidates[0]) if len(candidates) > 1 else 0.0
            else:
                candidates = grid + best_point[d] if local else grid
                sweep_step = step
            points = space.along(working, d, candidates)
            attrs = [
                {
                    "epoch": first_epoch + epoch,
                    "direction": space.names[d],
                    "candidate": i,
                    "grid_step": sweep_step,
                    "phase": phase,
                }
                for i in range(len(points))
            ]
            scores = yield Batch(points, attrs, best_point.copy(), best)
            for x, score in zip(points, scores):
                if score > best:
                    best = score
                    if authors_shift_quirk and shift and not improved_in_shift:
                        best_point = random_start.copy()
                        best_point[d] = x[d]
                        improved_in_shift = True
                    else:
                        best_point = x.copy()
            working[d] = best_point[d]
    return best_point, best


def two_stage_search(
    space: LambdaSpace, **settings: Any
) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """The coordinate search of a space with classifier settings, in two stages.

    Stage 1 is the search without the settings, exactly (the same trials as a search of the
    features alone, the settings at the classifier's own values); stage 2 searches features and
    settings together from stage 1's optimum, whose score only a better one replaces. So searching
    settings never ends below searching λ alone on the same objective; sweeping them from the
    start instead sends the greedy search down another path, which under cross-validation often
    ends lower. Stage 2's epochs are numbered after stage 1's. A space without settings is
    searched in one stage.
    """
    features = [d for d in range(space.dim) if space.kind(d) != SETTING]
    if len(features) == space.dim:
        return (yield from coordinate_search(space, **settings))
    subspace = LambdaSpace(
        names=tuple(space.names[d] for d in features),
        low=space.low[features],
        high=space.high[features],
        initial=space.initial[features],
        kinds=tuple(space.kind(d) for d in features),
        others=space.others,
    )

    def embedded(x: np.ndarray) -> np.ndarray:
        point = space.initial.copy()
        point[features] = x
        return point

    stage = coordinate_search(subspace, **settings)
    scores = None
    try:
        while True:
            batch = stage.send(scores)
            scores = yield Batch(
                [embedded(x) for x in batch.points],
                batch.attrs,
                None if batch.incumbent is None else embedded(batch.incumbent),
                batch.incumbent_score,
            )
    except StopIteration as finished:
        point, score = finished.value
    return (
        yield from coordinate_search(
            space, **settings, start=(embedded(point), score), first_epoch=settings["epochs"]
        )
    )


def _own_grids(space: LambdaSpace, grid_size: int) -> dict[int, np.ndarray]:
    """The fixed grid of every coordinate that is not a λ, by index."""
    return {d: space.grid(d, grid_size) for d in range(space.dim) if space.kind(d) != LAMBDA}


def _direction_units(space: LambdaSpace) -> list[list[int]]:
    """Coordinates grouped as Shuffle moves them: a transform with the λ after it, else alone."""
    units: list[list[int]] = []
    for d in range(space.dim):
        if d > 0 and space.kind(d) == LAMBDA and space.kind(d - 1) == TRANSFORM:
            units[-1].append(d)
        else:
            units.append([d])
    return units


def sweep_sizes(space: LambdaSpace, grid_size: int) -> list[int]:
    """Candidates per sweep of each coordinate: ``grid_size`` for a λ, its own grid's size else."""
    own = _own_grids(space, grid_size)
    return [len(own[d]) if d in own else grid_size for d in range(space.dim)]


class CoordinateGridSampler(GridPlanSampler):
    """The paper's iterative coordinate-wise grid search (Algorithm 6) as an Optuna sampler.

    Starting from the MLE point, each sweep varies one λ over a grid of ``grid_size`` values while
    the others stay fixed and keeps the best; an epoch sweeps every feature. The refinements of the
    paper are settings: Shift (6.1) restarts at a random point every ``shift_epoch`` epochs, Shuffle
    (6.2) permutes the feature order every ``shuffle_epoch`` epochs, Finer (6.3) halves the grid and
    centres it on the best λ every ``finer_epoch`` epochs. The budget is exactly
    ``epochs · n_features · grid_size`` trials; then the sampler stops the study.

    The plan is derived from the seed and the finished trials in the storage, so several threads or
    processes can share a study (the candidates of one sweep run concurrently, the next sweep waits),
    a restarted process continues where a killed one stopped, and the outcome is that of a single
    sequential run.

    When the objective also searches each feature's transform or the classifier's settings
    (:class:`~optuna_boxcox.BoxCoxObjective`'s ``transforms`` and ``estimator_params``), each of
    those is one more direction, swept over its own grid (every choice; an int range thinned to
    ``grid_size`` values): a feature's transform right before its λ, the settings after the
    features. With settings the search runs in two stages (:func:`two_stage_search`): the
    features alone, exactly as without settings, then features and settings from that optimum;
    the budget is then ``epochs`` times the sizes of the features' sweeps plus ``epochs`` times the
    sizes of all sweeps (with transforms only: ``epochs`` times the sizes of all sweeps). Each
    trial records ``epoch``, ``direction``, ``candidate``, ``grid_step``, ``phase`` and
    ``improved`` as user attributes; :meth:`result` returns Λopt and its history.

    Example::

        import optuna
        from sklearn.datasets import load_breast_cancer
        from sklearn.naive_bayes import GaussianNB
        from optuna_boxcox import BoxCoxObjective, CoordinateGridSampler

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        objective = BoxCoxObjective(X, y, GaussianNB())
        sampler = CoordinateGridSampler.from_preset("iterative", seed=0)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(objective)              # stops after 4 · 30 · 11 trials
        print(sampler.result(study).params)

    Args:
        grid_size: L, values per sweep (``linspace(*grid_range, L)``).
        epochs: E, passes over all features.
        shift_epoch: s, Shift every s epochs (s ≥ epochs: never).
        shuffle_epoch: h, Shuffle every h epochs.
        finer_epoch: f, Finer every f epochs since the last shift (f > s means f = s).
        grid_range: The global grid's bounds (paper: (-5, 5)).
        seed: Seed of the Shift and Shuffle draws; the same seed gives the same search.
        search_space: λ parameters (name → FloatDistribution) when the objective is not a
            :class:`~optuna_boxcox.BoxCoxObjective`, which records its own space in the study.
        initial_params: The starting point G (default: the objective's MLE point; λ = 1 for a
            plain ``search_space``).
        authors_shift_quirk: Reproduce the authors' code, which on the first improvement of a shift
            epoch stored the random start with only the improved λ changed (SPEC §4). Off by default.
        independent_sampler: Samples parameters outside the λ space (default: random).
        max_retries: Times a failed trial's position is re-run before it counts as the worst score.
    """

    name = "coordinate"
    searches_beyond_lambda = True

    def __init__(
        self,
        *,
        grid_size: int = 11,
        epochs: int = 4,
        shift_epoch: int = 4,
        shuffle_epoch: int = 4,
        finer_epoch: int = 4,
        grid_range: tuple[float, float] = DEFAULT_GRID_RANGE,
        seed: int = 0,
        search_space: Mapping[str, FloatDistribution] | None = None,
        initial_params: Mapping[str, float] | None = None,
        authors_shift_quirk: bool = False,
        independent_sampler: BaseSampler | None = None,
        max_retries: int = 3,
    ) -> None:
        for name, value in dict(
            epochs=epochs,
            shift_epoch=shift_epoch,
            shuffle_epoch=shuffle_epoch,
            finer_epoch=finer_epoch,
        ).items():
            if not is_positive_int(value):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        super().__init__(
            grid_size=grid_size,
            grid_range=grid_range,
            search_space=search_space,
            initial_params=initial_params,
            seed=seed,
            independent_sampler=independent_sampler,
            max_retries=max_retries,
        )
        self.epochs = int(epochs)
        self.shift_epoch = int(shift_epoch)
        self.shuffle_epoch = int(shuffle_epoch)
        self.finer_epoch = int(finer_epoch)
        self.authors_shift_quirk = bool(authors_shift_quirk)

    @classmethod
    def from_preset(cls, preset: str, **kwargs: Any) -> CoordinateGridSampler:
        """A sampler with the settings of one row of the paper's Table 4 (see :data:`PRESETS`)."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {list(PRESETS)}")
        return cls(**{**PRESETS[preset], **kwargs})

    def settings(self) -> dict[str, Any]:
        return {
            "grid_size": self.grid_size,
            "epochs": self.epochs,
            "shift_epoch": self.shift_epoch,
            "shuffle_epoch": self.shuffle_epoch,
            "finer_epoch": self.finer_epoch,
            "grid_range": list(self.grid_range),
            "seed": self._seed,
            "authors_shift_quirk": self.authors_shift_quirk,
        }

    def _continues(self, recorded: Mapping[str, Any]) -> bool:
        # More epochs replay the same plan and extend it: a study can be continued with more.
        # Fewer would silently drop finished epochs from the result, so they are refused.
        mine = {k: v for k, v in self.settings().items() if k != "epochs"}
        theirs = {k: v for k, v in recorded.items() if k != "epochs"}
        return mine == theirs and self.epochs >= recorded.get("epochs", 0)

    def budget(self, n_params: int | LambdaSpace) -> int:
        """E·p·L for ``n_params`` λ; for a space, E times the sizes of all its sweeps."""
        if isinstance(n_params, LambdaSpace):
            sizes = sweep_sizes(n_params, self.grid_size)
            features = [n for d, n in enumerate(sizes) if n_params.kind(d) != SETTING]
            stage1 = sum(features) if len(features) < len(sizes) else 0
            return self.epochs * (stage1 + sum(sizes))
        return self.epochs * n_params * self.grid_size

    def space_budget(self, space: LambdaSpace) -> int:
        return self.budget(space)

    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        return two_stage_search(
            space,
            grid_size=self.grid_size,
            epochs=self.epochs,
            shift_epoch=self.shift_epoch,
            shuffle_epoch=self.shuffle_epoch,
            finer_epoch=self.finer_epoch,
            grid_range=self.grid_range,
            seed=self._seed,
            authors_shift_quirk=self.authors_shift_quirk,
        )
