"""icahdp's parameters: the params model with its cross-field checks, and the orthonormalization
of a user-given basis that the model's validator applies. Separate from the run so that the
strict and paper modes and the budget steps can import the parameters without the method.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from app.privacy.dp_release.common import TableParams
from app.privacy.json_types import schema_bounds

DEFAULT_K_CANDIDATES = [2, 4, 6, 8, 10]
PAPER_DEFAULT_THRESHOLD = 0.02


class IcahdpParams(TableParams):
    mode: Literal["strict", "paper"] = Field(
        "strict", description="'strict': end-to-end ε-DP; 'paper': the paper's pipeline, whose "
        "filter, mean, covariance and choice of k read the raw data (NOT differentially private)")
    k: int | None = Field(None, ge=1, le=64, description="number of principal components; default: "
                          "strict picks it from the noisy eigenvalues, paper by mutual information")
    variance_fraction: float = Field(
        0.8, gt=0.0, le=1.0, description="strict, k not given: the smallest k whose noisy "
        "eigenvalues explain this fraction of the (positive) variance")
    k_max: int = Field(10, ge=1, le=64, description="upper limit of an automatically chosen k")
    basis: list[list[float]] | None = Field(
        None, description="strict: a user-given basis (width × k, rows in the order of the "
        "metadata's encoded_columns); replaces the DP covariance, whose share goes to the projection")
    sensitive: dict[str, float] | None = Field(
        None, description="sensitive column → preference sp ∈ [0, 1] (1 = most sensitive); these "
        "columns leave the projection and get their own budget from sensitive_share",
        json_schema_extra=schema_bounds(minimum=0.0, maximum=1.0))
    sensitive_share: float = Field(0.2, gt=0.0, lt=1.0, description="fraction of ε split among "
                                   "the sensitive columns (used only when 'sensitive' is given)")
    levels: int = Field(3, ge=1, le=10, description="number of sensitivity levels G_1..G_m")
    threshold: float | None = Field(
        None, ge=0.0, lt=1.0, description="entropy filter: drop attributes whose importance "
        "H_j / Σ H is below it. strict: off unless set (then on noisy histograms); paper: default 0.02")
    bins: int = Field(10, ge=2, le=256, description="bins of a numeric column in entropies and "
                      "mutual information")
    mean_share: float = Field(0.1, gt=0.0, lt=1.0, description="strict: fraction of the "
                              "non-sensitive ε spent on the mean")
    covariance_share: float = Field(0.3, gt=0.0, lt=1.0, description="strict: fraction of the "
                                    "non-sensitive ε spent on the covariance")
    filter_share: float = Field(0.1, gt=0.0, lt=1.0, description="strict with threshold: "
                                "fraction of the non-sensitive ε spent on the noisy histograms")
    k_candidates: list[int] | None = Field(
        None, min_length=1, max_length=12, description="paper, k not given: the candidate k "
        f"(default {DEFAULT_K_CANDIDATES}); every candidate release spends ε again")
    max_missing: float = Field(0.5, ge=0.0, le=1.0, description="paper: drop attributes with a "
                               "larger fraction of missing values")
    calibrate: bool | None = Field(
        None, description="decode one-hot blocks by argmax with per-category offsets that match "
        "the estimated (strict: DP) category frequencies, instead of plain argmax. Default: on in "
        "strict mode (post-processing, free), off in paper mode (the paper's plain decoding)")

    @model_validator(mode="after")
    def _consistent(self):
        if self.mode == "strict":
            used = self.mean_share + (0 if self.basis else self.covariance_share) + (
                self.filter_share if self.threshold is not None else 0)
            if used >= 1.0:
                raise ValueError("mean_share + covariance_share (+ filter_share) must be < 1: "
                                 "the rest is the projection's share")
        if self.basis is not None:
            if self.mode != "strict":
                raise ValueError("basis is a strict-mode parameter")
            if self.threshold is not None:
                raise ValueError("basis and threshold exclude each other (the filter changes the width)")
            widths = {len(r) for r in self.basis}
            if len(widths) != 1 or not self.basis or 0 in widths:
                raise ValueError("basis must be a non-empty rectangular width × k matrix")
            if self.k is not None and self.k != len(self.basis[0]):
                raise ValueError("k differs from the basis' number of columns")
            orthonormalized(self.basis)  # refuses columns that are not independent
        for name, sp in (self.sensitive or {}).items():
            if not 0.0 <= sp <= 1.0:
                raise ValueError(f"sensitive preference of {name!r} must lie in [0, 1]")
        if self.k_candidates is not None and any(k < 1 or k > 64 for k in self.k_candidates):
            raise ValueError("k_candidates must lie in [1, 64]")
        return self

    @property
    def calibrated(self) -> bool:
        return self.mode == "strict" if self.calibrate is None else self.calibrate

    @property
    def sensitive_epsilon(self) -> float:
        return self.epsilon * self.sensitive_share if self.sensitive else 0.0

    def candidates(self) -> list[int]:
        if self.k is not None:
            return [self.k]
        return sorted(set(self.k_candidates or DEFAULT_K_CANDIDATES))


def orthonormalized(rows: list[list[float]]) -> np.ndarray:
    """A user's basis with orthonormal columns spanning the same space (needed for the √k
    bound): each column scaled to a largest entry of 1, then QR. Columns that are not linearly
    independent are refused (ValueError): QR turned an all-zero basis into the standard axes, a
    basis the caller never gave."""
    basis = np.asarray(rows, dtype=float)
    if not np.isfinite(basis).all():
        raise ValueError("basis entries must be finite numbers")
    if basis.shape[1] > basis.shape[0]:
        raise ValueError(f"basis has {basis.shape[1]} columns but {basis.shape[0]} rows: at most as "
                         "many independent columns as rows")
    peak = np.abs(basis).max(axis=0)
    q, r = np.linalg.qr(basis / np.where(peak > 0, peak, 1.0))
    dependent = np.flatnonzero(np.abs(np.diag(r)) <= 1e-9)
    if dependent.size:
        raise ValueError(f"basis column {dependent[0] + 1} is zero or a combination of the columns "
                         "before it: give k linearly independent columns")
    return q
