"""The coordinate search's named settings: the one place a preset is declared (the samplers, the
paper's table rows and the command line's names read it; plain Python, so ``--help`` can).
The OptunaHub package keeps its own copy (``hub/samplers/coordinate_search``), as a hub package
must stand alone."""

from __future__ import annotations

#: The paper's Table 4: settings of the iterative grid search and its refinements.
PRESETS: dict[str, dict[str, int]] = {
    "iterative": dict(grid_size=11, epochs=4, shift_epoch=4, shuffle_epoch=4, finer_epoch=4),
    "shift": dict(grid_size=11, epochs=8, shift_epoch=4, shuffle_epoch=8, finer_epoch=8),
    "shuffle": dict(grid_size=11, epochs=8, shift_epoch=8, shuffle_epoch=2, finer_epoch=8),
    "finer": dict(grid_size=11, epochs=8, shift_epoch=8, shuffle_epoch=8, finer_epoch=4),
    "combined1": dict(grid_size=11, epochs=16, shift_epoch=8, shuffle_epoch=2, finer_epoch=4),
    "combined2": dict(grid_size=21, epochs=16, shift_epoch=8, shuffle_epoch=2, finer_epoch=4),
}
#: The row labels of the paper's tables for each preset.
PRESET_LABELS = {
    "iterative": "Iterative grid search",
    "shift": "Shift",
    "shuffle": "Shuffle",
    "finer": "Finer",
    "combined1": "Combined 1",
    "combined2": "Combined 2",
}
