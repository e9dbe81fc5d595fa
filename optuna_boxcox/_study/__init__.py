"""What a study is: values that say which experiment a study holds and what it recorded, imported
by the layers above and importing of the package only the layers below it (the classifier names,
the numerics, plain utilities; ``tests/package/test_import_graph.py``). Running a study is
:mod:`optuna_boxcox._lifecycle`.

- ``_spec``: :class:`SearchSpec`, a study's identity, refused when another experiment holds it;
- ``_space``: :class:`LambdaSpace`, the λ range searched;
- ``_settings``: a sampler's recorded settings, refused when changed;
- ``_fidelity``: what a study records of rows as the fidelity: :class:`Fidelity`, the ``auto`` request and the choice made (its price is ``_objective._auto``'s);
- ``_decision``: the guarded default's :class:`Decision`, as the study records it;
- ``_plan_size``: how large a search's plan is (trials, and what they write), told before it runs.
"""
