"""The ``reconstruct`` analysis: estimates of the original data's statistics from a release.

One method for every release family: it walks the release's chain and asks each step's
reconstructor (registered by the family module with ``register_reconstructor``) for the
statistics of the columns or items that step protected.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.registry import (
    Kind, MethodInputError, MethodSpec, Params, Source, DataShape, reconstructor, register,
)
from app.privacy.results import ReportResult


class ReconstructParams(Params):
    columns: list[str] | None = Field(
        None, description="tabular releases: the columns to reconstruct (default: every protected one)")
    itemsets: list[list[str]] | None = Field(
        None, description="transaction releases: the itemsets whose supports to estimate")
    max_len: int | None = Field(
        None, ge=1, le=6, description="transaction releases: estimate every itemset up to this size")
    estimator: Literal["pooled", "stratified"] = Field(
        "pooled", description="transaction releases with groups: the paper's pooled estimator or "
        "the per-group stratified one")


def run_reconstruct(data: MethodInput, params: ReconstructParams, ctx: RunContext) -> ReportResult:
    if data.source is None:
        raise MethodInputError("reconstruct runs on a release, not on a dataset")
    _check_shape(params, data)
    sections: list[dict[str, Any]] = []
    steps = data.source.steps()
    for i, step in enumerate(steps):
        ctx.progress(i / len(steps), f"reconstructing {step['method']}")
        fn = reconstructor(step["method"])
        if fn is None:
            continue  # a step with nothing to invert (e.g. generalization)
        sections.append({"method": step["method"], "release_id": step.get("release_id"),
                         **fn(data, step, params, ctx)})
    if not sections:
        raise MethodInputError(
            f"nothing to reconstruct: no step of this release ({', '.join(s['method'] for s in steps)}) "
            "has a reconstruction")
    ctx.progress(1.0, "done")
    return ReportResult(kind="reconstruction", data={"steps": sections})


def _check_shape(params: ReconstructParams, data: MethodInput) -> None:
    """Parameters of the other kind of release used to be ignored without a word."""
    if data.transactions is None:
        given = [name for name, value in (("itemsets", params.itemsets), ("max_len", params.max_len),
                                          ("estimator", params.estimator != "pooled" or None)) if value]
        if given:
            raise MethodInputError(f"{given[0]!r} applies to transaction releases (mask, png); "
                                   "this release is a table: use 'columns'")
    elif params.columns is not None:
        raise MethodInputError("'columns' applies to table releases; this release is a transaction "
                               "file: use 'itemsets' or 'max_len'")


def _check(params: ReconstructParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    known = {c.name for c in columns}
    unknown = [c for c in params.columns or [] if c not in known]
    if unknown:
        raise MethodInputError(f"unknown column {unknown[0]!r}")
    if source is not None and params.columns:
        steps = [s for s in source.steps() if reconstructor(s["method"]) is not None]
        protected = {c for s in steps for c in (s.get("guarantees") or {}).get("protected_columns") or []}
        untouched = [c for c in params.columns if c not in protected]
        if untouched:  # it used to give a report without a word about them
            methods = ", ".join(s["method"] for s in steps) or "none"
            raise MethodInputError(f"column {untouched[0]!r} was not randomized or transformed by any "
                                   f"step of this release that can be inverted ({methods}): "
                                   "nothing to reconstruct")


register(MethodSpec(
    name="reconstruct",
    family="reconstruction",
    kind=Kind.analysis,
    summary="Estimate the original distributions, moments or itemset supports from a release, "
            "with standard errors.",
    params=ReconstructParams,
    guarantee="post-processing of the release: no further privacy cost",
    paper="seeds 000 (ERRPH/TRR reconstruction) and 001 (MASK/PN/g support reconstruction)",
    run=run_reconstruct,
    sources=frozenset({Source.release}),
    shapes=frozenset({DataShape.table, DataShape.transactions}),
    check=_check,
    produces_randomness=False,
    docs="docs/methods/reconstruct.md",
))
