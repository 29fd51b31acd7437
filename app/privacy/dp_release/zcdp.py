"""Zero-concentrated DP accounting for the marginal-based synthesizers (mst, aim).

Neighbours are Veil's by default: tables of the same public size n that differ in one record
(replace one). Replacing a record moves one cell of every marginal down by 1 and one cell up
by 1, so a marginal's L2 sensitivity is √2 and the L1 error ‖x - x̂‖₁ of a marginal moves by
≤ 2. With ``neighbouring="add_remove"`` (the MST/AIM papers', OpenDP's SymmetricDistance)
neighbours differ by one record added or removed: one cell moves by 1, so the L2 sensitivity
is 1 (ρ = 1/2σ²) and the L1 error moves by ≤ 1; n is then not public. A replacement is a
removal and an addition, so such a release is also replace-one DP with every measurement's ρ
doubled and every selection's ε₀ doubled (ρ × 4): ``replace_one_rho`` / ``replace_one_epsilon``
give that bound, which the budget is debited.

Mechanisms and their zCDP cost (the ρ of every step is listed in the metadata):

* Gaussian measurement of a marginal: integer counts plus discrete Gaussian noise of
  standard deviation σ (in counts), on the grid γ = 1 (or a finer power of two when σ < 1,
  so the counts stay exact on the grid). Shift √2 → ρ = (√2)²/2σ² = 1/σ² (Canonne, Kamath &
  Steinke 2020, Thm. 14).
* Selection: the exponential mechanism P(i) ∝ exp(η·q_i) over exact rational scores of
  sensitivity Δ is ε₀-bounded-range with ε₀ = 2ηΔ, hence ε₀²/8-zCDP (Cesar & Rogers 2021).
  It is sampled exactly (``ExactSampler.exponential``), never by a floating-point argmax.
* Composition: the ρ add up; budgets chosen adaptively from earlier outputs (AIM) are covered
  by the Rényi/zCDP privacy filter (Feldman & Zrnic 2021; Whitehouse et al. 2023), the total
  never exceeding ρ.
* Conversion: ρ-zCDP ⇒ (ε, δ)-DP with δ = ``noise.zcdp_delta(ρ, ε)`` (CKS 2020, Cor. 13).
  ``rho_for`` finds the largest ρ for the (ε, δ) asked for, after reserving room for the
  sampler's floating-point slack (``noise.gaussian_slack``, ≈ 10⁻⁶ of ε per measurement;
  summed over at most ``max_measurements``), exactly as ``noise.calibrate_gaussian`` does
  for a single mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import optimize

from app.privacy.dp_release.feasibility import require
from app.privacy.noise import GAUSSIAN_SAMPLER, discrete_gaussian, gaussian_slack, zcdp_delta
from app.privacy.rng import SecureRandom

MARGINAL_L2_SQ = 2.0  # replace-one: one cell -1, one cell +1 (squared L2 sensitivity)
RELATIONS = ("replace_one", "add_remove")
L2_SQ = {"replace_one": MARGINAL_L2_SQ, "add_remove": 1.0}  # add/remove: one cell ±1
SCORE_SENSITIVITY = {"replace_one": 2, "add_remove": 1}  # of ‖x - x̂‖₁, per unit of weight
# add/remove → replace-one: a replacement is a removal then an addition (Δ₂ 1 → √2: ρ × 2;
# a score's sensitivity 1 → 2: ε₀ × 2, ρ = ε₀²/8 × 4)
REPLACE_ONE_FACTOR = {"measure": 2.0, "select": 4.0}
SAFETY = 1e-12  # σ and ε₀ are nudged by this relative margin so float rounding never overspends
SLACK_PER_MEASUREMENT = 2e-6  # ε room per Gaussian measurement (realized ≤ 1.02e-6 up to
#                               σ = 3·10¹⁰ counts, far above what MIN_RHO allows)
TAIL_PER_MEASUREMENT = 1e-200  # δ room per Gaussian measurement (realized ≤ 9.1e-237 for σ ≥ 16
#                                steps: outcomes beyond ~33σ, see ``noise.gaussian_slack``)
MIN_RHO = 1e-12  # below it σ would pass 10⁶ counts: no release worth having, and the slack grows
ACCOUNTANT = ("ρ-zCDP (replace-one neighbours): Gaussian measurements ρ = Δ₂²/2σ² with Δ₂ = √2 "
              "(discrete Gaussian, Canonne-Kamath-Steinke 2020 Thm. 14); exponential mechanism "
              "ρ = ε₀²/8 (bounded range, Cesar & Rogers 2021); adaptive composition by summing ρ "
              "(zCDP filter, Feldman & Zrnic 2021)")
ACCOUNTANT_ADD_REMOVE = (
    "ρ-zCDP (add/remove-one neighbours): Gaussian measurements ρ = Δ₂²/2σ² with Δ₂ = 1 "
    "(discrete Gaussian, Canonne-Kamath-Steinke 2020 Thm. 14); exponential mechanism ρ = ε₀²/8 "
    "(bounded range, Cesar & Rogers 2021) with score sensitivity 1 per unit of weight; adaptive "
    "composition by summing ρ (zCDP filter, Feldman & Zrnic 2021). Replace-one bound (what the "
    "budget is debited): a replacement is a removal and an addition, so each measurement costs "
    "2ρ (Δ₂ = √2) and each selection 4ρ (ε₀ doubled); their sum converts at the job's δ to the "
    "replace-one ε")
CONVERSION = ("δ(ε) = inf over α > 1 of exp((α-1)(αρ-ε))/(α-1)·(1-1/α)^α (Canonne, Kamath & "
              "Steinke 2020, Cor. 13), never above Bun & Steinke 2016's exp(-(ε-ρ)²/4ρ); the "
              "sampler's floating-point slack is reserved out of ε and δ")


# ------------------------------------------------------------------------- conversion
def rho_for(epsilon: float, delta: float, max_measurements: int) -> tuple[float, float, float]:
    """(ρ, ε reserved for slack, δ reserved for tails): the largest ρ whose conversion at
    ε - slack gives δ₀ with δ₀·e^{slack/2} + tails·(1 + e^{ε - slack}) ≤ δ (the neighbour's
    far tail enters the privacy-loss bound at e^{ε₀}, ``noise.calibrate_gaussian``)."""
    slack = SLACK_PER_MEASUREMENT * max_measurements
    tails = TAIL_PER_MEASUREMENT * max_measurements
    eps0 = epsilon - slack
    room = (delta - tails * (1.0 + math.exp(eps0))) / math.exp(slack / 2.0)
    if eps0 <= 0 or room <= 0:
        raise ValueError("ε or δ too small for the number of measurements")

    def gap(log_rho: float) -> float:
        return math.log(max(zcdp_delta(math.exp(log_rho), eps0), 1e-300)) - math.log(room)

    lo, hi = math.log(MIN_RHO), math.log(max(10.0 * eps0, 1.0))
    if gap(lo) > 0:
        raise ValueError(f"no ρ > {MIN_RHO:g} delivers this (ε, δ)")
    if gap(hi) < 0:
        return math.exp(hi), slack, tails
    log_rho = optimize.brentq(gap, lo, hi, xtol=1e-12)
    rho = math.exp(log_rho) * (1.0 - 1e-9)  # stay on the safe side of the root
    return rho, slack, tails


def _feasible(epsilon: float, delta: float, max_measurements: int) -> bool:
    try:
        rho_for(epsilon, delta, max_measurements)
    except ValueError:
        return False
    return True


def check_budget(method: str, epsilon: float, delta: float, max_measurements: int, *,
                 max_delta: float, max_epsilon: float, fewer: str) -> tuple[float, float, float]:
    """``rho_for``'s answer, or a MethodInputError naming the parameter and the range that
    works for this job when it has none. Each of the ``max_measurements`` Gaussian measurements
    reserves SLACK_PER_MEASUREMENT of ε for the sampler's floating-point slack and
    TAIL_PER_MEASUREMENT·(1 + e^ε) of δ for its far tails (the sampler's own δ, ~1e-236 per
    measurement: any δ above the reserve can be served), and ρ must exceed MIN_RHO. Methods call it in their check, before ε is
    debited, and again in the run. ``fewer``: what the caller can reduce instead."""
    m = max_measurements
    try:
        return rho_for(epsilon, delta, m)
    except ValueError:
        pass
    require(lambda e, d: _feasible(e, d, m), epsilon, delta,
            why=f"{method} makes up to {m} noisy measurements here; each reserves "
                f"{SLACK_PER_MEASUREMENT:g} of ε for the noise sampler's floating-point slack and "
                f"{TAIL_PER_MEASUREMENT:g}·(1 + e^ε) of δ for its far tails, and ρ must exceed "
                f"{MIN_RHO:g}",
            max_epsilon=max_epsilon, max_delta=max_delta, fewer=fewer)
    raise AssertionError("unreachable: require() raises when rho_for fails")


def delivered(rho_spent: float, epsilon: float, slack: float, tails: float) -> tuple[float, float]:
    """(ε, δ) delivered by ρ_spent-zCDP plus the realized slack and tail mass."""
    eps0 = epsilon - slack
    return epsilon, (zcdp_delta(rho_spent, eps0) * math.exp(slack / 2.0)
                     + tails * (1.0 + math.exp(eps0)))  # the neighbour's far tail at e^{ε₀}


def replace_one_rho(measure_rho: float, select_rho: float) -> float:
    """The replace-one ρ of an add/remove-one ρ-zCDP run that spent ``measure_rho`` on
    Gaussian measurements and ``select_rho`` on exponential mechanisms."""
    return REPLACE_ONE_FACTOR["measure"] * measure_rho + REPLACE_ONE_FACTOR["select"] * select_rho


def replace_one_epsilon(rho: float, delta: float, max_measurements: int) -> float:
    """The smallest ε' (to 7 significant digits, rounded up) at which ``rho_for`` gives at
    least ``rho`` for this δ and number of measurements: a ρ-zCDP run (with its samplers'
    reserves) is then (ε', δ)-DP. ValueError when no ε' up to 10⁴ does."""
    def enough(eps: float) -> bool:
        try:
            return rho_for(eps, delta, max_measurements)[0] >= rho
        except ValueError:
            return False

    lo, hi = 0.0, 1.0
    while not enough(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            raise ValueError("no replace-one ε up to 10⁴ covers this ρ")
    for _ in range(100):  # bisection to ~1e-12 relative
        mid = 0.5 * (lo + hi)
        if enough(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    step = 10.0 ** (math.floor(math.log10(hi)) - 6)  # 7 significant digits
    out = float(f"{math.ceil(hi / step) * step:.7g}")
    while not enough(out):  # the rounding's float error: one step more
        out = float(f"{out + step:.7g}")
    return out


# ----------------------------------------------------------------------- the ledger
@dataclass
class Ledger:
    """Every ρ spent, in order. ``spend`` refuses to go beyond the total."""

    rho: float
    steps: list[dict[str, Any]] = field(default_factory=list)
    slack: float = 0.0  # realized floating-point ε slack of the samplers
    tails: float = 0.0  # realized δ of the samplers' tails
    l2_sq: float = MARGINAL_L2_SQ  # a marginal's squared L2 sensitivity (L2_SQ[relation])

    def gaussian_rho(self, sigma: float) -> float:
        """ρ of one marginal measured with standard deviation σ: Δ₂²/2σ²."""
        return self.l2_sq / (2.0 * sigma * sigma)

    @property
    def spent(self) -> float:
        return float(sum(s["rho"] for s in self.steps))

    @property
    def remaining(self) -> float:
        return self.rho - self.spent

    def spend(self, rho: float, step: dict[str, Any]) -> None:
        if rho <= 0 or self.spent + rho > self.rho * (1.0 + 1e-9):
            raise RuntimeError("the zCDP budget would be exceeded")
        self.steps.append({**step, "rho": float(rho)})

    def measure(self, counts: np.ndarray, sigma: float, rng: SecureRandom,
                step: dict[str, Any]) -> np.ndarray:
        """counts (integers) + discrete Gaussian(σ), ρ = Δ₂²/2σ² charged (1/σ² replace-one,
        1/2σ² add/remove)."""
        noisy, record = gaussian_counts(counts, sigma, rng)
        self.spend(self.gaussian_rho(sigma), {**step, **record})
        self.slack += record["sampler_slack"]
        self.tails += record["tail_delta"]
        return noisy


def gaussian_counts(counts: np.ndarray, sigma: float, rng: SecureRandom) -> tuple[np.ndarray, dict]:
    """Integer counts + discrete Gaussian noise of standard deviation ``sigma`` (in counts)
    on the grid γ = 2^e ≤ min(1, σ/16): the counts are exact on it and σ/γ ≥ 16 steps (which
    keeps the sampler's ε slack and tail δ within their reserves)."""
    values = np.asarray(counts, dtype=np.float64)
    if values.size and not np.all(values == np.rint(values)):
        raise ValueError("counts must be integers")
    e = min(0, math.floor(math.log2(sigma / 16.0)))
    gamma = 2.0**e
    steps = sigma / gamma
    noisy = (values / gamma + discrete_gaussian(steps, values.shape, rng)) * gamma
    slack_eps, slack_delta = gaussian_slack(steps, 2)
    if slack_eps > SLACK_PER_MEASUREMENT or slack_delta > TAIL_PER_MEASUREMENT:
        raise RuntimeError("sampler slack above the reserve")
    return noisy, {"sigma": float(sigma), "grid": gamma, "cells": int(values.size),
                   "sampler_slack": float(slack_eps), "tail_delta": float(slack_delta)}


def noise_description(rng: SecureRandom, relation: str = "replace_one") -> dict[str, Any]:
    """What every measurement of the ledger shares (published once in the metadata)."""
    out = {"mechanism": "discrete Gaussian on integer counts, grid γ = 2^e ≤ min(1, σ/16)",
           "sampler": GAUSSIAN_SAMPLER, "rng": rng.name,
           "sensitivity_l2": "√2 per marginal (replace one record: one cell -1, one cell +1)",
           "rho_per_measurement": "1/σ²"}
    if relation == "add_remove":
        out.update(sensitivity_l2="1 per marginal (add or remove one record: one cell ±1)",
                   rho_per_measurement="1/2σ² (2·that under replace-one)")
    return out


def sigma_for(rho: float, l2_sq: float = MARGINAL_L2_SQ) -> float:
    """σ of a marginal measurement that costs at most ρ = Δ₂²/2σ² (Δ₂² = 2 replace-one, 1
    add/remove)."""
    return math.sqrt(l2_sq / (2.0 * rho)) * (1.0 + SAFETY)


def em_epsilon(rho: float) -> float:
    """ε₀ of an exponential mechanism that costs at most ρ = ε₀²/8."""
    return math.sqrt(8.0 * rho) * (1.0 - SAFETY)


# ------------------------------------------------------------------- exact sampling
class ExactSampler:
    """Exact discrete sampling from CSPRNG bits: uniform integers by rejection, Bernoulli of a
    rational, Bernoulli(exp(-x)) for rational x ≥ 0 (Canonne, Kamath & Steinke 2020, Alg. 1),
    and the exponential mechanism by rejection from the uniform proposal. No floating point
    touches a probability, so the output distribution is exactly the ideal one."""

    _WORDS = 512

    def __init__(self, rng: SecureRandom) -> None:
        self.rng = rng
        self._pool = 0
        self._bits = 0

    def bits(self, k: int) -> int:
        while self._bits < k:
            words = self.rng.uint64(self._WORDS)
            self._pool |= int.from_bytes(words.tobytes(), "little") << self._bits
            self._bits += 64 * self._WORDS
        out = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._bits -= k
        return out

    def uniform(self, m: int) -> int:
        """Uniform on {0, …, m-1}."""
        if m <= 1:
            return 0
        k = (m - 1).bit_length()
        while True:
            v = self.bits(k)
            if v < m:
                return v

    def bernoulli(self, p: Fraction) -> bool:
        if p <= 0:
            return False
        if p >= 1:
            return True
        return self.uniform(p.denominator) < p.numerator

    def bernoulli_exp(self, x: Fraction) -> bool:
        """Bernoulli(exp(-x)), x ≥ 0 rational."""
        while x > 1:
            if not self._bernoulli_exp01(Fraction(1)):
                return False
            x -= 1
        return self._bernoulli_exp01(x)

    def _bernoulli_exp01(self, x: Fraction) -> bool:
        k = 1
        while self.bernoulli(x / k):
            k += 1
        return k % 2 == 1

    def exponential(self, scores: list[Fraction], eta: Fraction) -> int:
        """An index i with probability ∝ exp(η·scores[i]): propose i uniformly, accept with
        probability exp(-η(max - scores[i])) ∈ (0, 1]; the accepted index has exactly that
        law. Expected proposals ≤ len(scores)."""
        if not scores:
            raise ValueError("no candidates")
        top = max(scores)
        while True:
            i = self.uniform(len(scores))
            if self.bernoulli_exp(eta * (top - scores[i])):
                return i


def exact_score(value: float) -> Fraction:
    """A float score as the exact rational it is."""
    if not math.isfinite(value):
        raise ValueError("score is not finite")
    return Fraction(value)


SCORE_GRID_EXPONENT = -10  # model estimates are rounded to multiples of 2^-10 before scoring


def l1_error(counts: np.ndarray, estimate: np.ndarray) -> float:
    """‖counts - round(estimate)‖₁, computed exactly in float64: every term is a multiple of
    2^-10 below 2^42, so the differences, the absolute values and the sum are exact, and the
    score of neighbouring tables differs by at most 2 (the counts move by ±1 in two cells)."""
    grid = 2.0**SCORE_GRID_EXPONENT
    est = np.rint(np.asarray(estimate, dtype=np.float64) / grid) * grid
    diff = np.abs(np.asarray(counts, dtype=np.float64) - est)
    total = float(diff.sum())
    if not total < 2.0**42:
        raise ValueError("marginal counts too large to score exactly")
    return total
