"""``guarantee`` states what the caller gives it, ``check_guarantees`` names the keys a plugin's
dict lacks, and ``raw_determinants`` draws its lines where its docstring says.

Mutation testing of guarantees.py (86 mutants; the method tests killed 48): ``protected_columns
or []`` read as ``and`` (every release then stated it protected no column); the refusal's key
names replaced by "(not a dict)"; the determinant check's level cap moved by one either way, its
"≥ 2 records per value on average" read as ≥ 1 or ≥ 3, two-valued raw or protected columns
skipped, a constant protected column let in, ``codes or {}`` read as ``and`` (a call without
codes, kanonymity's, raised), and the sorted pair count (pair spaces beyond 4n and 2^16) reading
a·b_size + b as a/b_size + b (pairs collide) — each passed every test, which reached
raw_determinants through errph with a few small columns. Each fails here now."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from app.privacy.guarantees import (MAX_DETERMINANT_LEVELS, Guarantees, check_guarantees, guarantee,
                                    raw_determinants)
from app.privacy.registry import MethodContractError


def test_the_common_keys_are_the_ones_given():
    g = guarantee("local_dp", rng="os", private=True, epsilon=1, delta=None,
                  protected_columns=["a", "b"], unprotected_columns=["c"],
                  statements=["s"], warnings=["w"], columns={"a": {}})
    assert g["protected_columns"] == ["a", "b"] and g["unprotected_columns"] == ["c"]
    assert g["epsilon"] == 1.0 and isinstance(g["epsilon"], float) and g["delta"] is None
    assert g["statements"] == ["s"] and g["warnings"] == ["w"] and g["columns"] == {"a": {}}
    assert g["notion"] == "local_dp" and g["private"] is True and g["random_source"] == "os"
    Guarantees.model_validate(g)
    bare = guarantee("none", rng="os", private=False)
    assert bare["protected_columns"] == [] and bare["unprotected_columns"] == []
    assert bare["epsilon"] is None and bare["warnings"] == []
    Guarantees.model_validate(bare)


def test_an_infinite_epsilon_is_stated_and_warned_about_and_a_finite_one_is_not():
    g = guarantee("local_dp", rng="os", private=True, epsilon=math.inf, warnings=["given"])
    assert g["epsilon"] == math.inf
    assert g["warnings"] == ["given", "epsilon is infinite: some published value can reveal the truth"]
    assert guarantee("local_dp", rng="os", private=True, epsilon=1e308)["warnings"] == []


def test_a_raw_column_of_exactly_the_level_cap_is_read_as_a_code_and_one_more_is_not():
    levels = MAX_DETERMINANT_LEVELS
    assert levels == 1000
    n = 2 * (levels + 1)
    at_cap = np.arange(n) % levels  # 1,000 codes, each on ≥ 2 rows
    over_cap = np.arange(n) % (levels + 1)  # 1,001 codes, 2 rows each
    frame = pd.DataFrame({"at_cap": at_cap, "over_cap": over_cap,
                          "p": at_cap % 7, "q": over_cap % 5})
    found = raw_determinants(frame, ["at_cap", "over_cap"], ["p", "q"])
    # p is a function of at_cap (and not of over_cap); q of over_cap, beyond the cap
    assert found == {"p": ["at_cap"]}


def test_guarantees_without_the_common_keys_are_refused_naming_the_keys():
    with pytest.raises(MethodContractError) as caught:
        check_guarantees({"notion": "local_dp", "epsilon": 1.0}, "plugin_m")
    message = str(caught.value)
    for key in ("private", "random_source", "protected_columns", "statements"):
        assert key in message, message
    assert "notion" not in message.split(":")[-1] and "'plugin_m'" in message
    with pytest.raises(MethodContractError, match=r"\(not a dict\)"):
        check_guarantees(["not", "a", "dict"], "plugin_m")
    check_guarantees(guarantee("none", rng="os", private=False), "plugin_m")


def test_a_determinant_is_found_when_the_pair_space_is_too_large_to_count_by_bincount():
    """1,000 raw codes × 100 protected codes (10^5 pairs, more than 4n and 2^16): the pairs are
    counted by sorting, and a random function of the raw column is still found, noise not."""
    rng = np.random.default_rng(5)
    raw = np.concatenate([rng.permutation(1000), rng.permutation(1000)])
    g = rng.integers(0, 100, 1000)
    frame = pd.DataFrame({"raw": raw, "p": g[raw], "noise": rng.integers(0, 100, 2000)})
    assert raw_determinants(frame, ["raw"], ["p", "noise"]) == {"p": ["raw"]}


def test_two_valued_columns_count_and_identifiers_and_constants_do_not():
    """A 0/1 code published raw beside a randomized two-valued column determines it; a raw
    column with a value per record (an identifier: each value on one record, not ≥ 2 on
    average) and a constant protected column are left out, as the docstring says."""
    n = 100
    sex = np.array(["F", "M"] * (n // 2))
    frame = pd.DataFrame({"code": (sex == "M").astype(int), "ident": np.arange(n),
                          "sex": sex, "constant": ["x"] * n})
    assert raw_determinants(frame, ["code", "ident"], ["sex", "constant"]) == {"sex": ["code"]}
    # the identifier alone determines every column, and is still not named
    assert raw_determinants(frame, ["ident"], ["sex"]) == {}
