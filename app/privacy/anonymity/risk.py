"""Re-identification risk under the prosecutor model (the attacker knows the target is in the
table and knows the target's quasi-identifiers): a record in an equivalence class of size f is
re-identified with probability 1/f.

- highest risk: 1 / smallest class;
- average risk: mean over records of 1/f = #classes / n;
- records at risk: share of records in classes smaller than ``threshold`` (equivalently with an
  individual risk above 1/threshold);
- sample uniques: records alone in their class (count and share).

When the table is a sample of a population (``population_risk``, given the sampling fraction):
marketer risk and the share of records unique in the population by Zayatz's, Pitman's and the
SNB model, and Dankar et al.'s rule choosing among them (docs/methods/risk.md); and the
estimated k-map level (``estimated_k_map``): per estimator of kmap_estimate, the largest k_map
whose derived k the smallest class meets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.privacy.anonymity.kmap_estimate import ESTIMATORS, LEVEL_NOTE, largest_k_map, level_statement
from app.privacy.anonymity.verify import equivalence_classes


def prosecutor_risk(class_ids: np.ndarray, threshold: int = 5) -> dict[str, float | int]:
    n = len(class_ids)
    if n == 0:
        return {"records": 0, "classes": 0, "highest": 0.0, "average": 0.0,
                "threshold": threshold, "records_at_risk": 0.0, "sample_uniques": 0,
                "sample_uniques_share": 0.0, "smallest_class": 0}
    sizes = np.bincount(class_ids)
    per_record = sizes[class_ids]
    sizes = sizes[sizes > 0]
    uniques = int((sizes == 1).sum())
    return {
        "records": int(n),
        "classes": int(len(sizes)),
        "smallest_class": int(sizes.min()),
        "highest": float(1.0 / sizes.min()),
        "average": float(len(sizes) / n),
        "threshold": int(threshold),
        "records_at_risk": float((per_record < threshold).mean()),
        "sample_uniques": uniques,
        "sample_uniques_share": float(uniques / n),
    }


def frame_risk(frame: pd.DataFrame, quasi_identifiers: list[str], threshold: int = 5) -> dict:
    """Prosecutor risk of a table (raw or released) over the given quasi-identifiers."""
    return prosecutor_risk(equivalence_classes(frame, quasi_identifiers), threshold)


def class_size_table(class_ids: np.ndarray) -> pd.DataFrame:
    """How many classes, and records, have each size (for the report)."""
    sizes = np.bincount(class_ids)
    sizes = sizes[sizes > 0]
    values, counts = np.unique(sizes, return_counts=True)
    return pd.DataFrame({"class_size": values, "classes": counts, "records": values * counts,
                         "risk": 1.0 / values})


# ------------------------------------------------------------------ population-based risk
# The table is a sample of a population: ``sampling_fraction`` π = n / N. Notation of Dankar et
# al. 2012 (appendix A): s_j sample classes of size j, u sample classes, N = n / π. Every
# estimator below works on the histogram of class sizes (a few thousand distinct sizes at
# most), never on records or classes one by one.

def size_histogram(class_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct class sizes j (ascending) and s_j, the number of classes of each size."""
    sizes = np.bincount(class_ids)
    return np.unique(sizes[sizes > 0], return_counts=True)


def _estimate(share: float | None, n_population: float, reason: str | None = None, **fit) -> dict:
    out: dict = {"share": share, "population_uniques": None if share is None else share * n_population,
                 "reason": reason}
    out.update(fit)
    return out


def _zayatz(j: np.ndarray, s: np.ndarray, n: int, N: int) -> dict:
    """Zayatz 1991: P(F=1 | f=1) by Bayes' rule, the population's class-size distribution p_j
    taken as the sample's (s_j / u) and P(f=1 | F=j) hypergeometric (draw n of N)."""
    from scipy.stats import hypergeom

    p_f1 = hypergeom.pmf(1, N, j, n)          # P(f = 1 | F = j), one per distinct size
    weights = s / s.sum()
    denom = float((weights * p_f1).sum())
    s1 = float(s[0]) if j[0] == 1 else 0.0
    if not denom > 0:
        return _estimate(None, N, "P(f=1) is 0 under the sample's class sizes")
    conditional = s1 / s.sum() * float(p_f1[0] if j[0] == 1 else 0.0) / denom
    reason = ("every record is a sample unique: the model takes the population's class sizes to be "
              "the sample's, all 1, so the share is 1 by construction, not an estimate" if s1 == n else None)
    return _estimate(s1 * conditional / n, N, reason, conditional_uniqueness=conditional)


def _pitman_loglik(theta: float, alpha: float, j: np.ndarray, s: np.ndarray, n: int, u: int):
    """Log-likelihood of the sample partition under Pitman's sampling formula and its gradient
    in (θ, α) (Hoshino 2001): Σ_{i<u} log(θ+iα) − Σ_{i<n} log(θ+i) + Σ_j s_j Σ_{k<j} log(k−α),
    the sums written with log-gamma functions."""
    from scipy.special import digamma, gammaln

    r = theta / alpha
    ll = ((u - 1) * np.log(alpha) + gammaln(r + u) - gammaln(r + 1)
          - gammaln(theta + n) + gammaln(theta + 1)
          + float((s * (gammaln(j - alpha) - gammaln(1 - alpha))).sum()))
    dpsi = digamma(r + u) - digamma(r + 1)
    d_theta = dpsi / alpha - digamma(theta + n) + digamma(theta + 1)
    d_alpha = ((u - 1) / alpha - theta / alpha ** 2 * dpsi
               + float((s * (digamma(1 - alpha) - digamma(j - alpha))).sum()))
    return float(ll), float(d_theta), float(d_alpha)


def _pitman(j: np.ndarray, s: np.ndarray, n: int, N: int) -> dict:
    """Pitman's model: (θ, α) by maximum likelihood (0 < α < 1, θ > −α); the expected number of
    population uniques of a Pitman partition of N records is
    N · Γ(θ+1) Γ(θ+α+N−1) / (Γ(θ+α) Γ(θ+N)) (≈ Γ(θ+1)/Γ(θ+α) · N^α, Hoshino's form)."""
    from scipy.optimize import minimize
    from scipy.special import expit, gammaln, poch

    u = int(s.sum())
    if u < 2 or u == n:
        return _estimate(None, N, "Pitman's likelihood has no interior maximum when every record "
                         "is unique or all share one class")

    def unpack(x):
        alpha = float(expit(x[1]))
        return float(np.exp(x[0])) - alpha, alpha

    def objective(x):
        theta, alpha = unpack(x)
        ll, gt, ga = _pitman_loglik(theta, alpha, j, s, n, u)
        e = np.exp(x[0])
        # θ = e^a − α, α = expit(b): chain rule, scaled by n so the tolerance is per record
        return -ll / n, -np.array([gt * e, (ga - gt) * alpha * (1 - alpha)]) / n

    start = np.array([np.log(max(u / 2.0, 1.0)), 0.0])
    with np.errstate(all="ignore"):
        res = minimize(objective, start, jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 500})
    theta, alpha = unpack(res.x)
    grad_norm = float(np.abs(res.jac).max()) if res.jac is not None else np.inf
    if not (np.isfinite(theta) and np.isfinite(alpha)) or grad_norm > 1e-6:
        return _estimate(None, N, f"the maximum-likelihood search did not converge ({res.message})")
    if alpha < 1e-6 or alpha > 1 - 1e-6:
        return _estimate(None, N, f"the likelihood's maximum lies on the boundary α = {alpha:.3g}",
                         theta=theta, alpha=alpha)
    # Γ(θ+N+a)/Γ(θ+N) as Pochhammer's symbol: a difference of two log-gammas of ~N ln N lost
    # the digits at large N (N = 10¹⁵: the share 5·10⁴ times too large; 10¹⁷: K negative)
    lead = gammaln(theta + 1) - gammaln(theta + alpha)
    uniques = float(N * np.exp(lead + np.log(poch(theta + N, alpha - 1))))
    # expected number of classes of a Pitman partition of N records
    classes = float(np.exp(lead + np.log(poch(theta + N, alpha))) / alpha - theta / alpha)
    if not (np.isfinite(uniques) and 0 <= uniques <= N):
        return _estimate(None, N, "the fitted model's expected population uniques fall outside "
                         "[0, N]", theta=theta, alpha=alpha)
    return _estimate(uniques / N, N, theta=theta, alpha=alpha, classes_in_population=classes)


def _shlosser(j: np.ndarray, s: np.ndarray, pi: float) -> float:
    """Number of non-empty population classes K, Shlosser's estimator as refined by Haas et al.
    1995 (D_Sh3): u + s_1 · Σ j π²(1−π²)^{j−1} s_j / Σ ((1+π)^j − 1)(1−π)^j s_j ·
    (Σ (1−π)^j s_j / Σ j π (1−π)^{j−1} s_j)²."""
    u = float(s.sum())
    s1 = float(s[0]) if j[0] == 1 else 0.0
    q = 1.0 - pi
    if s1 == 0 or q == 0:
        return u
    with np.errstate(over="ignore", under="ignore"):
        a = float((j * pi ** 2 * (1 - pi ** 2) ** (j - 1) * s).sum())
        b = float((((1 - pi ** 2) ** j - q ** j) * s).sum())   # ((1+π)^j − 1)(1−π)^j, no overflow
        c = float((q ** j * s).sum())
        d = float((j * pi * q ** (j - 1) * s).sum())
    return u + s1 * (a / b) * (c / d) ** 2


def _snb_moments(alpha: float, beta: float, pi: float) -> tuple[float, float]:
    """P(f=1), P(f=2) of a population class under the slide negative binomial: F − 1 ~
    NegBin(α, β) (failures before α successes), f | F ~ Binomial(F, π)."""
    D = (1 - pi) * (1 - beta)
    d = 1 - D
    base = (beta / d) ** alpha
    p1 = pi * base * (1 + alpha * D / d)
    p2 = alpha * (1 - beta) * pi ** 2 * base * (2 - (1 - alpha) * D) / (2 * d ** 2)
    return p1, p2


def _snb(j: np.ndarray, s: np.ndarray, n: int, N: int, pi: float) -> dict:
    """Slide negative binomial model (Chen & Keller-McNulty 1998): K by Shlosser's estimator,
    (α, β) solving K·P(f=1) = s_1 and K·P(f=2) = s_2, population uniques K·β^α."""
    from scipy.optimize import least_squares
    from scipy.special import expit

    s1 = float(s[0]) if j[0] == 1 else 0.0
    s2 = float(s[j == 2].sum())
    if s2 == 0:
        return _estimate(None, N, "no class of size 2 in the table: the SNB moment equations "
                         "have no solution")
    K = _shlosser(j, s, pi)

    def residuals(x):
        p1, p2 = _snb_moments(float(np.exp(x[0])), float(expit(x[1])), pi)
        r = np.array([np.log(K * p1 / s1), np.log(K * p2 / s2)])
        return np.where(np.isfinite(r), r, 1e6)   # outside the model's range: far from a root

    with np.errstate(all="ignore"):
        best = None
        for start in ([0.0, 0.0], [-2.0, -2.0], [2.0, 2.0]):   # a handful of restarts
            res = least_squares(residuals, start, xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=500)
            if best is None or res.cost < best.cost:
                best = res
    if best is None or not np.abs(best.fun).max() < 1e-6:
        return _estimate(None, N, "the SNB moment equations have no solution for these class sizes",
                         classes_in_population=K)
    alpha, beta = float(np.exp(best.x[0])), float(expit(best.x[1]))
    uniques = K * beta ** alpha
    if not (np.isfinite(uniques) and 0 <= uniques <= N):
        return _estimate(None, N, "the fitted model's population uniques fall outside [0, N]",
                         classes_in_population=K)
    return _estimate(uniques / N, N, alpha=alpha, beta=beta, classes_in_population=K)


def _dankar(estimates: dict, pi: float) -> dict:
    """Dankar et al. 2012's decision rule as ARX applies it: π ≤ 0.1 → Pitman (Zayatz when
    Pitman has no estimate); π > 0.1 → the smaller of Zayatz and SNB (Zayatz when SNB has none)."""
    zay, pit, snb = (estimates[k]["share"] for k in ("zayatz", "pitman", "snb"))
    if pi <= 0.1:
        chosen = "pitman" if pit is not None else "zayatz"
    else:
        chosen = "snb" if snb is not None and zay is not None and snb <= zay else "zayatz"
    pick = estimates[chosen]
    return {"share": pick["share"], "population_uniques": pick["population_uniques"],
            "model": chosen, "reason": pick["reason"]}


def _marketer(estimates: dict, j: np.ndarray, s: np.ndarray, n: int, N: int, pi: float) -> dict:
    """Marketer risk: the expected share of the table's records re-identified by linking the
    whole table to the population register, (1/n) Σ_classes f/F (El Emam's marketer success
    rate; f and F a class's size in the table and in the population). Each population class
    contributes E[f/F] = π whatever its size, so the expectation is π·K/n = K/N: the
    population's number of classes K over its size. K is estimated by the rule Dankar's uses
    for uniqueness — Pitman's model (expected classes of a Pitman partition of N records) when
    π ≤ 0.1 and it has a fit, otherwise Shlosser's estimator (Haas et al.'s D_Sh3).
    Under the prosecutor-style assumption (the table is the population) it is #classes / n."""
    u = float(s.sum())
    shlosser = _shlosser(j, s, pi)
    pitman = estimates["pitman"].get("classes_in_population")
    if pi >= 1.0:
        return {"table_as_population": u / n, "estimated": u / n, "model": "observed",
                "classes_in_population": u}
    model, K = ("pitman", pitman) if pi <= 0.1 and pitman is not None else ("shlosser", shlosser)
    K = min(max(K, u), float(N))   # at least the classes seen, at most one per person
    return {"table_as_population": u / n, "estimated": K / N, "model": model,
            "classes_in_population": K,
            "classes_in_population_by": {"shlosser": shlosser, "pitman": pitman}}


# What the estimates are worth, measured (benchmarks/risk_population_accuracy.py, the table in
# docs/methods/risk.md): said beside them, so a point estimate is not read as a measurement.
ACCURACY_NOTE = ("model estimates, not measurements: on simulated populations of 400,000 "
                 "(docs/methods/risk.md) Dankar's choice was off by up to 0.31 at a sampling "
                 "fraction of 0.01, 0.098 at 0.1 and 0.011 at 0.5; the marketer estimate by up to "
                 "0.21, 0.061 and 0.0019")
# No sample uniques: the uniqueness share is observed (0), the marketer figure still estimated.
MARKETER_ACCURACY_NOTE = ("the marketer figure is a model estimate, not a measurement (the uniqueness "
                          "share is observed: no sample uniques): on simulated populations of 400,000 "
                          "(docs/methods/risk.md) the marketer estimate was off by up to 0.21 at a "
                          "sampling fraction of 0.01, 0.061 at 0.1 and 0.0019 at 0.5")


def population_risk(class_ids: np.ndarray, sampling_fraction: float) -> dict:
    """Population-based risk of a table holding ``sampling_fraction`` of its population:
    marketer risk and the share of the table's records unique in the population by four
    estimators. That share's expectation is the population's share of uniques S_1/N (each
    population unique is in the table with probability π), which is what the models estimate."""
    n = len(class_ids)
    pi = float(sampling_fraction)
    if not 0.0 < pi <= 1.0:
        raise ValueError("sampling_fraction must be in (0, 1]")
    N = max(int(round(n / pi)), n)
    out: dict = {"sampling_fraction": pi, "population_size": N}
    names = ("zayatz", "pitman", "snb")
    if n == 0:
        none = _estimate(None, N, "the table has no records")
        out["marketer"] = {"table_as_population": 0.0, "estimated": None, "model": None}
        out["uniqueness"] = {**{k: dict(none) for k in names}, "dankar": {**none, "model": None}}
        return out
    j, s = size_histogram(class_ids)
    s1 = int(s[0]) if j[0] == 1 else 0
    if pi == 1.0 or s1 == 0:
        # nothing to estimate: a population unique in the table is a sample unique, and with
        # the whole population in the table every sample unique is one
        reason = ("the table is the population: the share is observed" if pi == 1.0 else
                  "no sample uniques: no record of the table is unique in the population")
        estimates = {k: _estimate(s1 / n, N, reason) for k in names}
        estimates["dankar"] = {**_estimate(s1 / n, N, reason), "model": None}
        if pi < 1.0:
            out["accuracy"] = MARKETER_ACCURACY_NOTE
    else:
        estimates = {"zayatz": _zayatz(j, s, n, N), "pitman": _pitman(j, s, n, N),
                     "snb": _snb(j, s, n, N, pi)}
        estimates["dankar"] = _dankar(estimates, pi)
        out["accuracy"] = ACCURACY_NOTE
    out["marketer"] = _marketer(estimates, j, s, n, N, pi)
    out["uniqueness"] = estimates
    return out


def population_table(population: dict) -> pd.DataFrame:
    """One row per uniqueness estimator (for the report's CSV): share, population uniques, and
    why an estimator gave none."""
    rows = [{"estimator": name, "share": est["share"], "population_uniques": est["population_uniques"],
             "chosen_by_dankar": name == population["uniqueness"]["dankar"].get("model"),
             "reason": est["reason"] or ""}
            for name, est in population["uniqueness"].items() if name != "dankar"]
    return pd.DataFrame(rows)


def estimated_k_map(class_ids: np.ndarray, sampling_fraction: float, significance: float) -> dict:
    """The estimated k-map level of a table read as a random sample at ``sampling_fraction``:
    per estimator the largest k_map whose derived k (kanonymity's k_map_estimator: the same
    model, kmap_estimate) the smallest class meets, with its statement."""
    n = len(class_ids)
    block: dict = {"significance": float(significance), "smallest_class": None, "estimators": {},
                   "note": LEVEL_NOTE}
    if n == 0:
        block["reason"] = "the table has no records"
        return block
    counts = np.bincount(class_ids)
    smallest = int(counts[counts > 0].min())
    block["smallest_class"] = smallest
    for name in ESTIMATORS:
        level = largest_k_map(smallest, name, significance, n, sampling_fraction=sampling_fraction)
        figures = level.as_dict()
        for shared in ("estimator", "significance", "records", "sampling_fraction", "population_size", "smallest_class"):
            figures.pop(shared)
        block["estimators"][name] = {**figures, "statement": level_statement(level)}
    return block


def k_map_table(block: dict) -> pd.DataFrame:
    """One row per estimator (for the report's CSV)."""
    rows = [{"estimator": name, "k_map": level["k_map"], "derived_k": level["derived_k"],
             "type_i_error": level["type_i_error"], "next_derived_k": level["next_derived_k"],
             "statement": level["statement"]} for name, level in block["estimators"].items()]
    return pd.DataFrame(rows, columns=["estimator", "k_map", "derived_k", "type_i_error", "next_derived_k", "statement"])
