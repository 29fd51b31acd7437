"""Differentially private release of a whole table through a low-dimensional projection
(spec 03): ``icahdp`` (strict and paper modes) and the ``dppro`` baseline.

encoding.py  columns → a matrix in [0, 1] (numeric scaled by bounds, categorical one-hot) and back
budget.py    personalized budgets (assignment), entropies and mutual information
icahdp.py    the icahdp method
dppro.py     the dppro method
"""
