"""Randomized transactions (spec 02): MASK, PN/g, support reconstruction, Apriori on releases.

Modules:
  bits        the compact 0/1 matrix (bit-packed columns) and the vectorized counting
  encoding    transaction files and one-hot encoding of tables into items
  groups      PN/g groups (each row's keep probability) and the published privacy figures
  estimation  transition matrices and the pooled / stratified support estimators
  release     the ``mask`` and ``png`` release methods
  supports    exact or reconstructed supports of itemsets; the ``reconstruct`` hook
  mining      Apriori, association rules and the ``frequent_itemsets`` analysis
"""
