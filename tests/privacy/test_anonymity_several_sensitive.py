"""Several sensitive columns on random tables (a categorical one with missing cells, a numeric
one, a third categorical): every model on every column of the release by its definition, class
by class, in the search paths Adult does not reach — Mondrian's layered cut search and the pair
form of the class statistics, the lattice with suppression — and the guarantee's figures as the
weakest column's, each column's in metadata.sensitive_achieved."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity import models, mondrian_cuts
from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.data import ColumnInfo
from tests.privacy.test_anonymity_more_models import beta_holds, disclosure, entropy, recursive_holds

SENSITIVE = ["s", "u", "w"]


def table(seed: int) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 900))
    a, b = rng.integers(0, 6, n), rng.integers(0, 4, n)
    frame = pd.DataFrame({"a": [f"a{x}" for x in a], "b": [f"b{x}" for x in b]})
    mixed = lambda drive, m: np.where(rng.random(n) < 0.85, (drive + rng.integers(0, 3, n)) % m,  # noqa: E731
                                      rng.integers(0, m, n))  # mostly driven by a QI, a little noise
    s = pd.Series([f"v{x}" for x in mixed(a, 4)], dtype=object)
    s[rng.random(n) < 0.05] = None  # a missing cell is one more value
    frame["s"] = s
    frame["u"] = (mixed(b, 5) * 10.0).astype(float)
    frame["w"] = rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2])
    infos = {c: ColumnInfo(c, "numeric" if c == "u" else "categorical",
                           "sensitive" if c in SENSITIVE else "quasi_identifier") for c in frame.columns}
    return frame, infos


def counts_of(out: pd.DataFrame, frame: pd.DataFrame, column: str) -> tuple[list[list[int]], list[float]]:
    keys = lambda f: f[column].astype(object).where(f[column].notna(), "<missing>").astype(str)  # noqa: E731
    domain = sorted(keys(frame).unique())
    q = keys(frame).value_counts(normalize=True).reindex(domain).tolist()
    table = pd.crosstab([out["a"].astype(str), out["b"].astype(str)], keys(out))
    return table.reindex(columns=domain, fill_value=0).to_numpy().tolist(), q


def figures(counts: list[list[int]], q: list[float], con: Constraints, numeric: bool) -> dict:
    """Each model's figure over the classes, by its definition (t: ordered or equal distance)."""
    shares = [[x / sum(r) for x in r] for r in counts]
    out = {}
    if con.l is not None:
        out["l"] = min(sum(x > 0 for x in r) for r in counts)
    if con.l_diversity == "entropy":
        out["entropy_l"] = math.exp(min(entropy(r) for r in counts))
        assert out["entropy_l"] >= con.l * (1 - 1e-9)
    if con.l_diversity == "recursive":
        assert all(recursive_holds(r, con.c, con.l) for r in counts)
    if con.alpha is not None:
        out["alpha"] = max(max(p) for p in shares)
        assert out["alpha"] <= con.alpha + 1e-12
    if con.t is not None:
        if numeric:
            cumulative = lambda p: np.cumsum(np.asarray(p) - np.asarray(q))[:-1]  # noqa: E731
            out["t"] = max(np.abs(cumulative(p)).sum() / (len(q) - 1) for p in shares)
        else:
            out["t"] = max(0.5 * sum(abs(x - y) for x, y in zip(p, q)) for p in shares)
        assert out["t"] <= con.t + 1e-12
    if con.delta_disclosure is not None:
        out["delta_disclosure"] = max(disclosure(r, q) for r in counts)
        assert out["delta_disclosure"] < con.delta_disclosure
    if con.beta is not None:
        out["beta"] = max(0.0, max((x - y) / y for p in shares for x, y in zip(p, q)))
        assert all(beta_holds(r, q, con.beta, con.beta_likeness == "enhanced") for r in counts)
    return out


WORST = {"l": min, "entropy_l": min, "alpha": max, "t": max, "delta_disclosure": max, "beta": max}
MODELS = [Constraints(k=3, l=2, l_diversity="entropy", beta=3.0), Constraints(k=3, t=0.3, alpha=0.8),
          Constraints(k=3, l=2, l_diversity="recursive", c=3.0), Constraints(k=20, delta_disclosure=3.0),
          Constraints(k=5, l=3, beta=1.5, beta_likeness="basic")]


@pytest.mark.parametrize("path", ["mondrian_layered", "mondrian_pair", "lattice_pair"])
@pytest.mark.parametrize("seed", range(3))
def test_every_model_holds_on_each_column(monkeypatch, seed, path):
    if path == "mondrian_layered":
        monkeypatch.setattr(mondrian_cuts, "SEARCH_CELLS", 30)  # the full cut search would be too big
    else:
        monkeypatch.setattr(models, "_DENSE_CELLS", 0)
    frame, infos = table(seed)
    options = Options(algorithm="lattice", suppression=0.05) if path == "lattice_pair" else Options()
    for con in MODELS:
        result = anonymize(frame, infos, {}, ["a", "b"], con, SENSITIVE, options)
        per = {}
        for column in SENSITIVE:
            counts, q = counts_of(result.frame, frame, column)
            assert min(sum(r) for r in counts) >= con.k
            per[column] = figures(counts, q, con, column == "u")
            for key, value in per[column].items():
                assert result.metadata["sensitive_achieved"][column][key] == pytest.approx(value, rel=1e-9), key
        achieved = result.achieved.as_dict()
        for key, worst in WORST.items():
            if key in per["s"]:
                assert achieved[key] == pytest.approx(worst(per[c][key] for c in SENSITIVE), rel=1e-9), key
