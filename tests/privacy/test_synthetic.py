"""The synthetic bank-card customers: shape, determinism, the dependencies they are built on."""

import numpy as np
import pandas as pd
import pytest

from app.privacy.naive_bayes import PPNBClassifier
from app.privacy.synthetic import (
    CATEGORICAL, EDUCATION, INCOME_LEVEL, LABEL, NUMERIC, OCCUPATION, VALUE, generate_bank_customers,
)


@pytest.fixture(scope="module")
def customers():
    return generate_bank_customers(30_000, seed=11)


def test_columns_types_and_determinism(customers):
    assert list(customers.columns) == ["age", "education", "occupation", "marital_status", "income_level",
                                       "cards_held", "swipe_frequency", "swipe_amount", "deposits", "loans",
                                       LABEL]
    assert set(NUMERIC) | set(CATEGORICAL) | {LABEL} == set(customers.columns)
    for c in NUMERIC:
        assert pd.api.types.is_numeric_dtype(customers[c])
    assert not customers.isna().any().any()
    assert set(customers[LABEL]) == set(VALUE)
    assert set(customers["education"]) <= set(EDUCATION) and set(customers["occupation"]) <= set(OCCUPATION)
    pd.testing.assert_frame_equal(generate_bank_customers(500, seed=3), generate_bank_customers(500, seed=3))
    assert not generate_bank_customers(500, seed=3).equals(generate_bank_customers(500, seed=4))
    assert customers["age"].between(18, 80).all() and (customers["cards_held"] >= 1).all()
    assert (customers["loans"] >= 0).all() and (customers["loans"] == 0).mean() > 0.2


def test_customer_value_is_three_valued_with_the_intended_shares(customers):
    shares = customers[LABEL].value_counts(normalize=True)
    assert shares["low"] == pytest.approx(0.45, abs=0.01)
    assert shares["medium"] == pytest.approx(0.35, abs=0.01)
    assert shares["high"] == pytest.approx(0.20, abs=0.01)


def test_attributes_depend_on_each_other_as_customers_do(customers):
    c = customers
    assert c.loc[c.occupation == "retired", "age"].min() >= 62
    assert c.loc[c.occupation == "student", "age"].max() < 25
    edu = c["education"].map({e: i for i, e in enumerate(EDUCATION)})
    assert (edu[c.occupation.isin(["manager", "professional", "civil_servant"])] >= 3).all()
    assert c.loc[c.age < 30, "marital_status"].eq("single").mean() > 0.6
    assert c.loc[c.age > 45, "marital_status"].eq("married").mean() > 0.6
    by_income = c.groupby("income_level")["swipe_amount"].median().reindex(INCOME_LEVEL)
    assert by_income.is_monotonic_increasing
    high_share = (c[LABEL] == "high").groupby(c["income_level"]).mean().reindex(INCOME_LEVEL)
    assert high_share.is_monotonic_increasing and high_share["high"] > 0.6 > 0.05 > high_share["low"]
    assert np.corrcoef(np.log(c.deposits), np.log(c.swipe_amount))[0, 1] > 0.3


def test_classes_are_learnable_but_not_trivially(customers):
    train, test = customers.iloc[:25_000], customers.iloc[25_000:]
    feats = list(NUMERIC + CATEGORICAL)
    acc = PPNBClassifier().fit(train[feats], train[LABEL]).score(test[feats], test[LABEL])
    cat_only = PPNBClassifier().fit(train[list(CATEGORICAL)], train[LABEL]).score(test[list(CATEGORICAL)], test[LABEL])
    assert 0.65 < acc < 0.9 and 0.6 < cat_only < acc  # categorical attributes carry real signal
