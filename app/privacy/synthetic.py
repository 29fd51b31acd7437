"""The paper's synthetic bank-card customers (spec 01 §6; seed 000 §7.1).

The paper describes the attributes (age, education, occupation, marital status, income level,
cards held, swipe frequency, swipe amount, deposits, loans) and a three-valued class, customer
value (high / medium / low), but not how they were generated. This generator builds them from
one latent quantity — a customer's earning power — the way such data behaves: age drives
education, marital status and occupation; education, occupation and age drive earnings; the
income level is earnings in bands; the card behaviour, deposits and loans follow from earnings
and age; and the bank's customer value is a noisy score of what the customer brings (spending,
deposits, loan interest) plus a relationship term of occupation and marital status.

The generator is deterministic in ``seed`` (numpy's PCG64: this is test data, not privacy noise).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

EDUCATION = ("primary", "secondary", "vocational", "bachelor", "master", "doctorate")
OCCUPATION = ("student", "worker", "clerk", "sales", "technician", "civil_servant",
              "professional", "manager", "self_employed", "retired")
MARITAL = ("single", "married", "divorced", "widowed")
INCOME_LEVEL = ("low", "lower_middle", "middle", "upper_middle", "high")
VALUE = ("low", "medium", "high")
NUMERIC = ("age", "cards_held", "swipe_frequency", "swipe_amount", "deposits", "loans")
CATEGORICAL = ("education", "occupation", "marital_status", "income_level")
LABEL = "customer_value"

# Log-earnings premium of each occupation and the education level it needs (index into EDUCATION).
_OCC_PREMIUM = np.array([-1.2, -0.25, -0.1, 0.0, 0.15, 0.1, 0.45, 0.6, 0.35, -0.5])
_OCC_MIN_EDU = np.array([1, 0, 1, 1, 2, 3, 3, 3, 0, 0])
# The bank's relationship value of an occupation (payroll accounts, cross-selling), in score units.
_OCC_RELATION = np.array([-0.6, -0.3, 0.0, 0.3, 0.0, 0.6, 0.4, 0.8, 0.9, -0.2])
_MARITAL_RELATION = np.array([-0.2, 0.35, -0.3, 0.0])


def _categorical_rows(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One draw per row from row-wise (unnormalized) weights."""
    cdf = np.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]
    return (rng.random((len(weights), 1)) > cdf).sum(axis=1)


def generate_bank_customers(n: int, seed: int) -> pd.DataFrame:
    """n synthetic bank-card customers: 6 numeric and 4 categorical attributes and the class
    ``customer_value`` in {low, medium, high} (about 45% / 35% / 20%)."""
    if n < 1:
        raise ValueError("n must be positive")
    rng = np.random.default_rng(seed)
    age = np.clip(np.round(rng.normal(41.0, 13.0, n)), 18, 80)
    young = (age < 30).astype(float)
    old = (age >= 60).astype(float)

    # education: younger cohorts study longer
    cohort = (60.0 - age) / 20.0
    edu_logits = np.column_stack([
        0.3 - 1.2 * cohort, 1.2 - 0.2 * cohort, 0.8 + 0.0 * cohort,
        0.4 + 0.8 * cohort, -0.8 + 0.9 * cohort, -2.4 + 0.6 * cohort])
    education = _categorical_rows(rng, np.exp(edu_logits))

    # marital status: by age
    marital = _categorical_rows(rng, np.column_stack([
        4.0 * young + 0.6 * (1 - young), 0.4 * young + 3.0 * (1 - young),
        0.05 + 0.5 * (age > 35), 0.01 + 0.8 * old]))

    # occupation: students are young, the retired old, the rest need an education level
    occ_weights = np.tile(np.array([0.0, 1.5, 1.2, 1.0, 1.0, 0.8, 0.9, 0.6, 0.6, 0.0]), (n, 1))
    occ_weights[:, 0] = 3.0 * (age < 25)
    occ_weights[:, 9] = 6.0 * (age >= 62)
    occ_weights *= (education[:, None] >= _OCC_MIN_EDU[None, :])
    occ_weights[:, 7] *= 0.3 + (age > 32)  # managers are rarely very young
    occ_weights[occ_weights.sum(axis=1) == 0, 1] = 1.0
    occupation = _categorical_rows(rng, occ_weights)

    # earnings: education, occupation, experience (concave in age), and luck
    experience = np.clip(age - 18.0, 0, None)
    log_earn = (8.6 + 0.22 * education + _OCC_PREMIUM[occupation]
                + 0.045 * experience - 0.0008 * experience**2 + rng.normal(0.0, 0.35, n))
    earnings = np.exp(log_earn)  # monthly, in yuan
    income_level = np.digitize(log_earn + rng.normal(0.0, 0.12, n),
                               np.quantile(log_earn, [0.25, 0.5, 0.75, 0.92]))

    cards = np.clip(rng.poisson(np.exp(-0.4 + 0.35 * (log_earn - 8.6))) + 1, 1, 12)
    swipe_frequency = np.round(rng.gamma(4.0, (2.0 + 1.6 * cards + 3.0 * young - 2.0 * old) / 4.0), 1)
    swipe_amount = np.round(np.exp(np.log(earnings) - 1.3 + 0.2 * np.log1p(swipe_frequency)
                                   + rng.normal(0.0, 0.45, n)), 2)
    deposits = np.round(np.exp(np.log(earnings) + 1.2 + 0.025 * experience
                               + rng.normal(0.0, 0.8, n)), 2)
    has_loan = rng.random(n) < 1.0 / (1.0 + np.exp(-(0.9 - 0.0015 * (age - 38.0) ** 2
                                                     + 0.4 * (log_earn - 8.6))))
    loans = np.round(has_loan * np.exp(np.log(earnings) + 2.5 + rng.normal(0.0, 0.7, n)), 2)

    # the bank's view: what the customer brings, a relationship term, and what it cannot see
    score = (0.9 * np.log(swipe_amount) + 0.5 * np.log1p(deposits) + 0.25 * np.log1p(loans) / 5.0
             + 0.2 * cards + _OCC_RELATION[occupation] + _MARITAL_RELATION[marital]
             + 0.25 * education + rng.normal(0.0, 0.55, n))
    value = np.digitize(score, np.quantile(score, [0.45, 0.80]))

    return pd.DataFrame({
        "age": age.astype(np.int64),
        "education": pd.Categorical.from_codes(education, EDUCATION).astype(str),
        "occupation": pd.Categorical.from_codes(occupation, OCCUPATION).astype(str),
        "marital_status": pd.Categorical.from_codes(marital, MARITAL).astype(str),
        "income_level": pd.Categorical.from_codes(income_level, INCOME_LEVEL).astype(str),
        "cards_held": cards.astype(np.int64),
        "swipe_frequency": swipe_frequency,
        "swipe_amount": swipe_amount,
        "deposits": deposits,
        "loans": loans,
        LABEL: pd.Categorical.from_codes(value, VALUE).astype(str),
    })
