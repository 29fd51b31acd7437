"""Shared plot layout: one figure legend below the panels, so a legend never covers data, and
log axes a reader can read.

Per-axes legends (``ax.legend(loc="best")``) sit inside the axes and hid points and lines in the
experiment figures; ``legend_below`` replaces them with a single frameless legend in a strip the
figure grows for it, under the lowest tick labels. ``log_axis`` puts a value axis on a log scale
with plain-number labels; ``spans_a_decade`` says when that is worth it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

#: share of the figure width the legend may take before it wraps to another row
_MAX_WIDTH_SHARE = 0.96
#: appended to a value axis' label: which way a reader should want the curves to go
LOWER_IS_BETTER = "lower is better"
HIGHER_IS_BETTER = "higher is better"


def value_label(name: str, *notes: str, width: int = 40) -> str:
    """An axis label with its notes in brackets ('mean absolute support error (log scale; lower
    is better)'), the notes on a line of their own when the whole would be longer than ``width``
    characters: a 3-inch panel's y label ran past its panel into the one above."""
    if not notes:
        return name
    one = f"{name} ({'; '.join(notes)})"
    return one if len(one) <= width else f"{name}\n({'; '.join(notes)})"


def suptitle_within(fig: Figure, text: str, **kw):
    """``fig.suptitle(text)``, wrapped onto more lines where one would be wider than the figure
    (experiment_dp_release's CoIL home title ran 300 px past both panels; the saved image grew
    around it)."""
    title = fig.suptitle(text, **kw)
    share = title.get_window_extent(_renderer(fig)).width / (_MAX_WIDTH_SHARE * fig.bbox.width)
    if share > 1:
        title.set_text("\n".join(textwrap.fill(line, width=max(20, int(len(line) / share)))
                                 for line in text.split("\n")))
    return title


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
    if title:  # a title wider than the figure took the legend down to one column and widened the image
        probe = fig.text(0, 0, title, fontsize=fontsize)
        share = probe.get_window_extent(renderer).width / (_MAX_WIDTH_SHARE * fig.bbox.width)
        probe.remove()
        if share > 1:
            title = textwrap.fill(title, width=max(20, int(len(title) / share)))
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


def spans_a_decade(values) -> bool:
    """Every (finite) value positive and the largest more than ten times the smallest: a log
    axis then shows what a linear one squashes (a 0.0016 next to a 5.46 sits on the zero line).
    On a narrower range a log axis only magnifies small differences (bars of 1.7e-3 and 2.8e-3
    drawn five times apart), and a zero or negative value would vanish from it."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    return len(v) > 0 and float(v.min()) > 0 and float(v.max()) > 10 * float(v.min())


def _plain(value: float, _pos=None) -> str:
    """0.02, 0.5, 10 — or 2×10⁻⁵ where a plain number would need that many zeros."""
    if value <= 0:
        return ""
    exponent = math.floor(math.log10(value) + 1e-9)
    if -4 <= exponent <= 5:
        return f"{value:g}"
    mantissa = round(value / 10 ** exponent, 6)
    return f"$10^{{{exponent}}}$" if mantissa == 1 else f"${mantissa:g}\\times10^{{{exponent}}}$"


def log_axis(ax: Axes, axis: str = "y") -> None:
    """Put ``ax``'s value axis on a log scale with labels a reader can take in: plain numbers at
    1, 2 and 5 × 10ⁿ while the axis spans at most 2.5 decades, at the decades only beyond, and the
    minor ticks unlabelled; on a range that holds fewer than two of those, evenly spaced round
    values. matplotlib's default labels minor ticks as soon as an axis spans about
    a decade, which wrote 2×10⁻², 3×10⁻², 4×10⁻², 6×10⁻² up a 3-inch panel (experiment_itemsets'
    grouping bars). Call it after the data are drawn."""
    scale, target = (ax.set_yscale, ax.yaxis) if axis == "y" else (ax.set_xscale, ax.xaxis)
    scale("log")
    ax.autoscale_view()
    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    decades = math.log10(high / low) if low > 0 and high > 0 else math.inf
    major = LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,))
    if decades < 1 and sum(low <= t <= high for t in major.tick_values(low, high)) < 2:
        # a narrow range holding one 1-2-5 value (0.0055-0.016: only '0.01') said nothing of its
        # span: evenly spaced round values then (0.006, 0.008, …, 0.016)
        major = MaxNLocator(nbins=5)
    target.set_major_locator(major)
    target.set_major_formatter(FuncFormatter(_plain))
    target.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10) / 1.0))
    target.set_minor_formatter(NullFormatter())


def tilt_crowded_tick_labels(fig: Figure, axes: Iterable[Axes]) -> None:
    """Tilt the x tick labels of a panel where, laid out, two of them overlap — by 45°, or
    upright if they still do: experiment_dp_release's twelve ε on a log axis wrote '0.010.02'
    (0.01 and 0.02 a third of a decade apart). Call it after the ticks are set and before
    ``legend_below`` (which lays the figure out again, with room for the tilted labels)."""
    fig.tight_layout()
    renderer = _renderer(fig)

    def crowded(labels) -> bool:
        boxes = [t.get_window_extent(renderer) for t in labels]
        return any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))

    for ax in axes:
        labels = [t for t in ax.xaxis.get_ticklabels() if t.get_visible() and t.get_text()]
        for rotation, valign in ((45, "top"), (90, "center")):
            if not crowded(labels):
                break
            for label in labels:
                label.set(rotation=rotation, horizontalalignment="right",
                          verticalalignment=valign, rotation_mode="anchor")
