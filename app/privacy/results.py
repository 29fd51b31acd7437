"""What a method returns. Plain objects: the service stores them, the library never does."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from app.privacy.data import ColumnInfo, TransactionData


@dataclass
class ReleaseResult:
    """A protected release. ``guarantees`` states exactly what the code delivered (see
    ``guarantees.py`` for the common keys); ``metadata`` carries what a later analysis needs
    (randomization parameters, domains, published sets) and is published with the release."""

    guarantees: dict[str, Any]
    frame: pd.DataFrame | None = None
    transactions: TransactionData | None = None
    columns: list[ColumnInfo] | None = None  # schema of the output; None = same as the input
    metrics: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    # The columns whose given hierarchy (MethodInput.hierarchies) the release was made with: its
    # `release.created` event names those. None: not said, every hierarchy given counts as used.
    hierarchies_used: list[str] | None = None


@dataclass
class Plot:
    png: bytes
    svg: bytes


@dataclass
class ReportResult:
    kind: str
    data: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    plots: dict[str, Plot] = field(default_factory=dict)


@dataclass
class ModelResult:
    """A fitted estimator with ``predict`` and ``predict_proba`` on raw records (a DataFrame)."""

    model: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)


Result = ReleaseResult | ReportResult | ModelResult


def render_figure(fig) -> Plot:
    """PNG and SVG bytes of a matplotlib figure (the caller uses the Agg backend)."""
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    fig.savefig(svg, format="svg", bbox_inches="tight")
    return Plot(png=png.getvalue(), svg=svg.getvalue())
