"""One study: what it is, and the one way it is run.

- ``_spec``: :class:`SearchSpec`, a study's identity, refused when another experiment holds it;
- ``_space``: :class:`LambdaSpace`, the λ range searched;
- ``_settings``: a sampler's recorded settings, refused when changed;
- ``_search``: :func:`run_search` (the study lifecycle) and :func:`plan_search` (default policy);
- ``_guard``: the guarded default's gate (searched Λ vs the MLE and Λ = 1 anchors);
- ``_plan_size``: how large a search's plan is (trials, and what they write), told before it runs.
"""
