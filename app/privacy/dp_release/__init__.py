"""Differentially private release of a whole table: through a low-dimensional projection
(spec 03: ``icahdp`` in strict and paper modes, the ``dppro`` baseline) and by sampling from
noisy marginals (``mst``, ``aim``, ``privbayes``); and answers rather than a table (``dp_statistics``).

encoding.py     columns → a matrix in [0, 1] (numeric scaled by bounds, categorical one-hot) and back
budget.py       personalized budgets (assignment), entropies and mutual information
common.py       parameters and steps shared by icahdp and dppro
projection.py   icahdp's noisy projection, sensitive channel, eigen-decomposition, entropy filter
icahdp.py       the icahdp method: strict mode's run, checks, registration
icahdp_params.py  icahdp's parameters (and the user basis' orthonormalization)
icahdp_steps.py  icahdp's column plans and ε budget, shared by both modes
icahdp_paper.py  icahdp's paper mode (the paper's pipeline, not DP)
dppro.py        the dppro method
feasibility.py  whether the noise calibration can serve an ε (and δ): checked before the debit
marginals.py    what mst and aim share: parameters, the 1-way split, ε/ρ pricing, the table's size
marginal_domains.py  the declared discrete domains, level codes, marginal counts, decoding
mbi_bridge.py   importing mbi and jax for a run, its mirror descent, memory handed back
mst_aim_release.py  mst's and aim's release: metadata, guarantee, statements
zcdp.py         zCDP accounting and exact sampling (exponential mechanism) for mst and aim
exact_em.py     the exponential mechanism over many candidates, sampled exactly and vectorized
mbi_sampling.py  records sampled from a fitted mbi model, reproducibly and without row-wise loops
pgm.py          a small numpy graphical model for aim's intermediate rounds
mst.py          the mst method
aim.py          the aim method
privbayes.py    the privbayes method (pure ε-DP: exact R scores, discrete Laplace marginals)
privbayes_params.py  privbayes' parameters and the constants that bound and calibrate a run
privbayes_network.py  privbayes' R score and GreedyBayes network (exponential mechanism)
privbayes_conditionals.py  privbayes' noisy marginals to conditionals, and sampling
privbayes_release.py  privbayes' release: guarantee, statements, metadata per neighbouring notion
statistics.py   the dp_statistics method: counts, sums, means, histograms, quantiles (pure ε-DP)
statistics_params.py  dp_statistics' parameters and each query's plan (domains, ε share, sensitivities)
statistics_guarantee.py  dp_statistics' guarantee and metadata per neighbouring notion
"""
