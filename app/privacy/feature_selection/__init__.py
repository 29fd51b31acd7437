"""k-anonymous feature subset selection (spec 04 §3): ``rfka`` (seed 004) and its baseline
``hamdist`` (Greedy_Hamdist). Modules: encoding (binning + one-hot), importance (OOB
permutation importance), selection (the greedy k-anonymity loop, Hamming scores), methods
(parameters, runs, registration)."""

from app.privacy.feature_selection.methods import (  # noqa: F401
    HamdistParams, RfkaParams, run_hamdist, run_rfka,
)
