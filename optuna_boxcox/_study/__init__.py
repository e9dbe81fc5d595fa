"""What a study is: values that say which experiment a study holds, imported by every layer above
the numerics and importing nothing of the package but :mod:`optuna_boxcox._math` (running a study
is :mod:`optuna_boxcox._lifecycle`).

- ``_spec``: :class:`SearchSpec`, a study's identity, refused when another experiment holds it;
- ``_space``: :class:`LambdaSpace`, the λ range searched;
- ``_settings``: a sampler's recorded settings, refused when changed;
- ``_fidelity``: rows as the fidelity: :class:`Fidelity`, ``auto`` and its price;
- ``_plan_size``: how large a search's plan is (trials, and what they write), told before it runs.
"""
