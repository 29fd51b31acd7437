"""privbayes' parameters and the constants that bound and calibrate a run (the candidate and
record limits, a marginal's sensitivity under each neighbouring relation, the add/remove count's
share, the missing-level rule's chance). Separate so that the network, the conditionals and the
run import them without the method; "module docstring" in the comments means privbayes.py's,
which derives them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from pydantic import Field

from app.privacy.dp_release.marginals import MAX_ROWS, DomainParams

MAX_CANDIDATES = 50_000  # (attribute, parent set) pairs the structure may score, d·Σ_{j≤k} C(d−1, j)
MAX_RECORDS = 2**31 - 1  # S ≤ 2n² must fit in int64
MARGINAL_L1 = 2.0  # replace one record: one cell −1, one cell +1
MARGINAL_CELLS = 2
# (L1 sensitivity, cells) of a marginal under each relation: add/remove moves one cell by 1
MARGINAL_MOVE = {"replace_one": (MARGINAL_L1, MARGINAL_CELLS), "add_remove": (1.0, 1)}
COUNT_SHARE = Fraction(1, 20)  # add/remove: the share of ε measuring n, which is not public there
T_SENSITIVITY = 4  # of T = S/n under add/remove: n/(n + 1)·‖a‖₁·‖b‖₁ < 4 (module docstring)
MISSING_FALSE_RELEASE = 1e-6  # the chance that noise alone releases a missing level a column lacks
SAFETY = 1e-12  # ε shares nudged down so float rounding never sums above ε


class PrivBayesParams(DomainParams):
    degree: int = Field(2, ge=1, le=4, description="k: the most parents an attribute may get (the "
                        "θ-useful rule may give it fewer: see theta)")
    structure_share: float = Field(0.3, ge=0.05, le=0.95, description="β: the share of ε spent "
                                   "choosing the network (the paper's 0.3); the rest measures its "
                                   "conditional distributions")
    theta: float = Field(4.0, ge=0.0, le=1000.0, description="θ-usefulness (the paper's 4): a "
                         "parent set Π of X is a candidate only if the marginal of X and Π has at "
                         "most n·(1 − β)ε/(2dθ) cells (its average count at least θ times the "
                         "noise scale); 0: every parent set of up to `degree` columns")
    consistency: Literal["simplex", "clip"] = Field(
        "simplex", description="how a noisy marginal becomes a distribution (post-processing): "
        "'simplex', the nearest table of non-negative counts summing to n (n is public), which "
        "keeps a sparse table's empty cells near 0; 'clip', the paper's, negative counts set to 0 "
        "(each empty cell then keeps about half the noise scale: 10 % spurious mass on Adult at ε = 50)")
    rows: int | None = Field(None, ge=1, le=MAX_ROWS, description="rows of the synthetic table; "
                             "default the number of input records (replace_one: public) or, under "
                             "add_remove, the noisy count of records (rounded, at least 1, at most "
                             f"{MAX_ROWS:,})")
    neighbouring: Literal["replace_one", "add_remove"] = Field(
        "replace_one", description="the neighbouring relation ε is stated under: 'replace_one' "
        "(Veil's convention: one record's values changed, n public) or 'add_remove' (one record "
        "added or removed, as DataSynthesizer's marginal noise assumes: marginal sensitivity 1, n "
        "not public — ε/20 measures it). An add_remove job is debited the replace-one ε its run "
        "also satisfies (at most 2·19ε/20 = 1.9ε), and its guarantee states both")

    @property
    def add_remove(self) -> bool:
        return self.neighbouring == "add_remove"
