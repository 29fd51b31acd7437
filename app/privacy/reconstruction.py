"""The ``reconstruct`` analysis: estimates of the original data's statistics from a release.

One method for every release family: it walks the release's chain and asks each step's
reconstructor (registered by the family module with ``register_reconstructor``) for the
statistics of the columns or items that step protected.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from matplotlib.figure import Figure
from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, columns_changed_by, named_with_steps
from app.privacy.itemsets.supports import check_itemsets, randomized_items
from app.privacy.plotting import legend_below
from app.privacy.registry import (
    TABLES_ONLY, TRANSACTIONS_ONLY, DataShape, MethodKind, MethodInputError, MethodSpec, Params, MethodSource, reconstructor,
    register,
)
from app.privacy.results import ReportResult, render_figure


REPORT_KIND = "reconstruction"  # what its reports have always said (stored reports keep it)


class ReconstructParams(Params):
    columns: list[str] | None = Field(
        None, description="tabular releases: the columns to reconstruct (default: every protected one)",
        json_schema_extra=TABLES_ONLY)
    itemsets: list[list[str]] | None = Field(
        None, description="transaction releases: the itemsets whose supports to estimate",
        json_schema_extra=TRANSACTIONS_ONLY)
    max_len: int | None = Field(
        None, ge=1, le=6, description="transaction releases: estimate every itemset up to this size",
        json_schema_extra=TRANSACTIONS_ONLY)
    estimator: Literal["pooled", "stratified"] = Field(
        "pooled", description="transaction releases with groups: the paper's pooled estimator or "
        "the per-group stratified one", json_schema_extra=TRANSACTIONS_ONLY)
    plots: bool = Field(True, description="draw the published-vs-reconstructed distributions of "
                        "categorical columns (false: the tables only, ~0.2 s less per column)")


def run_reconstruct(data: MethodInput, params: ReconstructParams, ctx: RunContext) -> ReportResult:
    if data.source is None:
        raise MethodInputError("reconstruct runs on a release, not on a dataset")
    _check_shape(params, data)
    sections: list[dict[str, Any]] = []
    step_numbers: list[int] = []  # each section's place in the chain, 1 = the first step
    steps = data.source.steps()
    for i, step in enumerate(steps):
        ctx.progress(i / len(steps), f"reconstructing {step['method']}")
        fn = reconstructor(step["method"])
        if fn is None:
            continue  # a step with nothing to invert (e.g. generalization)
        if data.transactions is not None and not randomized_items(step.get("metadata")):
            # a table step before mask/png encoded its columns as items (errph → mask): its
            # columns are items now; the mask section's notes name them
            continue
        section = {"method": step["method"], "release_id": step.get("release_id"), **fn(data, step, params, ctx)}
        if (note := _not_undone_note(steps[:i], step, section.get("columns") or {})) is not None:
            section["notes"] = [*section.get("notes", []), note]
        sections.append(section)
        step_numbers.append(i + 1)
    if not sections:
        raise _nothing_to_reconstruct(steps)
    ctx.progress(1.0, "done")
    plot = _distributions_plot(sections, step_numbers) if params.plots else None
    return ReportResult(kind=REPORT_KIND, data={"steps": sections},
                        plots={"distributions": plot} if plot is not None else {})


def _not_undone_note(earlier, step: dict[str, Any], columns: dict[str, Any]) -> str | None:
    """A section's columns that an earlier step with no reconstruction changed (kanonymity →
    errph, mst → errph): the section undoes its own step only, so it estimates the distribution
    in the release that step ran on (generalized, synthetic, …), not the original data's."""
    # a step with a reconstruction is composed through, or has its own section
    changed = columns_changed_by(earlier, columns, skip=lambda s: reconstructor(s["method"]) is not None)
    if not changed:
        return None
    return (f"columns changed before {step['method']} by steps that cannot be undone: {named_with_steps(changed)}; "
            f"this section estimates their distribution in the release {step['method']} ran on, "
            "not the original data's")


PLOTTED_COLUMNS, PLOTTED_VALUES = 9, 20


def _panel_title(name: str, method: str, entry: dict[str, Any], step: int, repeated: bool, more: str) -> str:
    """A column randomized by two steps has a panel per step: "sex (errph)" twice hid that one
    is the original data (both steps undone) and the other the input of the second step."""
    if not repeated:
        return f"{name} ({method}{more})"
    undone = " → ".join(entry.get("through_steps") or [method])
    where = "original data" if step == 1 else f"input of step {step}"
    return f"{name}: {where} ({undone} undone{more})"


def _distributions_plot(sections: list[dict[str, Any]], step_numbers: list[int]):
    """Per categorical column (the first 9): the published shares beside the reconstructed
    distribution with ±1.96 standard errors — what the release shows against what it implies."""
    panels = [(name, section["method"], entry, step) for section, step in zip(sections, step_numbers)
              for name, entry in (section.get("columns") or {}).items()
              if entry.get("kind") in ("categorical", "binary")]
    names = [name for name, *_ in panels]
    panels = panels[:PLOTTED_COLUMNS]
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows))
    for ax, (name, method, entry, step) in zip(fig.subplots(rows, cols, squeeze=False).ravel(), panels):
        est, shown = np.asarray(entry["consistent"]), np.asarray(entry["published_share"])
        order = np.argsort(-est, kind="stable")[:PLOTTED_VALUES]
        x = np.arange(len(order))
        err = 1.96 * np.asarray(entry["standard_error"])[order]
        ax.bar(x - 0.2, shown[order], 0.4, color="#bbbbbb", label="published")
        ax.bar(x + 0.2, est[order], 0.4, color="#2b6cb0", label="reconstructed",
               yerr=err, capsize=2, ecolor="#333333")
        ax.set_xticks(x, [str(entry["domain"][i])[:22] for i in order], rotation=60, ha="right", fontsize=7)
        more = f", top {len(order)} of {len(est)}" if len(est) > len(order) else ""
        ax.set_title(_panel_title(name, method, entry, step, names.count(name) > 1, more), fontsize=9)
        ax.set_ylabel("share of cells", fontsize=8)
        ax.set_ylim(0, min(1.0, 1.15 * float(max(shown[order].max(), (est[order] + err).max()))))
    for ax in fig.axes[len(panels):]:
        ax.set_visible(False)
    # below the panels (inside one it hid bars); the title says what the whiskers are
    legend_below(fig, title="reconstructed: the simplex-consistent estimate, error bars ± 1.96 standard errors")
    return render_figure(fig)


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


def _nothing_to_reconstruct(steps) -> MethodInputError:
    return MethodInputError(
        f"nothing to reconstruct: no step of this release ({', '.join(s['method'] for s in steps)}) "
        "has a reconstruction")


def _check(params: ReconstructParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    known = {c.name for c in columns}
    unknown = [c for c in params.columns or [] if c not in known]
    if unknown:
        raise MethodInputError(f"unknown column {unknown[0]!r}")
    if source is not None and all(reconstructor(s["method"]) is None for s in source.steps()):
        # known from the chain alone: refused at submission (an mst or kanonymity release was
        # accepted, then the job failed as invalid_input)
        raise _nothing_to_reconstruct(source.steps())
    # the items a mask/png release published (its metadata["itemsets"], as its reconstructor reads)
    labels = (source.metadata.get("itemsets") or {}).get("items") if source is not None else None
    if labels is not None:  # the release's published items: bad itemsets fail here, not as jobs
        check_itemsets(labels, params.itemsets, params.max_len)
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
    kind=MethodKind.analysis,
    summary="Estimate the original distributions, moments or itemset supports from a release, "
            "with standard errors.",
    params=ReconstructParams,
    guarantee="post-processing of the release: no further privacy cost",
    paper="seeds 000 (ERRPH/TRR reconstruction) and 001 (MASK/PN/g support reconstruction)",
    run=run_reconstruct,
    sources=frozenset({MethodSource.release}),
    shapes=frozenset({DataShape.table, DataShape.transactions}),
    check=_check,
    produces_randomness=False,
    report_kind=REPORT_KIND,
    docs="docs/methods/reconstruct.md",
))
