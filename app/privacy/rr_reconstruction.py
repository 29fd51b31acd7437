"""The categorical reconstructor of ERRPH and Warner (the ``reconstruct`` analysis over a
randomized release: unbiased estimate, standard errors, notes on uninformative or rough
intervals) and ERRPH's channels and breach at the reconstructed distribution. Moved out of
randomized_response.py, which registers them and re-exports reconstruct_categorical."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.registry import MethodInputError
from app.privacy.rr_channels import MISSING, CategoricalChannel, columns_to_reconstruct, count_labels
from app.privacy.rr_mechanism import breach

# A share's standard error above which ±1.96·SE spans more than the whole of [0, 1]
UNINFORMATIVE_SE = 0.255
# Published cells of a value below which ±1.96·SE is a rough interval: the count is nearly
# Poisson and the normal approximation undercovers (Poisson mean 3: 80 %, 5: 87 %, 10: 93 %;
# acceptance check on Adult samples: values with 1.5-5 expected published cells 79-92 %)
FEW_PUBLISHED_CELLS = 10
NAMED_VALUES = 5


def reconstruct_categorical(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """Per categorical column of ``step``: the unbiased π̂, its standard errors, the
    simplex-consistent estimate, inverted through every later step of the chain that
    randomized the same column again. Reads only the final release."""
    if data.frame is None or data.source is None:
        raise MethodInputError("reconstruct needs a table release")
    found, notes = columns_to_reconstruct(data, step, getattr(params, "columns", None), CategoricalChannel)
    out: dict[str, Any] = {}
    for name, channel in found:
        try:
            est = channel.estimate(count_labels(data.frame[name], channel.labels, name))
        except ValueError as exc:
            raise MethodInputError(str(exc)) from None
        missing_cells = int(data.frame[name].isna().sum()) if MISSING not in channel.labels else 0
        out[name] = _describe_estimate(name, step, channel, est, missing_cells)
        widest = float(np.max(est["standard_error"], initial=0.0))
        if widest > UNINFORMATIVE_SE:  # an unbiased estimate is still returned, as documented
            notes.append(f"column {name!r}: standard errors up to {widest:.3g}, so a 95 % interval is "
                         "wider than [0, 1]: the estimate says little about this column (the "
                         "randomization is close to uniform for this many records)")
        if (note := _few_cells_note(name, channel, est["published_count"])) is not None:
            notes.append(note)
    return {"columns": out, "notes": notes,
            "projection": "Euclidean projection of the unbiased vector onto the probability simplex",
            "standard_errors": "sqrt(λ_j(1-λ_j)/n) / |scale| at λ_j = the published share λ̂_j moved into "
                               "[offset_j, offset_j + scale] (scale = p0 and offset_j = p_j for ERRPH, "
                               "2p-1 and 1-p for Warner; the product over chained steps)"}


def _few_cells_note(name: str, channel: CategoricalChannel, counts: np.ndarray) -> str | None:
    """The values of a column whose intervals rest on a handful of published cells."""
    few = [label for label, c in zip(channel.domain, counts) if c < FEW_PUBLISHED_CELLS]
    if not few:
        return None
    named = ", ".join(map(repr, few[:NAMED_VALUES])) + (f" and {len(few) - NAMED_VALUES} more"
                                                         if len(few) > NAMED_VALUES else "")
    verb = "has" if len(few) == 1 else "have"
    return (f"column {name!r}: {len(few)} of its {len(channel.domain)} values {verb} fewer than "
            f"{FEW_PUBLISHED_CELLS} published cells ({named}): their ±1.96 standard error intervals "
            "(the plot's error bars) are rough — with so few cells the normal approximation covers "
            "80-93 % rather than 95 %")


def _describe_estimate(name: str, step: dict[str, Any], channel: CategoricalChannel,
                       est: dict[str, Any], missing_cells: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "kind": "categorical", "n": est["n"], "domain": list(channel.domain),
        "estimate": est["estimate"].tolist(), "consistent": est["consistent"].tolist(),
        "standard_error": est["standard_error"].tolist(),
        "published_share": est["published_share"].tolist(), "through_steps": list(channel.steps),
    }
    if channel.preserve_missing and missing_cells:
        entry["population"] = "cells that were not missing (missing cells were left out)"
        entry["missing_cells"] = missing_cells
    return entry


def reconstruct_errph(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """reconstruct_categorical, with the breach probability at the reconstructed distribution
    of each column no later step changed again."""
    out = reconstruct_categorical(data, step, params, ctx)
    for name, entry in out["columns"].items():
        if len(entry["through_steps"]) == 1:
            meta = step["metadata"]["errph"][name]
            entry["breach_at_reconstructed"] = float(
                breach(meta["p0"], np.asarray(meta["p"]), np.asarray(entry["consistent"])).max())
    return out


def errph_channels(metadata: dict[str, Any]) -> dict[str, CategoricalChannel]:
    """λ = p0·π + p over each column's published domain (its metadata["errph"] entry)."""
    return {name: CategoricalChannel(labels=tuple(c["domain"]), scale=float(c["p0"]), offset=tuple(c["p"]),
                                     domain=tuple(c["domain"]), preserve_missing=c.get("missing") == "preserve",
                                     steps=("errph",))
            for name, c in metadata.get("errph", {}).items()}
