"""Shared plot layout: one figure legend below the panels, so a legend never covers data.

Per-axes legends (``ax.legend(loc="best")``) sit inside the axes and hid points and lines in the
experiment figures; ``legend_below`` replaces them with a single frameless legend in a strip the
figure grows for it, under the lowest tick labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend

#: share of the figure width the legend may take before it wraps to another row
_MAX_WIDTH_SHARE = 0.96


def _renderer(fig: Figure):
    # A bare Figure() has no drawing canvas yet; the Agg one is what render_figure saves with.
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    return canvas.get_renderer()


def legend_entries(axes: Iterable[Axes]) -> tuple[list, list[str]]:
    """Handles and labels of every given axes, one per label, in first-seen order."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def legend_below(fig: Figure, axes: Iterable[Axes] | None = None, *, title: str | None = None,
                 fontsize: float = 7, **legend_kw) -> Legend | None:
    """Lay the figure out (tight_layout) with ONE legend of all ``axes`` (default: the visible
    axes of ``fig``) centred below them. The figure grows by the legend's height, so the panels
    keep their size; columns are as many as fit the figure's width, balanced over the rows.
    Extra keywords go to ``Figure.legend`` (e.g. ``handlelength``). Returns the legend, or None
    when no artist has a label (the figure is still laid out)."""
    axes = [ax for ax in (fig.axes if axes is None else axes) if ax.get_visible()]
    handles, labels = legend_entries(axes)
    for ax in axes:  # a per-axes legend left by the caller would cover data again
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if not handles:
        fig.tight_layout()
        return None
    renderer = _renderer(fig)
    style = dict(loc="lower center", bbox_to_anchor=(0.5, 0.0), frameon=False, fontsize=fontsize,
                 title=title, title_fontsize=fontsize, borderaxespad=0.2, **legend_kw)
    ncols = len(handles)
    while True:
        legend = fig.legend(handles, labels, ncols=ncols, **style)
        fits = legend.get_window_extent(renderer).width <= _MAX_WIDTH_SHARE * fig.bbox.width
        if fits or ncols == 1:
            break
        legend.remove()
        ncols -= 1
    balanced = math.ceil(len(handles) / math.ceil(len(handles) / ncols))
    if balanced != ncols:  # same number of rows, evener columns (3 + 2 rather than 4 + 1)
        legend.remove()
        legend = fig.legend(handles, labels, ncols=balanced, **style)
    strip = legend.get_window_extent(renderer).height / fig.dpi
    fig.set_figheight(fig.get_figheight() + strip, forward=False)
    fig.tight_layout(rect=(0.0, strip / fig.get_figheight(), 1.0, 1.0))
    return legend
