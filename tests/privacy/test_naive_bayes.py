"""PPNB and DTPD: identity randomization equals plain naive Bayes, scikit-learn conventions,
ppnb_train/dtpd_train on releases, DTPD's count reconstruction, the Adult targets."""

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import CategoricalNB, GaussianNB
from sklearn.preprocessing import OrdinalEncoder

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.experiments import datasets_dir
from app.privacy.dtpd import DTPDClassifier, DTPDParams, run_dtpd_train, split_counts
from app.privacy.naive_bayes import PPNBClassifier, PPNBParams, run_ppnb_train
from app.privacy.randomized_response import ErrphParams, run_errph
from app.privacy.warner import WarnerParams, run_warner
from app.privacy.reconstruction import ReconstructParams, run_reconstruct
from app.privacy.registry import MethodInputError, get
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import NumericChannel, as_release_input
from app.privacy.transforming_rr import TrrParams, run_trr


def ctx(seed=1):
    return RunContext(SecureRandom(seed=seed))


@pytest.fixture(scope="module")
def toy():
    """Two categorical, two numeric attributes, three classes, some missing categories."""
    rng = np.random.default_rng(0)
    n = 6000
    y = rng.choice(["lo", "mid", "hi"], n, p=[0.5, 0.3, 0.2])
    shift = pd.Series(y).map({"lo": 0, "mid": 1, "hi": 2}).to_numpy()
    frame = pd.DataFrame({
        "color": np.where(rng.random(n) < 0.4 + 0.2 * shift, "red", rng.choice(["green", "blue", "grey"], n)),
        "size": rng.choice(["s", "m", "l"], n),
        "weight": rng.normal(60 + 8 * shift, 10, n),
        "height": rng.normal(170, 9, n) + 2 * shift,
        "cls": y,
    })
    frame.loc[rng.random(n) < 0.02, "size"] = None
    cols = [ColumnInfo("color", "categorical", distinct=4), ColumnInfo("size", "categorical", distinct=3,
            missing=int(frame["size"].isna().sum())), ColumnInfo("weight", "numeric"),
            ColumnInfo("height", "numeric"), ColumnInfo("cls", "categorical", role="label")]
    return MethodInput(columns=cols, frame=frame)


def release(data, p0, trr: TrrParams, seed=1):
    e = ErrphParams(p0=p0, allow_zero_probabilities=p0 >= 1)
    first = as_release_input(data, run_errph(data, e, ctx(seed)), "errph", e)
    return as_release_input(first, run_trr(first, trr, ctx(seed + 1)), "trr", trr)


IDENTITY = TrrParams(a_mean=1.0, a_var=0.0, b_mean=0.0, b_var=0.0, set_size=1)


def plain_naive_bayes_proba(train: pd.DataFrame, test: pd.DataFrame, cats, nums, label) -> np.ndarray:
    """An independent reference: scikit-learn's CategoricalNB (α = 1) for the categorical
    attributes (missing as its own category) plus Gaussians with the sample variance."""
    enc = OrdinalEncoder()
    xc = enc.fit_transform(train[cats].fillna("<missing>"))
    cnb = CategoricalNB(alpha=1.0).fit(xc, train[label])
    jll = cnb.predict_joint_log_proba(enc.transform(test[cats].fillna("<missing>")))
    for c in nums:
        for i, cls in enumerate(cnb.classes_):
            x = train.loc[train[label] == cls, c]
            jll[:, i] += norm.logpdf(test[c], x.mean(), x.std(ddof=1))
    jll -= jll.max(axis=1, keepdims=True)
    return np.exp(jll) / np.exp(jll).sum(axis=1, keepdims=True)


def test_ppnb_equals_plain_naive_bayes_when_nothing_is_randomized(toy):
    rel = release(toy, 1.0, IDENTITY)
    assert rel.frame["color"].astype(str).equals(toy.frame["color"].astype(str))
    model = run_ppnb_train(rel, PPNBParams(), ctx()).model
    test = toy.frame.sample(1000, random_state=1)
    expected = plain_naive_bayes_proba(toy.frame, test, ["color", "size"], ["weight", "height"], "cls")
    assert list(model.classes_) == ["hi", "lo", "mid"]
    np.testing.assert_allclose(model.predict_proba(test), expected, atol=1e-6)


def test_numeric_only_ppnb_agrees_with_gaussian_nb(toy):
    nums = ["weight", "height"]
    ours = PPNBClassifier().fit(toy.frame[nums], toy.frame["cls"])
    theirs = GaussianNB().fit(toy.frame[nums], toy.frame["cls"])
    assert (ours.predict(toy.frame[nums]) == theirs.predict(toy.frame[nums])).mean() > 0.995


def test_ppnb_on_a_randomized_release_stays_close_to_plain_naive_bayes(toy):
    test = toy.frame.iloc[:2000]
    raw = run_ppnb_train(release(toy, 1.0, IDENTITY), PPNBParams(), ctx()).model.score(test, test["cls"])
    private = run_ppnb_train(release(toy, 0.6, TrrParams()), PPNBParams(), ctx()).model
    assert private.score(test, test["cls"]) > raw - 0.05
    assert raw > 0.55  # well above the majority class (0.5)


def test_estimator_follows_scikit_learn_conventions(toy):
    rel = release(toy, 0.5, IDENTITY)  # held-out folds of a release are randomized records:
    model = run_ppnb_train(rel, PPNBParams(), ctx()).model  # keep the numeric ones raw to score
    feats = ["color", "size", "weight", "height"]
    scores = cross_val_score(clone(model), rel.frame[feats], rel.frame["cls"], cv=3)
    assert len(scores) == 3 and np.all(scores > 0.55)
    assert clone(model).get_params()["alpha"] == 1.0
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(toy.frame), model.predict_proba(toy.frame))
    proba = model.predict_proba(toy.frame)
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_ppnb_train_model_predicts_on_raw_records(toy):
    result = run_ppnb_train(release(toy, 0.5, TrrParams()), PPNBParams(), ctx())
    assert result.metadata["classes_"] == ["hi", "lo", "mid"]
    assert result.metadata["features"] == ["color", "size", "weight", "height"]
    assert result.metadata["randomized_by"] == {"color": ["errph"], "size": ["errph"],
                                                "weight": ["trr"], "height": ["trr"]}
    records = pd.DataFrame([{"height": 185.0, "weight": 100.0, "size": "m", "color": "red", "other": 1},
                            {"height": 160.0, "weight": 50.0, "size": None, "color": "purple"}])
    assert list(result.model.predict(records)) == ["hi", "lo"]  # unseen value and missing tolerated


def test_variance_fallback_to_the_pooled_estimate_is_flagged():
    channel = NumericChannel(((1.0, 1.0, 0.0, 0.0),))  # Ā = 1, S_A² = 1, no B
    rng = np.random.default_rng(2)
    big = rng.normal(0.0, 30.0, 2000)
    tiny = np.array([5.0, 15.0] * 50)  # x̂̄ = 10, S_y² ≈ 25: (25 − 1·100)/2 < 0
    X = pd.DataFrame({"x": np.concatenate([big, tiny])})
    y = np.array(["big"] * 2000 + ["tiny"] * 100)
    model = PPNBClassifier(randomization={"x": channel}).fit(X, y)
    feature = model.features_[0]
    assert model.variance_fallbacks_ == [{"feature": "x", "class": "tiny", "estimate": pytest.approx(-37.6, abs=0.5),
                                          "used": "pooled"}]
    variances = dict(zip(model.classes_, feature["var"]))
    assert variances["tiny"] == pytest.approx(feature["pooled_variance"], rel=1e-6)
    assert variances["tiny"] > 100.0  # the whole column's estimate, never a spike
    assert variances["big"] == pytest.approx((big.var(ddof=1) - big.mean() ** 2) / 2, rel=1e-6)


def test_ppnb_train_refuses_a_randomized_label_and_names_bad_columns(toy):
    e = ErrphParams(columns=["color", "cls"], p0=0.5)
    rel = as_release_input(toy, run_errph(toy, e, ctx()), "errph", e)
    with pytest.raises(MethodInputError, match="label 'cls' was randomized"):
        run_ppnb_train(rel, PPNBParams(), ctx())
    # known from the release's metadata: refused at submission (it failed as a job)
    with pytest.raises(MethodInputError, match="label 'cls' was randomized"):
        get("ppnb_train").validate_against(PPNBParams(), rel.columns, rel.source)
    with pytest.raises(MethodInputError, match="unknown feature column 'nope'"):
        run_ppnb_train(rel, PPNBParams(features=["nope"]), ctx())


def test_every_feature_ppnb_cannot_invert_is_named_at_once(toy):
    """ppnb_train on Bank's mst release named 'age' only ("leave it out of 'features'"): leaving
    it out named the next column, and so on through all 16 (coilbank acceptance check)."""
    step = SourceRelease(release_id="r", method="mst", params={}, metadata={},
                         guarantees={"protected_columns": ["color", "size", "weight", "height", "cls"]})
    with pytest.raises(MethodInputError, match="columns 'color', 'size', 'weight' and 'height' were changed "
                       "by mst, which PPNB cannot invert: leave them out of 'features'.*errph, warner, trr"):
        get("ppnb_train").validate_against(PPNBParams(label="cls"), toy.columns, step)
    one = SourceRelease(release_id="r", method="mst", params={}, metadata={},
                        guarantees={"protected_columns": ["weight"]})
    with pytest.raises(MethodInputError, match="^column 'weight' was changed by mst, which PPNB cannot "
                       "invert: leave it out of 'features'$"):
        get("ppnb_train").validate_against(PPNBParams(label="cls"), toy.columns, one)


def test_an_all_missing_feature_is_named_not_a_math_domain_error():
    """ppnb_train on a release with an all-missing text column failed with 'math domain error'
    (log of 1/0 categories; the #7 acceptance check)."""
    frame = pd.DataFrame({"c": ["a", "b"] * 50, "x": np.arange(100.0), "empty": [None] * 100,
                          "y": ["p", "q", "q", "p"] * 25})
    columns = [ColumnInfo("c", "categorical", distinct=2), ColumnInfo("x", "numeric"),
               ColumnInfo("empty", "categorical", missing=100),
               ColumnInfo("y", "categorical", role="label", distinct=2)]
    data = MethodInput(columns=columns, frame=frame)
    trr = TrrParams()
    rel = as_release_input(data, run_trr(data, trr, ctx()), "trr", trr)
    with pytest.raises(MethodInputError, match="feature column 'empty' has no values"):
        run_ppnb_train(rel, PPNBParams(label="y"), ctx())
    assert run_ppnb_train(rel, PPNBParams(label="y", features=["c", "x"]), ctx()).metadata["features"] == ["c", "x"]


def test_a_boolean_feature_reads_the_spellings_an_upload_reads():
    """A raw record of the uploaded file's own spelling ('true', 1, 'yes') was unreadable for a
    boolean feature, whose labels are 'True'/'False' (the #7 acceptance check)."""
    rng = np.random.default_rng(3)
    b = rng.random(400) < 0.5
    frame = pd.DataFrame({"b": b, "y": np.where(b ^ (rng.random(400) < 0.1), "p", "q")})
    columns = [ColumnInfo("b", "boolean", distinct=2), ColumnInfo("y", "categorical", role="label", distinct=2)]
    data = MethodInput(columns=columns, frame=frame)
    e = ErrphParams(p0=0.8)
    model = run_ppnb_train(as_release_input(data, run_errph(data, e, ctx()), "errph", e),
                           PPNBParams(label="y"), ctx()).model
    spelled = pd.DataFrame({"b": [True, "true", " YES", 1, "t", False, "false", "No", 0, "f"]})
    assert not model.unreadable(spelled)
    proba = model.predict_proba(spelled)
    assert np.allclose(proba[1:5], proba[0]) and np.allclose(proba[6:], proba[5])
    assert list(model.unreadable(pd.DataFrame({"b": ["maybe"]}))) == ["b"]


# ------------------------------------------------------------------------------------ DTPD
def test_dtpd_count_reconstruction_is_unbiased():
    rng = np.random.default_rng(4)
    n, theta = 5000, 0.7
    bits = (rng.random((n, 3)) < [0.2, 0.5, 0.7]).astype(np.int8)
    bits[:, 2] |= bits[:, 0]  # dependent attributes
    onehot = np.eye(2)[(bits[:, 0] ^ (rng.random(n) < 0.1)).astype(int)]
    flipped = np.array([True, True, False])  # the third attribute is published as is
    path = bits[:, 1] == 1  # node E: A1 = 1
    truth = split_counts(bits, onehot, np.flatnonzero(path), np.flatnonzero(path), np.zeros(3, bool), 1.0)
    estimates = []
    for r in range(400):
        flip = SecureRandom(seed=r).random(n) >= theta
        published = bits ^ (flip[:, None] & flipped[None, :]).astype(np.int8)
        rows_e = np.flatnonzero(published[:, 1] == 1)
        rows_c = np.flatnonzero(published[:, 1] == 0)  # Ē: A1 flipped
        estimates.append(split_counts(published, onehot, rows_e, rows_c, flipped, theta, clip=False))
    estimates = np.array(estimates)
    spread = estimates.std(axis=0, ddof=1) / math.sqrt(len(estimates))
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= 4 * spread + 1e-9)


def test_unrandomized_dtpd_is_id3_and_learns_a_conjunction():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({f: rng.random(4000) < 0.5 for f in "abcd"})
    y = np.where(frame.a & frame.b, "yes", "no")
    model = DTPDClassifier(min_count=1).fit(frame, y)
    assert model.score(frame, y) == 1.0
    assert set(model.tree_feature_[model.tree_feature_ >= 0]) == {0, 1}  # a and b only
    raw = pd.DataFrame({"a": [True, None, "maybe"], "b": [True, True, False], "c": [False] * 3,
                        "d": [None, False, True]})
    assert {k: v.tolist() for k, v in model.unreadable(raw).items()} == {"a": [1, 2], "d": [0]}


@pytest.fixture(scope="module")
def binary_data():
    rng = np.random.default_rng(6)
    n = 20_000
    latent = rng.random(n)
    frame = pd.DataFrame({f"f{i}": rng.random(n) < 0.3 + 0.4 * latent for i in range(6)})
    frame["x"] = latent * 100 + rng.normal(0, 10, n)
    frame["label"] = np.where(latent + rng.normal(0, 0.15, n) > 0.5, "pos", "neg")
    cols = [ColumnInfo(f"f{i}", "boolean") for i in range(6)] + [ColumnInfo("x", "numeric"),
                                                                  ColumnInfo("label", "categorical", role="label")]
    return MethodInput(columns=cols, frame=frame)


def dtpd_release(data, p, seed=1):
    params = WarnerParams(p=p, whole_record=True, cut_points={"x": 50.0})
    return as_release_input(data, run_warner(data, params, ctx(seed)), "warner", params)


def test_dtpd_train_predicts_raw_records_and_collapses_near_one_half(binary_data):
    test = binary_data.frame.iloc[:5000]
    released = dtpd_release(binary_data, 0.9)
    good = run_dtpd_train(released, DTPDParams(), ctx())
    assert good.metadata["theta"] == 0.9 and good.metadata["binarize"]["x"] == {"threshold": 50.0}
    acc_good = good.model.score(test, test["label"])  # raw x is binarized at the published cut
    acc_half = run_dtpd_train(dtpd_release(binary_data, 0.51), DTPDParams(), ctx()).model.score(test, test["label"])
    assert acc_good > 0.8 and acc_half < acc_good - 0.05
    mirrored = run_dtpd_train(dtpd_release(binary_data, 0.1), DTPDParams(), ctx()).model
    assert mirrored.score(test, test["label"]) > 0.8  # θ = 0.1 carries what θ = 0.9 does
    assert np.allclose(good.model.predict_proba(test).sum(axis=1), 1.0)
    feats = good.metadata["features"]
    assert cross_val_score(clone(good.model), released.frame[feats], released.frame["label"], cv=2).min() > 0.6


def test_dtpd_train_needs_a_whole_record_release(binary_data):
    params = WarnerParams(p=0.8, cut_points={"x": 50.0})
    per_cell = as_release_input(binary_data, run_warner(binary_data, params, ctx()), "warner", params)
    with pytest.raises(MethodInputError, match="whole_record=true"):
        run_dtpd_train(per_cell, DTPDParams(), ctx())


def test_ppnb_on_a_binarized_warner_release_predicts_raw_records(binary_data):
    params = WarnerParams(p=0.8, cut_points={"x": 50.0})
    rel = as_release_input(binary_data, run_warner(binary_data, params, ctx()), "warner", params)
    result = run_ppnb_train(rel, PPNBParams(), ctx())
    test = binary_data.frame.iloc[:5000]
    raw_binary = test.assign(x=test["x"] > 50.0)
    plain = PPNBClassifier().fit(raw_binary.drop(columns="label"), test["label"])
    assert result.model.score(test, test["label"]) > plain.score(raw_binary.drop(columns="label"), test["label"]) - 0.03


# ------------------------------------------------------------------------- Adult targets
@pytest.fixture(scope="module")
def adult():
    folder = datasets_dir() / "adult"
    read = lambda f: pd.read_csv(folder / f, na_values="?", skipinitialspace=True)  # noqa: E731
    train, test = read("adult_train.csv"), read("adult_test.csv")
    numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    cols = [ColumnInfo(c, "numeric") if c in numeric else
            ColumnInfo(c, "categorical", role="label") if c == "income" else
            ColumnInfo(c, "categorical", distinct=int(train[c].nunique()), missing=int(train[c].isna().sum()))
            for c in train.columns]
    return MethodInput(columns=cols, frame=train), test


def test_adult_targets_tvd_and_accuracy(adult):
    data, test = adult
    rel = release(data, 0.5, TrrParams(a_mean=1.0, a_var=1.0, b_mean=0.0, b_var=1.0))
    steps = run_reconstruct(rel, ReconstructParams(), ctx()).data["steps"]
    for name, col in steps[0]["columns"].items():
        if len(col["domain"]) > 20:
            continue
        labels = [None if v == "<missing>" else v for v in col["domain"]]
        truth = data.frame[name].value_counts(normalize=True, dropna=False)
        true_pi = np.array([truth.get(np.nan if v is None else v, 0.0) if v is not None
                            else data.frame[name].isna().mean() for v in labels])
        tvd = 0.5 * np.abs(np.asarray(col["consistent"]) - true_pi).sum()
        assert tvd <= 0.03, (name, tvd)
    raw = run_ppnb_train(release(data, 1.0, IDENTITY), PPNBParams(), ctx()).model.score(test, test["income"])
    ppnb = run_ppnb_train(rel, PPNBParams(), ctx()).model.score(test, test["income"])
    assert raw == pytest.approx(0.824, abs=0.01)
    assert abs(ppnb - raw) <= 0.01


def test_a_label_among_the_default_features_says_where_they_came_from():
    from app.privacy.naive_bayes import TrainParams, label_and_features

    columns = [ColumnInfo("sex", "categorical"), ColumnInfo("edu", "categorical")]
    with pytest.raises(MethodInputError, match="default to the release's randomized columns"):
        label_and_features(TrainParams(label="sex"), columns, default_features=["sex", "edu"])
    assert label_and_features(TrainParams(label="sex", features=["edu"]), columns,
                               default_features=["sex", "edu"]) == ("sex", ["edu"])
    with pytest.raises(MethodInputError) as named:  # features named by the caller: no hint
        label_and_features(TrainParams(label="sex", features=["sex"]), columns)
    assert "default" not in str(named.value)


def test_a_single_class_label_is_refused():
    """ppnb_train used to build a model whose one class is 'only'."""
    frame = pd.DataFrame({"c": ["a", "b"] * 50, "y": ["only"] * 100})
    columns = [ColumnInfo("c", "categorical", distinct=2), ColumnInfo("y", "categorical", distinct=1)]
    data = MethodInput(columns=columns, frame=frame)
    e = ErrphParams(p0=0.5, columns=["c"])
    release = as_release_input(data, run_errph(data, e, ctx()), "errph", e)
    with pytest.raises(MethodInputError, match="the label 'y' has a single class"):
        get("ppnb_train").validate_against(PPNBParams(label="y"), release.columns, release.source)
    unknown = [ColumnInfo(c.name, c.type) for c in release.columns]  # no profile: the run refuses
    with pytest.raises(MethodInputError, match="the label 'y' has fewer than 2 classes"):
        run_ppnb_train(MethodInput(columns=unknown, frame=release.frame, source=release.source),
                       PPNBParams(label="y"), ctx())


def test_a_label_of_thousands_of_classes_is_refused_and_unlabelled_rows_are_counted_apart():
    """A numeric column named as the label built a model of 21,648 classes (fnlwgt), and rows
    without a label were left out of the fit but counted in train_rows (#3 acceptance check)."""
    g = np.random.default_rng(1)
    frame = pd.DataFrame({"c": g.choice(["a", "b"], 600), "y": g.choice(["p", "q", None], 600),
                          "w": np.arange(600.0)})
    columns = [ColumnInfo("c", "categorical", distinct=2), ColumnInfo("y", "categorical", distinct=2),
               ColumnInfo("w", "numeric", distinct=600)]
    data = MethodInput(columns=columns, frame=frame)
    e = ErrphParams(p0=0.5, columns=["c"])
    release = as_release_input(data, run_errph(data, e, ctx()), "errph", e)
    with pytest.raises(MethodInputError, match="the label 'w' has 600 distinct values: a class column holds at most 256"):
        get("ppnb_train").validate_against(PPNBParams(label="w", features=["c"]), release.columns, release.source)
    unknown = [ColumnInfo(c.name, c.type) for c in release.columns]  # no profile: the run refuses
    with pytest.raises(MethodInputError, match="has 600 distinct values"):
        run_ppnb_train(MethodInput(columns=unknown, frame=release.frame, source=release.source),
                       PPNBParams(label="w", features=["c"]), ctx())
    model = run_ppnb_train(release, PPNBParams(label="y", features=["c"]), ctx())
    unlabelled = int(frame["y"].isna().sum())
    assert model.metrics == {"train_rows": 600 - unlabelled, "rows_without_label": unlabelled} and unlabelled > 150


@pytest.mark.parametrize("make", [
    lambda: PPNBClassifier(var_smoothing=-1.0), lambda: PPNBClassifier(alpha=float("nan")),
    lambda: DTPDClassifier(max_depth=0), lambda: DTPDClassifier(min_count=-0.5),
    lambda: DTPDClassifier(min_count=float("nan"))])
def test_fit_refuses_hyperparameters_out_of_range(make):
    """scikit-learn's rule: __init__ stores, fit validates (a negative var_smoothing gave
    negative variances and NaN probabilities; max_depth 0 a tree without a split, unsaid)."""
    frame = pd.DataFrame({"a": ["x", "y"] * 10})
    with pytest.raises(ValueError, match="must be ≥"):
        make().fit(frame, np.array(["p", "q", "q", "p"] * 5))


@pytest.mark.parametrize("make", [PPNBClassifier, DTPDClassifier])
@pytest.mark.parametrize("method", ["predict", "predict_proba", "score"])
def test_an_unfitted_estimator_raises_not_fitted_error(make, method):
    """scikit-learn's contract (check_estimators_unfitted): every prediction method of an
    unfitted estimator raises NotFittedError — predict and score raised AttributeError
    ('no attribute classes_'), DTPD's predict_proba too (spec 01 acceptance check)."""
    frame = pd.DataFrame({"a": ["x", "y"] * 3})
    args = (frame, ["p", "q"] * 3) if method == "score" else (frame,)
    with pytest.raises(NotFittedError):
        getattr(make(), method)(*args)
