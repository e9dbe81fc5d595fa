"""The numerics under the objective: what transforms and scores a column, knowing no study.

- ``_numerics``: Box-Cox and its maximum-likelihood λ, vectorised;
- ``_transform``: :class:`BoxCoxTransformer` and :func:`box_cox`;
- ``_criteria``: classifier-free criteria of the transformed data (Bicego and Baldo 2016);
- ``_sgd``: the linear classifier's fit, batched over Λ;
- ``_neighbors``: k-NN distances shared between Λ that differ in one column;
- ``_jit``: Numba when installed, plain Python otherwise;
- ``_sklearn_compat``: every use of scikit-learn's internals.
"""
