"""The objective and its parts: a Λ in, a cross-validated score out.

- ``_objective``: :class:`BoxCoxObjective`, the facade the runner and the samplers call;
- ``_points``: the points (Λ vectors) it is asked about, as keys;
- ``_columns``: transformed columns, computed once per (column, λ);
- ``_evaluation``: scoring a batch of Λ through the classifier's evaluator;
- ``_evaluators/``: one module per classifier's fast scorers, and ``REGISTRY`` with their traits;
- ``_scoring``: how a feature matrix is scored (a metric by resubstitution or inner folds, or a
  criterion);
- ``_score_cache``: scores already known;
- ``_memory``: how many folds' columns fit in memory at once;
- ``_auto``: what ``auto`` prices a search from (the fidelity values themselves are
  ``optuna_boxcox._study._fidelity``), and ``_rungs`` the rungs' objectives, scoring a trial rung
  by rung and Optuna's pruners for them.
"""
