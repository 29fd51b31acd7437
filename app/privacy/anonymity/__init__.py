"""Anonymity (spec 04): generalization hierarchies, k-anonymity by Mondrian and by the optimal
full-domain lattice search, the l/α/t models, information loss, re-identification risk and
RFK-anonymity.

Layout: ``hierarchies`` (ARX CSV, validation, automatic hierarchies, the tree a column is
generalized over), ``axes`` (a quasi-identifier as integer codes), ``models`` (the privacy
constraints, vectorized over classes), ``mondrian`` and ``lattice`` (the two algorithms),
``release`` (labels, metrics and the released frame), ``verify`` (the independent checker),
``anonymize`` (one k-anonymization from table to verified release), ``roles`` (which columns are
quasi-identifiers and which is sensitive), ``metrics`` and ``risk`` (figures), ``rfk`` (seed
003), ``methods`` (the registered ``kanonymity`` and the helpers the others share),
``risk_method`` and ``rfk_method`` (the registered ``risk`` and ``rfk_anonymity``).
"""
