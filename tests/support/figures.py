"""What a reader needs from a report figure, as assertions (shared by the experiment tests)."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure

from app.privacy.plotting import legend_entries


def style_without_colour(handle) -> tuple:
    """What tells a legend entry apart in grayscale or to a colour-blind reader."""
    if isinstance(handle, ErrorbarContainer):
        handle = handle.lines[0]
    if isinstance(handle, BarContainer):
        return ("bar", handle.patches[0].get_hatch() or "")
    return (str(handle.get_marker()), str(handle.get_linestyle()))


def assert_readable(fig: Figure) -> None:
    """Every panel titled with an x label, a y label in the first column, the legend entries
    told apart by marker, line style or hatch (not colour alone), no minor tick labelled, the
    legend outside every panel, no y label running into another panel, no axis offset."""
    axes = [ax for ax in fig.axes if ax.get_visible()]
    for ax in axes:
        assert ax.get_title() and ax.get_xlabel(), f"panel {ax.get_title()!r} lacks a title or x label"
        if ax.get_subplotspec().is_first_col():
            assert ax.get_ylabel(), f"panel {ax.get_title()!r} lacks a y label"
    handles, labels = legend_entries(axes)
    styles = {label: style_without_colour(h) for h, label in zip(handles, labels)}
    same = [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:] if styles[a] == styles[b]]
    assert not same, f"told apart by colour only: {same}"
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for ax in axes:  # a log axis over about a decade labelled its minor ticks: 2×10⁻², 3×10⁻², …
        for axis in (ax.xaxis, ax.yaxis):
            minor = [t.get_text() for t in axis.get_minorticklabels() if t.get_visible() and t.get_text()]
            assert not minor, f"panel {ax.get_title()!r}: minor ticks labelled {minor}"
    for ax in axes:  # an offset ('1e-5', '+8.5e-1') above an axis changes what every tick means
        for axis in (ax.xaxis, ax.yaxis):
            offset = axis.get_offset_text().get_text()
            assert not offset, f"panel {ax.get_title()!r}: its ticks read relative to {offset!r}"
    for ax in axes:  # a y label longer than its panel ran into the panel above (plots review)
        label = ax.yaxis.label
        if label.get_text():
            box = label.get_window_extent(renderer)
            others = [b for other in axes if other is not ax for b in (
                other.bbox, *(t.get_window_extent(renderer) for t in
                              (other.xaxis.label, other.yaxis.label, *other.get_xticklabels(),
                               *other.get_yticklabels()) if t.get_visible() and t.get_text()))]
            assert not any(box.overlaps(other) for other in others), \
                f"panel {ax.get_title()!r}: its y label {label.get_text()!r} runs into another panel"
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(ax.bbox) for ax in axes), "the legend covers a panel"
