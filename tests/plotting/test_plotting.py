"""Plots: what they draw, checked against brute-force computations of the same quantities."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.dates import date2num  # noqa: E402

import possibly as ps  # noqa: E402
from possibly.plotting import changepoint_plots as cpplot  # noqa: E402
from possibly.plotting import kalman_plots as kplot  # noqa: E402
from possibly.plotting._common import TimeAxis  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def small():
    y, cps, _ = ps.datasets.piecewise_constant(300, n_changes=2, seed=3)
    return y, cps, ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)


@pytest.fixture(scope="module")
def long():
    y, cps, _ = ps.datasets.piecewise_constant(20_000, n_changes=4, seed=5, outlier_rate=0.05)
    return y, ps.ChangepointDetector(sigma=1.0, hazard=1e-4, engine="numpy").fit(y)


def _legend_labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("n, columns", [(10, 2), (1001, 7), (5000, 300), (4, 3)])
def test_min_max_envelope_is_the_bucket_extremes(n, columns):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n)
    y[rng.random(n) < 0.2] = np.nan
    x = np.arange(n) * 2.0
    ex, ey = cpplot.min_max_envelope(x, y, columns)
    if n <= 2 * columns:
        assert np.array_equal(ey, y, equal_nan=True)
        return
    bounds = np.unique(np.floor(np.linspace(0, n, columns + 1)[:-1]).astype(int))
    bounds = [*bounds, n]
    lo, hi, xs = [], [], []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):  # brute force per bucket
        finite = y[a:b][~np.isnan(y[a:b])]
        lo.append(finite.min() if finite.size else np.nan)
        hi.append(finite.max() if finite.size else np.nan)
        xs.append(x[a])
    assert ex.size == ey.size == 2 * len(xs) <= 2 * columns
    np.testing.assert_array_equal(ey[0::2], lo)
    np.testing.assert_array_equal(ey[1::2], hi)
    np.testing.assert_array_equal(ex[0::2], xs)


def test_plot_result_draws_segments_means_outliers(small):
    y, cps, res = small
    ax = cpplot.plot_result(res, truth=cps)
    assert len(ax.patches) == len(res.segments)  # one shaded band per segment
    colours = [p.get_facecolor()[:3] for p in ax.patches]
    assert colours[0] != colours[1] and colours[0] == colours[2]  # alternating
    labels = _legend_labels(ax)
    assert f"outliers ({res.outliers.size}, discounted)" in labels
    assert {"segment means", "detected change points", "true change points"} <= set(labels)
    marks = next(li for li in ax.lines if li.get_label().startswith("outliers"))
    np.testing.assert_array_equal(marks.get_xdata(), res.outliers)
    np.testing.assert_array_equal(marks.get_ydata(), y[res.outliers])
    # segment means leave the outliers out
    kept = np.ones(y.size, bool)
    kept[res.outliers] = False
    a, b = res.segments[1]
    levels = [c.get_segments()[0][0][1] for c in ax.collections]  # one hline per segment
    assert len(levels) == len(res.segments)
    assert levels[1] == pytest.approx(y[a:b][kept[a:b]].mean())
    # the legend is outside the data
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1


def test_plot_result_keeps_time_stamps(small):
    y, _, res = small
    index = pd.date_range("2024-03-01", periods=y.size, freq="15min")
    series = pd.Series(y, index=index, name="depth (m)")
    ax = cpplot.plot_result(res, series)
    assert ax.get_ylabel() == "depth (m)"
    step = date2num(index[1]) - date2num(index[0])
    np.testing.assert_allclose(ax.get_xlim(), [date2num(index[0]) - step / 2,
                                               date2num(index[-1]) + step / 2])
    c = res.changepoints[0]
    line = next(li for li in ax.lines if li.get_label() == "detected change points")
    mid = (date2num(index[c - 1]) + date2num(index[c])) / 2  # between the two time stamps
    assert line.get_xdata()[0] == pytest.approx(mid)
    assert "DateFormatter" in type(ax.xaxis.get_major_formatter()).__name__
    # an explicit index wins over the series' own
    ax2 = cpplot.plot_result(res, index=np.arange(y.size) * 10.0)
    np.testing.assert_allclose(ax2.get_xlim(), [-5.0, 10.0 * (y.size - 1) + 5.0])


def test_plot_result_long_series_is_reduced(long):
    y, res = long
    columns = 500
    assert res.outliers.size > cpplot.MAX_OUTLIER_MARKS
    ax = cpplot.plot_result(res, columns=columns)
    series = next(li for li in ax.lines if li.get_label().startswith("observations"))
    assert series.get_xdata().size == 2 * columns
    inliers = y.copy()
    inliers[res.outliers] = np.nan  # the band leaves the outliers out
    assert np.nanmax(series.get_ydata()) == np.nanmax(inliers)
    marks = next(li for li in ax.lines if li.get_label().startswith("outliers"))
    assert f"({res.outliers.size};" in marks.get_label()
    # brute force: per column, the outlier farthest from its segment mean
    starts = np.unique(np.linspace(0, y.size, columns + 1)[:-1].astype(int))
    means = np.empty(y.size)  # the paper's model: a segment's fit is its inliers' mean
    outs = set(res.outliers.tolist())
    for a, b in res.segments:
        means[a:b] = np.mean([y[i] for i in range(a, b) if i not in outs])
    expected = []
    for a, b in zip(starts, [*starts[1:], y.size], strict=True):
        inside = [o for o in res.outliers if a <= o < b]
        if inside:
            expected.append(max(inside, key=lambda o: abs(y[o] - means[o])))
    np.testing.assert_array_equal(np.sort(marks.get_xdata()), expected)


def test_plot_result_rejects_a_series_of_another_length(small):
    _, _, res = small
    with pytest.raises(ValueError, match="y must be the series"):
        cpplot.plot_result(res, np.zeros(10))
    with pytest.raises(ValueError, match="index"):
        cpplot.plot_result(res, index=np.arange(5))


def test_run_length_heat_map_cells_are_maxima(small):
    _, _, res = small
    dense = cpplot.run_length_image(res)
    ax = cpplot.plot_run_length(res, columns=50, rows=40)
    img = np.asarray(ax.images[0].get_array())
    R, T = dense.shape
    starts = np.unique(np.linspace(0, T, 51)[:-1].astype(int))
    bounds = [*starts, T]
    for j in range(img.shape[1]):  # brute force: max over each cell
        for i in range(img.shape[0]):
            rows = [r for r in range(R) if (r * 40) // R == i]
            cell = dense[rows][:, bounds[j]:bounds[j + 1]]
            assert img[i, j] == pytest.approx(cell.max() if cell.size else 0.0)
    assert len(ax.child_axes) == 1  # the colour bar, an inset beside the panel
    assert ax.child_axes[0].get_ylabel() == "run-length possibility"
    dense_ax = cpplot.plot_run_length(res, colorbar=False)
    np.testing.assert_array_equal(np.asarray(dense_ax.images[0].get_array()), dense)
    assert len(dense_ax.figure.axes) == 1 and not dense_ax.child_axes


def test_reproduction_figures(small, tmp_path, monkeypatch):
    _, _, res = small
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)  # keep the figures to inspect them
    cpplot.plot_run_length_figure(res, tmp_path / "rl.png")
    fig = figs[-1]
    top, mid, bottom, bar = fig.axes
    assert "MAP run length" not in _legend_labels(top)  # no rescaled sawtooth on the data
    np.testing.assert_array_equal(mid.lines[0].get_ydata(), res.map_run_length)
    assert bar.get_ylabel() == "run-length possibility"
    standard = ps.ChangepointDetector(sigma=1.0, hazard=1e-3, robust=False).fit(res.y)
    cpplot.plot_zooms({"robust": res, "standard": standard}, tmp_path / "z.png",
                      windows=((30, 60), (150, 170)))
    labels = [t.get_text() for t in figs[-1].legends[0].get_texts()]
    assert "outliers (discounted)" in labels
    assert "change points, robust" in labels and "change points, standard" in labels
    assert (tmp_path / "rl.png").stat().st_size > 0 and (tmp_path / "z.png").stat().st_size > 0


def test_kalman_panel_shows_tiny_discounts_band_and_missing(tmp_path, monkeypatch):
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    y = np.array([0.0, 1.0, np.nan, 3.0, 40.0, 5.0, 6.0])
    disc = np.array([1.0, 0.9, np.nan, 1.0, 1e-120, 0.0, 1.0])
    kplot.plot_filtered_series(y, np.arange(7.0), disc, tmp_path / "k.png", sd=np.ones(7),
                               smoothed=True)
    ax, axd = figs[-1].axes
    labels = _legend_labels(ax)
    assert "smoothed position" in labels and "filtered position" not in labels
    assert "smoothed position ± 2 sd" in labels
    assert "missing observations (1)" in labels
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(-2.0) and band.max() == pytest.approx(8.0)
    logs = axd.lines[0].get_ydata()
    assert -120.0 in logs  # plotted as log10 γ, not clipped
    assert axd.get_ylim()[0] < -120.0
    zero = next(li for li in axd.lines if li.get_label() == "γ = 0 (ignored)")
    np.testing.assert_array_equal(zero.get_xdata(), [6])  # step 6 (1-based) had γ = 0
    kplot.plot_filtered_series(y, np.arange(7.0), disc, tmp_path / "f.png")
    assert "filtered position" in _legend_labels(figs[-1].axes[0])


def test_kalman_series_of_a_2d_track_one_panel_per_axis(tmp_path, monkeypatch):
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    y = np.column_stack([np.arange(5.0), -np.arange(5.0)])
    sd = np.array([[np.inf, np.inf], [1, 1], [1, 1], [1, 1], [1, 1]])
    kplot.plot_filtered_series(y, y, np.ones(5), tmp_path / "xy.png", sd=sd, ylabel=["x", "y"])
    *panels, axd = figs[-1].axes
    assert [a.get_ylabel() for a in panels] == ["x", "y"]
    for a, j in zip(panels, (0, 1), strict=True):
        np.testing.assert_array_equal(a.lines[1].get_ydata(), y[:, j])
        band = a.collections[0].get_paths()[0].vertices
        assert band[:, 0].min() == 2  # step 1 (x = 1) has an infinite sd: no band there
        assert np.isfinite(band).all()
    with pytest.raises(ValueError, match="ylabel must be a string or 2 strings"):
        kplot.plot_filtered_series(y, y, np.ones(5), tmp_path / "e.png", ylabel=["x"])


def test_plot_changepoints_window(small, tmp_path, monkeypatch):
    y, _, res = small
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    cpplot.plot_changepoints(res, tmp_path / "w.png", window=(100, 200))
    ax = figs[-1].axes[0]
    np.testing.assert_allclose(ax.get_xlim(), [99.5, 199.5])
    inside = np.r_[y[100:200], res.mean[100:200]]
    lo, hi = ax.get_ylim()
    assert lo < inside.min() and hi > inside.max()
    assert hi - lo < 1.2 * np.ptp(inside)  # scaled to the window, not the whole series


def test_plot_result_uses_an_index_kept_by_the_result(small):
    _, _, res = small
    index = pd.date_range("2024-03-01", periods=res.y.size, freq="D")

    class Indexed:  # a result that keeps its input's index, delegating everything else
        def __init__(self, inner):
            self._inner, self.index = inner, index

        def __getattr__(self, name):
            return getattr(self._inner, name)

    ax = cpplot.plot_result(Indexed(res))
    assert ax.get_xlim()[0] == pytest.approx(date2num(index[0]) - 0.5)


def test_time_axis_fills_missing_stamps_and_rejects_unsorted():
    stamps = np.array(["2024-01-01T00", "NaT", "2024-01-01T02", "2024-01-01T03", "NaT"],
                      dtype="datetime64[us]")
    axis = TimeAxis(5, stamps)
    hour = 1.0 / 24.0
    start = date2num(np.datetime64("2024-01-01T00", "us"))
    np.testing.assert_allclose(axis.x, start + hour * np.arange(5))
    np.testing.assert_allclose(TimeAxis(3, [np.nan, 5.0, np.nan]).x, [4.0, 5.0, 6.0])
    with pytest.raises(ValueError, match="increasing"):
        TimeAxis(3, np.array([3.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="no valid time stamp"):
        TimeAxis(2, np.array(["NaT", "NaT"], dtype="datetime64[us]"))


def test_result_plot_method_draws_with_the_inputs_time_stamps():
    import matplotlib.dates as mdates
    import pandas as pd

    idx = pd.date_range("2024-01-01", periods=60, freq="h")
    y = pd.Series(np.r_[np.zeros(30), np.full(30, 5.0)] + 0.1 * np.sin(np.arange(60)),
                  index=idx, name="level")
    res = ps.ChangepointDetector(sigma=0.1, hazard=1e-3).fit(y)
    ax = res.plot()
    lo, hi = ax.get_xlim()
    # the x-axis is in Matplotlib's date units, spanning the input's time stamps
    first, last = mdates.date2num(idx[0]), mdates.date2num(idx[-1])
    assert lo <= first and last <= hi and hi - lo < 1.2 * (last - first)
    assert res.plot(ylabel="level").get_ylabel() == "level"


def test_window_uses_the_results_own_time_stamps(tmp_path):
    """A window on a result fitted on a dated Series is set in the drawn (date) coordinates."""
    import matplotlib.dates as mdates

    idx = pd.date_range("2024-01-01", periods=200, freq="D")
    y = pd.Series(np.r_[np.zeros(100), np.full(100, 4.0)] + 0.1 * np.cos(np.arange(200)),
                  index=idx)
    res = ps.ChangepointDetector(sigma=0.1, hazard=1e-3).fit(y)
    seen = {}
    real_close = plt.close

    def keep(fig):
        seen["xlim"] = fig.axes[0].get_xlim()
        real_close(fig)

    plt.close = keep
    try:
        cpplot.plot_changepoints(res, tmp_path / "w.png", window=(50, 150))
    finally:
        plt.close = real_close
    lo, hi = seen["xlim"]
    assert mdates.date2num(idx[50]) - 1 <= lo <= mdates.date2num(idx[50])
    assert mdates.date2num(idx[149]) <= hi <= mdates.date2num(idx[149]) + 1


# ----------------------------------------------------------------------------------------------
# segment fits: the fitted trend of each segment, its band


@pytest.fixture(scope="module")
def v_shape():
    """Down, then up: two linear segments (noise sd 1), fitted with the default models."""
    rng = np.random.default_rng(0)
    t = np.arange(120.0)
    y = pd.Series(0.5 * np.abs(t - 60.0) + rng.normal(0.0, 1.0, t.size), name="flow (m3/s)")
    res = ps.ChangepointDetector().fit(y)
    assert res.segment_model_names == ["linear trend", "linear trend"]
    assert res.outliers.size == 0
    return y.to_numpy(), res


def _replayed_run(model, y, weights):
    """The segment's run replayed with the model's own online update, one observation at a
    time (the recursion's arithmetic): its state after the segment's last step."""
    from possibly.changepoint.models.trend import observe

    z = (y - model.prior.loc) / model.prior.scale
    runs = model.new_runs(1)
    for i, (zi, wi) in enumerate(zip(z, weights, strict=True)):
        if i:
            runs = model.forget(runs, 1.0)
        _, runs, floored = observe(runs, float(zi), float(wi), True, model.outlier_cost)
        assert not floored[0]
    return runs


def test_plot_draws_each_segments_fitted_trend_on_a_v(v_shape):
    y, res = v_shape
    ax = res.plot()
    lines = [li for li in ax.lines if li.get_gid() == "segment fit"]
    assert len(lines) == len(res.segments) == 2
    for line, (a, b), k in zip(lines, res.segments, res.segment_models, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(a, b))  # every step drawn
        drawn = line.get_ydata()
        # the model's own estimate: the run's final state from the online update, its line
        # evaluated back over the segment (τ = steps before the last)
        model = res.params.models[k]
        runs = _replayed_run(model, y[a:b], res.discount[a:b])
        tau = np.arange(a, b) - (b - 1.0)
        expected = model.prior.loc + model.prior.scale * (runs["m"][0, 0] + runs["m"][0, 1] * tau)
        np.testing.assert_allclose(drawn, expected, rtol=1e-9, atol=1e-9)
        # and it is the segment's straight line: least squares (numpy) within 0.05 (noise sd 1)
        ols = np.polyval(np.polyfit(np.arange(a, b), y[a:b], 1), np.arange(a, b))
        assert np.abs(drawn - ols).max() < 0.05
        assert not np.allclose(drawn, drawn[0], atol=1.0)  # a trend, not a flat mean
    labels = _legend_labels(ax)
    assert "segment fits (level, trend)" in labels
    assert "band of the fit (possibility ≥ 0.1)" in labels


def test_band_edge_has_the_possibility_alpha_by_brute_force(v_shape):
    from scipy.optimize import minimize

    y, res = v_shape
    alpha = 0.3
    fit, low, high = res.segment_fit(alpha)
    (a, b), k = res.segments[1], res.segment_models[1]
    model = res.params.models[k]
    runs = _replayed_run(model, y[a:b], res.discount[a:b])
    m, cov = runs["m"][0], runs["cov"][0]
    shape, rate = float(runs["a"][0]), float(runs["b"][0])
    prec = np.linalg.inv(cov)
    for i in (a, (a + b) // 2, b - 1):
        tau = i - (b - 1.0)
        for edge in (low[i], high[i]):
            v = (edge - model.prior.loc) / model.prior.scale

            def neg_log_possibility(p, v=v, tau=tau):
                slope, lam = p[0], np.exp(p[1])
                d = np.array([v - slope * tau, slope]) - m  # θ with level + slope τ = v
                return (0.5 * lam * d @ prec @ d
                        - shape * np.log(rate * lam / shape) - shape + rate * lam)

            best = min((minimize(neg_log_possibility, [m[1] + s, np.log(shape / rate) + l],
                                 method="Nelder-Mead",
                                 options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
                        for s in (-0.1, 0.0, 0.1) for l in (-1.0, 0.0, 1.0)),
                       key=lambda r: r.fun)
            assert -best.fun == pytest.approx(np.log(alpha), abs=1e-6)


def test_long_series_fit_is_drawn_at_about_two_points_per_column():
    rng = np.random.default_rng(2)
    t = np.arange(50_000.0)
    y = np.where(t < 20_000, 1e-4 * t, 2.0 - 5e-5 * (t - 20_000)) + rng.normal(0, 0.3, t.size)
    res = ps.ChangepointDetector().fit(y)
    fit, _, _ = res.segment_fit()
    ax = res.plot(columns=200)
    lines = [li for li in ax.lines if li.get_gid() == "segment fit"]
    assert sum(li.get_xdata().size for li in lines) <= 2 * 200 + 2 * len(res.segments)
    for li in lines:  # the drawn points are the fit at those steps
        at = li.get_xdata().astype(int)
        np.testing.assert_array_equal(li.get_ydata(), fit[at])


def test_result_plot_labels_the_y_axis_with_the_series_name(v_shape):
    _, res = v_shape
    assert res.name == "flow (m3/s)"
    assert res.plot().get_ylabel() == "flow (m3/s)"
    assert res.plot(ylabel="other").get_ylabel() == "other"
    assert ps.ChangepointDetector().fit(np.arange(10.0)).plot().get_ylabel() == "y"


def test_result_plot_takes_a_string_index():
    y = pd.Series(np.r_[np.zeros(20), np.full(20, 5.0)] + 0.1 * np.sin(np.arange(40)),
                  index=[f"week {i}" for i in range(40)])
    res = ps.ChangepointDetector(sigma=0.1).fit(y)
    assert res.changepoints.tolist() == [20]
    ax = res.plot()
    ax.figure.canvas.draw()
    np.testing.assert_allclose(ax.get_xlim(), [-0.5, 39.5])  # positions
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert shown and set(shown) <= set(y.index) and "week 0" in shown
    # a PeriodIndex is drawn at its periods' start times
    monthly = y.set_axis(pd.period_range("2020-01", periods=40, freq="M"))
    ax = ps.ChangepointDetector(sigma=0.1).fit(monthly).plot()
    assert ax.get_xlim()[0] == pytest.approx(date2num(pd.Timestamp("2020-01-01")) - 15.5)


def _axes_box(ax):
    return ax.get_position()  # figure coordinates, after the layout


def test_run_length_colour_bar_sits_next_to_its_panel(small, tmp_path, monkeypatch):
    _, _, res = small
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    cpplot.plot_run_length_figure(res, tmp_path / "rl.png")
    fig = figs[0]
    top, mid, bottom, bar = fig.axes
    heat, cbar = _axes_box(bottom), _axes_box(bar)
    assert bar.get_ylabel() == "run-length possibility"
    assert 0.0 < cbar.x0 - heat.x1 < 0.03  # just right of the heat map
    assert cbar.y0 == pytest.approx(heat.y0, abs=0.01)
    assert cbar.y1 == pytest.approx(heat.y1, abs=0.01)  # as tall as it
    # the three panels keep one width: they share the time axis
    for ax in (top, mid):
        box = _axes_box(ax)
        assert box.x0 == pytest.approx(heat.x0) and box.x1 == pytest.approx(heat.x1)
    # one panel of a figure whose other panel has its legend outside, to the right: the bar
    # stays beside its own panel, not beyond the legend
    fig, (upper, lower) = plt.subplots(2, 1, figsize=(11, 6), layout="constrained")
    cpplot.plot_result(res, ax=upper)
    cpplot.plot_run_length(res, ax=lower)
    fig.canvas.draw()
    (bar,) = lower.child_axes
    bar_box, panel = bar.get_window_extent(), lower.get_window_extent()
    assert 0.0 < bar_box.x0 - panel.x1 < 0.02 * fig.bbox.width
    assert bar_box.y0 == pytest.approx(panel.y0, abs=1)
    assert bar_box.y1 == pytest.approx(panel.y1, abs=1)
    assert fig.bbox.x1 >= bar.get_tightbbox().x1  # its label inside the figure
