"""k-map estimated from a sample, without a population table (El Emam & Dankar, *Protecting
privacy using k-anonymity*, JAMIA 15(5) 2008, estimators D3 and D4; D3 after Pannekoek 1999;
ARX's ``KMap`` with a population model and a ``CellSizeEstimator``).

The table is taken to be a random sample of a population holding a share π of it (the
sampling fraction; given, or n / N from a population size N). A population class of F records
then shows f ~ Binomial(F, π) ≈ Poisson(πF) records in the sample. k-map asks every released
class to match at least ``k_map`` people of the population; the estimate tests, class by class,
the hypothesis that its population class is small (F ≤ k_map) and rejects it when the sample
class holds c records or more, c the smallest threshold whose type I error is at most the
significance α at the boundary F = k_map (the tails grow with F, so F = k_map bounds every
smaller class):

- ``poisson`` (D3): P(X ≥ c) ≤ α, X ~ Poisson(π·k_map);
- ``zero_truncated_poisson`` (D4): P(X ≥ c | X ≥ 1) ≤ α — conditioned on the class showing in
  the sample at all, which every released class does; never below the Poisson threshold.

The release is then k-anonymous with that derived k = c (ARX's KMap reduces to k-anonymity the
same way). When c reaches k_map itself the derived k is k_map: a sample class of k_map records
is a population class of at least k_map (the sample's records are in the population), so k-map
then holds for certain and the type I error is 0 (ARX stops its search there too).

Under the exact sampling model (f ~ Binomial(F, π)) the thresholds hold only mostly: the
binomial's upper tail lies below the Poisson's for c ≥ πF + 1 (Anderson & Samuels 1967) and its
chance of showing at all is above the Poisson's, but a tail within α does not imply c ≥ πF + 1.
Measured for every F ≤ k_map (k_map ≤ 500, 300 fractions; tests/privacy/test_anonymity_kmap_estimate.py):
within α up to a significance of 0.25 (zero-truncated 0.4), except the Poisson's derived k of 1,
where the binomial's P(f ≥ 1) = 1 − (1 − π)^F is above 1 − e^(−πF) always (by at most 0.25 %
of α at 0.01, 5.3 % at 0.2); at 0.45–0.5 both reached 1.2·α. The statements say "under the model".

``largest_k_map`` turns the estimate round for ``risk``: the largest k_map whose derived k a
table's smallest class meets (the derived k never decreases as k_map grows).

ARX's ``calculateKPoisson`` returns one more than this c (its loop counts past the quantile and
adds one), while its own ``type1Error`` is the tail at c: it is reported as ``arx_derived_k``
beside the derived k, which keeps the smallest threshold whose error is within α. Its
zero-truncated search gives the same c as here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from app.privacy.anonymity.wording import probability_at_most

Estimator = Literal["poisson", "zero_truncated_poisson"]
ESTIMATORS: tuple[str, ...] = ("poisson", "zero_truncated_poisson")
DEFAULT_SIGNIFICANCE = 0.01  # ARX's default (ModelKMapCriterion)


def significance_field(description: str):
    """The ``significance`` parameter of kanonymity's estimated k-map and of risk's level: ARX's
    default, in (0, 0.5]."""
    from pydantic import Field

    return Field(DEFAULT_SIGNIFICANCE, gt=0.0, le=0.5, description=description)


def sample_tail(c: int | np.ndarray, lam: float, estimator: Estimator) -> np.ndarray:
    """P(f ≥ c) of a population class whose expected sample size is λ: Poisson, or
    zero-truncated (given f ≥ 1). Computed from survival functions, accurate far in the tail."""
    from scipy.stats import poisson

    c = np.asarray(c, dtype=np.float64)
    tail = poisson.sf(c - 1, lam)
    if estimator == "zero_truncated_poisson":
        shown = -np.expm1(-lam)  # P(f ≥ 1), exact for a tiny λ
        tail = np.where(c <= 1, 1.0, tail / shown)
    return np.minimum(tail, 1.0)


def threshold(lam: float, significance: float, estimator: Estimator, cap: int) -> int:
    """The smallest sample class size c ≥ 1 with sample_tail(c) ≤ significance, or ``cap`` when
    that is at least cap. The tail falls as c grows, so c is found by galloping from the
    quantile and bisecting, each step the tail itself (floating point in the quantile cannot
    move c). scipy's quantile is NaN below a significance of about 1e-16: the search then starts
    at 1 (it stepped down from the cap one by one: 35 s at k_map 10^6)."""
    from scipy.stats import poisson

    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}")
    if estimator == "poisson":
        guess = poisson.isf(significance, lam) + 1
    else:  # P(f ≥ c) ≤ α · P(f ≥ 1)
        guess = poisson.isf(significance * -np.expm1(-lam), lam) + 1

    def passes(c: int) -> bool:
        return c >= cap or float(sample_tail(c, lam, estimator)) <= significance

    start = int(min(max(guess, 1), cap)) if np.isfinite(guess) else 1
    # a bracket: c in (low, high], passes(high), not passes(low) unless low = 0
    if passes(start):
        high, step = start, 1
        low = max(high - step, 0)
        while low > 0 and passes(low):
            high, step = low, 2 * step
            low = max(high - step, 0)
    else:
        low, step = start, 1
        high = min(low + step, cap)
        while not passes(high):
            low, step = high, 2 * step
            high = min(low + step, cap)
    while high - low > 1:
        middle = (low + high) // 2
        if passes(middle):
            high = middle
        else:
            low = middle
    return max(high, 1)


@dataclass(frozen=True)
class KMapEstimate:
    k_map: int
    estimator: str
    significance: float
    records: int                 # n, the sample's records
    sampling_fraction: float     # π
    population_size: int         # N, given or n / π rounded
    expected_sample_size: float  # λ = π · k_map, a population class of k_map records in the sample
    derived_k: int               # the release's threshold: min(c, k_map)
    capped_at_k_map: bool        # derived_k = k_map: k-map holds for certain (type I error 0)
    type_i_error: float          # the model's tail at derived_k (0 when capped)
    arx_derived_k: int           # what ARX's KMap derives (its Poisson search: one more)

    def as_dict(self) -> dict:
        return asdict(self)


def estimate(k_map: int, estimator: Estimator, significance: float, records: int, *,
             sampling_fraction: float | None = None, population_size: int | None = None) -> KMapEstimate:
    """The derived k of an estimated k-map on a sample of ``records`` records, the population
    given by exactly one of its sampling fraction and its size (N ≥ n)."""
    if (sampling_fraction is None) == (population_size is None):
        raise ValueError("give exactly one of sampling_fraction and population_size")
    if records < 1:
        raise ValueError("the sample has no records")
    if population_size is not None:
        if population_size < records:
            raise ValueError(f"population_size {population_size} is below the sample's {records} records")
        pi = records / population_size
        size = int(population_size)
    else:
        pi = float(sampling_fraction)
        if not 0.0 < pi <= 1.0:
            raise ValueError("sampling_fraction must be in (0, 1]")
        size = max(int(round(records / pi)), records)
    if not 0.0 < significance < 1.0:
        raise ValueError("significance must be in (0, 1)")
    lam = pi * k_map
    derived = threshold(lam, significance, estimator, cap=k_map)
    # a sample class of k_map records is a population class of at least k_map: certain
    capped = derived >= k_map
    error = 0.0 if capped else float(sample_tail(derived, lam, estimator))
    # ARX (KMap.calculateKPoisson): the Poisson search returns c + 1; both searches stop at
    # k_map, then k' = min(k', n, k_map)
    arx = min(derived + 1 if estimator == "poisson" and not capped else derived, k_map, records)
    return KMapEstimate(k_map=int(k_map), estimator=estimator, significance=float(significance),
                        records=int(records), sampling_fraction=pi, population_size=size,
                        expected_sample_size=lam, derived_k=int(derived), capped_at_k_map=bool(capped),
                        type_i_error=error, arx_derived_k=int(arx))


_MODEL = {"poisson": "Poisson (D3)", "zero_truncated_poisson": "zero-truncated Poisson (D4)"}


def estimate_figures(est: KMapEstimate) -> dict:
    """The guarantee's fields: flagged as an estimate, never as the counted ``k_map``."""
    return {"k_map_estimated": True, "k_map_estimate": est.as_dict()}


def estimate_statements(est: KMapEstimate, release_k: int) -> list[str]:
    """What the release says of an estimated k-map: the model, the derived k and what the
    significance means — an estimate under random sampling, not a count of the population."""
    population = (f"a population of {est.population_size} people (sampling fraction "
                  f"{est.sampling_fraction:.6g}, {est.records} records in the table)")
    if est.capped_at_k_map:
        statements = [
            f"k-map implied, not estimated: with the table taken as a sample of {population}, the "
            f"{_MODEL[est.estimator]} estimate at significance {est.significance:g} needs classes of k_map = "
            f"{est.k_map} records, so the release is {est.k_map}-anonymous: every released class holds at "
            f"least {est.k_map} of the table's people, each of whom is in the population, so its "
            f"quasi-identifiers match at least {est.k_map} people of the population whatever the sampling "
            "(provided the table's records are people of that population)"]
    else:
        shown = " (given that it shows in the sample at all)" if est.estimator == "zero_truncated_poisson" else ""
        statements = [
            f"k-map estimated, not counted (no population table was given): the table was taken as a "
            f"random sample of {population}, and k_map = {est.k_map} was read with the "
            f"{_MODEL[est.estimator]} estimator (El Emam & Dankar 2008; ARX's KMap) as k-anonymity with "
            f"the derived k = {est.derived_k}: a population class of at most {est.k_map} people shows "
            f"{est.derived_k} or more records in a sample at that fraction{shown} with probability "
            f"{probability_at_most(est.type_i_error)} under the model (its value at {est.k_map} people), within the "
            f"significance {est.significance:g}. This "
            "is a test on each class, not a count: it bounds how often a small population class passes, "
            "not the share of released classes that come from one, and it does not hold if the table "
            "was not drawn at random from that population (Veil has no population to count)"]
    if release_k > est.derived_k:
        statements.append(f"k = {release_k} is above the derived k = {est.derived_k}: every released class "
                          f"holds at least {release_k} records")
    return statements


def estimate_warnings(est: KMapEstimate, k: int) -> list[str]:
    """k above the derived k (the default 5 is, often), and a derived k of 1 (no k-anonymity left;
    k_map = 1 too, where it is certain and vacuous).
    (Whether k was given cannot be told: a job's parameters are stored with their defaults.)"""
    warnings = []
    if k > est.derived_k:
        warnings.append(f"k = {k} (5 by default) is above the derived k = {est.derived_k} of the estimated "
                        f"k-map, so the release is {k}-anonymous, coarser than k_map asks"
                        + (": give k = 1 for the derived k alone" if est.derived_k > 1 else
                           " (a derived k of 1 is no k-anonymity: k is what protects this release)"))
    if est.estimator == "poisson" and not est.capped_at_k_map:
        warnings.append("the Poisson estimator's significance counts every small population class, most of "
                        "which never show in a sample: the share of released classes that come from a "
                        "population class below k_map can be far above it (0.16 to 0.21 of Mondrian's "
                        "classes on simulated uniform populations at sampling fraction 0.01, k_map = 10, "
                        "significance 0.01: derived k 2; docs/methods/kanonymity.md); the zero-truncated "
                        "Poisson estimator, conditioned on a class showing, derived 3 there and kept it "
                        "below 0.004")
    if max(k, est.derived_k) == 1 and not est.capped_at_k_map:
        warnings.append(f"the {_MODEL[est.estimator]} estimator derived k = 1: a population class of at "
                        f"most {est.k_map} people rarely shows in a sample at fraction "
                        f"{est.sampling_fraction:.6g} at all, so every class that does is accepted — sample "
                        "uniques are released as they are, and the release is not k-anonymous (not stated "
                        "private); the zero-truncated Poisson estimator, conditioned on a class showing, "
                        "derives at least 2")
    if max(k, est.derived_k) == 1 and est.capped_at_k_map:  # k_map = 1
        warnings.append("k_map = 1 with k = 1 asks nothing of the release: every record matches at least "
                        "one person of the population, itself, so no class need hold more than one record — "
                        "the release is not k-anonymous (not stated private); give a larger k_map or k")
    return warnings


# --- the level a table meets: the largest k_map its smallest class passes (risk) -----------

@dataclass(frozen=True)
class KMapLevel:
    estimator: str
    significance: float
    records: int
    sampling_fraction: float
    population_size: int
    smallest_class: int          # the table's smallest class of the quasi-identifiers
    k_map: int                   # the largest k_map whose derived k the smallest class meets
    derived_k: int               # that k_map's derived k (≤ smallest_class)
    capped_at_k_map: bool        # derived_k = k_map: certain, not estimated
    type_i_error: float          # the model's tail at derived_k (0 when capped)
    expected_sample_size: float  # λ = π · k_map
    next_derived_k: int | None   # what k_map + 1 would need (None when k_map is the population)

    def as_dict(self) -> dict:
        return asdict(self)


def largest_k_map(smallest_class: int, estimator: Estimator, significance: float, records: int, *,
                  sampling_fraction: float) -> KMapLevel:
    """The largest k_map (at most the population size N = n / π) whose derived k — ``estimate``'s,
    the same model and significance — is at most the table's smallest class: the table, read
    as a random sample at π, is estimated k-map for every k_map up to it. The derived k never
    decreases as k_map grows (the tails grow with λ = π·k_map, and so does the cap), so the
    k_map that pass are 1 … K: K is found by doubling from the smallest class (every k_map up to
    it passes, capped: certain) and bisecting."""
    if not 1 <= smallest_class <= records:
        raise ValueError(f"smallest_class {smallest_class} must be within 1 .. {records} records")

    def at(k_map: int) -> KMapEstimate:
        return estimate(k_map, estimator, significance, records, sampling_fraction=sampling_fraction)

    population = at(1).population_size
    good = smallest_class  # derived(k) ≤ k: every k_map up to the smallest class passes
    bad = None
    while bad is None and good < population:
        step = min(2 * good, population)
        if at(step).derived_k <= smallest_class:
            good = step
        else:
            bad = step
    while bad is not None and bad - good > 1:
        middle = (good + bad) // 2
        if at(middle).derived_k <= smallest_class:
            good = middle
        else:
            bad = middle
    found = at(good)
    return KMapLevel(estimator=estimator, significance=float(significance), records=int(records),
                     sampling_fraction=found.sampling_fraction, population_size=found.population_size,
                     smallest_class=int(smallest_class), k_map=int(good), derived_k=found.derived_k,
                     capped_at_k_map=found.capped_at_k_map, type_i_error=found.type_i_error,
                     expected_sample_size=found.expected_sample_size,
                     next_derived_k=at(good + 1).derived_k if good < population else None)


def level_statement(level: KMapLevel) -> str:
    """What the level says, in the words of an estimate (the guarantee statements' terms)."""
    smallest = level.smallest_class
    records = "record" if smallest == 1 else "records"
    after = (f"; k_map = {level.k_map + 1} would need classes of {level.next_derived_k} records"
             if level.next_derived_k is not None else " (the whole population)")
    if level.capped_at_k_map:
        return (f"certain, not estimated: every class holds at least {smallest} of the table's {records}, each a "
                f"person of the population, so the table is k-map for every k_map ≤ {level.k_map} whatever the "
                f"sampling{after} ({_MODEL[level.estimator]} at significance {level.significance:g}, sampling "
                f"fraction {level.sampling_fraction:.6g})")
    text = (f"estimated, not counted: read as a random sample of a population of {level.population_size} "
            f"people (sampling fraction {level.sampling_fraction:.6g}), the table is estimated k-map for every "
            f"k_map ≤ {level.k_map} with the {_MODEL[level.estimator]} estimator at significance "
            f"{level.significance:g}: its smallest class of {smallest} {records} meets the derived k = "
            f"{level.derived_k} of k_map = {level.k_map} (a population class of at most {level.k_map} people "
            f"shows {level.derived_k} or more records with probability {probability_at_most(level.type_i_error)} under "
            f"the model){after}; for k_map ≤ {smallest} it holds for certain")
    if level.derived_k == 1:
        text += (" — a derived k of 1: sample uniques pass, since a small population class rarely shows in "
                 "the sample at all (the zero-truncated estimator, conditioned on a class showing, does not "
                 "accept them)")
    return text


LEVEL_NOTE = ("an estimate under a random-sampling model, not a count of the population (none was given): "
              "it bounds, class by class, how often a population class of at most k_map people would show "
              "as many records in the table; it is not the share of the table's classes that come from "
              "such a class (measured in docs/methods/kanonymity.md: the zero-truncated estimator near the "
              "significance, the Poisson one above it at small sampling fractions), and it does not hold if "
              "the table was not drawn at random from its population")
