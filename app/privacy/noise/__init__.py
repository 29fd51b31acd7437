"""Safe noise: discrete Laplace and discrete Gaussian on a power-of-two grid.

Textbook Laplace sampling in floating point (``b * log(u)``) leaks: the set of doubles it can
output depends on the true value, so an attacker can tell neighbouring inputs apart from a
single draw (Mironov 2012, "On significance of the least significant bits for differential
privacy"). Veil never adds float noise to a private value. A mechanism

1. rounds the exact query value to a grid gamma * Z with gamma = 2**e (a power of two, so the
   rounding is exact in binary floating point);
2. adds gamma * X where X is an *integer* drawn from the discrete Laplace
   P(X = x) ∝ exp(-|x| / t) (or the discrete Gaussian P(X = x) ∝ exp(-x² / 2σ²));
3. publishes the result, which lies on the grid whatever the input (no holes to exploit).

Accounting (all of it is in each mechanism's record, see ``NoiseRecord``):

* rounding moves each coordinate by at most half a step, so two neighbouring queries whose
  exact values differ by Δ₁ in L1 (on at most d coordinates) differ by at most
  A = Δ₁/γ + d steps on the grid. The noise is calibrated to A, not to Δ₁/γ: the
  rounding costs a little more noise, not privacy. Values the caller declares integers
  (``integer=True``: counts, histograms; verified) need no rounding on a grid γ ≤ 1, so
  there A = Δ₁/γ exactly, and the grid is chosen by the noise's expected absolute error —
  on γ = 1 that is the geometric mechanism's 1/sinh(ε/Δ₁) < Δ₁/ε (``laplace_shift``,
  ``calibrate_laplace``);
* the sampler turns CSPRNG words into integers with floating-point arithmetic, so each
  outcome's probability is realized only to a small relative error. ``laplace_slack`` and
  ``gaussian_slack`` bound the extra privacy loss this can cause (derivation in
  docs/epsilon.md); the calibration reserves room for it, so the ε *delivered*, bound
  included, never exceeds the ε asked for.

How the samplers work: ``samplers``.

Modules: ``samplers`` (the exact integer samplers), ``slack`` (their floating-point error
bounds), ``grid`` (the power-of-two grid and rounding onto it), ``laplace_calibration`` and
``gaussian_calibration`` (grid and scale for an ε or (ε, δ)), ``record`` (``NoiseRecord``) and
``mechanisms`` (``laplace_mechanism``, ``gaussian_mechanism``). The names below are the package's
public interface; import them from ``app.privacy.noise``.
"""

from app.privacy.noise.gaussian_calibration import calibrate_gaussian, zcdp_delta
from app.privacy.noise.grid import clamp, on_grid
from app.privacy.noise.laplace_calibration import (calibrate_laplace, laplace_abs_error, laplace_loss,
                                                   laplace_shift)
from app.privacy.noise.mechanisms import gaussian_mechanism, laplace_mechanism
from app.privacy.noise.record import NoiseRecord
from app.privacy.noise.samplers import (GAUSSIAN_SAMPLER, LAPLACE_SAMPLER, discrete_gaussian,
                                        discrete_laplace)
from app.privacy.noise.slack import FLOAT_REL_ERR, gaussian_slack, laplace_slack, sampler_errors

__all__ = [
    "FLOAT_REL_ERR", "GAUSSIAN_SAMPLER", "LAPLACE_SAMPLER", "NoiseRecord", "calibrate_gaussian",
    "calibrate_laplace", "clamp", "discrete_gaussian", "discrete_laplace", "gaussian_mechanism",
    "gaussian_slack", "laplace_abs_error", "laplace_loss", "laplace_mechanism", "laplace_shift",
    "laplace_slack", "on_grid", "sampler_errors", "zcdp_delta",
]
