"""kanonymity's parameters: the models every sensitive column can carry (``AttributeModels``,
shared with rfk_anonymity and the per-column ``sensitive_models``), the population models
(k-map and δ-presence over a research subset, k-map estimated from a sample), the algorithms'
options, and every combination refused before a job runs (a ValueError naming the fields)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from app.privacy.anonymity.anonymize import Options
from app.privacy.anonymity.kmap_estimate import DEFAULT_SIGNIFICANCE, KMapEstimate, estimate, significance_field
from app.privacy.anonymity.models import Constraints, Population
from app.privacy.anonymity.profitability import CostBenefit
from app.privacy.anonymity.risk_thresholds import RiskThresholds
from app.privacy.anonymity.roles import MAX_SENSITIVE
from app.privacy.registry import MethodInputError, Params

class AttributeModels(Params):
    """The attribute-disclosure models, which read a sensitive column: the job's set (these
    fields on kanonymity's parameters) and a column's own (an entry of sensitive_models)."""

    l: int | None = Field(None, ge=2, le=10_000, description="l-diversity, read as l_diversity says "
                          "(by default distinct l-diversity = p-sensitivity: at least l distinct "
                          "sensitive values per class)")
    l_diversity: Literal["distinct", "entropy", "recursive"] = Field(
        "distinct", description="how l is read: 'distinct' (at least l distinct values), 'entropy' "
        "(every class's sensitive entropy −Σ p ln p at least ln l), 'recursive' (recursive "
        "(c,l)-diversity: the commonest value's count r1 below c times the sum of the l-th "
        "commonest and rarer, r1 < c (r_l + … + r_m); needs c)")
    c: float | None = Field(None, gt=0.0, le=10_000.0, description="recursive (c,l)-diversity's c "
                            "(with l_diversity 'recursive' only)")
    alpha: float | None = Field(None, gt=0.0, le=1.0, description="(α,k)-anonymity: no sensitive "
                                "value above this share of a class")
    t: float | None = Field(None, ge=0.0, le=1.0, description="t-closeness: EMD between each class's "
                            "sensitive distribution and the table's at most t (ordered distance for "
                            "a numeric sensitive column, equal distance for a categorical one, or "
                            "as t_distance says)")
    t_distance: Literal["auto", "hierarchical"] = Field(
        "auto", description="t-closeness's ground distance: 'auto' (ordered for a numeric sensitive "
        "column, equal for a categorical one) or 'hierarchical' (a categorical column's uploaded "
        "hierarchy: two values level(LCA)/H apart, H its height)")
    beta: float | None = Field(None, gt=0.0, le=1_000_000.0, description="β-likeness: no sensitive "
                               "value's share in a class exceeds its share q in the whole table by a "
                               "relative gain (p − q)/q above beta (or, enhanced, above min(beta, −ln q))")
    beta_likeness: Literal["basic", "enhanced"] = Field(
        "enhanced", description="which β-likeness (Cao & Karras 2012): 'enhanced' also caps each "
        "value's gain at −ln q, which binds for common values (a class's share stays below "
        "q (1 − ln q) < 1); 'basic' caps every gain at beta")
    delta_disclosure: float | None = Field(
        None, gt=0.0, le=100.0, description="δ-disclosure privacy (Brickell & Shmatikov 2008): "
        "|ln(p/q)| below this for every class and every sensitive value of the table (p the class's "
        "share, q the table's), so every class holds every value")

    @property
    def asks_a_model(self) -> bool:
        return any(v is not None for v in (self.l, self.alpha, self.t, self.beta, self.delta_disclosure))

    def check_models(self, k: int | None, where: str = "") -> None:
        """A model half given, or l above k (None: k is not known yet — an estimated k-map's
        derived k needs the table's records): a ValueError, its message after ``where``."""
        problem = None
        if self.l is not None and k is not None and self.l > k:
            problem = "l cannot exceed k: a class of k records holds at most k distinct values"
        elif self.l is None and self.l_diversity != "distinct":
            problem = f"l_diversity = '{self.l_diversity}' reads l, and l is not given"
        elif (self.l_diversity == "recursive") != (self.c is not None):
            problem = ("c is recursive (c,l)-diversity's: give l, l_diversity = 'recursive' and c "
                       "together" if self.c is not None else
                       "l_diversity = 'recursive' needs c (r1 < c (r_l + … + r_m))")
        elif self.t is None and self.t_distance != "auto":
            problem = "t_distance chooses t-closeness's distance, and t is not given"
        elif self.beta is None and self.beta_likeness != "enhanced":
            problem = "beta_likeness chooses how beta is read, and beta is not given"
        if problem is not None:
            raise ValueError(where + problem)

    def model_set(self, k: int) -> Constraints:
        return Constraints(k=k, l=self.l, alpha=self.alpha, t=self.t, l_diversity=self.l_diversity,
                           c=self.c, beta=self.beta, beta_likeness=self.beta_likeness,
                           delta_disclosure=self.delta_disclosure, t_distance=self.t_distance)


class SensitiveModels(AttributeModels):
    """One sensitive column's own models (an entry of kanonymity's sensitive_models): the same
    fields, bounds and readings as the job's set."""


Share = Annotated[float, Field(ge=0.0, le=1.0)]  # a bound of δ-presence

_MONDRIAN_METRICS = ("ncp", "classification")  # the default cuts, and InfoGain Mondrian's
_AMOUNT = 1e12  # the largest payoff taken (any one currency per record); ARX's defaults below


class Profitability(Params):
    """The game-theoretic model of Wan et al. (PLOS ONE 2015; ARX's profitability): amounts per
    record, in any one currency; the defaults are ARX's."""

    attacker: Literal["prosecutor", "journalist"] = Field(
        "prosecutor", description="whose odds: 'prosecutor' (the adversary knows the person is in the "
        "release: success 1 / the class's released records) or 'journalist' (success 1 / the population "
        "records the class matches; needs research_subset, the table as population)")
    adversary_cost: float = Field(4.0, ge=0.0, le=_AMOUNT, description="what one re-identification "
                                  "attempt costs the adversary")
    adversary_gain: float = Field(300.0, ge=0.0, le=_AMOUNT, description="what a successful "
                                  "re-identification earns the adversary")
    publisher_loss: float = Field(300.0, ge=0.0, le=_AMOUNT, description="what a successful "
                                  "re-identification of a record costs the publisher (e.g. a fine)")
    publisher_benefit: float = Field(1200.0, gt=0.0, le=_AMOUNT, description="what publishing one record "
                                     "unchanged earns the publisher (scaled by 1 − IL when generalized)")
    no_attack: bool = Field(False, description="keep a class only when attacking it does not pay "
                            "(gain / size ≤ cost): k-anonymity (prosecutor) or k-map (journalist) with "
                            "k = ⌈adversary_gain / adversary_cost⌉; otherwise a class is kept iff the "
                            "publisher's expected payout is positive")

    def cost_benefit(self) -> CostBenefit:
        return CostBenefit(attacker=self.attacker, adversary_cost=self.adversary_cost,
                           adversary_gain=self.adversary_gain, publisher_loss=self.publisher_loss,
                           publisher_benefit=self.publisher_benefit, no_attack=self.no_attack)


class KAnonymityParams(AttributeModels):
    k: int = Field(5, ge=1, le=100_000, description="every equivalence class has at least k records "
                   "(1, no k-anonymity of the released records, only with k_map or delta_presence)")
    research_subset: str | None = Field(
        None, description="ARX's population setting: the table is the population, and this column "
        "marks the research subset released (true/false, yes/no, 1/0, or a boolean column); the "
        "classes are formed over the whole population and only the subset's records are released, "
        "without this column. Read by k_map and delta_presence")
    k_map: int | None = Field(
        None, ge=1, le=1_000_000, description="k-map: every released class's generalized "
        "quasi-identifiers match at least k_map records of the population — counted over the table "
        "with research_subset, or estimated from the table as a sample with k_map_estimator")
    k_map_estimator: Literal["poisson", "zero_truncated_poisson"] | None = Field(
        None, description="k-map estimated without a population table (El Emam & Dankar 2008; ARX's "
        "KMap with a population model): the table is a random sample of a population given by "
        "sampling_fraction or population_size, and the release is k-anonymous with the smallest k whose "
        "classes would come from a population class of at most k_map records with probability at most "
        "significance: 'poisson' (D3, P(f ≥ k) under Poisson(π·k_map)) or 'zero_truncated_poisson' (D4, "
        "the same given the class shows in the sample). An estimate under a random-sampling model, not "
        "a count; not with research_subset")
    sampling_fraction: float | None = Field(
        None, gt=0.0, le=1.0, description="with k_map_estimator: the table holds this share of its "
        "population (as risk's sampling_fraction); or give population_size")
    population_size: int | None = Field(
        None, ge=1, le=10_000_000_000, description="with k_map_estimator: the population the table was "
        "sampled from has this many people (at least the table's records; the sampling fraction is "
        "records / population_size); or give sampling_fraction")
    significance: float = significance_field(
        "with k_map_estimator: the largest probability that a population class of at most k_map records "
        "shows in the sample with the derived k records or more (the test's type I error; ARX's default 0.01)")
    delta_presence: tuple[Share, Share] | None = Field(
        None, description="δ-presence [delta_min, delta_max] (with research_subset; Nergiz et al. 2007): in "
        "every class of the population — those with no research record too — the share of records in "
        "the research subset lies between the two, so whoever holds the population cannot tell "
        "whether a person is in the subset with more or less confidence than that")
    profitability: Profitability | None = Field(
        None, description="the game-theoretic profitability model (Wan et al. 2015, as ARX): {attacker, "
        "adversary_cost, adversary_gain, publisher_loss, publisher_benefit, no_attack}. Each class "
        "is kept iff the publisher's expected payout per record, benefit·(1 − IL) − (the attack pays "
        "? loss / size : 0), is positive, where the adversary attacks iff gain / size > cost (size: the "
        "class's released records, or for the journalist its population records) and IL is the "
        "entropy-based information loss; classes not kept are suppressed, within suppression (algorithm "
        "lattice only). With no_attack: k-anonymity (k-map for the journalist) with k = "
        "⌈gain / cost⌉, any algorithm. An economic model of a rational adversary, not a formal guarantee")
    average_risk: float | None = Field(
        None, gt=0.0, le=1.0, description="lattice: ARX's average re-identification risk (prosecutor): "
        "at most this many classes per released record (the mean of 1 / class size over the records); "
        "met by suppressing the smallest classes, within suppression")
    highest_risk: float | None = Field(
        None, gt=0.0, le=1.0, description="lattice: with records_at_risk (ARX's relaxed average risk): "
        "a record whose risk 1 / (class size) is above this is at risk, i.e. one in a class smaller "
        "than ⌈1 / highest_risk⌉")
    records_at_risk: float | None = Field(
        None, ge=0.0, le=1.0, description="lattice: with highest_risk: the largest share of the released "
        "records at risk; met by suppressing the smallest classes, within suppression")
    sample_uniqueness: float | None = Field(
        None, ge=0.0, le=1.0, description="lattice: ARX's sample uniqueness: the largest share of the "
        "released records alone in their class; met by suppressing the smallest classes, within suppression")
    algorithm: Literal["mondrian", "lattice"] = Field(
        "mondrian", description="'mondrian': strict multidimensional local recoding; 'lattice': "
        "optimal full-domain generalization over the hierarchy levels")
    quasi_identifiers: list[str] | None = Field(
        None, max_length=32, description="columns to generalize; default: the schema's quasi-identifiers")
    sensitive: str | list[str] | None = Field(
        None, description="sensitive column for l, alpha, t, beta and delta_disclosure, or a list of "
        "columns (at most 8), each of which must then meet every one of them; default: the schema's "
        "sensitive column, or all of them when it declares several")
    sensitive_models: dict[str, SensitiveModels] | None = Field(
        None, description="models of a column's own, by column name: {column: {l, l_diversity, c, "
        "alpha, t, t_distance, beta, beta_likeness, delta_disclosure}} (ARX's per-attribute "
        "criteria, e.g. recursive (c,l)-diversity on one column and t-closeness on another). A "
        "column named here meets exactly its own set, not the job's l/alpha/t/beta/"
        "delta_disclosure, and is sensitive whether or not sensitive names it; the columns of "
        "sensitive without an entry meet the job's set. At most 8 sensitive columns in all")
    # up to 1 as ARX's suppression limit (100 %): a limit that lets the optimum suppress most of
    # the table is the owner's call (with entropy_monotonic, which counts no suppression, the
    # optimum then leans to suppressing; ncp and entropy charge each suppressed record in full)
    suppression: float = Field(0.0, ge=0.0, le=1.0, description="lattice: largest share of records "
                               "that may be suppressed (removed), e.g. 0.04 for 4% (1: ARX's 100 %)")
    time_budget: float = Field(30.0, gt=0.0, le=600.0, description="lattice: seconds of search after "
                               "which the best generalization found so far is released, flagged")
    max_lattice_nodes: int = Field(200_000, ge=1, le=2_000_000, description="lattice: above this many "
                                   "nodes a greedy climb replaces the optimal search (flagged)")
    metric: Literal["ncp", "entropy", "entropy_monotonic", "publisher_payout", "classification",
                    "discernibility"] = Field(
        "ncp", description="the information loss minimized. lattice: average NCP (suppressed cells "
        "count 1), non-uniform entropy (suppressed records as fully generalized), ARX's "
        "monotonic non-uniform entropy (suppression not counted), 'publisher_payout' (with "
        "profitability: the publisher's total expected payout maximized, ARX's publisher payout metric), "
        "'discernibility' (Σ |E|² over the classes plus n per suppressed record, Bayardo & Agrawal), "
        "or 'classification' (the share of records a classifier of `label` predicting each class's most "
        "frequent label gets wrong, a suppressed record counting as wrong: Iyengar's, ARX's "
        "classification metric). mondrian: 'ncp' (the default cuts) or 'classification' (InfoGain "
        "Mondrian, LeFevre et al. 2006: each partition cut where the information gain of `label` is "
        "greatest); the other metrics are the lattice's only")
    label: str | None = Field(
        None, description="metric 'classification' only — the column a classifier would predict "
        "from the release (not a quasi-identifier; released as is); none: the schema's one column of role "
        "'label'")
    categorical_release: Literal["ancestor", "children"] = Field(
        "ancestor", description="mondrian: release a class's lowest common ancestor in the "
        "hierarchy, or the set of its children the class holds ('{a|b}', lower NCP); with "
        "delta_presence always the children (two classes released at the same ancestor could both "
        "match a person of the population)")
    categorical_coding: Literal["hierarchy", "ordered"] = Field(
        "hierarchy", description="mondrian: categorical columns over their hierarchy (flat when "
        "none is given), or as codes in sorted order without hierarchy (for comparison)")
    numeric_generalization: Literal["interval", "hierarchy"] = Field(
        "interval", description="mondrian: numeric columns as class intervals [min, max], or over "
        "their hierarchy; the lattice always uses hierarchies")
    auto_levels: int = Field(4, ge=1, le=10, description="levels of the automatic interval "
                             "hierarchy of a numeric column without one (widths doubling per level)")

    @model_validator(mode="after")
    def _combination(self):
        if self.algorithm == "mondrian" and self.metric not in _MONDRIAN_METRICS:
            raise ValueError(f"metric {self.metric!r} applies to algorithm 'lattice' only, and this job runs "
                             "'mondrian': choose metric 'ncp' or 'classification' (InfoGain Mondrian), or "
                             "algorithm 'lattice'")
        self._population_models()
        self._profitability()
        self._risk_thresholds()
        if self.label is not None and self.metric != "classification":
            raise ValueError(f"label applies to metric 'classification' only (metric is {self.metric!r}): drop "
                             "label or use metric 'classification'")
        # with an estimated k-map the release's k is max(k, derived k), known with the records
        # (check_l_against): l is bounded by that, not by the k given
        release_k = None if self.k_map_estimated else self.k
        self.check_models(release_k)
        listed = [self.sensitive] if isinstance(self.sensitive, str) else list(self.sensitive or [])
        own = self.sensitive_models or {}
        every = list(dict.fromkeys([*listed, *own]))
        if len(every) > MAX_SENSITIVE:
            raise ValueError(f"{len(every)} sensitive columns"
                             + (" (sensitive and sensitive_models together)" if own else "")
                             + f"; at most {MAX_SENSITIVE}")
        for column, models in own.items():
            if not models.asks_a_model:
                raise ValueError(f"sensitive_models[{column!r}] sets no model: give it at least one of l, "
                                 "alpha, t, beta and delta_disclosure, or leave the column out (a column of "
                                 "sensitive without an entry meets the job's models)")
            models.check_models(release_k, f"sensitive_models[{column!r}]: ")
        # an option of the other algorithm was ignored without a word: suppression = 0.04 with
        # Mondrian (which suppresses nothing) released a coarser table than the caller asked for
        ignored = [f"{name} = {getattr(self, name)!r}" for name in _ONLY_FOR[_OTHER[self.algorithm]]
                   if getattr(self, name) != type(self).model_fields[name].default]
        if ignored:
            raise ValueError(f"{', '.join(ignored)} {'apply' if len(ignored) > 1 else 'applies'} to "
                             f"algorithm '{_OTHER[self.algorithm]}' only, "
                             f"and this job runs '{self.algorithm}': drop it or choose the other algorithm")
        return self

    def _profitability(self) -> None:
        """The profitability model's combinations (a ValueError naming the fields)."""
        model = self.profitability
        if model is None:
            if self.metric == "publisher_payout":
                raise ValueError("metric = 'publisher_payout' is the profitability model's payout: give "
                                 "profitability (its amounts), or choose another metric")
            return
        if model.attacker == "journalist" and self.research_subset is None:
            raise ValueError("profitability.attacker = 'journalist' reads each class's population count: "
                             "name the column marking the released records in research_subset (the table "
                             "is then the population), or use the prosecutor attacker")
        if not model.no_attack and self.algorithm != "lattice":
            raise ValueError("profitability (its payout model) keeps or suppresses each class by its "
                             "payout, and Mondrian suppresses nothing: use algorithm 'lattice', or "
                             "profitability.no_attack (k-anonymity with k = ⌈gain / cost⌉), which Mondrian runs")
        if model.no_attack and model.cost_benefit().derived_k is None:
            raise ValueError(f"profitability.no_attack with adversary_cost = 0 and adversary_gain = "
                             f"{model.adversary_gain:g}: every attack pays, whatever the class size, so no "
                             "class can be kept; give a positive adversary_cost")

    def _risk_thresholds(self) -> None:
        """highest_risk and records_at_risk together; none of them over a research subset."""
        if (self.highest_risk is None) != (self.records_at_risk is None):
            given = "highest_risk" if self.highest_risk is not None else "records_at_risk"
            raise ValueError(f"{given} is half of a threshold: give highest_risk (the risk above which a "
                             "record is at risk) and records_at_risk (the share of records allowed at risk) "
                             "together")
        if self.risk_thresholds() is not None and self.research_subset is not None:
            raise ValueError("average_risk, highest_risk, records_at_risk and sample_uniqueness are read over "
                             "the whole released table, and research_subset releases a subset of a population, "
                             "which they are not implemented for: drop them or research_subset")

    def risk_thresholds(self) -> RiskThresholds | None:
        """ARX's risk-based models asked (risk_thresholds.py), or None."""
        given = RiskThresholds(average=self.average_risk, highest=self.highest_risk,
                               records_at_risk=self.records_at_risk, sample_uniques=self.sample_uniqueness)
        return given if given.requested() else None

    def release_k(self, estimated: KMapEstimate | None) -> int:
        """The release's k: k, or the estimated k-map's derived k or the prosecutor's no-attack
        k = ⌈gain / cost⌉ when larger."""
        k = self.k if estimated is None else max(self.k, estimated.derived_k)
        model = self.profitability
        if model is not None and model.no_attack and model.attacker == "prosecutor":
            k = max(k, model.cost_benefit().derived_k)
        return k

    def release_k_map(self) -> int | None:
        """k_map over the population, or the journalist's no-attack k = ⌈gain / cost⌉ when larger."""
        model = self.profitability
        if model is not None and model.no_attack and model.attacker == "journalist":
            return max(self.k_map or 1, model.cost_benefit().derived_k)
        return self.k_map

    @property
    def k_map_estimated(self) -> bool:
        return self.k_map_estimator is not None

    def _estimated_k_map(self) -> None:
        """k_map_estimator, sampling_fraction, population_size and significance: together, and
        not with research_subset (a ValueError naming the fields)."""
        population = ("sampling_fraction", "population_size")
        given = [name for name in population if getattr(self, name) is not None]
        if not self.k_map_estimated:
            unread = given + (["significance"] if self.significance != DEFAULT_SIGNIFICANCE else [])
            if unread:
                raise ValueError(f"{', '.join(unread)} {'are' if len(unread) > 1 else 'is'} read by "
                                 "k_map_estimator only (k-map estimated from the table as a sample of "
                                 "a population): give k_map and k_map_estimator too, or drop "
                                 + ("them" if len(unread) > 1 else "it"))
            return
        if self.research_subset is not None:
            raise ValueError("k_map_estimator estimates k-map from the table as a sample of an unseen "
                             "population, and research_subset makes the table the population, where "
                             "k_map is counted exactly: drop k_map_estimator (and sampling_fraction, "
                             "population_size, significance) or research_subset")
        if self.k_map is None:
            raise ValueError("k_map_estimator estimates k-map: give k_map, the population class size "
                             "every released class should match")
        if len(given) != 1:
            raise ValueError("k_map_estimator needs the population: give exactly one of sampling_fraction "
                             "(the table's share of it) and population_size"
                             + (" (both were given)" if given else ""))

    def k_map_estimate(self, records: int) -> KMapEstimate | None:
        """The derived k of the estimated k-map on a table of ``records`` records (None without
        k_map_estimator); a MethodInputError when the population or the table cannot hold it."""
        if not self.k_map_estimated:
            return None
        if self.population_size is not None and self.population_size < records:
            raise MethodInputError(f"population_size = {self.population_size} is below the table's {records} "
                                   "records: the table is a sample of the population, so the population "
                                   "holds at least as many")
        return estimate(self.k_map, self.k_map_estimator, self.significance, records,
                        sampling_fraction=self.sampling_fraction, population_size=self.population_size)

    def _population_models(self) -> None:
        """research_subset, k_map and delta_presence: given together and on their own (a
        ValueError naming the problem)."""
        self._estimated_k_map()
        if self.k_map_estimated:  # k_map over a sample: checked above; k = 1 is allowed with it
            if self.delta_presence is not None:
                raise ValueError("delta_presence is read over a research subset of the population, and "
                                 "k_map_estimator has none: drop one of them")
            return
        journalist = self.profitability is not None and self.profitability.attacker == "journalist"
        population = self.k_map is not None or self.delta_presence is not None
        if population and self.research_subset is None:
            raise ValueError("k_map and delta_presence are read over a research subset of the population: "
                             "name the column that marks it in research_subset"
                             + (" (or estimate k_map from the table as a sample of a population: "
                                "k_map_estimator with sampling_fraction or population_size)"
                                if self.delta_presence is None else ""))
        if self.research_subset is not None and not population and not journalist:
            raise ValueError("research_subset is read by k_map, delta_presence and profitability's journalist "
                             "attacker: give one of them (to release some records only under k-anonymity, "
                             "upload those records alone)")
        population = population or journalist
        risk = self.risk_thresholds()
        if self.k == 1 and not population and self.profitability is None and (risk is None or risk.vacuous()):
            raise ValueError("k = 1 asks no k-anonymity at all: it is allowed only with k_map, delta_presence, "
                             "profitability or a risk threshold (average_risk, highest_risk with "
                             "records_at_risk, sample_uniqueness)" + (
                                 "" if risk is None else f", and the thresholds asked ({risk.describe()}) hold on every release (a "
                                 "threshold of 1, or highest_risk 1: no record's risk is above it): the raw "
                                 "table would be released stated private; give one below 1"))
        if self.delta_presence is not None:
            low, high = self.delta_presence
            if low > high:
                raise ValueError(f"delta_presence [{low:g}, {high:g}]: delta_min is above delta_max")
        if population and (self.asks_a_model or self.sensitive_models or self.sensitive is not None):
            raise ValueError("k_map, delta_presence and the journalist attacker do not combine with the sensitive-column models (sensitive, "
                             "l, alpha, t, beta, delta_disclosure, sensitive_models): those would have to be "
                             "read on the research subset's records only, which is not implemented")

    def check_l_against(self, release_k: int) -> None:
        """l (the job's and each sensitive_models entry's) at most the release's k — the derived
        k of an estimated k-map, when above k: a MethodInputError naming them."""
        for where, models in [("", self), *((f"sensitive_models[{c!r}]: ", m)
                                            for c, m in (self.sensitive_models or {}).items())]:
            if models.l is not None and models.l > release_k:
                raise MethodInputError(
                    f"{where}l = {models.l} is above the release's k = {release_k} (the larger of k = "
                    f"{self.k} and the estimated k-map's derived k): a class of {release_k} records holds at "
                    f"most {release_k} distinct values; lower l, or raise k or k_map")

    def population(self, in_subset) -> Population | None:
        if self.research_subset is None:
            return None
        low, high = self.delta_presence if self.delta_presence is not None else (None, None)
        return Population(in_subset=in_subset, k_map=self.release_k_map(), delta_min=low, delta_max=high)

    def constraints(self) -> Constraints:
        return self.model_set(self.k)

    def column_models(self, k: int | None = None) -> dict[str, Constraints]:
        """The columns with models of their own, and those models (with the job's k, or the one given)."""
        return {column: models.model_set(self.k if k is None else k)
                for column, models in (self.sensitive_models or {}).items()}

    def options(self) -> Options:
        # δ-presence needs released classes that never match the same person: two classes
        # released at the same ancestor can (the categorical_release description says so)
        children = self.delta_presence is not None and self.algorithm == "mondrian"
        return Options(algorithm=self.algorithm, suppression=self.suppression, time_budget=self.time_budget,
                       categorical_release="children" if children else self.categorical_release,
                       categorical_coding=self.categorical_coding,
                       numeric_generalization=self.numeric_generalization,
                       auto_levels=self.auto_levels, max_lattice_nodes=self.max_lattice_nodes,
                       metric=self.metric, label=self.label)


# the options one algorithm reads and the other does not (their descriptions start so)
# An option of one algorithm only is the one its description says so of ("lattice: …"): read
# from there, so the catalogue's words and the refusal cannot drift apart.
_ONLY_FOR = {algorithm: tuple(name for name, f in KAnonymityParams.model_fields.items()
                              if (f.description or "").startswith(f"{algorithm}:"))
             for algorithm in ("lattice", "mondrian")}
_OTHER = {"lattice": "mondrian", "mondrian": "lattice"}
