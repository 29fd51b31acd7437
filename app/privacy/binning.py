"""Equal-width bins over a numeric column's declared bounds, and labels that tell them apart.

Shared by dp_statistics' histograms, the itemsets' one-hot items and the feature-selection
encoding: each names a bin by its edges, and 6 significant digits, the usual, made every bin of
[1, 1 + 1e-15] (or [1e15, 1e15 + 10]) '[1, 1)' — items or indicators of one name, which the
feature selection then took for a value spelled like its missing indicator.
"""

from __future__ import annotations

from collections.abc import Sequence


def bin_edges(lo: float, hi: float, bins: int) -> list[float]:
    """The edges of ``bins`` equal-width bins over [lo, hi] (b/bins first: (hi − lo)·b could
    overflow for bounds near ±1.8e308)."""
    return [lo + (hi - lo) * (b / bins) for b in range(bins)] + [hi]


def edges_increase(edges: Sequence[float]) -> bool:
    """Whether the edges are distinct floats in order: bins narrower than the spacing of floats
    at the bounds collapse onto one edge, hold nothing and share a label."""
    return all(a < b for a, b in zip(edges, edges[1:]))


def narrow_bins(where: str, bins: int, lo: float, hi: float) -> str:
    """The refusal's words when ``edges_increase`` is false."""
    return (f"{where}: {bins} bins over [{lo:.17g}, {hi:.17g}] are narrower than the spacing of "
            "floating-point numbers there: ask fewer bins or wider bounds")


def edge_texts(edges: Sequence[float]) -> list[str]:
    """Each edge at the fewest significant digits (6 to 17) that read back within a thousandth
    of a bin's width of every edge: distinct and ordered texts for increasing edges (17 digits
    read back exactly), the usual 6 digits where they suffice."""
    tolerance = (edges[-1] - edges[0]) / (len(edges) - 1) / 1000.0
    for digits in range(6, 18):
        text = [f"{e:.{digits}g}" for e in edges]
        if all(abs(float(t) - e) <= tolerance for t, e in zip(text, edges)):
            break
    return text


def value_texts(values: Sequence[float]) -> list[str]:
    """Distinct values, each at the fewest significant digits (6 to 17) that keep every text
    distinct (17 always do)."""
    for digits in range(6, 18):
        text = [f"{v:.{digits}g}" for v in values]
        if len(set(text)) == len(text):
            break
    return text
