"""mask / png report the ε_bit their 32-bit flip thresholds deliver: |ln((2^32 - T)/T)| with
T = round((1 - p)·2^32), and ∞ when T = 0 (nothing flips) although p < 1. The debit matches."""

import math

import numpy as np
import pytest

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, TransactionData
from app.privacy.rng import SecureRandom

WORDS = 2**32
TX = TransactionData(indptr=np.array([0, 2, 3, 5]), indices=np.array([0, 1, 2, 0, 3]),
                     labels=("a", "b", "c", "d"))
COLUMNS = [ColumnInfo(name="items", type="categorical", distinct=4)]


def release(method, seed=1, **params):
    spec = registry.get(method)
    p = spec.params.model_validate(params)
    out = spec.run(MethodInput(columns=COLUMNS, transactions=TX), p, RunContext(rng=SecureRandom(seed=seed)))
    return out, spec.epsilon_cost(p, COLUMNS)


def test_mask_reports_and_debits_the_realized_epsilon():
    flips = round(0.1 * WORDS)
    realized = math.log((WORDS - flips) / flips)
    assert realized != math.log(9.0)
    out, debited = release("mask", p=0.9)
    assert out.guarantees["epsilon_bit"] == realized
    assert out.guarantees["epsilon"] == debited == 4 * realized


@pytest.mark.parametrize("method,params", [("mask", {"p": 1 - 1e-11}),
                                           ("png", {"ps": [1 - 1e-11, 0.8], "group_size": 2})])
def test_a_keep_probability_that_never_flips_is_infinite_epsilon(method, params):
    out, debited = release(method, seed=None, allow_zero_probabilities=True, **params)  # the OS
    # generator: only ε decides `private`
    if method == "mask":
        assert np.array_equal(out.transactions.indices, TX.indices)  # nothing flipped
    assert out.guarantees["epsilon"] == math.inf and out.guarantees["private"] is False
    assert debited == math.inf


def test_a_keep_probability_that_never_flips_needs_the_opt_in_like_p_one():
    """p = 1 - 1e-11 flips nothing (threshold 0), yet mask published every row as it is without
    allow_zero_probabilities, and png with every p_t there passed the 'at least one p_t below 1'
    rule (found by the #4 acceptance check through the API). A p whose realized flip probability
    is exactly 1/2 is pure noise, which mask refuses at p = 0.5."""
    from pydantic import ValidationError

    mask, png = registry.get("mask").params, registry.get("png").params
    with pytest.raises(ValidationError, match="allow_zero_probabilities"):
        mask(p=1 - 1e-11)
    with pytest.raises(ValidationError, match="allow_zero_probabilities"):
        png(ps=[1 - 1e-11, 0.8])
    with pytest.raises(ValidationError, match="every keep probability is 1"):
        png(ps=[1 - 1e-11, 1 - 1e-11], allow_zero_probabilities=True)
    assert mask(p=1 - 1e-9).p == 1 - 1e-9  # threshold 4 of 2^32: randomized, no opt-in
    with pytest.raises(ValidationError, match="pure noise"):
        mask(p=0.5 + 1e-10)
    assert mask(p=0.5 + 1e-9).p == 0.5 + 1e-9


def test_an_unknown_item_count_is_not_priced_as_zero():
    """A transaction input whose item count is unknown was debited 0 (count taken as 0)."""
    from app.privacy.registry import MethodInputError

    unknown = [ColumnInfo(name="items", type="categorical", distinct=None)]
    spec = registry.get("mask")
    with pytest.raises(MethodInputError, match="number of items is unknown"):
        spec.epsilon_cost(spec.params(p=0.9), unknown)
    assert spec.epsilon_cost(spec.params(p=0.9, items=["a", "b"]), unknown) == pytest.approx(2 * math.log(9), rel=1e-6)
    assert spec.epsilon_cost(spec.params(p=0.9, top_items=3), unknown) == pytest.approx(3 * math.log(9), rel=1e-6)


@pytest.mark.parametrize("ps", [[0.5], [0.5, 0.5 + 1e-12], {"x": 0.5, "*": 0.5}])
def test_png_with_every_keep_probability_at_one_half_is_refused_as_pure_noise(ps):
    """mask refuses p = 0.5 (pure noise), png refuses every p_t = 1 (nothing randomized), but png
    with every p_t at 0.5 (or within 2^-33 of it) was accepted at ε = 0 and its release could
    not be analysed: frequent_itemsets and reconstruct then failed 'every row was randomized
    with p = 0.5' (edges acceptance check). One group at 0.5 beside others stays allowed."""
    from pydantic import ValidationError

    png = registry.get("png").params
    extra = {"group_column": "x"} if isinstance(ps, dict) else {}
    with pytest.raises(ValidationError, match="every keep probability is 0.5 .*pure noise"):
        png(ps=ps, **extra)
    assert png(ps=[0.5, 0.9]).ps == [0.5, 0.9]
