"""One study's lifecycle: open it, search it, gate and report what it found (what a study is, the
values it holds, is :mod:`optuna_boxcox._study`).

- ``_open``: :func:`open_study`, create or resume a study, refusing another experiment;
- ``_search``: :func:`run_search` (the study lifecycle) and :func:`plan_search` (default policy);
- ``_guard``: the guarded default's gate (searched Λ vs the MLE and Λ = 1 anchors), judging each
  classifier by the traits of its registry entry (``_objective._evaluators.REGISTRY``).
"""
