"""NoiseRecord: what a noise mechanism did, for the release metadata."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.privacy.noise.laplace_calibration import laplace_loss


@dataclass(frozen=True)
class NoiseRecord:
    """What a mechanism did, for the release metadata."""

    mechanism: str
    sampler: str
    rng: str
    grid: float  # γ = 2^grid_exponent: every noisy value is an integer multiple of it
    grid_exponent: int
    scale_steps: float  # t (Laplace) or σ (Gaussian) in grid steps
    scale: float  # the same in the query's units
    sensitivity: float  # L1 (Laplace) or L2 (Gaussian), in the query's units
    sensitivity_steps: float  # after rounding to the grid: Δ/γ + d (L1) or Δ/γ + √d (L2)
    coordinates_per_neighbour: int
    epsilon_share: float
    epsilon_delivered: float  # bound on the privacy loss, floating-point slack included
    sampler_slack: float  # the part of epsilon_delivered due to floating point
    delta_share: float | None = None
    delta_delivered: float | None = None
    values: int = 0
    # the values were verified integers: on a grid γ ≤ 1 nothing was rounded, and
    # sensitivity_steps is Δ/γ without the + d (laplace_shift)
    integer_values: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def laplace_loss_against(self, sensitivity: float, coords: int) -> float:
        """This Laplace draw's privacy loss against another neighbour relation's move (Δ over
        ``coords`` coordinates): ``laplace_loss`` at the record's grid, scale and integer flag —
        e.g. the replace-one loss of a mechanism calibrated under add/remove."""
        return laplace_loss(self.grid, self.scale_steps, sensitivity, coords, self.integer_values)

    @property
    def rounded(self) -> bool:
        """Whether the exact values were rounded onto the grid (not: integers on γ ≤ 1)."""
        return not (self.integer_values and self.grid <= 1.0)
