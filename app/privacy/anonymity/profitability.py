"""The game-theoretic profitability model (Wan et al., "A Game Theoretic Framework for Analyzing
Re-Identification Risk", PLOS ONE 2015; ARX's ProfitabilityProsecutor / ProfitabilityJournalist
and their no-attack variants), written from the paper's payoffs.

Per record of an equivalence class, with IL ∈ [0, 1] the class's information loss and p the
adversary's success probability (prosecutor: 1 / the released records of the class; journalist:
1 / the population records the class matches):

- the adversary attacks iff its expected payout is positive: gain · p − cost > 0;
- the publisher's expected payout is benefit · (1 − IL) − (attacked ? loss · p : 0);
- the publisher keeps the class iff that payout is positive, else suppresses it.

Since p = 1 / size, the attack is profitable exactly when size < gain / cost, i.e. when the size
is below ``attack_threshold`` = ⌈gain / cost⌉ (read exactly on the floats given, with Fractions),
so the *no-attack* variant — keep a class only when attacking it does not pay — is k-anonymity
(prosecutor) or k-map (journalist) with k = ⌈gain / cost⌉. ARX derives gain / cost + 1 when the
ratio is a whole number (its criterion asks p < cost / gain strictly); a class of exactly that size
gives the adversary a payout of 0, which is no attack under ARX's own payout test, so k here is
the ratio itself.

IL is ARX's entropy-based information loss of the paper: over the quasi-identifiers q, the
log of the number of the column's values (leaves in the data) the released cell covers, over the
log of the column's whole domain — IL = Σ_q ln cover_q / Σ_q ln domain_q: 0 for the raw values,
1 when every quasi-identifier is fully generalized (a table whose quasi-identifiers each hold one
value has IL 0).

The payout model is not monotone: generalizing raises IL (lowers every payout) while it grows
the classes (lowers the attack's odds), so a class kept at one node can be suppressed above it;
the lattice never prunes by it. An economic model of a rational adversary, not a formal
guarantee: an adversary with other motives or costs is not covered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

Attacker = Literal["prosecutor", "journalist"]


@dataclass(frozen=True)
class CostBenefit:
    """The game's parameters (monetary amounts per record, any one currency)."""

    attacker: Attacker = "prosecutor"
    adversary_cost: float = 4.0
    adversary_gain: float = 300.0
    publisher_loss: float = 300.0
    publisher_benefit: float = 1200.0
    no_attack: bool = False

    @property
    def attack_threshold(self) -> float:
        """The smallest class size at which an attack does not pay: ⌈gain / cost⌉ exactly (0 when
        the gain is 0: never profitable; inf when the cost is 0 and the gain is not: always)."""
        if self.adversary_gain == 0:
            return 0.0
        if self.adversary_cost == 0:
            return math.inf
        return float(math.ceil(Fraction(self.adversary_gain) / Fraction(self.adversary_cost)))

    @property
    def derived_k(self) -> int | None:
        """The no-attack variant's k (at least 1); None when no class size stops the attack."""
        threshold = self.attack_threshold
        return None if math.isinf(threshold) else max(1, int(threshold))

    def attacked(self, sizes: np.ndarray) -> np.ndarray:
        """Per class (or record) of ``sizes`` (the success probability's denominator): whether the
        attack pays, gain / size > cost."""
        return np.asarray(sizes) < self.attack_threshold

    def payout(self, il: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """The publisher's expected payout per record, for records of information loss ``il`` in
        classes of ``sizes`` (the success probability's denominator)."""
        sizes = np.maximum(np.asarray(sizes, dtype=float), 1.0)
        penalty = np.where(self.attacked(sizes), self.publisher_loss / sizes, 0.0)
        return self.publisher_benefit * (1.0 - np.asarray(il, dtype=float)) - penalty

    def keep(self, il: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Per class or record: kept by the model (payout > 0; no-attack: the attack does not pay)."""
        if self.no_attack:
            return ~self.attacked(sizes)
        return self.payout(il, sizes) > 0

    def describe(self) -> str:
        return (f"profitability ({self.attacker}{', no attack' if self.no_attack else ''}: "
                f"adversary cost {self.adversary_cost:g}, gain {self.adversary_gain:g}; publisher "
                f"loss {self.publisher_loss:g}, benefit {self.publisher_benefit:g})")

    def as_dict(self) -> dict:
        return {"attacker": self.attacker, "adversary_cost": self.adversary_cost,
                "adversary_gain": self.adversary_gain, "publisher_loss": self.publisher_loss,
                "publisher_benefit": self.publisher_benefit, "no_attack": self.no_attack}


def entropy_loss(log_cover: np.ndarray, log_domain: float) -> np.ndarray:
    """IL from Σ_q ln cover_q (per class or record) and Σ_q ln domain_q, clipped into [0, 1]
    against float error."""
    if log_domain <= 0:
        return np.zeros(np.shape(log_cover))
    return np.clip(np.asarray(log_cover, dtype=float) / log_domain, 0.0, 1.0)
