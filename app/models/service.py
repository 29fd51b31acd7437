"""Models trained on releases (PPNB, DTPD): stored pickled by the worker (only our own code
writes these blobs), loaded once per process for prediction on raw records."""

from __future__ import annotations

import pickle
import threading
import uuid
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.orm import Session

from app import pagination
from app.audit.service import record
from app.auth.schemas import Principal
from app.blobs import repository as blobs
from app.errors import NotFound, Unprocessable
from app.jsonsafe import jsonable
from app.models import repository


def store(session: Session, *, job, encoded: dict[str, Any]) -> uuid.UUID:
    model_id = uuid.uuid4()
    repository.insert_model(session, id=model_id, tenant=job["tenant"], job_id=job["id"],
                            method=job["method"], release_id=job["release_id"],
                            metadata=encoded["metadata"], metrics=encoded["metrics"],
                            blob_id=blobs.write(session, encoded["model"]))
    record(session, tenant=job["tenant"], actor="worker", action="model.created",
           subject_type="model", subject_id=model_id, dataset_id=job["dataset_id"],
           release_id=job["release_id"], details={"job_id": str(job["id"]), "method": job["method"]})
    return model_id


def get_row(session: Session, principal: Principal, model_id: uuid.UUID):
    row = repository.get(session, model_id, principal.tenant)
    if row is None:
        raise NotFound(f"model {model_id} not found")
    return row


def to_response(row) -> dict[str, Any]:
    return {"id": row["id"], "job_id": row["job_id"], "method": row["method"],
            "release_id": row["release_id"], "metadata": row["metadata"], "metrics": row["metrics"],
            "created_at": row["created_at"],
            "links": {"self": f"/v1/models/{row['id']}", "predict": f"/v1/models/{row['id']}/predict"}}


def list_page(session: Session, principal: Principal, *, release_id: uuid.UUID | None,
              method: str | None, cursor: str | None, limit: int) -> dict[str, Any]:
    rows = repository.list_page(session, principal.tenant, release_id=release_id, method=method,
                                after=pagination.decode(cursor), limit=limit)
    return pagination.page(rows, limit, to_response)


def _numeric_features(metadata: dict[str, Any]) -> list[str]:
    """The features the model reads as numbers (PPNB's Gaussian features, DTPD's cut points)."""
    kinds = metadata.get("feature_kinds") or {}
    cuts = metadata.get("binarize") or {}
    return ([f for f, kind in kinds.items() if kind == "numeric"]
            + [f for f, cut in cuts.items() if isinstance(cut, dict) and "threshold" in cut])


def _first_of_type(given: pd.Series, types: tuple[type, ...]) -> int | None:
    """Position of the first value of one of these Python types, if any (object columns only:
    a typed column holds none of them)."""
    if given.dtype != object and not (bool in types and given.dtype == bool):
        return None
    hits = np.flatnonzero(given.map(lambda v: isinstance(v, types)).to_numpy(dtype=bool))
    return int(hits[0]) if hits.size else None


def _check_nested_values(frame: pd.DataFrame) -> None:
    """An object or array as a feature's value reached the model as a TypeError, which named
    neither the record nor the feature."""
    for feature in frame.columns:
        row = _first_of_type(frame[feature], (dict, list))
        if row is not None:
            raise Unprocessable(f"record {row}: the feature {feature!r} must be a single value "
                                "(a string, a number or null), not an object or array")


def _check_numeric_features(frame: pd.DataFrame, metadata: dict[str, Any]) -> None:
    """A numeric feature given as text the model cannot read was silently scored as missing,
    and an infinite one gave no probabilities (a 500): name the record and the feature. A
    missing value is sent as null. A boolean is not a number (pandas reads true as 1)."""
    for feature in _numeric_features(metadata):
        if feature not in frame.columns:
            continue
        given = frame[feature]
        boolean = _first_of_type(given, (bool, np.bool_))
        try:
            numbers = pd.to_numeric(given, errors="coerce").astype(np.float64)
        except (TypeError, ValueError):
            numbers = pd.Series(np.nan, index=given.index)
        bad = np.flatnonzero(given.notna().to_numpy() & ~np.isfinite(numbers.to_numpy()))
        if boolean is not None:
            bad = np.sort(np.r_[bad, boolean])
        if bad.size:
            raise Unprocessable(f"record {int(bad[0])}: the feature {feature!r} must be a finite "
                                "number (or null when missing)")


# Blobs never change under their id: a model is read and unpickled once per process (the
# cache was keyed by the payload too, so every predict read the blob from the database and
# hashed it to find what it had already loaded).
_MODELS: OrderedDict[uuid.UUID, Any] = OrderedDict()
_MODELS_KEPT = 32
_models_lock = threading.Lock()


def _load(session: Session, blob_id: uuid.UUID):
    with _models_lock:
        if blob_id in _MODELS:
            _MODELS.move_to_end(blob_id)
            return _MODELS[blob_id]
    model = pickle.loads(blobs.read(session, blob_id))
    with _models_lock:
        _MODELS[blob_id] = model
        while len(_MODELS) > _MODELS_KEPT:
            _MODELS.popitem(last=False)
    return model


def predict(session: Session, principal: Principal, model_id: uuid.UUID,
            records: list[dict[str, Any]]) -> dict[str, Any]:
    row = get_row(session, principal, model_id)
    model = _load(session, row["blob_id"])
    needed = list(row["metadata"].get("features") or [])
    given = {key for r in records for key in r}
    missing = [c for c in needed if c not in given]
    if missing:
        raise Unprocessable(f"records lack the feature column {missing[0]!r}")
    # The model's features only: a frame of every key given was records × distinct keys, so
    # 30,000 records of one distinct key each (1 MB) asked the API for ~7 GB and minutes.
    frame = pd.DataFrame.from_records(records, columns=needed or None)
    _check_numeric_features(frame, row["metadata"])
    _check_nested_values(frame)
    try:
        labels = model.predict(frame)
        proba = model.predict_proba(frame) if hasattr(model, "predict_proba") else None
    except (ValueError, KeyError, TypeError) as exc:
        raise Unprocessable(f"the records do not fit the model: {type(exc).__name__}") from None
    if proba is not None:
        unscored = np.flatnonzero(~np.isfinite(np.asarray(proba, dtype=np.float64)).all(axis=1))
        if unscored.size:  # e.g. a Gaussian feature's density under- or overflows
            raise Unprocessable(f"record {int(unscored[0])} cannot be scored: a numeric value is too "
                                "far outside the range the model was trained on")
    classes = [str(c) for c in getattr(model, "classes_", [])]
    unreadable = model.unreadable(frame) if hasattr(model, "unreadable") else {}
    out = {"predictions": jsonable(np.asarray(labels).tolist()), "classes": classes,
           "probabilities": None if proba is None else jsonable(np.asarray(proba).tolist()),
           "unreadable": {name: rows.tolist() for name, rows in unreadable.items()}}
    record(session, tenant=principal.tenant, actor=principal.actor, action="model.predicted",
           subject_type="model", subject_id=model_id, release_id=row["release_id"],
           details={"records": len(records)})
    return out
