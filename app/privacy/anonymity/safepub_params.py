"""SafePub's parameters and its privacy calibration (Bild, Kuhn & Prasser, PoPETs 2018(1);
Li, Qardaji & Su, ASIACCS 2012): the sampling probability β and the smallest k whose δ(k)
stays within the δ asked for, and the exact Bernoulli sampling of the records.

Li et al.'s theorem (add/remove-one neighbours): drawing each record with probability β and
then k-anonymizing the sample "safely" (a generalization chosen without looking at the data,
every class of fewer than k sampled records suppressed) is (ε_anon, δ(k))-DP for any
ε_anon ≥ −ln(1 − β), with

    γ = (e^ε_anon − 1 + β) / e^ε_anon,  n_m = ⌈k/γ − 1⌉,
    δ(k) = max over n ≥ n_m of P(Bin(n, β) > γn).

SafePub takes β = 1 − e^(−ε_anon) (then γ = 1 − e^(−2ε_anon)). The maximum over infinitely
many n is found exactly: a_n = P(Bin(n, β) > γn) ≤ c_n = exp(−n·KL(γ‖β)) (the Chernoff–Hoeffding
bound, decreasing in n), so once the running maximum reaches c_n no later n can raise
it. Every rounding goes the safe way (a larger δ(k)): β is taken 10⁻¹² relatively larger, γ
10⁻¹² smaller for ⌊γn⌋ and the bound and larger for n_m (which only adds values of n), and the
tail, computed by scipy in log space over blocks of n, is raised by 10⁻⁹ relatively.
ARX's ParameterCalculation returns one more than the smallest k with δ(k) < δ (its loop
increments after the test); Veil returns the smallest k with δ(k) ≤ δ.
"""

from __future__ import annotations

import contextlib
import math
from fractions import Fraction
from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from scipy import special, stats

from app.privacy.exact_bernoulli import Words, bernoulli_exp
from app.privacy.registry import Params
from app.privacy.rng import SecureRandom

REL = 1e-12  # the relative nudge of β and γ in the safe direction
TAIL_MARGIN = 1e-9  # the relative margin added to scipy's binomial tail
BLOCK = 4096  # values of n per vectorized block
MAX_SCAN = 2**21  # values of n δ(k) may scan past n_m (~3 s): more only at an ε_anon below ~3·10⁻⁵
MAX_K = 10**7
SCIPY_FLOOR = math.log(1e-200)  # below, a binomial tail is summed in log space (scipy's sf underflows at ~1e-249)
TERMS = 40  # masses a tail below SCIPY_FLOOR sums exactly (each ratio ≤ ~1/(1 + e^ε_anon) < 0.51)
ANON_GRID = 2**-60  # ε_anon is rounded down to this grid: the exact sampler's x needs a denominator < 2⁶⁴
MAX_STEPS = 2000
DEFAULT_STEPS = 300  # ARX's
EXHAUSTIVE_NODES = 20_000  # 'auto' scores every node up to this lattice size (Adult's 8 QIs: 6,480, ~6 s)
DEFAULT_DELTA = 1e-5


class SafePubParams(Params):
    epsilon: float = Field(..., gt=0.0, le=20.0, description="total ε of the release under add/remove-one "
                           "neighbours (sampling ε_anon plus search ε_search); the budget is debited the "
                           "replace-one ε it implies, 2ε")
    delta: float = Field(DEFAULT_DELTA, gt=0.0, le=0.1, description="δ: k is the smallest k whose δ(k) (Li "
                         "et al.'s bound) is at most this; must be below 1/n")
    search_share: float = Field(0.1, gt=0.0, lt=1.0, description="share of epsilon spent choosing the "
                                "generalization (ε_search = search_share·ε; ARX's default 0.1); the rest, "
                                "ε_anon, sets the sampling probability β = 1 − e^(−ε_anon)")
    search: Literal["auto", "exhaustive", "walk"] = Field(
        "auto", description="how the generalization is chosen: 'exhaustive' (one exponential-mechanism "
        f"draw over every node of the lattice at the whole ε_search), 'walk' (ARX's random walk of "
        f"`steps` draws down the lattice), 'auto' (exhaustive when the lattice has at most "
        f"{EXHAUSTIVE_NODES:,} nodes — decided by the hierarchies' heights, public — and neither steps nor "
        "final is given, else the walk)")
    steps: int | None = Field(None, ge=1, le=MAX_STEPS, description="walk: steps of the random walk down "
                              f"the lattice (each an exponential-mechanism choice); none: {DEFAULT_STEPS}, "
                              "ARX's default")
    metric: Literal["granularity", "discernibility", "entropy", "group_size", "classification"] = Field(
        "granularity", description="the score the search maximizes (SafePub's quality models): "
        "'granularity' (the loss of every cell, its generalized value's share of the domain, a "
        "suppressed record counting 1 per quasi-identifier), 'discernibility' (Σ|E|² over kept "
        "classes / n + suppressed records), 'entropy' (SafePub's score for non-uniform entropy: per "
        "quasi-identifier Σ over released values of their count² / n + cells suppressed or at the "
        "root, averaged over the quasi-identifiers), 'group_size' (the average class size's score: "
        "kept classes, plus one when any record is suppressed) or 'classification' (suitability for "
        "training a classifier of `label`: per class, the records of its most frequent label whose "
        "(class, label) group is kept; 0 at the top node; the label is then released with the records)")
    label: str | None = Field(
        None, description="metric 'classification' only: the column a classifier would predict "
        "(categorical or boolean, not a quasi-identifier); none: the schema's one column of role "
        "'label'. It is released as is with every record (a boolean as 'True'/'False', its type named in "
        "warnings when the upload inferred it), and classes (hence suppression) are over "
        "the quasi-identifiers and the label together")
    final: Literal["last", "exponential"] | None = Field(
        None, description="walk: the node released (none: 'last'): 'last' (the walk's last pivot, ε_search split over steps) "
        "or 'exponential' (one more exponential-mechanism draw over every pivot the walk visited, "
        "ε_search split over steps + 1; measured worse on Adult)")
    quasi_identifiers: list[str] | None = Field(
        None, description="the columns released, each generalized over its hierarchy (default: the "
        "schema's quasi-identifiers); every other column is left out of the release")

    @model_validator(mode="after")
    def _label_for_classification_only(self):
        if self.label is not None and self.metric != "classification":
            raise ValueError(f"label applies to metric 'classification' only (metric is {self.metric!r}): drop "
                             "label or use metric 'classification'")
        return self

    @model_validator(mode="after")
    def _walk_options(self):
        given = [f for f in ("steps", "final") if getattr(self, f) is not None and self.search == "exhaustive"]
        if given:
            raise ValueError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to the random walk "
                             "only, and search = 'exhaustive' draws once over every node: drop "
                             f"{'them' if len(given) > 1 else 'it'} or use search 'walk' (or 'auto')")
        return self

    def strategy(self, lattice_size: int) -> str:
        """'exhaustive' or 'walk' on a lattice of that many nodes."""
        if self.search != "auto":
            return self.search
        # the walk's own options ask for the walk (None when not given: a stored job's params
        # hold every field, so which were given must survive the round trip)
        if self.steps is not None or self.final is not None:
            return "walk"
        return "exhaustive" if lattice_size <= EXHAUSTIVE_NODES else "walk"

    @property
    def walk_steps(self) -> int:
        return DEFAULT_STEPS if self.steps is None else self.steps

    @property
    def walk_final(self) -> str:
        return "last" if self.final is None else self.final

    @property
    def epsilon_search(self) -> Fraction:
        return Fraction(self.epsilon) * Fraction(self.search_share)

    @property
    def epsilon_anon(self) -> Fraction:
        """ε − ε_search rounded down to a multiple of 2⁻⁶⁰ (the sampler's exact Bernoulli needs a
        dyadic exponent; rounding down only lowers the ε stated)."""
        rest = Fraction(self.epsilon) - self.epsilon_search
        return Fraction(math.floor(rest / Fraction(ANON_GRID))) * Fraction(ANON_GRID)


# ----------------------------------------------------------------------------- calibration
def beta_of(epsilon_anon: float) -> float:
    """β = 1 − e^(−ε_anon)."""
    return -math.expm1(-epsilon_anon)


def delta_of_k(k: int, epsilon_anon: float) -> float:
    """δ(k) as a float, rounded up (never 0: the smallest float above 0 at worst)."""
    return min(1.0, math.nextafter(math.exp(log_delta_of_k(k, epsilon_anon)), math.inf))


def log_delta_of_k(k: int, epsilon_anon: float) -> float:
    """ln δ(k) of Li et al.'s theorem at β = 1 − e^(−ε_anon), rounded up (module doc), computed in
    log space throughout: at δ ≈ 1e-250 the tails underflow a float."""
    beta = beta_of(epsilon_anon)
    gamma = -math.expm1(-2.0 * epsilon_anon)
    beta_hi, gamma_lo, gamma_hi = beta * (1 + REL), gamma * (1 - REL), gamma * (1 + REL)
    if not gamma_lo > beta_hi:
        raise ValueError("epsilon_anon too small for the bound")
    n_m = max(1, math.ceil(k / gamma_hi - 1.0))
    exponent = _chernoff_exponent(epsilon_anon, beta, gamma)
    best = -math.inf
    start = n_m
    while True:
        n = np.arange(start, start + BLOCK, dtype=np.int64)
        tail = log_binomial_tail(n, np.floor(gamma_lo * n), beta_hi)
        running = np.maximum.accumulate(np.maximum(tail, best))
        done = np.flatnonzero(running >= -n * exponent)
        if done.size:
            return min(0.0, float(running[done[0]]) + math.log1p(TAIL_MARGIN))
        best = float(running[-1])
        start += BLOCK
        if start - n_m > MAX_SCAN:
            raise ValueError("epsilon_anon too small: δ(k)'s maximum lies too far past n_m")


def log_binomial_tail(n: np.ndarray, m: np.ndarray, p: float) -> np.ndarray:
    """ln P(Bin(n, p) > m), elementwise, for m ≥ np (the tails δ(k) takes). scipy's sf (Boost)
    where it is above e^SCIPY_FLOOR; below, where it underflows to 0 (from ~1e-249), summed in log
    space from the first term on (``_log_tail_by_terms``)."""
    out = stats.binom.logsf(m, n, p)
    low = ~(out >= SCIPY_FLOOR)
    if low.any():
        out[low] = _log_tail_by_terms(n[low].astype(float), m[low].astype(float), p)
    return out


def _log_tail_by_terms(n: np.ndarray, m: np.ndarray, p: float) -> np.ndarray:
    """An upper bound on ln P(Bin(n, p) > m), tight to ~1e-12 plus lgamma's float error, for
    m + 1 > np: the first mass f(j₀), j₀ = m + 1, in log space (lgamma), times the sum of
    the masses after it relative to it, Σ_t Π_{l<t} r(j₀ + l) with r(j) = f(j + 1)/f(j) =
    (n − j)/(j + 1)·p/(1 − p) < 1 and falling in j: TERMS terms exactly, the rest bounded by a
    geometric series at the last ratio. The log mass is raised by 8 ulps of each of its terms'
    magnitudes (lgamma of n ~ 10⁷ is ~10⁸: its rounding is ~10⁻⁸ absolute)."""
    j0 = m + 1.0
    terms = np.stack([special.gammaln(n + 1.0), -special.gammaln(j0 + 1.0), -special.gammaln(n - j0 + 1.0),
                      j0 * math.log(p), (n - j0) * math.log1p(-p)])
    log_first = terms.sum(axis=0) + 8 * np.finfo(float).eps * np.abs(terms).sum(axis=0)
    j = j0[:, None] + np.arange(TERMS + 1)[None, :]
    ratio = np.maximum(n[:, None] - j, 0.0) / (j + 1.0) * (p / (1.0 - p))
    products = np.cumprod(ratio[:, :-1], axis=1)  # f(j₀ + t)/f(j₀), t = 1..TERMS
    rest = products[:, -1] * ratio[:, -1] / (1.0 - ratio[:, -1])
    relative = (1.0 + products.sum(axis=1) + rest) * (1 + 1e-12)  # the sum's rounding
    return np.where(j0 <= n, log_first + np.log(relative), -np.inf)


def _chernoff_exponent(epsilon_anon: float, beta: float, gamma: float) -> float:
    """KL(γ‖β) = γ ln(γ/β) + (1 − γ) ln((1 − γ)/(1 − β)) at γ_lo, β_hi, taken 10⁻⁶ relatively
    smaller (a smaller exponent only weakens the bound): P(Bin(n, β) ≥ γn) ≤ e^(−n·KL) for γ > β
    (Chernoff–Hoeffding). The multiplicative form γ ln(γ/β) − (γ − β) is also a bound but ~e^(−2ε)
    against KL's ~e^(−ε) at a large ε_anon: δ(k)'s scan then ran ~e^ε times past k (23 s a call at
    ε_anon = 7.2, hours at 18, in the submission's check). 1 − β and 1 − γ come from e^(−ε) and
    e^(−2ε), not from 1 minus a float near 1."""
    b = math.exp(-epsilon_anon) - beta * REL  # 1 − β_hi
    a = math.exp(-2.0 * epsilon_anon) + gamma * REL  # 1 − γ_lo
    gamma_lo = gamma * (1 - REL)
    kl = gamma_lo * (math.log1p(-a) - math.log1p(-b)) + a * math.log(a / b)
    return max(0.0, kl * (1 - 1e-6))


def smallest_k(delta: float, epsilon_anon: float) -> int:
    """The smallest k with δ(k) ≤ δ (δ(k) does not increase with k: n_m grows, the maximum is over
    fewer n): doubling, then bisection. ValueError beyond MAX_K — at once when δ(MAX_K) ≥ β^(n_m),
    the chance that all n_m records are sampled, is already above δ (k grows like
    e^(ε_anon)·ln(1/δ) at a large ε_anon, and computing δ(k) there takes long)."""
    beta, gamma = beta_of(epsilon_anon), -math.expm1(-2.0 * epsilon_anon)
    if math.ceil(MAX_K / (gamma * (1 + REL)) - 1.0) * math.log(beta) > math.log(delta):
        raise ValueError(f"no k up to {MAX_K:,} reaches this δ")
    if delta_of_k(1, epsilon_anon) <= delta:
        return 1
    lo, hi = 1, 2  # δ(lo) > δ
    while delta_of_k(hi, epsilon_anon) > delta:
        lo, hi = hi, 2 * hi
        if hi > MAX_K:
            raise ValueError(f"no k up to {MAX_K:,} reaches this δ")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if delta_of_k(mid, epsilon_anon) <= delta else (mid, hi)
    return hi


def arx_k(delta: float, epsilon_anon: float) -> int:
    """What ARX's ParameterCalculation returns for the same (ε_anon, δ), for comparison: one more
    than the smallest k with δ(k) < δ (strict)."""
    k = smallest_k(delta, epsilon_anon)
    while delta_of_k(k, epsilon_anon) >= delta:
        k += 1
    return k + 1


# ------------------------------------------------------------------------------- sampling
def bernoulli_sample(n: int, epsilon_anon: Fraction, rng: SecureRandom) -> np.ndarray:
    """Which of n records are kept: each independently with probability β = 1 − e^(−ε_anon),
    exactly (kept = not Bernoulli(e^(−ε_anon)), ``exact_bernoulli``)."""
    return ~bernoulli_exp(Words(rng), epsilon_anon, n)


# -------------------------------------------------------------------- an empty release's advice
ADVICE_ANON = tuple(0.25 * i for i in range(1, 17))  # ε_anon tried for the smallest k/β: 0.25 … 4


def needed_class_size(delta: float, epsilon_anon: float) -> int:
    """⌈k/β⌉ at (δ, ε_anon): about how many records a class of the table needs for its sample
    (rate β) to be expected to reach k — a function of the parameters alone."""
    return max(1, math.ceil(smallest_k(delta, epsilon_anon) / beta_of(epsilon_anon) - 1e-9))


def empty_release_warning(params: SafePubParams, k: int, beta: float) -> str:
    """What an empty release's owner can change, in public figures only (every one a function of
    epsilon, search_share and delta, none of the data): k/β now, with delta ×10 and ×100, and at
    the ε_anon that makes it smallest. "Raise epsilon" alone was wrong past ε_anon ≈ 1–1.5: k grows
    like e^ε_anon there faster than β, and so does k/β."""
    anon, share, delta = float(params.epsilon_anon), float(params.search_share), params.delta
    now = max(1, math.ceil(k / beta - 1e-9))
    parts = [f"no class of the sample reached k = {k} records: the release is empty (every class of fewer "
             f"was suppressed). A class of the table, at the levels drawn, needs about k/β = {now:,} records for "
             f"its sample (each record kept with probability β = {beta:.3g}) to be expected to reach k; "
             "lower that figure (public, from the parameters alone)"]
    larger = []
    for factor in (10, 100):
        if delta * factor <= 0.1:
            with contextlib.suppress(ValueError):
                larger.append(f"{needed_class_size(delta * factor, anon):,} with delta {delta * factor:g}")
    if larger:
        parts.append(": " + " and ".join(larger) + " (delta must stay below 1/n)")
    tried = {}
    for a in ADVICE_ANON:
        if a / (1 - share) <= 20.0:
            with contextlib.suppress(ValueError):
                tried[a] = needed_class_size(delta, a)
    if tried and min(tried.values()) < 0.9 * now:  # worth a mention: at least 10 % fewer
        best = min(tried, key=tried.get)
        way = "raise" if best > anon else "lower"
        parts.append(f"; {way} epsilon to about {best / (1 - share):.3g} (ε_anon ≈ {best:g} at search_share "
                     f"{share:g}): {tried[best]:,}, the least over ε_anon = 0.25, 0.5, … 4 at this delta — ε_anon "
                     f"is {anon:.3g} now, and away from ≈ 1 k/β grows")
    elif tried:
        parts.append(f"; no ε_anon of 0.25, 0.5, … 4 makes it 10 % smaller at this delta (ε_anon = {anon:.3g} now; "
                     "away from ≈ 1 k/β grows)")
    parts.append(". Or make the table's classes larger: fewer quasi-identifiers, coarser hierarchies, a larger "
                 "search_share (a sharper choice of the levels)"
                 + (", a metric other than group_size (it favours many classes near k/β)"
                    if params.metric == "group_size" else "")
                 + ". Records outside the public domain are dropped before the sampling (whether any were is "
                 "not published)")
    return "".join(parts)
