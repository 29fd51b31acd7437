"""RFK-anonymity: 1-D k-means, tiers, encoding, the method end to end, and the experiment."""

import itertools

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from app.privacy.anonymity.rfk_method import RfkParams, _check_rfk, run_rfk
from app.privacy.anonymity.rfk import encode_features, kmeans_1d, tier_stability
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.registry import MethodInputError
from tests.support.figures import assert_readable


def _sse(x, labels):
    return sum(((x[labels == c] - x[labels == c].mean()) ** 2).sum() for c in np.unique(labels))


def test_kmeans_1d_is_optimal_and_ordered_by_centroid():
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = rng.normal(size=8)
        labels = kmeans_1d(x, 3)
        best = min(_sse(x, np.array(assign)) for assign in itertools.product(range(3), repeat=8)
                   if len(set(assign)) == 3)
        assert _sse(x, labels) == pytest.approx(best)
        means = [x[labels == c].mean() for c in range(3)]
        assert means[0] > means[1] > means[2]  # cluster 0 = most sensitive
    assert list(kmeans_1d(np.array([0.1, 0.5]), 5)) == [1, 0]  # fewer values than clusters


def test_tier_stability_figures():
    main = {"a": 1, "b": 2, "c": 2, "d": 3}
    same = tier_stability(main, [dict(main)])
    assert same["mean_same_tier_share"] == 1.0 and same["mean_adjusted_rand_index"] == 1.0
    moved = tier_stability(main, [{"a": 2, "b": 1, "c": 1, "d": 3}])
    assert moved["same_tier_share"] == [0.25]
    assert moved["adjusted_rand_index"] == [1.0]  # same clusters, other numbers


def test_encoding_reads_interval_midpoints_and_codes_categories():
    frame = pd.DataFrame({"a": ["[10, 20]", "5", "[0, 1]"], "b": ["x", "*", None], "c": [1.5, 2, 3]})
    X = encode_features(frame, ["a", "b", "c"])
    assert X[:, 0].tolist() == [15.0, 5.0, 0.5]
    assert len(set(X[:, 1])) == 3 and X[:, 2].tolist() == [1.5, 2.0, 3.0]


def _toy(n=1500, seed=4):
    rng = np.random.default_rng(seed)
    strong = rng.integers(0, 60, n)
    frame = pd.DataFrame({
        "strong": strong, "weak": rng.integers(0, 100, n),
        "city": rng.choice(["p", "q", "r", "s"], n), "noise": rng.normal(size=n).round(2),
    })
    frame["y"] = np.where(strong + rng.normal(0, 4, n) > 30, "hi", "lo")
    columns = [ColumnInfo("strong", "numeric"), ColumnInfo("weak", "numeric"),
               ColumnInfo("city", "categorical"), ColumnInfo("noise", "numeric"),
               ColumnInfo("y", "categorical", role="label")]
    return frame, columns


@pytest.fixture(scope="module")
def toy_release():
    frame, columns = _toy()
    params = RfkParams(k=4, E=[1, 3], tiers=3, repeats=2, n_estimators=15, stability_runs=1,
                       eval_repeats=1)
    return frame, run_rfk(MethodInput(columns=columns, frame=frame), params, RunContext())


def test_rfk_ranks_the_predictive_attribute_first_and_anonymizes_tier_one(toy_release):
    frame, result = toy_release
    m = result.metrics
    assert m["tiers"]["strong"] == 1
    assert m["sensitivity"]["strong"] == max(m["sensitivity"].values())
    anonymized = result.metadata["anonymized_attributes"]
    assert "strong" in anonymized and m["E"] == 1
    sizes = result.frame.groupby(anonymized).size()  # independent check of the release
    assert sizes.min() >= 4
    for column in set(frame.columns) - set(anonymized):
        assert (result.frame[column].to_numpy() == frame[column].to_numpy()).all()


def test_rfk_reports_every_E_with_loss_accuracy_and_risk(toy_release):
    frame, result = toy_release
    by_E = {row["E"]: row for row in result.metrics["by_E"]}
    assert sorted(by_E) == [1, 2, 3]
    assert by_E[3]["unchanged"] == [] and by_E[3]["risk_all_attributes"]["highest"] <= 1 / 4
    assert by_E[1]["ncp_sum"] <= by_E[3]["ncp_sum"]
    attributes = list(frame.columns.drop("y"))
    for row in by_E.values():
        assert 0.5 <= row["accuracy"] <= 1.0  # the label follows 'strong': well above chance
        released = result.frame if row["E"] == 1 else None
        if released is not None:  # risk over all attributes, recomputed on the release
            sizes = released.groupby(attributes).size()
            assert row["risk_all_attributes"]["highest"] == 1 / sizes.min()
            assert row["risk_all_attributes"]["sample_uniques"] == int((sizes == 1).sum())
    # attributes left unchanged (continuous 'noise', 'weak') keep nearly everyone unique
    assert by_E[1]["risk_all_attributes"]["sample_uniques_share"] > 0.9
    assert not result.guarantees["private"]
    assert any("still identify" in w for w in result.guarantees["warnings"])
    assert result.metrics["tier_stability"]["reruns"] == 1


def test_rfk_parameters_are_checked():
    _, columns = _toy(50)
    with pytest.raises(ValidationError):
        RfkParams(k=2)  # the paper: K > 2
    with pytest.raises(ValidationError):
        RfkParams(E=6)
    with pytest.raises(MethodInputError, match="unknown label"):
        _check_rfk(RfkParams(label="nope"), columns, None)
    unlabeled = [ColumnInfo(c.name, c.type) for c in columns]
    with pytest.raises(MethodInputError, match="needs a label"):
        _check_rfk(RfkParams(), unlabeled, None)


def _run_small(frame, **params):
    label_type = "numeric" if frame["y"].dtype.kind in "if" else "categorical"
    columns = [ColumnInfo("a", "numeric"), ColumnInfo("b", "categorical"),
               ColumnInfo("y", label_type, role="label")]
    params = {"k": 3, "repeats": 1, "n_estimators": 5, "stability_runs": 0, "eval_repeats": 1,
              **params}
    return run_rfk(MethodInput(columns=columns, frame=frame), RfkParams(**params), RunContext())


def _table(y, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.random(len(y)), "b": rng.choice(["u", "v"], len(y)), "y": y})


@pytest.mark.parametrize("y, params, message", [
    (["p"], {}, r"the table has 1 records, fewer than k = 3"),  # sklearn: _split.py:2511
    (["p", "q"], {}, r"the table has 2 records, fewer than k = 3"),
    (["p", "q", "q"], {}, r"1 of its 2 classes holds a single record in the table; .*at least "
                          r"2 records per class"),  # sklearn: _split.py:2353
    (list(range(30)), {}, r"30 of its 30 classes hold a single record"),  # a numeric label
    (["p"] * 30, {}, r"'y' has a single class in the table: .*at least two classes"),
    (["p", "q", "r", "s"] * 2, {}, r"has 4 classes in the table of 8 records: .*at least 11 "
                                   r"records"),
    (["p"] * 500 + ["q"] * 497 + ["r"] * 3, {"sample_size": 200},
     r"classes holds a single record in the stratified sample \(sample_size = 200\); .*raise "
     r"sample_size"),
])
def test_rfk_refuses_what_its_forest_splits_cannot_use(y, params, message):
    """Inputs that made scikit-learn's stratified split raise (an internal error) or, for a
    single class, made every sensitivity 0, are MethodInputErrors saying what is needed."""
    with pytest.raises(MethodInputError, match=message):
        _run_small(_table(y), **params)


def test_rfk_runs_on_a_value_beyond_float32_range():
    """A legal 1e300 failed the job with an internal error (scikit-learn's forests read float32:
    'Input X contains infinity', the #7 acceptance check); the encoding keeps the order."""
    frame = _table(["p", "q"] * 40)
    frame.loc[3, "a"] = 1e300
    frame.loc[5, "a"] = -1e300
    X = encode_features(frame, ["a", "b"])
    assert np.isfinite(X.astype(np.float32)).all()
    assert X[:, 0].argmax() == 3 and X[:, 0].argmin() == 5
    result = _run_small(frame)
    assert len(result.frame) == 80


def test_rfk_split_requirements_are_those_of_scikit_learn():
    from sklearn.model_selection import train_test_split

    from app.privacy.anonymity.rfk import TEST_SHARE, records_for_split, require_forest_split

    for classes in (2, 3, 4, 7, 30):
        need = records_for_split(classes)
        for n in (need - 1, need):
            y = pd.Series(np.arange(n) % classes).astype(str)
            try:
                train_test_split(np.zeros(n), y, test_size=TEST_SHARE, stratify=y, random_state=0)
                sklearn_ok = True
            except ValueError:
                sklearn_ok = False
            assert sklearn_ok == (n == need), (classes, n)
            if n == need:
                require_forest_split(y, "y")
            else:
                with pytest.raises(MethodInputError):
                    require_forest_split(y, "y")


def test_rfk_refuses_a_single_class_label_at_submit():
    _, columns = _toy(50)
    profiled = [ColumnInfo(c.name, c.type, role=c.role, distinct=1 if c.name == "y" else 5)
                for c in columns]
    with pytest.raises(MethodInputError, match="'y' has a single class"):
        _check_rfk(RfkParams(), profiled, None)
    _check_rfk(RfkParams(), columns, None)  # profile unknown: the run decides


def test_experiment_rfk_small_run_produces_tables_and_plots():
    from app.privacy.experiments.rfk import ExperimentRfkParams, run_experiment_rfk

    params = ExperimentRfkParams(datasets=["adult"], repeats=1, n_estimators=5, stability_runs=0,
                                 sample_size=600, eval_repeats=1)
    report = run_experiment_rfk(MethodInput(columns=[]), params, RunContext())
    table = report.tables["by_E"]
    assert table["E"].tolist() == [1, 2, 3, 4, 5]
    row5 = table[table.E == 5].iloc[0]
    assert row5["rfk_accuracy"] == row5["kanonymity_accuracy"]  # E = 5 is plain k-anonymity
    assert (table["rfk_ncp_sum"].diff().dropna() >= -1e-12).all()  # more tiers, more loss
    assert set(report.plots) == {"rfk_accuracy_adult", "rfk_information_loss_adult", "rfk_risk_adult",
                                 "rfk_accuracy_lead_adult"}
    assert report.data["datasets"][0]["tier_agreement_with_paper"]["same_tier_share"] >= 0.0
    assert len(report.tables["tiers"]) == 14
    assert table["rfk_accuracy_se"].isna().all()  # one split: no spread to estimate, none made up


J_SPLITS = 3


@pytest.fixture(scope="module")
def adult_report_three_splits():
    """A small Adult run with 3 accuracy splits, shared by the tests reading its tables."""
    from app.privacy.experiments.rfk import ExperimentRfkParams, run_experiment_rfk

    params = ExperimentRfkParams(datasets=["adult"], repeats=1, n_estimators=5, stability_runs=0,
                                 sample_size=600, eval_repeats=J_SPLITS)
    return params, run_experiment_rfk(MethodInput(columns=[]), params, RunContext())


def test_experiment_rfk_keeps_every_split_and_its_standard_errors_are_recomputable(adult_report_three_splits):
    """'RFK accuracy plot without spread': the accuracies were bare means of 2 splits, the
    per-split values dropped, and a reader could not tell which 0.01-0.03 gaps were real. The
    report keeps each split's accuracy of every series (accuracy_splits), and by_E's means,
    standard errors (Nadeau-Bengio corrected, 70/30 splits: s·√(1/J + 3/7)) and paired
    differences RFK − baseline are those of the kept values."""
    J = J_SPLITS
    _, report = adult_report_three_splits
    by_e, splits = report.tables["by_E"].set_index("E"), report.tables["accuracy_splits"]
    assert len(splits) == 5 * J and (splits.groupby("E").split.apply(sorted) == [[1, 2, 3]] * 5).all()
    assert splits.split_seed.nunique() == J  # J different splits, the same J at every E

    def corrected(values):
        v = np.asarray(values, dtype=float)
        return np.std(v, ddof=1) * np.sqrt(1 / len(v) + 0.3 / 0.7)

    for E, part in splits.groupby("E"):
        row = by_e.loc[E]
        for series in ("rfk_accuracy", "rfk_tiers_only_accuracy", "kanonymity_accuracy", "pak_accuracy",
                       "infogain_accuracy", "original_accuracy"):
            assert row[series] == pytest.approx(part[series].mean(), abs=1e-12), (E, series)
            assert row[f"{series}_se"] == pytest.approx(corrected(part[series]), abs=1e-12), (E, series)
        for prefix, method, baseline in (("rfk_minus_kanonymity", "rfk", "kanonymity"),
                                         ("rfk_tiers_only_minus_kanonymity", "rfk_tiers_only", "kanonymity"),
                                         ("rfk_minus_pak", "rfk", "pak"),
                                         ("rfk_tiers_only_minus_pak", "rfk_tiers_only", "pak"),
                                         ("rfk_minus_infogain", "rfk", "infogain"),
                                         ("rfk_tiers_only_minus_infogain", "rfk_tiers_only", "infogain")):
            d = part[f"{method}_accuracy"].to_numpy() - part[f"{baseline}_accuracy"].to_numpy()
            assert row[prefix] == pytest.approx(d.mean(), abs=1e-12), (E, prefix)
            assert row[f"{prefix}_se"] == pytest.approx(corrected(d), abs=1e-12), (E, prefix)
    # the baselines are the same tables at every E, each split the same value
    for series in ("kanonymity_accuracy", "pak_accuracy", "infogain_accuracy", "original_accuracy"):
        assert (splits.groupby("split")[series].nunique() == 1).all(), series
    # plain k-anonymity is RFK's E = 5 table, split by split: its lead there is exactly 0
    five = splits[splits.E == 5]
    assert (five.rfk_accuracy == five.kanonymity_accuracy).all()
    assert by_e.loc[5, "rfk_minus_kanonymity"] == 0 and by_e.loc[5, "rfk_minus_kanonymity_se"] == 0
    # the splits vary (else every standard error would be 0 and prove nothing)
    assert (by_e["original_accuracy_se"] > 0).all()
    assert "accuracy_splits" in report.data["accuracy_spread"]


def test_experiment_rfk_infogain_baseline_is_a_k_anonymous_label_aware_release_of_every_attribute(
        adult_report_three_splits):
    """The third baseline, InfoGain Mondrian (kanonymity's metric 'classification' with the
    experiment's label), is measured as plain k-anonymity is: its by_E figures are those of a
    release recomputed here — k-anonymous over every attribute, its Σ NCP and sample uniques, the
    forest's accuracy on each split — and it is not plain k-anonymity's table under another name."""
    from app.privacy.anonymity.anonymize import Options, anonymize
    from app.privacy.anonymity.models import Constraints
    from app.privacy.anonymity.rfk import encode_features, forest_accuracy, stratified_sample
    from app.privacy.experiments.rfk_settings import load

    params, report = adult_report_three_splits
    by_e, splits = report.tables["by_E"], report.tables["accuracy_splits"]
    frame, columns, hierarchies, label = load("adult")
    attributes = [c.name for c in columns if c.name != label]
    result = anonymize(frame, {c.name: c for c in columns}, hierarchies, attributes, Constraints(k=params.k),
                       None, Options(metric="classification", label=label))
    release = result.frame
    sizes = release.groupby(attributes, dropna=False).size()
    assert len(release) == len(frame) and sizes.min() >= params.k  # k-anonymous over all attributes
    assert (by_e["infogain_sample_uniques_share"] == 0).all()
    assert report.data["datasets"][0]["infogain"]["k_achieved"] == sizes.min()
    assert np.allclose(by_e["infogain_ncp_sum"], sum(result.metrics["ncp_per_qi"][a] for a in attributes),
                       rtol=0, atol=1e-12)
    # a label-aware cut is not the default one: the two releases differ and so does their loss
    plain = anonymize(frame, {c.name: c for c in columns}, hierarchies, attributes, Constraints(k=params.k),
                      None, Options()).frame
    assert not release[attributes].equals(plain[attributes])
    assert abs(by_e["infogain_ncp_sum"].iloc[0] - by_e["kanonymity_ncp_sum"].iloc[0]) > 0.01
    # every split's accuracy is the forest's on this release's sample
    sample = release.loc[stratified_sample(frame, label, params.sample_size, params.seed).index]
    X, y = encode_features(sample, attributes), sample[label].astype(str).to_numpy()
    first = splits[splits.E == 1].sort_values("split")
    assert list(first.infogain_accuracy) == [forest_accuracy(X, y, int(seed), params.n_estimators)
                                             for seed in first.split_seed]
    assert (first.infogain_accuracy != first.kanonymity_accuracy).any()
    assert "InfoGain Mondrian" in report.plots["rfk_accuracy_adult"].svg.decode()  # drawn too


def test_on_a_k_anonymous_release_the_generalized_attributes_are_named_not_called_without_hierarchy():
    """rfk_anonymity on a kanonymity release: 'b' holds the earlier step's generalized values.
    The warning names it (and only the attributes this run anonymized), and the flat-hierarchy
    warning, which tells to upload a hierarchy, does not (one could not describe those values)."""
    from app.privacy.anonymity.methods import KAnonymityParams, run_kanonymity
    from app.privacy.data import SourceRelease

    frame = _table(np.arange(300) % 2)
    columns = [ColumnInfo("a", "numeric"), ColumnInfo("b", "categorical"), ColumnInfo("y", "numeric", role="label")]
    first = run_kanonymity(MethodInput(columns=columns, frame=frame),
                           KAnonymityParams(k=200, quasi_identifiers=["b"]), RunContext())
    assert set(first.frame["b"]) == {"*"}
    source = SourceRelease(release_id="r1", method="kanonymity", params={}, guarantees=first.guarantees,
                           metadata=first.metadata)
    params = RfkParams(k=3, repeats=1, n_estimators=5, stability_runs=0, eval_repeats=1, tiers=2, E=2)
    out = run_rfk(MethodInput(columns=first.columns, frame=first.frame, source=source), params, RunContext())
    assert sorted(out.metadata["anonymized_attributes"]) == ["a", "b"]
    warnings = out.guarantees["warnings"]
    assert [w for w in warnings if "earlier step" in w] == [
        "b: generalized by an earlier step of this release's chain, so anonymized over their released "
        "values ('*', intervals, sets) without a hierarchy (the dataset's describe raw values and are "
        "not used); to generalize further along a hierarchy, anonymize the dataset itself with the "
        "stronger constraints"]
    assert not any(w.startswith("no hierarchy for") and "b" in w.split(":")[0] for w in warnings)


def _by_e_table() -> pd.DataFrame:
    """A by_E table as the experiment builds it: RFK's two risk series equal at every E (as on
    Adult, where every record is unique until E = 5)."""
    risk = [1.0, 1.0, 1.0, 0.99, 0.0]
    return pd.DataFrame({
        "dataset": "adult", "E": [1, 2, 3, 4, 5],
        "rfk_accuracy": [0.84, 0.85, 0.84, 0.82, 0.80],
        "rfk_tiers_only_accuracy": [0.80, 0.81, 0.78, 0.82, 0.80],
        "kanonymity_accuracy": 0.80, "pak_accuracy": 0.79, "infogain_accuracy": 0.81, "original_accuracy": 0.85,
        "rfk_ncp_sum": [0.0, 0.0, 0.2, 0.9, 1.5], "kanonymity_ncp_sum": 1.5, "pak_ncp_sum": 5.4,
        "infogain_ncp_sum": 2.7, "rfk_sample_uniques_share": risk, "rfk_records_at_risk": risk,
        "kanonymity_sample_uniques_share": 0.0, "infogain_sample_uniques_share": 0.0})


def test_experiment_rfk_figures_keep_one_style_per_series_told_apart_without_colour():
    """Acceptance check: styles went by position, so plain k-anonymity was a green dash-dot line
    in the accuracy plot and an orange dashed one in the loss plot, and in the risk plot the
    records-at-risk squares hid the sample-uniques circles under them at every E < 5."""
    from app.privacy.experiments.rfk_plots import rfk_figures

    styles: dict[str, set] = {}
    for name, fig in rfk_figures(_by_e_table(), "adult").items():
        ax = fig.axes[0]
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel(), name
        lines = {line.get_label(): line for line in ax.get_lines()}
        shapes = [(line.get_marker(), line.get_linestyle()) for line in lines.values()]
        assert len(set(shapes)) == len(shapes), f"{name}: series told apart by colour only"
        for label, line in lines.items():
            series = {"RFK (others unchanged)": "RFK", "RFK: sample uniques (all attributes)": "RFK",
                      "plain k-anonymity: sample uniques": "plain k-anonymity"}.get(label, label)
            styles.setdefault(series, set()).add(
                (line.get_color(), line.get_marker(), line.get_linestyle()))
    assert {s: v for s, v in styles.items() if len(v) > 1} == {}, "a series changes style between figures"

    risk_axes = rfk_figures(_by_e_table(), "adult")["rfk_risk_adult"].axes[0]
    risk = {line.get_label(): line for line in risk_axes.get_lines()}
    uniques, at_risk = risk["RFK: sample uniques (all attributes)"], risk["RFK: records in classes < 5"]
    # where the two coincide, the circles must show inside the squares: hollow and larger
    assert at_risk.get_fillstyle() == "none" and at_risk.get_markersize() > uniques.get_markersize()


def test_experiment_rfk_information_loss_on_a_log_axis_when_it_spans_decades():
    """Acceptance check of the docs figures: RFK's Σ NCP (Adult 0.0016, 0.0038, 0.22 at E = 1-3)
    sat on the zero line of a linear axis that (p,α,k)'s 5.46 stretched, so the growth with E the
    page describes could not be seen. A zero keeps the linear axis (it would vanish from a log one)."""
    from app.privacy.experiments.rfk_plots import rfk_figures

    spread = _by_e_table().assign(rfk_ncp_sum=[0.0016, 0.0038, 0.22, 0.90, 1.44])
    ax = rfk_figures(spread, "adult")["rfk_information_loss_adult"].axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    assert_readable(rfk_figures(spread, "adult")["rfk_information_loss_adult"])
    with_zero = rfk_figures(_by_e_table(), "adult")["rfk_information_loss_adult"].axes[0]
    assert with_zero.get_yscale() == "linear"
    assert rfk_figures(spread, "adult")["rfk_accuracy_adult"].axes[0].get_yscale() == "linear"


def test_experiment_rfk_figures_name_their_data_direction_and_the_papers_reported_leads():
    """Plots review: the titles said 'Accuracy vs E — adult' (neither k nor the records), no axis
    said which way is better, the paper's reported accuracy leads (spec 04 §2: Adult +0.5 / +1.6
    over plain k-anonymity at E = 3, 4 and +0.4 / +1.9 over (p,α,k) at E = 4, 5; Bank +0.4 / +0.9)
    were in the report's data but on no figure, the risk figure left out the (p,α,k) baseline its
    table has, and nothing said what an accuracy point is a mean of."""
    from app.privacy.experiments.rfk import ExperimentRfkParams
    from app.privacy.experiments.rfk_plots import rfk_figures

    table = _by_e_table().assign(pak_sample_uniques_share=0.0)
    params = ExperimentRfkParams(k=10, eval_repeats=3, sample_size=4000)
    figures = rfk_figures(table, "adult", params, records=32561)
    for name, fig in figures.items():
        assert_readable(fig)
        assert fig.axes[0].get_title().endswith("— Adult (32,561 records, k = 10)"), name
    accuracy = figures["rfk_accuracy_adult"].axes[0]
    assert accuracy.get_ylabel() == "random-forest accuracy (higher is better)"
    assert figures["rfk_information_loss_adult"].axes[0].get_ylabel() == \
        "information loss\n(Σ NCP over attributes; lower is better)"  # two lines: it fits the axis
    assert figures["rfk_risk_adult"].axes[0].get_ylabel() == "share of records (lower is better)"
    lines = {line.get_label(): line for line in accuracy.get_lines()}
    paper_k = lines["paper: plain k-anonymity + its reported RFK lead"]
    assert list(paper_k.get_xdata()) == [3, 4]
    assert np.allclose(paper_k.get_ydata(), [0.80 + 0.005, 0.80 + 0.016])
    paper_pak = lines["paper: (p,α,k)-anonymity + its reported RFK lead"]
    assert list(paper_pak.get_xdata()) == [4, 5] and np.allclose(paper_pak.get_ydata(), [0.794, 0.809])
    # the plotted accuracies are the table's
    assert list(lines["RFK (others unchanged)"].get_ydata()) == list(table["rfk_accuracy"])
    assert "mean of 3 train/test splits of a 4,000-record stratified sample" in \
        figures["rfk_accuracy_adult"].legends[0].get_title().get_text()
    risk = {line.get_label() for line in figures["rfk_risk_adult"].axes[0].get_lines()}
    assert "(p,α,k)-anonymity: sample uniques" in risk
    bank = rfk_figures(table.assign(dataset="bank"), "bank", params, records=45211)
    bank_lines = {line.get_label() for line in bank["rfk_accuracy_bank"].axes[0].get_lines()}
    assert "paper: plain k-anonymity + its reported RFK lead" in bank_lines
    assert not any("(p,α,k)-anonymity + its" in label for label in bank_lines)  # no Bank claim


def _legend_title(fig) -> str:
    return " ".join(fig.legends[0].get_title().get_text().split())  # wrapped to the figure's width


def _by_e_table_with_spread() -> pd.DataFrame:
    """_by_e_table with the standard errors and paired differences the experiment reports."""
    table = _by_e_table()
    se = {"rfk_accuracy": [0.004, 0.005, 0.006, 0.004, 0.005], "rfk_tiers_only_accuracy": 0.007,
          "kanonymity_accuracy": 0.005, "pak_accuracy": 0.006, "infogain_accuracy": 0.003,
          "original_accuracy": 0.004}
    differences = {"rfk_minus_kanonymity": [0.04, 0.05, 0.04, 0.02, 0.0],
                   "rfk_tiers_only_minus_kanonymity": [0.0, 0.01, -0.02, 0.02, 0.0],
                   "rfk_minus_pak": [0.05, 0.06, 0.05, 0.03, 0.01],
                   "rfk_tiers_only_minus_pak": [0.01, 0.02, -0.01, 0.03, 0.01],
                   "rfk_minus_infogain": [0.03, 0.04, 0.03, 0.01, -0.01],
                   "rfk_tiers_only_minus_infogain": [-0.01, 0.0, -0.03, 0.01, -0.01]}
    return table.assign(**{f"{c}_se": v for c, v in se.items()}, **differences,
                        **{f"{c}_se": [0.003, 0.004, 0.005, 0.006, 0.0] for c in differences},
                        pak_sample_uniques_share=0.0)


def test_experiment_rfk_accuracy_figures_draw_the_standard_errors_and_the_paired_leads():
    """'RFK accuracy plot without spread': differences of 0.01-0.03 were drawn as bare means. The
    accuracy figure draws ± 1 standard error (error bars on RFK's two series, bands around the
    constant baselines); a lead figure draws RFK − baseline, paired split by split, in points
    with ± 2 standard errors, and the paper's reported leads beside them. Every figure stays
    readable."""
    from app.privacy.experiments.rfk import ExperimentRfkParams
    from app.privacy.experiments.rfk_plots import rfk_figures

    table = _by_e_table_with_spread()
    figures = rfk_figures(table, "adult", ExperimentRfkParams(eval_repeats=10), records=32561)
    assert set(figures) == {"rfk_accuracy_adult", "rfk_information_loss_adult", "rfk_risk_adult",
                            "rfk_accuracy_lead_adult"}
    for fig in figures.values():
        assert_readable(fig)

    accuracy = figures["rfk_accuracy_adult"].axes[0]
    bars = [c for c in accuracy.containers if hasattr(c, "has_yerr") and c.has_yerr]
    assert len(bars) == 2  # RFK and RFK tiers only; the baselines are bands
    halves = sorted(tuple(np.round([(s[1][1] - s[0][1]) / 2 for s in c.lines[2][0].get_segments()], 6))
                    for c in bars)
    assert halves == sorted([(0.004, 0.005, 0.006, 0.004, 0.005), (0.007,) * 5])
    bands = [c.get_paths()[0].vertices[:, 1] for c in accuracy.collections
             if c.get_paths() and len(c.get_paths()[0].vertices) > 2]
    assert sorted((round(b.min(), 6), round(b.max(), 6)) for b in bands) == [
        (0.784, 0.796), (0.795, 0.805), (0.807, 0.813), (0.846, 0.854)]  # (p,α,k), k, InfoGain, original
    infogain = {line.get_label(): line for line in accuracy.get_lines()}["InfoGain Mondrian (label-aware k-anonymity)"]
    assert np.allclose(infogain.get_ydata(), 0.81)  # the third baseline: one more reference line
    assert "± 1 standard error" in _legend_title(figures["rfk_accuracy_adult"])

    lead_fig = figures["rfk_accuracy_lead_adult"]
    lead = lead_fig.axes[0]
    containers = {c.get_label(): c for c in lead.containers}
    rfk_k = containers["RFK − plain k-anonymity"]
    assert np.allclose(rfk_k.lines[0].get_ydata(), [4, 5, 4, 2, 0])  # points
    segments = rfk_k.lines[2][0].get_segments()
    assert np.allclose([(s[1][1] - s[0][1]) / 2 for s in segments], [0.6, 0.8, 1.0, 1.2, 0.0])  # ± 2 SE
    rfk_infogain = containers["RFK − InfoGain Mondrian"]
    assert np.allclose(rfk_infogain.lines[0].get_ydata(), [3, 4, 3, 1, -1])
    assert np.allclose(containers["RFK tiers only − InfoGain Mondrian"].lines[0].get_ydata(), [-1, 0, -3, 1, -1])
    paper = containers["paper: RFK's reported lead over plain k-anonymity"]
    assert np.allclose(paper.lines[0].get_ydata(), [0.5, 1.6])
    # beside the difference it is reported for
    assert np.allclose(paper.lines[0].get_xdata(), rfk_k.lines[0].get_xdata()[2:4])
    assert "± 2 standard errors" in _legend_title(lead_fig)
    assert "10 train/test splits" in _legend_title(lead_fig)

    # a rerun's tiering: its own leads over plain k-anonymity as marks beside the main run's
    rerun = table[["dataset", "E", "rfk_minus_kanonymity", "rfk_tiers_only_minus_kanonymity"]].assign(
        tier_run=1, rfk_minus_kanonymity=[0.01, 0.03, 0.05, 0.0, 0.0])
    tier_runs = pd.concat([table.assign(tier_run=0), rerun])
    lead_fig = rfk_figures(table, "adult", ExperimentRfkParams(eval_repeats=10), 32561, tier_runs)[
        "rfk_accuracy_lead_adult"]
    assert_readable(lead_fig)
    containers = {c.get_label(): c for c in lead_fig.axes[0].containers}
    marks = containers["RFK − plain k-anonymity, a rerun's tiers"].lines[0]
    assert np.allclose(marks.get_ydata(), [1, 3, 5, 0])  # E = 1..4: at 5 every table is plain k
    assert np.allclose(marks.get_xdata(), containers["RFK − plain k-anonymity"].lines[0].get_xdata()[:4])


def test_experiment_rfk_measures_the_tables_of_every_tier_run():
    """RFK's randomness is its tiering (the sensitivity forests' seed): the splits' spread says
    nothing of it. by_E_tier_runs has RFK's accuracies and leads for the tables of every tier
    run — 0 the main run (as by_E), then each rerun's own tiers, anonymized — against the same
    baselines and splits, each split kept in accuracy_splits."""
    from app.privacy.anonymity.anonymize import Options, anonymize
    from app.privacy.anonymity.models import Constraints
    from app.privacy.anonymity.rfk import encode_features, forest_accuracy, stratified_sample
    from app.privacy.experiments.rfk import ExperimentRfkParams, run_experiment_rfk
    from app.privacy.experiments.rfk_settings import load

    params = ExperimentRfkParams(datasets=["adult"], repeats=1, n_estimators=5, stability_runs=1,
                                 sample_size=600, eval_repeats=2)
    report = run_experiment_rfk(MethodInput(columns=[]), params, RunContext())
    by_e, runs, splits = (report.tables[t] for t in ("by_E", "by_E_tier_runs", "accuracy_splits"))
    assert sorted(set(zip(runs.tier_run, runs.E))) == [(r, E) for r in (0, 1) for E in range(1, 6)]
    main = runs[runs.tier_run == 0].set_index("E")
    for column in ("rfk_accuracy", "rfk_accuracy_se", "rfk_minus_kanonymity", "rfk_minus_kanonymity_se",
                   "rfk_tiers_only_minus_pak"):
        assert np.allclose(main[column], by_e.set_index("E")[column], equal_nan=True), column
    rerun = runs[runs.tier_run == 1].set_index("E")
    assert rerun.loc[5, "rfk_minus_kanonymity"] == 0  # every attribute: plain k-anonymity again
    for E, part in splits[splits.tier_run == 1].groupby("E"):
        assert rerun.loc[E, "rfk_accuracy"] == pytest.approx(part.rfk_accuracy.mean(), abs=1e-12)
    # a rerun's table is anonymized on its own tiers: recompute one split at its E = 1
    tiers = report.data["datasets"][0]["tiers_by_run"][1]
    frame, columns, hierarchies, label = load("adult")
    attributes = [c.name for c in columns if c.name != label]
    qis = [a for a in attributes if tiers[a] <= 1]
    assert rerun.loc[1, "attributes_anonymized"] == len(qis)
    table = anonymize(frame, {c.name: c for c in columns}, hierarchies, qis, Constraints(k=5), None,
                      Options(risk_threshold=5)).frame
    first = splits[(splits.tier_run == 1) & (splits.E == 1) & (splits.split == 1)].iloc[0]
    sample = table.loc[stratified_sample(frame, label, 600, params.seed).index]
    y = sample[label].astype(str).to_numpy()
    assert first.rfk_accuracy == forest_accuracy(encode_features(sample, attributes), y,
                                                 int(first.split_seed), 5)
    assert first.rfk_tiers_only_accuracy == forest_accuracy(encode_features(sample, qis), y,
                                                            int(first.split_seed), 5)
