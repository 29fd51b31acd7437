"""legend_below: one figure legend, outside every panel, each label once."""

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import numpy as np

from app.privacy.plotting import legend_below, log_axis, spans_a_decade


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


def _labels(ax, renderer):
    low, high = ax.get_ylim()
    major = [t for t in ax.yaxis.get_majorticklabels() if low <= t.get_position()[1] <= high]
    minor = [t.get_text() for t in ax.yaxis.get_minorticklabels() if t.get_text()]
    return major, minor


def test_log_axis_labels_plain_numbers_apart_and_leaves_minor_ticks_bare():
    """experiment_itemsets' grouping bars (0.012-0.24 on chess) wrote 2×10⁻², 3×10⁻², 4×10⁻², 6×10⁻²
    and 2×10⁻¹ up a 3-inch panel: matplotlib labels the minor ticks of a log axis spanning about a
    decade."""
    for low, high, expected in ((0.012, 0.24, ["0.02", "0.05", "0.1", "0.2"]),
                                (0.0027, 0.04, ["0.005", "0.01", "0.02"]),
                                (1e-4, 8.4, ["0.0001", "0.001", "0.01", "0.1", "1"])):
        fig = Figure(figsize=(4.8, 3.4))
        ax = fig.subplots()
        ax.bar([0, 1], [low, high])
        log_axis(ax)
        renderer = _extents(fig)
        major, minor = _labels(ax, renderer)
        assert ax.get_yscale() == "log" and minor == []
        assert [t.get_text() for t in major][:len(expected)] == expected
        boxes = [t.get_window_extent(renderer) for t in major]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_spans_a_decade_only_when_every_value_is_positive():
    assert spans_a_decade([0.0016, 0.2, 5.46]) and spans_a_decade(np.array([[1.0], [118.0]]))
    assert not spans_a_decade([0.0017, 0.0028])  # a log axis would only magnify the difference
    assert not spans_a_decade([0.0, 0.2, 5.46])  # the zero would vanish from a log axis
    assert not spans_a_decade([np.nan, 1.0]) and not spans_a_decade([])


def test_a_long_value_label_puts_its_notes_on_a_line_of_their_own():
    """Plots review: 'mean absolute support error (log scale; lower is better)' ran from one
    panel's y axis into the label of the panel below it."""
    from app.privacy.plotting import value_label

    assert value_label("accuracy", "higher is better") == "accuracy (higher is better)"
    assert value_label("mean absolute support error", "log scale", "lower is better") == \
        "mean absolute support error\n(log scale; lower is better)"
    assert value_label("share") == "share"


def test_a_legend_title_wider_than_the_figure_wraps_and_the_entries_keep_their_columns():
    """Plots review: experiment_rfka's error-bar note (about 150 characters) as the legend title
    of a one-panel figure was wider than the figure: the legend fell to one column and the saved
    image grew sideways around it."""
    fig = Figure(figsize=(5.2, 3.8))
    ax = fig.subplots()
    for i in range(3):
        ax.plot([0, 1], [i, i], label=f"series {i}")
    title = ("error bars: ± 1 sd of the AUC over the 25 folds (5 × 5-fold CV), one fold's spread "
             "(not the standard error of a difference); RFKA: mean over 3 forest seeds")
    legend = legend_below(fig, [ax], title=title)
    renderer = _extents(fig)
    assert legend.get_window_extent(renderer).width <= fig.bbox.width
    assert "\n" in legend.get_title().get_text()
    assert legend.get_title().get_text().replace("\n", " ") == title
    assert legend._ncols == 3  # the entries still fit in one row


def test_a_title_wider_than_the_figure_wraps_onto_lines_within_it():
    """Plots review: the CoIL home figure's title (~150 characters) ran 300 px past both panels."""
    from app.privacy.plotting import suptitle_within

    fig = Figure(figsize=(10, 3.8))
    fig.subplots(1, 2)
    text = ("SVM misclassification rate of each release vs ε — CoIL 2000: home owners are the majority "
            "of the customer's postcode (attr_31 MHKOOP ≥ 5, the paper's 'house')")
    title = suptitle_within(fig, text)
    renderer = _extents(fig)
    assert title.get_window_extent(renderer).width <= fig.bbox.width
    assert title.get_text().replace("\n", " ") == text
    short = suptitle_within(Figure(figsize=(10, 3.8)), "AUC vs K")
    assert short.get_text() == "AUC vs K"
