"""Privacy-preserving naive Bayes trained on a randomized release (spec 01 §4).

``PPNBClassifier``: naive Bayes whose class-conditional distributions are reconstructed from
the release with the published randomization parameters (ERRPH/Warner: eq. 4, projected to the
simplex and smoothed; TRR: eq. 5, Gaussian with the reconstructed moments). It predicts on raw
records and follows scikit-learn's conventions (``__init__`` stores params, fitted attributes
end in ``_``), so ``cross_val_score``, ``clone`` and the metrics work on it unchanged.
``ppnb_train`` fits it on a release. The training helpers here are shared with dtpd.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, field_validator
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.warner import binarize
from app.privacy.registry import (
    MAX_LABEL_CLASSES, MethodKind, MethodInputError, MethodSpec, Params, MethodSource, register,
    require_declared_classes, too_many_classes,
)
from app.privacy.results import ModelResult
from app.privacy.rr_channels import (
    CategoricalChannel, NumericChannel, Opaque, chain_channels, label_codes, label_of,
    project_to_simplex, unique_names,
)
from app.privacy.trr_mechanism import sample_moments

PAPER = ("Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
         "Computers 30(8), 2007 (seed 000), §5")


def as_frame(X: Any) -> pd.DataFrame:
    if isinstance(X, pd.DataFrame):
        return X
    arr = np.asarray(X)
    return pd.DataFrame(arr, columns=[f"x{i}" for i in range(arr.shape[1])])


def raw_labels(series: pd.Series, channel: CategoricalChannel, labels) -> np.ndarray:
    """Codes of raw values in ``labels``, binarizing first when the release binarized."""
    if channel.binarize is not None and not pd.api.types.is_bool_dtype(series.dtype):
        # a boolean column is taken as already binarized (records of the release itself)
        cut = channel.binarize.get("in", channel.binarize.get("threshold"))
        series = binarize(series, cut)
    return label_codes(series, labels)


# ------------------------------------------------------------------------------------ PPNB
class PPNBClassifier(ClassifierMixin, BaseEstimator):
    """Naive Bayes on a randomized release, predicting on raw records.

    Parameters
    ----------
    randomization : dict column → CategoricalChannel | NumericChannel, optional
        What the release did to each column (``release_randomization`` reads it from a
        release's chain). A column not named is taken as released unchanged: categorical unless
        its dtype is numeric.
    alpha : float
        Additive smoothing of the categorical likelihoods: (s_i·π̂ + α) / (s_i + α·k).
    var_smoothing : float
        Added to every variance, times the largest reconstructed variance (as GaussianNB).
    """

    def __init__(self, randomization: dict[str, Any] | None = None, alpha: float = 1.0,
                 var_smoothing: float = 1e-9):
        self.randomization = randomization
        self.alpha = alpha
        self.var_smoothing = var_smoothing

    # -- fitting ------------------------------------------------------------------------
    def fit(self, X, y):
        X = as_frame(X)
        y = np.asarray(y)
        if len(X) != len(y) or len(X) == 0:
            raise ValueError("X and y must be non-empty and of the same length")
        if not self.alpha >= 0:  # NaN too
            raise ValueError("alpha must be ≥ 0")
        if not self.var_smoothing >= 0:
            raise ValueError("var_smoothing must be ≥ 0")
        keep = pd.notna(y)
        X, y = X.loc[keep], y[keep]
        self.classes_, y_idx = np.unique(y.astype(str) if y.dtype == object else y, return_inverse=True)
        n_classes = len(self.classes_)
        self.class_count_ = np.bincount(y_idx, minlength=n_classes).astype(float)
        self.class_log_prior_ = np.log(self.class_count_ / self.class_count_.sum())
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        randomization = self.randomization or {}
        self.features_: list[dict[str, Any]] = []
        self.variance_fallbacks_: list[dict[str, Any]] = []
        for name in X.columns:
            channel = randomization.get(name)
            if isinstance(channel, Opaque):
                raise ValueError(f"column {name!r} was changed by {channel.method}, which PPNB cannot invert")
            series = X[name]
            if channel is None:
                numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
                channel = NumericChannel() if numeric else CategoricalChannel.identity(
                    sorted({label_of(v) for v in pd.unique(series.dropna())}))
            if isinstance(channel, CategoricalChannel):
                self.features_.append(self._fit_categorical(name, series, y_idx, channel))
            else:
                self.features_.append(self._fit_numeric(name, series, y_idx, channel))
        numeric = [f for f in self.features_ if f["kind"] == "numeric"]
        if numeric:
            floor = self.var_smoothing * max(max(f["pooled_variance"], 0.0) for f in numeric)
            for f in numeric:
                f["var"] = f["var"] + floor
        return self

    def _fit_categorical(self, name, series, y_idx, channel: CategoricalChannel) -> dict[str, Any]:
        """P(a_j | C_i) = (λ_{j|i} - offset_j)/scale (eq. 4), projected to the simplex and
        smoothed; λ counted over the published labels of the class's non-missing cells."""
        codes = label_codes(series, channel.labels)
        if (codes == -2).any():
            raise ValueError(f"column {name!r} holds values outside its published domain")
        ok = codes >= 0
        n_labels, n_classes = len(channel.labels), len(self.classes_)
        counts = np.bincount(y_idx[ok] * n_labels + codes[ok],
                             minlength=n_classes * n_labels).reshape(n_classes, n_labels).astype(float)
        pick = [channel.labels.index(lab) for lab in channel.domain]
        k = len(pick)
        if k == 0:  # an all-missing column: log(1/k) failed with "math domain error"
            raise ValueError(f"feature column {name!r} has no values (every cell is missing): "
                             "leave it out of 'features'")
        log_prob = np.empty((n_classes, k))
        for i in range(n_classes):
            s_i = counts[i].sum()
            if s_i == 0:
                log_prob[i] = -math.log(k)
                continue
            pi = (counts[i] / s_i - np.asarray(channel.offset)) / channel.scale
            pi = project_to_simplex(pi[pick])
            smoothed = (s_i * pi + self.alpha) / (s_i + self.alpha * k)
            with np.errstate(divide="ignore"):
                log_prob[i] = np.log(smoothed)
        return {"name": name, "kind": "categorical", "channel": channel, "log_prob": log_prob}

    def _fit_numeric(self, name, series, y_idx, channel: NumericChannel) -> dict[str, Any]:
        """Per class x̂̄ and Ŝ_x² (eq. 5 with §3's moments). A class whose variance estimate is
        ≤ 0 takes the estimate of the whole column instead (a near-zero variance would turn the
        likelihood into a spike); if that is ≤ 0 too the feature is left out."""
        y = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        n_all, mean_all, var_all = sample_moments(y)
        pooled = channel.invert(mean_all, var_all)[1] if n_all > 1 else -1.0
        means = np.zeros(len(self.classes_))
        variances = np.zeros(len(self.classes_))
        for i in range(len(self.classes_)):
            n_i, mean_i, var_i = sample_moments(y[y_idx == i])
            if n_i == 0:
                means[i], var_est = channel.invert(mean_all, var_all)[0], -1.0
            else:
                means[i], var_est = channel.invert(mean_i, var_i)
            if n_i < 2 or not var_est > 0:
                self.variance_fallbacks_.append({"feature": name, "class": str(self.classes_[i]),
                                                 "estimate": float(var_est) if n_i >= 2 else None,
                                                 "used": "pooled" if pooled > 0 else "feature left out"})
                var_est = pooled
            variances[i] = var_est
        usable = bool(np.all(variances > 0))
        return {"name": name, "kind": "numeric", "channel": channel, "mean": means,
                "var": np.where(variances > 0, variances, 1.0), "pooled_variance": pooled,
                "used": usable}

    # -- prediction ---------------------------------------------------------------------
    def _joint_log_likelihood(self, X) -> np.ndarray:
        check_is_fitted(self, "features_")
        X = as_frame(X)
        missing = [f["name"] for f in self.features_ if f["name"] not in X.columns]
        if missing:
            raise ValueError(f"records lack the feature(s): {', '.join(map(str, missing[:5]))}")
        jll = np.tile(self.class_log_prior_, (len(X), 1))
        for f in self.features_:
            series = X[f["name"]]
            if f["kind"] == "categorical":
                codes = raw_labels(series, f["channel"], f["channel"].domain)
                known = codes >= 0  # unseen or missing raw values leave the feature out
                jll[known] += f["log_prob"][:, codes[known]].T
            elif f["used"]:
                x = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                known = ~np.isnan(x)
                diff = x[known, None] - f["mean"][None, :]
                with np.errstate(over="ignore"):  # |x| ≳ 1e154: -inf in every class (unscoreable)
                    jll[known] += -0.5 * (np.log(2 * np.pi * f["var"])[None, :] + diff * diff / f["var"][None, :])
        return jll

    def unreadable(self, X) -> dict[str, np.ndarray]:
        """Per feature, the records whose value the model could not read and left out of their
        score: a category outside the published domain (or missing, when missing was not a
        category), a missing numeric value."""
        check_is_fitted(self, "features_")
        X = as_frame(X)
        out = {}
        for f in self.features_:
            series = X[f["name"]]
            if f["kind"] == "categorical":
                bad = raw_labels(series, f["channel"], f["channel"].domain) < 0
            else:
                bad = np.isnan(pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan))
            if bad.any():
                out[f["name"]] = np.flatnonzero(bad)
        return out

    def predict_log_proba(self, X) -> np.ndarray:
        """NaN in the rows no class can score (a value so far out that its density is 0 in
        float64 for every class); the service refuses such records by name."""
        jll = self._joint_log_likelihood(X)
        top = jll.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):  # -inf - -inf in the unscoreable rows: NaN, on purpose
            return jll - (top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True)))

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        best = np.argmax(self._joint_log_likelihood(X), axis=1)  # checks the fit first
        return self.classes_[best]


# ---------------------------------------------------------------------- analysis methods
def release_randomization(source: SourceRelease | None) -> dict[str, Any]:
    """Per column, the composed channel of every step of the release's chain."""
    return {} if source is None else chain_channels(source.steps())


class TrainParams(Params):
    label: str | None = Field(None, description="the class column; default: the column whose role is "
                              "'label'")
    features: list[str] | None = Field(
        None, description="columns to learn from; default: every other column except identifiers")

    _distinct = field_validator("features")(classmethod(lambda cls, v: unique_names(v)))


class PPNBParams(TrainParams):
    alpha: float = Field(1.0, ge=0.0, le=1e6, description="additive smoothing of categorical likelihoods")


def label_and_features(params: TrainParams, columns: list[ColumnInfo],
                        default_features: list[str] | None = None) -> tuple[str, list[str]]:
    names = [c.name for c in columns]
    label = params.label
    if label is None:
        labels = [c.name for c in columns if c.role == "label"]
        if len(labels) != 1:
            raise MethodInputError("name the class column in 'label' (the schema declares "
                                   f"{len(labels)} label column(s))")
        label = labels[0]
    if label not in names:
        raise MethodInputError(f"unknown label column {label!r}")
    require_declared_classes(next(c for c in columns if c.name == label), "the label",
                             "a classifier needs two")
    if params.features is not None:
        features = list(params.features)
    elif default_features is not None:
        features = list(default_features)
    else:
        features = [c.name for c in columns if c.name != label and c.role != "identifier"]
    unknown = [f for f in features if f not in names]
    if unknown:
        raise MethodInputError(f"unknown feature column {unknown[0]!r}")
    if label in features:
        where = ("" if params.features is not None or default_features is None else
                 " (the features default to the release's randomized columns, and it is one: "
                 "name the features in 'features')")
        raise MethodInputError(f"the label {label!r} cannot also be a feature{where}")
    if not features:
        raise MethodInputError("no feature columns")
    return label, features


def require_two_classes(frame: pd.DataFrame, label: str) -> None:
    """The data-time twin of the schema check in label_and_features (a release's profile may
    be unknown): a model of one class predicts nothing, one of thousands is of a number."""
    classes = frame[label].nunique(dropna=True)
    if classes < 2:
        raise MethodInputError(f"the label {label!r} has fewer than 2 classes: a classifier needs two")
    if classes > MAX_LABEL_CLASSES:
        raise MethodInputError(too_many_classes("the label", label, classes))


def training_rows(frame: pd.DataFrame, label: str) -> dict[str, int]:
    """A model's row counts: rows without a label are left out of the fit."""
    unlabelled = int(frame[label].isna().sum())
    return {"train_rows": len(frame) - unlabelled, "rows_without_label": unlabelled}


def model_metadata(model, label: str, features: list[str], source: SourceRelease | None) -> dict[str, Any]:
    return {"label": label, "classes_": [str(c) for c in model.classes_], "features": features,
            "trained_on_release": None if source is None else source.release_id,
            "predicts_on": "raw records: a table with the original feature columns"}


def run_ppnb_train(data: MethodInput, params: PPNBParams, ctx: RunContext) -> ModelResult:
    if data.frame is None:
        raise MethodInputError("ppnb_train needs a table release")
    label, features = label_and_features(params, data.columns)
    require_two_classes(data.frame, label)
    randomization = _invertible_chain(label, features, data.source)
    ctx.progress(0.1, "fitting")
    try:
        model = PPNBClassifier(randomization={f: randomization[f] for f in features if f in randomization},
                               alpha=params.alpha).fit(data.frame[features], data.frame[label])
    except ValueError as exc:
        raise MethodInputError(str(exc)) from None
    meta = model_metadata(model, label, features, data.source)
    meta.update(
        kind="ppnb",
        feature_kinds={f["name"]: f["kind"] for f in model.features_},
        randomized_by={f: list(randomization[f].steps) for f in features if f in randomization},
        variance_fallbacks=model.variance_fallbacks_,
        class_counts=model.class_count_.tolist(),
    )
    ctx.progress(1.0, "done")
    return ModelResult(model=model, metadata=meta, metrics=training_rows(data.frame, label))


def _invertible_chain(label: str, features: list[str], source: SourceRelease | None) -> dict[str, Any]:
    """The chain's channel per column, refused when PPNB cannot invert a feature's or the label
    was randomized (both known from the release's metadata alone: checked at submission too)."""
    randomization = release_randomization(source)
    opaque = [f for f in features if isinstance(randomization.get(f), Opaque)]
    if len(opaque) == 1:
        raise MethodInputError(f"column {opaque[0]!r} was changed by {randomization[opaque[0]].method}, "
                               "which PPNB cannot invert: leave it out of 'features'")
    if opaque:  # every one named at once: one at a time, a user walked through all 16 of an mst release
        names = ", ".join(map(repr, opaque[:-1])) + f" and {opaque[-1]!r}"
        methods = ", ".join(dict.fromkeys(randomization[f].method for f in opaque))
        raise MethodInputError(f"columns {names} were changed by {methods}, which PPNB cannot invert: "
                               "leave them out of 'features' (PPNB inverts the randomized-response "
                               "steps errph, warner, trr)")
    if label in randomization:
        raise MethodInputError(f"the label {label!r} was randomized; PPNB needs the class untouched")
    return randomization


def _check_train(params: TrainParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    # a randomized label failed the job after it was accepted (docs acceptance check)
    _invertible_chain(*label_and_features(params, columns, None), source)


register(MethodSpec(
    name="ppnb_train",
    family="randomized_response",
    kind=MethodKind.analysis,
    summary="Train privacy-preserving naive Bayes on a randomized release (ERRPH/Warner categorical, "
            "TRR numeric, class untouched); the model predicts on raw records.",
    params=PPNBParams,
    guarantee="post-processing of the release: no further privacy cost",
    paper=PAPER,
    run=run_ppnb_train,
    sources=frozenset({MethodSource.release}),
    check=_check_train,
    produces_randomness=False,
    docs="docs/methods/ppnb_train.md",
))
