"""Randomized transactions (spec 02): MASK, PN/g, support reconstruction, Apriori on releases.

Modules:
  bits        the compact 0/1 matrix (bit-packed columns) and the vectorized counting
  encoding    transaction files and one-hot encoding of tables into items
  estimation  transition matrices and the pooled / stratified support estimators
  release     the ``mask`` and ``png`` release methods and their privacy figures
  mining      Apriori and association rules, ``frequent_itemsets``, the reconstructor
"""
