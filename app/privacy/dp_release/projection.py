"""The steps of icahdp that do not depend on its parameters: noisy projection, the separate
channel of sensitive attributes, eigen-decomposition and the choice of k, entropy filter."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.dp_release.budget import discretize, entropy_of_counts
from app.privacy.dp_release.encoding import ColumnPlan, Encoding
from app.privacy.noise import NoiseRecord, laplace_mechanism
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom


def project(X: np.ndarray, mu: np.ndarray, basis: np.ndarray, enc: Encoding, epsilon: float,
             rng: SecureRandom) -> tuple[np.ndarray, NoiseRecord]:
    """Z = (X - μ)U_k with discrete Laplace noise; returns Z̃U_kᵀ + μ.

    One record changes one row of Z, by (x - x')U_k: ‖·‖₁ ≤ √k‖x - x'‖₂ ≤ √k · l2_diameter
    (U_k has orthonormal columns), on at most k coordinates."""
    k = basis.shape[1]
    z = (X - mu) @ basis
    noisy, record = laplace_mechanism(z, math.sqrt(k) * enc.l2_diameter, k, epsilon, rng)
    return noisy @ basis.T + mu, record



def sensitive_release(frame: pd.DataFrame, plans: list[ColumnPlan], budgets: dict[str, float],
                       fill: dict[str, float], rng: SecureRandom) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each sensitive column on its own: numeric scaled to [0, 1] (sensitivity 1, i.e. the
    column's range), categorical one-hot (L1 sensitivity 2, two coordinates), argmax."""
    parts: dict[str, Any] = {}
    records: dict[str, Any] = {}
    for plan in plans:
        block = plan.encode(frame[plan.name], fill.get(plan.name))
        sens, coords = (1.0, 1) if plan.kind == "numeric" else (2.0, 2)
        noisy, record = laplace_mechanism(block, sens, coords, budgets[plan.name], rng)
        parts[plan.name] = plan.decode(noisy)
        records[f"sensitive:{plan.name}"] = record.as_dict()
    return parts, records



def top_k(eigenvalues: np.ndarray, fraction: float, k_max: int) -> int:
    positive = np.clip(eigenvalues, 0.0, None)
    if positive.sum() <= 0:
        return 1
    k = int(np.searchsorted(np.cumsum(positive) / positive.sum(), fraction - 1e-12) + 1)
    return max(1, min(k, k_max, len(eigenvalues)))



def eigh_desc(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]



def importance(frame: pd.DataFrame, plans: list[ColumnPlan], bins: int,
                noisy: tuple[float, SecureRandom] | None) -> tuple[dict[str, float], dict | None]:
    """w_j = H_j / Σ H of every plan's histogram (noisy when ``noisy`` = (ε, rng) is given:
    one record moves one count in each histogram, so L1 sensitivity 2 per attribute)."""
    counts, sizes = [], []
    for plan in plans:
        codes, size = discretize(frame[plan.name], plan, bins)
        counts.append(np.bincount(codes, minlength=size).astype(float))
        sizes.append(size)
    flat = np.concatenate(counts)
    record = None
    if noisy is not None:
        flat, rec = laplace_mechanism(flat, 2.0 * len(plans), 2 * len(plans), noisy[0], noisy[1])
        record = rec.as_dict()
    entropies, start = [], 0
    for size in sizes:
        entropies.append(entropy_of_counts(flat[start:start + size]))
        start += size
    total = sum(entropies) or 1.0
    return {p.name: h / total for p, h in zip(plans, entropies)}, record



def filter_by_importance(plans: list[ColumnPlan], weights: dict[str, float],
                         threshold: float) -> tuple[list[ColumnPlan], list[str]]:
    """Drop attributes below the threshold (label columns are always kept)."""
    kept = [p for p in plans if weights[p.name] >= threshold or (p.info and p.info.role == "label")]
    if not kept:
        raise MethodInputError("the entropy filter dropped every attribute: lower 'threshold'")
    return kept, [p.name for p in plans if p not in kept]
