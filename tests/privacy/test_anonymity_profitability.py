"""The profitability model (Wan et al. 2015, ARX's profitability): a hand-computed table with known
keep/suppress decisions, the payout recomputed on Adult's releases from the released strings and
the raw ARX hierarchy tables alone, no_attack against k-anonymity at k = ⌈gain / cost⌉, the
payout metric against every node of the lattice, the journalist's population counts, and the
parameters' refusals."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from app.privacy.anonymity import lattice as lattice_module
from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.axes import build_axes
from app.privacy.anonymity.hierarchies import parse_arx_hierarchy
from app.privacy.anonymity.methods import KAnonymityParams
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.profitability import CostBenefit
from app.privacy.anonymity.verify import VerificationError
from app.privacy.anonymity.verify_population import label_cover
from app.privacy.anonymity.verify_profitability import verify_profitability
from app.privacy.data import ColumnInfo
from tests.privacy.test_anonymity_kanonymity import _run
from tests.privacy.test_anonymity_support import ADULT_QIS, adult_columns, adult_complete, adult_hierarchy_text

# one QI, leaves a b c d under ab / cd under '*'; counts 1, 3, 4, 6 (14 records)
TINY_HIERARCHY = "a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\n"
TINY = pd.DataFrame({"g": ["a"] + ["b"] * 3 + ["c"] * 4 + ["d"] * 6, "v": range(14)})
TINY_INFOS = {"g": ColumnInfo("g", "categorical", "quasi_identifier"), "v": ColumnInfo("v", "numeric")}
# attack iff size < 5 (gain / cost); benefit 10 per record, loss 40 per re-identification
TINY_GAME = CostBenefit(adversary_cost=1.0, adversary_gain=5.0, publisher_loss=40.0, publisher_benefit=10.0)


def _tiny(suppression: float, metric: str = "ncp", game: CostBenefit = TINY_GAME):
    return anonymize(TINY, TINY_INFOS, {"g": parse_arx_hierarchy(TINY_HIERARCHY)}, ["g"],
                     Constraints(k=1, profitability=game), None,
                     Options(algorithm="lattice", suppression=suppression, metric=metric))


def test_hand_computed_decisions_on_a_four_class_table():
    """Level 0 (IL 0): a (1 record: 10 − 40 = −30), b (3: 10 − 40/3 < 0) and c (4: 10 − 40/4 = 0,
    not above 0) are suppressed, d (6: no attack, 10) kept — 8 of 14 suppressed, above a limit of
    7. Level 1 (IL ln 2 / ln 4 = 1/2): ab (4: 5 − 10 = −5) suppressed, cd (10: 5) kept — 4 of 14.
    Level 2 (IL 1) pays nothing anywhere. So with suppression 0.5 the release is cd at level 1."""
    result = _tiny(0.5)
    assert result.metadata["lattice"]["levels"] == {"g": 1}
    assert sorted(result.frame["g"].unique()) == ["cd"] and len(result.frame) == 10
    found = result.metadata["profitability"]
    assert found["publisher_payout"] == pytest.approx(10 * 5.0)
    assert found["smallest_class_payout_per_record"] == pytest.approx(5.0)
    assert found["records_suppressed_by_model"] == 4
    assert found["classes_attack_profitable"] == 0 and found["attack_threshold"] == 5
    assert result.metrics["suppressed"] == 4
    # the payout metric picks the same node: 1 − 50 / (14 · 10)
    paid = _tiny(0.5, "publisher_payout")
    assert paid.metadata["lattice"]["levels"] == {"g": 1}
    assert paid.metadata["lattice"]["loss"] == pytest.approx(1 - 50 / 140)


def test_hand_computed_level_zero_when_the_limit_allows_it():
    """With a limit of 8 records (0.6, the library's; the API caps at 0.5) level 0 passes: d
    alone, 6 records at 10 each, which the payout metric prefers to level 1's 50 — and NCP does
    not (8 suppressed of 14 is 0.571, level 1's (10 · 1/3 + 4) / 14 = 0.524)."""
    assert _tiny(0.6).metadata["lattice"]["levels"] == {"g": 1}
    result = _tiny(0.6, "publisher_payout")
    assert result.metadata["lattice"]["levels"] == {"g": 0}
    assert result.metadata["lattice"]["loss"] == pytest.approx(1 - 60 / 140)
    assert list(result.frame["g"].unique()) == ["d"]
    assert result.metadata["profitability"]["publisher_payout"] == pytest.approx(60.0)
    assert result.metadata["profitability"]["records_suppressed_by_model"] == 8


def test_no_node_within_the_limit_is_refused_naming_the_remedies():
    from app.privacy.registry import MethodInputError
    with pytest.raises(MethodInputError, match="no generalization .* suppression limit of 2") as caught:
        _tiny(0.2)
    assert "raise suppression" in str(caught.value)
    # every node was checked: no time budget reached (it said "after 6 of 3 nodes checked (time
    # budget reached: raise time_budget)", the greedy fallback's flag and count)
    assert "over the 3 lattice nodes" in str(caught.value) and "time" not in str(caught.value)


def test_payout_metric_on_quasi_identifiers_of_one_value():
    """Every QI of one value: IL is 0 at every node (Σ ln 1 over Σ ln 1), not 0/0 — the metric's
    costs were NaN, no node compared below them, and the release was the greedy fallback's,
    flagged timed out with a loss of NaN."""
    one = TINY.assign(g="d")
    result = anonymize(one, TINY_INFOS, {"g": parse_arx_hierarchy(TINY_HIERARCHY)}, ["g"],
                       Constraints(k=1, profitability=TINY_GAME), None,
                       Options(algorithm="lattice", suppression=0.0, metric="publisher_payout"))
    lattice = result.metadata["lattice"]
    assert lattice["levels"] == {"g": 0} and lattice["optimal"] and not lattice["timed_out"]
    assert lattice["loss"] == 0.0  # 14 records, no attack (14 ≥ 5): payout 10 each
    assert result.metadata["profitability"]["publisher_payout"] == pytest.approx(140.0)


def test_the_check_refuses_a_released_class_the_model_drops():
    """The independent check recomputes each class's payout from the labels: the raw table
    releases a, b and c, whose payout is not above 0."""
    axes, _ = build_axes(TINY, [TINY_INFOS["g"]], {"g": parse_arx_hierarchy(TINY_HIERARCHY)},
                         numeric="hierarchy", categorical="hierarchy", auto_levels=4)
    covers = {"g": label_cover(axes[0])}
    with pytest.raises(VerificationError, match="3 released classes give the publisher a payout"):
        verify_profitability(TINY, ["g"], covers, TINY_GAME)
    kept = verify_profitability(TINY[TINY.g == "d"], ["g"], covers, TINY_GAME)
    assert kept["publisher_payout"] == pytest.approx(60.0)
    no_attack = CostBenefit(adversary_cost=1.0, adversary_gain=5.0, no_attack=True)
    with pytest.raises(VerificationError, match="smaller than 5"):
        verify_profitability(TINY[TINY.g != "a"], ["g"], covers, no_attack)


def test_attack_threshold_is_exact_on_the_floats_given():
    assert CostBenefit(adversary_cost=4, adversary_gain=300).attack_threshold == 75  # ARX derives 76
    assert CostBenefit(adversary_cost=4, adversary_gain=30).attack_threshold == 8
    assert CostBenefit(adversary_cost=0.1, adversary_gain=3).attack_threshold == 30  # 0.1 > 1/10 as a float
    assert CostBenefit(adversary_cost=0, adversary_gain=1).attack_threshold == math.inf
    assert CostBenefit(adversary_cost=0, adversary_gain=0).derived_k == 1
    game = CostBenefit(adversary_cost=4, adversary_gain=300)
    # a class of 75: the adversary's payout 300/75 − 4 = 0, no attack; 74: positive
    assert list(game.attacked(np.array([74, 75]))) == [True, False]


# ------------------------------------------------------------------------------------- Adult
@pytest.fixture(scope="module")
def adult_data():
    return adult_complete(), {q: parse_arx_hierarchy(adult_hierarchy_text(q)) for q in ADULT_QIS}


def _leaves_under(hierarchy: pd.DataFrame, population: pd.Series) -> dict[str, int]:
    """Per node name of an ARX table, the leaves below it that the data holds (raw table only)."""
    present = set(population.astype(str))
    table = hierarchy.astype(str)
    table = table[table.iloc[:, 0].isin(present)]
    out: dict[str, set] = {}
    for column in table.columns:
        for node, leaf in zip(table[column], table.iloc[:, 0]):
            out.setdefault(node, set()).add(leaf)
    return {node: len(leaves) for node, leaves in out.items()}


def _recomputed_payouts(release, population, hierarchies, qis, game: dict, sizes=None) -> pd.Series:
    """Each released class's payout per record, from the released strings and the ARX tables."""
    log_domain = sum(math.log(population[q].astype(str).nunique()) for q in qis)
    covers = {q: _leaves_under(hierarchies[q], population[q]) for q in qis}
    groups = release.groupby(qis, dropna=False, observed=True).size()
    if sizes is not None:
        groups = pd.Series([sizes[key] for key in groups.index], index=groups.index)
    payouts = {}
    for key, size in groups.items():
        il = sum(math.log(covers[q][str(label)]) for q, label in zip(qis, key)) / log_domain
        attacked = game["adversary_gain"] / size > game["adversary_cost"]
        payouts[key] = game["publisher_benefit"] * (1 - il) - (game["publisher_loss"] / size if attacked else 0)
    return pd.Series(payouts)


GAME = {"adversary_cost": 4.0, "adversary_gain": 300.0, "publisher_loss": 30000.0, "publisher_benefit": 1200.0}


@pytest.mark.parametrize("metric", ["ncp", "publisher_payout"])
def test_adult_payout_recomputed_from_the_release(adult_data, metric):
    frame, hierarchies = adult_data
    result = _run(frame, hierarchies, k=1, algorithm="lattice", suppression=0.2, metric=metric,
                  profitability=GAME)
    released = result.frame
    payouts = _recomputed_payouts(released, frame, hierarchies, ADULT_QIS, GAME)
    assert (payouts > 0).all()
    sizes = released.groupby(ADULT_QIS, dropna=False, observed=True).size()
    found = result.metadata["profitability"]
    assert found["publisher_payout"] == pytest.approx(float((payouts * sizes).sum()), rel=1e-12)
    assert found["classes_attack_profitable"] == int((sizes < 75).sum()) > 0
    assert result.guarantees["private"] is False  # classes where the attack pays are released
    assert found["records_suppressed_by_model"] == result.metrics["suppressed"] == len(frame) - len(released)
    assert result.guarantees["profitability"]["publisher_payout"] == found["publisher_payout"]
    assert any("economic model, not a formal privacy guarantee" in s for s in result.guarantees["statements"])


def test_adult_payout_metric_pays_at_least_what_ncp_finds(adult_data):
    frame, hierarchies = adult_data
    paid = [_run(frame, hierarchies, k=1, algorithm="lattice", suppression=0.2, metric=metric,
                 profitability=GAME).metadata["profitability"]["publisher_payout"]
            for metric in ("ncp", "publisher_payout")]
    assert paid[1] >= paid[0]


@pytest.mark.parametrize("gain,k", [(30.0, 8), (300.0, 75)])
def test_no_attack_is_k_anonymity_at_the_ratio(adult_data, gain, k):
    frame, hierarchies = adult_data
    game = {"adversary_cost": 4.0, "adversary_gain": gain, "no_attack": True}
    model = _run(frame, hierarchies, k=1, algorithm="lattice", suppression=0.02, profitability=game)
    plain = _run(frame, hierarchies, k=k, algorithm="lattice", suppression=0.02)
    assert model.metadata["lattice"]["levels"] == plain.metadata["lattice"]["levels"]
    pd.testing.assert_frame_equal(model.frame, plain.frame)
    sizes = model.frame.groupby(ADULT_QIS, dropna=False, observed=True).size()
    assert sizes.min() >= k and model.guarantees["k_requested"] == k
    found = model.metadata["profitability"]
    assert found["derived_k"] == k and found["classes_attack_profitable"] == 0


def test_no_attack_runs_on_mondrian(adult_data):
    frame, hierarchies = adult_data
    result = _run(frame.head(3000), hierarchies, k=1, profitability={"adversary_gain": 30.0, "no_attack": True})
    sizes = result.frame.groupby(ADULT_QIS, dropna=False, observed=True).size()
    assert sizes.min() >= 8 and result.metadata["profitability"]["classes_attack_profitable"] == 0


def test_payout_metric_search_finds_the_best_node(adult_data):
    """Three QIs, every node evaluated by brute force: the branch-and-bound answer is the best."""
    frame, hierarchies = adult_data
    qis = ["age", "education", "sex"]
    sample = frame.head(2000)
    infos = {c.name: c for c in adult_columns(sample, qis=qis)}
    game = CostBenefit(**GAME)
    c = Constraints(k=1, profitability=game)
    result = anonymize(sample, infos, hierarchies, qis, c, None,
                       Options(algorithm="lattice", suppression=0.3, metric="publisher_payout"))
    axes, _ = build_axes(sample, [infos[q] for q in qis], hierarchies, numeric="hierarchy",
                         categorical="hierarchy", auto_levels=4)
    cols = lattice_module.Columns(axes, "publisher_payout")
    limit = int(0.3 * len(sample))
    best = math.inf
    for node in itertools.product(*[range(a.height + 1) for a in axes]):
        mask = lattice_module._suppressed(cols, node, c, ())
        if mask.sum() <= limit:
            best = min(best, lattice_module._loss(cols, node, mask, c))
    assert result.metadata["lattice"]["loss"] == pytest.approx(best, abs=1e-12)
    payout = result.metadata["profitability"]["publisher_payout"]
    assert payout == pytest.approx((1 - best) * len(sample) * game.publisher_benefit, rel=1e-9)


def test_journalist_reads_the_population_counts(adult_data):
    frame, hierarchies = adult_data
    sample = frame.head(4000).copy()
    rng = np.random.default_rng(7)
    sample["in"] = np.where(rng.random(len(sample)) < 0.5, "yes", "no")
    columns = adult_columns(sample.drop(columns=["in"])) + [ColumnInfo("in", "categorical")]
    game = {**GAME, "attacker": "journalist"}
    result = _run(sample, hierarchies, columns, k=1, algorithm="lattice", suppression=0.3,
                  research_subset="in", profitability=game)
    released = result.frame
    assert set(released.columns).isdisjoint({"in"})
    # population class of each released class: the population's records generalized at the levels
    levels = result.metadata["lattice"]["levels"]
    generalized = pd.DataFrame({q: _at_level(hierarchies[q], sample[q], levels[q]) for q in ADULT_QIS})
    population = generalized.groupby(ADULT_QIS, observed=True).size()
    payouts = _recomputed_payouts(released, sample, hierarchies, ADULT_QIS, game, sizes=population)
    assert (payouts > 0).all()
    found = result.metadata["profitability"]
    assert found["success_size"].startswith("population")
    counts = released.groupby(ADULT_QIS, observed=True).size()
    assert found["publisher_payout"] == pytest.approx(float((payouts * counts).sum()), rel=1e-12)
    assert found["classes_attack_profitable"] == int((population[counts.index] < 75).sum())


def _at_level(hierarchy: pd.DataFrame, values: pd.Series, level: int) -> np.ndarray:
    table = hierarchy.astype(str)
    node = dict(zip(table.iloc[:, 0], table.iloc[:, level]))
    return values.astype(str).map(node).to_numpy()


@pytest.mark.parametrize("params,words", [
    ({"profitability": {"adversary_cost": -1}}, "adversary_cost"),
    ({"profitability": {"publisher_benefit": 0}}, "publisher_benefit"),
    ({"profitability": {"attacker": "journalist"}, "algorithm": "lattice"}, "research_subset"),
    ({"profitability": {}}, "Mondrian suppresses nothing"),
    ({"metric": "publisher_payout", "algorithm": "lattice"}, "give profitability"),
    ({"profitability": {"adversary_cost": 0, "no_attack": True}}, "every attack pays"),
    ({"profitability": {"attacker": "journalist"}, "algorithm": "lattice", "research_subset": "in",
      "sensitive": "occupation"}, "journalist attacker do not combine"),
])
def test_bad_parameters_are_refused_naming_the_field(params, words):
    with pytest.raises(ValidationError, match=words):
        KAnonymityParams(**params)


def test_k_one_is_allowed_with_profitability_only():
    KAnonymityParams(k=1, profitability={"no_attack": True})
    with pytest.raises(ValidationError, match="k = 1 asks no k-anonymity"):
        KAnonymityParams(k=1)


def test_names_covering_different_values_at_two_levels_are_found():
    """G is a's parent and b's grandparent: ambiguous; a value named as its own group (F;F;*, or
    a;a;a;*) covers the same values at every level: not."""
    from app.privacy.anonymity.verify_profitability import ambiguous_names, refuse_ambiguous_names
    from app.privacy.registry import MethodInputError
    two_g = parse_arx_hierarchy("a;G;H;*\nb;K;G;*\nc;M;N;*\nd;M;N;*\n")
    assert ambiguous_names(two_g) == ["G"]
    assert ambiguous_names(parse_arx_hierarchy("F;F;*\nM;M;*\n")) == []
    assert ambiguous_names(parse_arx_hierarchy("a;a;a;*\nb;b;ab;*\n")) == []
    assert ambiguous_names(parse_arx_hierarchy(TINY_HIERARCHY)) == []
    with pytest.raises(MethodInputError, match=r"column 'g': 1 name\(s\) .* \('G'\)"):
        refuse_ambiguous_names({"g": two_g})


def test_the_check_refuses_a_payout_of_exactly_zero():
    """c: 4 records, attacked (4 < 5): 10 − 40/4 = 0, which is not a positive payout."""
    axes, _ = build_axes(TINY, [TINY_INFOS["g"]], {"g": parse_arx_hierarchy(TINY_HIERARCHY)},
                         numeric="hierarchy", categorical="hierarchy", auto_levels=4)
    with pytest.raises(VerificationError, match="1 released classes give the publisher a payout of 0 or less"):
        verify_profitability(TINY[TINY.g.isin(["c", "d"])], ["g"], {"g": label_cover(axes[0])}, TINY_GAME)


def test_journalist_decides_on_population_counts_in_the_search():
    """Research subset: the even rows (a 1, b 1, c 2, d 3 of 1, 3, 4, 6). Journalist: at level 0
    d (population 6 ≥ 5, no attack) pays 10 on its 3 research records, a, b, c (population 1, 3,
    4) pay ≤ 0: 4 of 7 suppressed, the limit floor(0.6·7); level 1 pays 5 on cd's 5 (ab: 5 − 40/4
    < 0): 25 < 30, so level 0. Counting the research records instead (d: 3, attacked) would drop
    every class at level 0 and release level 1."""
    from app.privacy.anonymity.models import Population
    game = CostBenefit(attacker="journalist", adversary_cost=1.0, adversary_gain=5.0, publisher_loss=40.0,
                       publisher_benefit=10.0)
    population = Population(in_subset=np.arange(len(TINY)) % 2 == 0)
    result = anonymize(TINY, TINY_INFOS, {"g": parse_arx_hierarchy(TINY_HIERARCHY)}, ["g"],
                       Constraints(k=1, profitability=game, population=population), None,
                       Options(algorithm="lattice", suppression=0.6, metric="publisher_payout"))
    assert result.metadata["lattice"]["levels"] == {"g": 0}
    assert list(result.frame["g"]) == ["d"] * 3
    assert result.metadata["profitability"]["publisher_payout"] == pytest.approx(30.0)
    # research records of the classes the model drops (a 1, b 1, c 2), not their population's 8
    assert result.metadata["profitability"]["records_suppressed_by_model"] == 4


def test_journalist_no_attack_is_k_map_over_the_research_subset(adult_data):
    """No-attack against the journalist: every released class matches at least ⌈30 / 4⌉ = 8
    population records (counted here from the population generalized at the released levels), the
    release is the plain k_map = 8 one, and it is not k-anonymity at 8 — classes of fewer research
    records are released, their population class being large enough."""
    frame, hierarchies = adult_data
    sample = frame.head(4000).copy()
    sample["in"] = np.where(np.random.default_rng(5).random(len(sample)) < 0.3, "yes", "no")
    columns = adult_columns(sample.drop(columns=["in"])) + [ColumnInfo("in", "categorical")]
    game = {"attacker": "journalist", "adversary_cost": 4.0, "adversary_gain": 30.0, "no_attack": True}
    common = {"k": 1, "algorithm": "lattice", "suppression": 0.1, "research_subset": "in"}
    result = _run(sample, hierarchies, columns, profitability=game, **common)
    plain = _run(sample, hierarchies, columns, k_map=8, **common)
    pd.testing.assert_frame_equal(result.frame, plain.frame)
    levels = result.metadata["lattice"]["levels"]
    generalized = pd.DataFrame({q: _at_level(hierarchies[q], sample[q], levels[q]) for q in ADULT_QIS})
    population = generalized.groupby(ADULT_QIS, observed=True).size()
    released = result.frame.groupby(ADULT_QIS, observed=True).size()
    assert len(result.frame) > 0 and population[released.index].min() >= 8
    assert released.min() < 8  # k-map, not k-anonymity at 8
    found = result.metadata["profitability"]
    assert found["derived_k"] == 8 and found["classes_attack_profitable"] == 0
    assert result.guarantees["k_map"] >= 8 and result.guarantees["k_map_requested"] == 8


# three QIs: a's middle level names each value alone, b's joins all four, c's joins x and y
THREE_QI_HIERARCHIES = {"a": "".join(f"a{i};a{i};*\n" for i in range(4)),
                        "b": "".join(f"b{i};B;*\n" for i in range(4)), "c": "x;xy;*\ny;xy;*\n"}
THREE_QI = pd.DataFrame({"a": [f"a{i}" for i in range(4) for _ in range(5)],
                         "b": [f"b{i}" for i in range(4) for _ in range(5)], "c": list("xxxxxxxxxxxxxxyxyyyy")})


@pytest.mark.parametrize("metric", ["publisher_payout", "ncp"])
def test_payout_model_is_not_projected_on_column_pairs_at_suppression_zero(metric):
    """a and b name the same four classes of 5; c splits them (one class of a2 and of a3 holds a
    single record). Attack iff size < 6; benefit 10, loss 32; IL's domain ln 4 + ln 4 + ln 2 = 5 ln 2.
    Every node with c at level 0 keeps a class of 1 (IL < 1: 10·(1 − IL) − 32 < 0); (0, 0, 1): IL
    1/5, 8 − 32/5 = 1.6 on each of the 20 records, the only node (with (1, 0, 1), a's level 1 being
    its leaves) where every class pays (b or a to the top: IL ≥ 3/5, 4 − 6.4 < 0). Projecting the
    payout model on the pair (a, c) read b's tree at c's level (ln 4 for c's ln 2: IL 2/5, 6 − 6.4)
    and pruned every passing node: the release was the greedy climb's, or refused."""
    infos = {q: ColumnInfo(q, "categorical", "quasi_identifier") for q in "abc"}
    game = CostBenefit(adversary_cost=1.0, adversary_gain=6.0, publisher_loss=32.0, publisher_benefit=10.0)
    result = anonymize(THREE_QI, infos, {q: parse_arx_hierarchy(t) for q, t in THREE_QI_HIERARCHIES.items()},
                       list("abc"), Constraints(k=1, profitability=game), None,
                       Options(algorithm="lattice", suppression=0.0, metric=metric))
    lattice = result.metadata["lattice"]
    assert lattice["levels"] == {"a": 0, "b": 0, "c": 1}
    assert lattice["optimal"] and not lattice["heuristic"] and lattice["nodes_pruned_by_projection"] == 0
    assert len(result.frame) == 20 and set(result.frame["c"]) == {"xy"}
    assert result.metadata["profitability"]["publisher_payout"] == pytest.approx(20 * 1.6)


def test_none_passed_warning_names_the_lattice_not_a_timeout(monkeypatch):
    """k-anonymity's top node always passes (one class of every record, refused up front when
    below k), so no model but the payout one reaches this case by itself: a check that fails one
    record at every node (not in the pair projections, which then prune nothing) stands in for such
    a model. The search checks all 9 nodes, the greedy climb 5 more: the warning said '14 of 9
    lattice nodes checked'; it says the lattice's size, no time budget, and what the climb suppressed."""
    real = lattice_module._suppressed

    def one_record_always_fails(cols, levels, c, sensitives, columns=None):
        mask = real(cols, levels, c, sensitives, columns)
        return mask if columns is not None else np.where(np.arange(len(mask)) == 0, True, mask)

    monkeypatch.setattr(lattice_module, "_suppressed", one_record_always_fails)
    two = TINY.assign(h=TINY["g"])
    infos = {**TINY_INFOS, "h": ColumnInfo("h", "categorical", "quasi_identifier")}
    hierarchy = parse_arx_hierarchy("a;ab\nb;ab\nc;cd\nd;cd\n")
    result = anonymize(two, infos, {"g": hierarchy, "h": hierarchy}, ["g", "h"], Constraints(k=1), None,
                       Options(algorithm="lattice", suppression=0.0))
    lattice = result.metadata["lattice"]
    assert lattice["heuristic"] and not lattice["timed_out"] and lattice["lattice_size"] == 9
    # the search's checks and the climb's apart: nodes_evaluated was 14 of a 9-node lattice
    assert lattice["nodes_evaluated"] == 9 and lattice["greedy_climb_checks"] == 5
    assert result.metrics["suppressed"] == 1
    warning = [w for w in result.warnings if w.startswith("no node of the lattice")]
    assert warning == ["no node of the lattice met the constraints within the suppression limit (over the 9 "
                       "lattice nodes): a greedy climb from the bottom chose the levels, suppressing 1 record(s)"]
