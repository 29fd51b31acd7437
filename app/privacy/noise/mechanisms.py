"""The mechanisms: round the values onto the calibrated grid, add integer noise, record it."""

from __future__ import annotations

import math

import numpy as np

from app.privacy.noise.gaussian_calibration import calibrate_gaussian
from app.privacy.noise.grid import require_integers, grid_steps
from app.privacy.noise.laplace_calibration import calibrate_laplace, laplace_shift
from app.privacy.noise.record import NoiseRecord
from app.privacy.noise.samplers import (GAUSSIAN_SAMPLER, LAPLACE_SAMPLER, discrete_gaussian,
                                        discrete_laplace)
from app.privacy.noise.slack import gaussian_slack, laplace_slack
from app.privacy.rng import SecureRandom


def laplace_mechanism(values: np.ndarray, sensitivity: float, coords: int, epsilon: float,
                      rng: SecureRandom, integer: bool = False) -> tuple[np.ndarray, NoiseRecord]:
    """Release ``values`` (any shape) with discrete Laplace noise on a power-of-two grid.

    ``sensitivity``: max L1 distance between the values on neighbouring inputs; ``coords``:
    max number of coordinates that can differ. The output is ε-DP with ε = ``epsilon``
    (see ``NoiseRecord.epsilon_delivered`` for the exact bound, which is ≤ epsilon).
    ``integer``: the values are integers (counts), guaranteed by the caller and verified here
    (ValueError otherwise): the calibration then pays no rounding on grids γ ≤ 1."""
    if integer:
        require_integers(values)
    e, t, delivered = calibrate_laplace(sensitivity, coords, epsilon, integer)
    gamma = 2.0**e
    steps = grid_steps(values, gamma)
    noisy = (steps + discrete_laplace(t, steps.shape, rng)) * gamma
    shift = laplace_shift(gamma, sensitivity, coords, integer)
    return noisy, NoiseRecord(
        mechanism="laplace", sampler=LAPLACE_SAMPLER, rng=rng.name, grid=gamma,
        grid_exponent=e, scale_steps=t, scale=gamma * t, sensitivity=float(sensitivity),
        sensitivity_steps=shift, coordinates_per_neighbour=int(coords),
        epsilon_share=float(epsilon), epsilon_delivered=delivered,
        sampler_slack=laplace_slack(t, shift, coords), values=int(steps.size),
        integer_values=bool(integer))


def gaussian_mechanism(values: np.ndarray, sensitivity: float, coords: int, epsilon: float,
                       delta: float, rng: SecureRandom) -> tuple[np.ndarray, NoiseRecord]:
    """Release ``values`` with discrete Gaussian noise on a power-of-two grid:
    (ε, δ)-DP for a query of L2 sensitivity ``sensitivity`` over ≤ ``coords`` coordinates."""
    e, sigma, eps_out, delta_out = calibrate_gaussian(sensitivity, coords, epsilon, delta)
    gamma = 2.0**e
    steps = grid_steps(values, gamma)
    noisy = (steps + discrete_gaussian(sigma, steps.shape, rng)) * gamma
    slack_eps, _ = gaussian_slack(sigma, coords)
    return noisy, NoiseRecord(
        mechanism="gaussian", sampler=GAUSSIAN_SAMPLER, rng=rng.name, grid=gamma,
        grid_exponent=e, scale_steps=sigma, scale=gamma * sigma, sensitivity=float(sensitivity),
        sensitivity_steps=sensitivity / gamma + math.sqrt(coords),
        coordinates_per_neighbour=int(coords), epsilon_share=float(epsilon),
        epsilon_delivered=float(eps_out), sampler_slack=float(slack_eps), delta_share=float(delta),
        delta_delivered=float(delta_out), values=int(steps.size))
