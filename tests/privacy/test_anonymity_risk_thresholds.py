"""ARX's risk-based models in kanonymity's lattice (average re-identification risk, its relaxed
variant with highest risk and records at risk, sample uniqueness): the suppression rule against a
plain loop over every prefix of the classes by size, the size threshold against its definition,
the lattice's optimum against every node of a three-QI lattice on Adult, the figures recomputed
from released tables, the check refusing a release that exceeds a threshold, and the parameters'
refusals."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from app.privacy.anonymity import lattice as lattice_module
from app.privacy.anonymity.anonymize import Options, _verify_risk, anonymize
from app.privacy.anonymity.axes import build_axes
from app.privacy.anonymity.hierarchies import parse_arx_hierarchy
from app.privacy.anonymity.methods import KAnonymityParams
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.risk_thresholds import RiskThresholds
from app.privacy.anonymity.verify import VerificationError
from tests.privacy.test_anonymity_kanonymity import _run
from tests.privacy.test_anonymity_support import ADULT_QIS, adult_columns, adult_complete, adult_hierarchy_text


def _plain_figures(sizes: list[int], smallest: int | None) -> dict[str, float]:
    n = sum(sizes)
    if n == 0:
        return {"average_risk": 0.0, "records_at_risk": 0.0, "sample_uniques": 0.0}
    return {"average_risk": len(sizes) / n,
            "records_at_risk": sum(s for s in sizes if smallest is not None and s < smallest) / n,
            "sample_uniques": sum(s for s in sizes if s == 1) / n}


def _plain_holds(risk: RiskThresholds, figures: dict[str, float]) -> bool:
    return all(limit is None or figures[name] <= limit + 1e-12
               for name, limit in (("average_risk", risk.average), ("records_at_risk", risk.records_at_risk),
                                   ("sample_uniques", risk.sample_uniques)))


def _plain_prefix(sizes: list[int], risk: RiskThresholds) -> int:
    """How many of the smallest classes a loop over j = 0, 1, … removes before the thresholds hold."""
    ordered = sorted(sizes)
    for j in range(len(ordered) + 1):
        if _plain_holds(risk, _plain_figures(ordered[j:], risk.smallest_size)):
            return j
    raise AssertionError("the empty release always holds")


@pytest.mark.parametrize("seed", range(60))
def test_suppression_is_the_first_prefix_by_size_a_plain_loop_finds(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.geometric(rng.uniform(0.05, 0.6), size=int(rng.integers(1, 40)))
    sizes[rng.random(len(sizes)) < 0.2] = 0  # classes already suppressed by the per-class models
    risk = RiskThresholds(average=float(rng.choice([rng.uniform(0.05, 0.9), np.nan])),
                          highest=float(rng.choice([0.5, 1 / 3, 0.2, 0.1])),
                          records_at_risk=float(rng.uniform(0, 0.4)),
                          sample_uniques=float(rng.choice([rng.uniform(0, 0.3), np.nan])))
    risk = RiskThresholds(**{key: (None if isinstance(value, float) and math.isnan(value) else value)
                             for key, value in risk.__dict__.items()})
    drop = risk.to_suppress(sizes)
    kept = [int(s) for s in sizes if s > 0]
    assert not drop[sizes == 0].any()
    assert int(drop.sum()) == _plain_prefix(kept, risk)
    left = [int(s) for s, d in zip(sizes, drop) if s > 0 and not d]
    assert _plain_holds(risk, _plain_figures(left, risk.smallest_size))
    if drop.any():  # the largest class dropped is no larger than any kept one: smallest first
        assert sizes[drop].max() <= min(left, default=math.inf)


@pytest.mark.parametrize("highest", [1.0, 0.5, 1 / 3, 0.25, 0.2, 0.1, 0.3, 0.05, 1 / 7, 0.01, 0.999])
def test_the_size_not_at_risk_is_the_smallest_whose_risk_is_within(highest):
    s = RiskThresholds(highest=highest, records_at_risk=0.0).smallest_size
    assert 1 / s <= highest and (s == 1 or 1 / (s - 1) > highest)


@pytest.mark.parametrize("highest", [1e-320, 5e-324, 2.0**-53, 1e-17])
def test_a_highest_risk_below_any_class_s_risk_puts_every_record_at_risk(highest):
    """1 / highest overflows a float (or passes 2^53, more records than any table holds): s is
    capped at 2^53, every record of a real table is at risk — as it is under the exact size."""
    risk = RiskThresholds(highest=highest, records_at_risk=0.5)
    assert risk.smallest_size == 2**53
    assert risk.figures(np.array([1, 5, 10**6]))["records_at_risk"] == 1.0
    assert risk.to_suppress(np.array([1, 5, 10**6])).all()
    assert risk.impossible(10**6).startswith("with 1000000 records no release but the empty one")
    assert RiskThresholds(highest=highest, records_at_risk=1.0).impossible(10) is None


def test_figures_and_words_of_a_known_release():
    # classes of 1, 2, 2, 5: 10 records in 4 classes
    risk = RiskThresholds(average=0.4, highest=0.25, records_at_risk=0.5, sample_uniques=0.1)
    ids = np.repeat(np.arange(4), [1, 2, 2, 5])
    found = _verify_risk(risk, ids)
    assert found["achieved"] == {"average_risk": 0.4, "records_at_risk": 0.5, "largest_record_risk": 1.0,
                                 "sample_uniques": 0.1}
    assert found["smallest_size_not_at_risk"] == 4
    with pytest.raises(VerificationError, match="share of sample uniques 0.1 is above 0.09"):
        _verify_risk(RiskThresholds(sample_uniques=0.09), ids)
    with pytest.raises(VerificationError, match="average re-identification risk 0.4 is above 0.39"):
        _verify_risk(RiskThresholds(average=0.39), ids)
    with pytest.raises(VerificationError, match="share of records in classes smaller than 3 0.5 is above 0.4"):
        _verify_risk(RiskThresholds(highest=0.4, records_at_risk=0.4), ids)
    assert _verify_risk(RiskThresholds(average=0.5), np.zeros(0, dtype=np.int64))["achieved"] == {"average_risk": 0.0}


@pytest.fixture(scope="module")
def adult_data():
    return adult_complete(), {q: parse_arx_hierarchy(adult_hierarchy_text(q)) for q in ADULT_QIS}


def _plain_suppressed(frame: pd.DataFrame, axes, node, k: int, risk: RiskThresholds) -> np.ndarray:
    """Per record: suppressed at ``node`` — classes below k, then the fewest smallest kept classes
    (ties by first appearance) a plain loop finds — from the generalized codes, not the lattice's."""
    codes = pd.DataFrame({i: axis.level_codes(level) for i, (axis, level) in enumerate(zip(axes, node))})
    ids = codes.groupby(list(codes.columns), sort=False).ngroup().to_numpy()
    sizes = np.bincount(ids)
    out = sizes[ids] < k
    kept = [c for c in range(len(sizes)) if sizes[c] >= k]
    j = _plain_prefix([int(sizes[c]) for c in kept], risk)
    dropped = sorted(kept, key=lambda c: sizes[c])[:j]
    return out | np.isin(ids, dropped)


@pytest.mark.parametrize("risk, k, suppression", [
    (RiskThresholds(average=0.05), 1, 0.05),
    (RiskThresholds(average=0.1, highest=0.2, records_at_risk=0.02), 2, 0.1),
    (RiskThresholds(sample_uniques=0.0), 1, 0.0),
    (RiskThresholds(sample_uniques=0.002, average=0.2), 1, 0.03),
])
def test_the_lattice_finds_the_best_node_of_every_node_checked(adult_data, risk, k, suppression):
    """Three QIs on 3,000 Adult records: the lattice's node against every node, each suppressed by
    the plain rule above; then the figures read from the released table."""
    frame, hierarchies = adult_data
    qis = ["age", "education", "marital-status"]
    sample = frame.head(3000)
    infos = {c.name: c for c in adult_columns(sample, qis=qis)}
    c = Constraints(k=k, risk=risk)
    result = anonymize(sample, infos, hierarchies, qis, c, None, Options(algorithm="lattice", suppression=suppression))
    axes, _ = build_axes(sample, [infos[q] for q in qis], hierarchies, numeric="hierarchy",
                         categorical="hierarchy", auto_levels=4)
    cols = lattice_module.Columns(axes, "ncp")
    limit = int(np.floor(suppression * len(sample) + 1e-9))
    best = math.inf
    for node in itertools.product(*[range(a.height + 1) for a in axes]):
        # ties of size may drop other classes of that size (the count is the same): the loss is
        # the lattice's mask's
        mask = lattice_module._suppressed(cols, node, c, ())
        assert mask.sum() == _plain_suppressed(sample, axes, node, k, risk).sum(), node
        if mask.sum() <= limit:
            best = min(best, lattice_module._loss(cols, node, mask, c))
    lattice = result.metadata["lattice"]
    assert lattice["optimal"] and lattice["loss"] == pytest.approx(best, abs=1e-12)
    released = result.frame.groupby(qis, dropna=False, observed=True).size().to_numpy()
    figures = _plain_figures(list(released), risk.smallest_size)
    achieved = result.metadata["risk_thresholds"]["achieved"]
    assert achieved["average_risk"] == pytest.approx(figures["average_risk"], abs=1e-15)
    assert _plain_holds(risk, figures) and released.min() >= k


def test_a_threshold_that_needs_suppression_suppresses_the_smallest_classes(adult_data):
    """Adult, six QIs, average risk 0.05 within 5 %: the lattice's release holds no class smaller
    than one it suppressed, and the guarantee states the figure (rounded up) beside the threshold."""
    frame, hierarchies = adult_data
    frame = frame.drop(columns=["education-num"])  # a code for education (next test)
    qis = ["age", "education", "marital-status", "race", "sex", "native-country"]
    result = _run(frame, hierarchies, columns=adult_columns(frame, qis=qis), k=1, algorithm="lattice",
                  average_risk=0.05, suppression=0.05, quasi_identifiers=qis)
    released = result.frame.groupby(qis, dropna=False, observed=True).size()
    assert len(released) / released.sum() <= 0.05
    g = result.guarantees
    assert 0 < g["suppressed"] <= 0.05 * len(frame) and g["private"] is True
    assert g["risk_thresholds"]["requested"] == {"average_risk": 0.05}
    assert any("average re-identification risk (classes per released record) is at most" in s
               and "(asked: at most 0.05)" in s for s in g["statements"])


@pytest.mark.parametrize("params, words", [
    ({"k": 2, "algorithm": "lattice", "highest_risk": 0.2}, "highest_risk is half of a threshold"),
    ({"k": 2, "algorithm": "lattice", "records_at_risk": 0.1}, "records_at_risk is half of a threshold"),
    ({"k": 2, "average_risk": 0.1}, "average_risk = 0.1 applies to algorithm 'lattice' only"),
    ({"k": 2, "algorithm": "lattice", "average_risk": 0.0}, "greater than 0"),
    ({"k": 2, "algorithm": "lattice", "sample_uniqueness": 1.5}, "less than or equal to 1"),
    ({"k": 1, "k_map": 3, "research_subset": "s", "algorithm": "lattice", "average_risk": 0.1},
     "which they are not implemented for"),
])
def test_bad_parameters_are_refused_naming_the_field(params, words):
    with pytest.raises(ValidationError, match=words):
        KAnonymityParams(**params)


def test_k_one_is_allowed_with_a_risk_threshold():
    assert KAnonymityParams(k=1, algorithm="lattice", sample_uniqueness=0.01).risk_thresholds() == \
        RiskThresholds(sample_uniques=0.01)
    with pytest.raises(ValidationError, match="or a risk threshold"):
        KAnonymityParams(k=1, algorithm="lattice")


@pytest.mark.parametrize("given", [{"average_risk": 1.0}, {"sample_uniqueness": 1.0},
                                   {"highest_risk": 1.0, "records_at_risk": 0.0},
                                   {"highest_risk": 0.2, "records_at_risk": 1.0},
                                   {"average_risk": 1.0, "sample_uniqueness": 1.0}])
def test_k_one_with_only_thresholds_every_release_meets_is_refused(given):
    """Classes per record never pass 1, nor a share 1, and no record's risk passes 1: such a
    threshold asks nothing, and with k = 1 the raw table was released stated private."""
    with pytest.raises(ValidationError, match="hold on every release"):
        KAnonymityParams(k=1, algorithm="lattice", **given)
    assert KAnonymityParams(k=2, algorithm="lattice", **given).risk_thresholds() is not None
    assert KAnonymityParams(k=1, algorithm="lattice", sample_uniqueness=0.5, **{
        key: value for key, value in given.items() if key != "sample_uniqueness"}).risk_thresholds()


def test_thresholds_failing_through_a_column_released_unchanged_leave_the_release_not_private(adult_data):
    """education-num, released unchanged, is a code for education: read through it, education's
    generalization is undone and records fall alone in their class — sample_uniqueness 0 holds on
    the generalized columns and fails as an attacker reads them: not stated private, said why."""
    frame, hierarchies = adult_data
    qis = ["age", "education", "marital-status", "race", "sex", "native-country"]
    assert "education-num" in frame.columns
    result = _run(frame, hierarchies, columns=adult_columns(frame, qis=qis), k=1, algorithm="lattice",
                  sample_uniqueness=0.0, quasi_identifiers=qis)
    g = result.guarantees
    assert g["risk_thresholds"]["achieved"]["sample_uniques"] == 0.0 and g["private"] is False
    through = result.metrics["risk_through_unchanged_columns"]
    assert through["risk_thresholds_met"] is False and through["risk_thresholds"]["sample_uniques"] > 0
    assert through["sample_uniques"] > 0
    assert any(w.startswith("read through the columns released unchanged ('education' by 'education-num'), the "
                            "risk thresholds fail: share of sample uniques") for w in g["warnings"])
    alone = result.frame.assign(education=frame.loc[result.frame.index, "education"]).groupby(
        qis, dropna=False, observed=True).size()
    assert (alone == 1).sum() / len(result.frame) == pytest.approx(through["risk_thresholds"]["sample_uniques"])


@pytest.mark.parametrize("records, risk, refused", [
    (3000, RiskThresholds(average=1 / 3000), False), (3000, RiskThresholds(average=1 / 3001), True),
    (10, RiskThresholds(highest=0.1, records_at_risk=0.0), False),
    (9, RiskThresholds(highest=0.1, records_at_risk=0.0), True),
    (9, RiskThresholds(highest=0.1, records_at_risk=1.0), False),
    (1, RiskThresholds(sample_uniques=0.0), True), (2, RiskThresholds(sample_uniques=0.0), False),
])
def test_a_threshold_only_the_empty_release_meets_is_refused(records, risk, refused):
    """The whole table as one class is the least risk a non-empty release shows: a threshold it
    fails is refused (at submission and in the run), one it meets is not."""
    why = risk.impossible(records)
    assert (why is not None) is refused
    if refused:
        assert why.startswith(f"with {records} records no release but the empty one meets the risk thresholds")
        # and indeed no release of any size pattern passes: every split of the records fails too
        for sizes in ([records], [1] * records, [records - 1, 1] if records > 1 else [1]):
            assert not _plain_holds(risk, _plain_figures(sizes, risk.smallest_size))
