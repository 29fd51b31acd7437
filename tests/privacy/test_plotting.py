"""legend_below: one figure legend, outside every panel, each label once."""

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from app.privacy.plotting import legend_below


def _two_panels(labels_right=("shared", "right only")):
    fig = Figure(figsize=(8, 3.5))
    left, right = fig.subplots(1, 2)
    left.plot([0, 1], [0, 1], label="shared")
    left.plot([0, 1], [1, 0], label="left only")
    left.plot([0, 1], [0.5, 0.5], label="_hidden")  # matplotlib's convention: not in a legend
    for i, label in enumerate(labels_right):
        right.plot([0, 1], [i, i + 1], label=label)
    right.legend(loc="best")  # the kind of in-panel legend the helper replaces
    return fig, (left, right)


def _extents(fig):
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return renderer


def test_one_legend_below_every_panel_with_labels_once_in_first_seen_order():
    fig, axes = _two_panels()
    height = fig.get_figheight()
    legend = legend_below(fig, axes, title="dotted: reference")
    assert fig.legends == [legend] and all(ax.get_legend() is None for ax in axes)
    assert [t.get_text() for t in legend.get_texts()] == ["shared", "left only", "right only"]
    assert legend.get_title().get_text() == "dotted: reference"
    assert fig.get_figheight() > height  # the figure grew a strip for the legend
    renderer = _extents(fig)
    box = legend.get_window_extent(renderer)
    for ax in axes:  # below the panel including its tick labels and axis label
        assert box.y1 <= ax.get_tightbbox(renderer).y0
        assert not box.overlaps(ax.bbox)
    assert box.y0 >= 0 and box.x0 >= 0 and box.x1 <= fig.bbox.width  # inside the saved figure


def test_long_labels_wrap_into_balanced_rows_within_the_figure_width():
    fig, axes = _two_panels([f"a rather long description of series number {i}" for i in range(5)])
    legend = legend_below(fig, axes)
    renderer = _extents(fig)
    assert len(legend.get_texts()) == 7
    assert 1 < legend._ncols < 7  # wrapped, not one row wider than the figure
    assert legend.get_window_extent(renderer).width <= fig.bbox.width
    rows = -(-7 // legend._ncols)
    assert -(-7 // (legend._ncols - 1)) > rows  # no fewer columns would give the same rows


def test_no_labels_no_legend():
    fig = Figure()
    fig.subplots().plot([0, 1], [0, 1])
    assert legend_below(fig) is None and fig.legends == []
