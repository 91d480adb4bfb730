"""Figures of docs/monitoring.md, "Monitoring streams", drawn from the synthetic streaming suite.

Run from the repository root: ``python docs/figures/monitoring_streams.py``. It writes, next
to itself, ``monitoring_cycle.png`` (a cyclic stream with its labelled windows, the change
points the detector flags online and finds in hindsight, and the alarms of the calibrated
anomaly signal at the one threshold), ``monitoring_scores.png`` (the calibrated signal on
several streams against that threshold), ``monitoring_calibration.png`` (per stream, the
share of records above the one threshold outside and inside the labelled windows, for
``1 − discount`` and for the calibrated signal) and ``monitoring_fleet.png`` (the fleet of
the page's :class:`~possibly.changepoint.DetectorBank` example). Everything is generated:
:data:`possibly.datasets.STREAMING_SUITE` at fixed seeds.

As ``benchmarks/bench_streaming.py`` does: each stream's first eighth is its warm-up (the
priors come from it, its records are not scored), the anomaly signal's period is a day in
records (from the series' time step), and each signal's one threshold for all streams is the
one :func:`~possibly.changepoint.metrics.best_threshold` picks on seeds 0 to 4 of the whole
suite; the figures show held-out seeds (5, and 5 to 9 for the calibration).
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np

import possibly as ps
from possibly.changepoint import DetectorBank, automatic_prior, model_family
from possibly.changepoint.metrics import alarm_indices, best_threshold

HERE = Path(__file__).resolve().parent
TUNE_SEEDS = (0, 1, 2, 3, 4)
SHOWN_SEED = 5
HELD_OUT = (5, 6, 7, 8, 9)
CYCLE = "cycle_level_shift"
SHOWN = ("cycle_idle", "cycle_level_shift", "cycle_missing_peak", "cpu_bursts",
         "latency_heavy_tail", "idle_stream")


def warm_up(n: int) -> int:
    return n // 8


@functools.cache
def stream_scores(name: str, seed: int) -> tuple[np.ndarray, np.ndarray, ps.ChangepointResult]:
    """The two per-record scores of the default detector on a stream of the suite, priors from
    the warm-up (NaN there): the calibrated anomaly ``result.anomaly`` with a period of a day
    in records (the numbers of ``info.anomaly`` from ``update``) and ``1 − discount``; and the
    detector's result."""
    series, _ = ps.datasets.STREAMING_SUITE[name](seed=seed)
    y = series.values
    w = warm_up(len(y))
    det = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:w])),
                                 period=series.steps_per(np.timedelta64(1, "D")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = det.fit(y)
    assert res.anomaly is not None
    anomaly = np.array(res.anomaly, dtype=float)
    discount = 1.0 - np.asarray(res.discount, dtype=float)
    for score in (anomaly, discount):
        score[:w] = np.nan
        score[~np.isfinite(score)] = np.nan
    return anomaly, discount, res


def online_flags(y: np.ndarray, period: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The records after the warm-up whose ``update`` set ``change_detected``, and the change
    points in hindsight after the warm-up, for the default family (``period`` None) or the
    family with a cycle of ``period`` records."""
    w = warm_up(len(y))
    det = ps.ChangepointDetector(model=model_family(period=period,
                                                    prior=automatic_prior(y[:w])))
    det.fit(y[:w])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flags = np.array([t for t in range(w, len(y)) if det.update(y[t]).change_detected],
                         dtype=np.int64)
    cps = det.changepoints
    return flags, cps[cps >= w]


def tuned_thresholds() -> tuple[float, float]:
    """The one threshold of the calibrated signal and of ``1 − discount``, on seeds 0-4."""
    keys = [(name, seed) for name in ps.datasets.STREAMING_SUITE for seed in TUNE_SEEDS]
    windows = [ps.datasets.STREAMING_SUITE[name](seed=seed)[1] for name, seed in keys]
    return tuple(best_threshold([stream_scores(*k)[j] for k in keys], windows).threshold
                 for j in (0, 1))  # type: ignore[return-value]


def _save(fig: plt.Figure, name: str) -> Path:
    fig.tight_layout()
    out = HERE / name
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _shade(ax, index, windows, warm: int) -> None:
    ax.axvspan(index[0], index[warm - 1], color="0.9", lw=0, label="warm-up")
    for k, (a, b) in enumerate(windows):
        ax.axvspan(index[a], index[b - 1], color="tab:red", alpha=0.2, lw=0,
                   label="labelled window" if k == 0 else None)


def cycle_figure(threshold: float) -> Path:
    series, windows = ps.datasets.STREAMING_SUITE[CYCLE](seed=SHOWN_SEED)
    y, index = series.values, series.index
    score, _, _ = stream_scores(CYCLE, SHOWN_SEED)
    alarms = alarm_indices(score, threshold)
    warm = warm_up(len(y))
    day = series.steps_per(np.timedelta64(1, "D"))
    runs = {"default family": online_flags(y),
            f"with a cycle of {day} records": online_flags(y, day)}

    fig = plt.figure(figsize=(10, 8.5))
    top = fig.add_subplot(3, 1, 1)
    zoom = fig.add_subplot(3, 1, 2)
    low = fig.add_subplot(3, 1, 3)
    a = int(windows[0, 0])
    span = slice(max(a - 14 * 24, 0), a + 7 * 24)  # two weeks before the first shift, one after
    titles = []
    for ax, (label, (flags, final)) in zip((top, zoom), runs.items(), strict=True):
        part = span
        titles.append(f"{label}: {flags.size} change flags online, {final.size} change "
                      f"points in hindsight after the warm-up (whole stream)")
        _shade(ax, index, windows, warm)
        ax.plot(index[part], y[part], lw=0.6, color="0.3")
        lo, hi = part.start or 0, part.stop or len(y)
        for k, c in enumerate(final[(final >= lo) & (final < hi)]):
            ax.axvline(index[c], color="tab:blue", lw=0.8, alpha=0.8,
                       label="change point (in hindsight)" if k == 0 else None)
        shown = flags[(flags >= lo) & (flags < hi)]
        ax.plot(index[shown], np.full(shown.size, y.max() * 1.04), "|", color="tab:green",
                ms=8, label="change_detected (online)")
        ax.set_xlim(index[part][0], index[part][-1])
    top.set_title(f"{CYCLE} (hourly, seed {SHOWN_SEED}, {len(windows)} level shifts), three "
                  f"weeks around the first shift\n{titles[0]}", fontsize=9)
    top.legend(loc="lower left", fontsize=8, ncol=4)
    for ax in (top, zoom):
        ax.xaxis.set_major_locator(mdates.DayLocator(interval=3))
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%b %d"))
    zoom.set_title(titles[1], fontsize=9)
    ax = low
    _shade(ax, index, windows, warm)
    ax.plot(index, score, lw=0.6, color="tab:purple")
    ax.axhline(threshold, color="k", lw=0.8, ls="--", label=f"one threshold ({threshold:.4f})")
    ax.plot(index[alarms], score[alarms], "v", color="tab:orange", ms=6,
            label=f"alarm ({alarms.size})")
    ax.set_ylabel("anomaly (period: a day)")
    ax.set_ylim(-0.02, 1.3)
    ax.legend(loc="upper left", fontsize=8, ncol=4)
    return _save(fig, "monitoring_cycle.png")


def scores_figure(threshold: float) -> Path:
    fig, axes = plt.subplots(len(SHOWN), 1, figsize=(10, 1.6 * len(SHOWN)))
    for ax, name in zip(axes, SHOWN, strict=True):
        series, windows = ps.datasets.STREAMING_SUITE[name](seed=SHOWN_SEED)
        score = stream_scores(name, SHOWN_SEED)[0]
        t = np.arange(len(score))
        _shade(ax, t, windows, warm_up(len(score)))
        ax.plot(t, score, lw=0.5, color="tab:purple")
        ax.axhline(threshold, color="k", lw=0.8, ls="--")
        alarms = alarm_indices(score, threshold)
        ax.plot(alarms, score[alarms], "v", color="tab:orange", ms=5)
        ax.set_ylim(-0.02, 1.05)
        ax.set_xlim(0, len(score))
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
        ax.set_yticks([0, 1])
    axes[0].set_title(f"calibrated anomaly per record (seed {SHOWN_SEED}); dashed: the one "
                      f"threshold "
                      f"{threshold:.4f} tuned on seeds 0–4; red: labelled windows; "
                      "triangles: alarms", fontsize=9)
    axes[-1].set_xlabel("record")
    return _save(fig, "monitoring_scores.png")


def above_rates(j: int, threshold: float) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per held-out stream: the share of scored records at or above ``threshold`` outside the
    labelled windows and inside them (NaN for a stream without window), for score ``j``
    (0: calibrated, 1: ``1 − discount``)."""
    labels, outside, inside = [], [], []
    for name in ps.datasets.STREAMING_SUITE:
        for seed in HELD_OUT:
            _, windows = ps.datasets.STREAMING_SUITE[name](seed=seed)
            score = stream_scores(name, seed)[j]
            labelled = np.zeros(len(score), dtype=bool)
            for a, b in windows:
                labelled[a:b] = True
            scored = np.isfinite(score)
            high = scored & (score >= threshold)
            labels.append(name)
            outside.append(high[~labelled].sum() / max((scored & ~labelled).sum(), 1))
            inside.append(high[labelled].sum() / labelled.sum() if labelled.any()
                          else np.nan)
    return labels, np.array(outside), np.array(inside)


def calibration_figure(thresholds: tuple[float, float]) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.2), sharey=True)
    titles = ("calibrated anomaly", "1 − discount")
    for j, ax in enumerate(axes):
        labels, outside, inside = above_rates(j, thresholds[j])
        rows = np.arange(len(labels)) + np.tile(np.linspace(-0.3, 0.3, len(HELD_OUT)),
                                                len(labels) // len(HELD_OUT))
        floor = 1e-5  # a share of 0 drawn at the axis' floor
        ax.plot(np.maximum(outside, floor), rows, "o", color="tab:blue", ms=4,
                label="outside the windows (false alarms)")
        ax.plot(np.maximum(inside, floor), rows, "^", color="tab:red", ms=4,
                label="inside the labelled windows")
        ax.set_xscale("log")
        ax.set_xlim(floor / 2, 1.5)
        ax.set_title(f"{titles[j]}: one threshold {thresholds[j]:.4f}", fontsize=9)
        ax.set_xlabel("share of records ≥ the threshold (0: left edge)")
    names = list(ps.datasets.STREAMING_SUITE)
    centres = np.arange(len(names)) * len(HELD_OUT) + (len(HELD_OUT) - 1) / 2
    axes[0].set_yticks(centres, names, fontsize=8)
    for ax in axes:
        for k in range(1, len(names)):
            ax.axhline(k * len(HELD_OUT) - 0.5, color="0.85", lw=0.6)
    axes[0].set_ylim(len(names) * len(HELD_OUT) - 0.5, -0.5)
    axes[1].legend(loc="lower left", fontsize=8)
    fig.suptitle(f"Held-out seeds {HELD_OUT[0]}–{HELD_OUT[-1]}, one row per stream: each "
                 "signal's one threshold tuned on seeds 0–4", fontsize=10)
    return _save(fig, "monitoring_calibration.png")


def fleet_figure() -> Path:
    """The fleet of docs/monitoring.md's DetectorBank example, its anomaly as an image."""
    names = ["cycle_level_shift", "cycle_missing_peak", "cycle_drift", "count_surge"]
    fleet = {f"{name}/{seed}": ps.datasets.STREAMING_SUITE[name](seed=seed)
             for name in names for seed in (0, 1)}
    ids = list(fleet)
    values = np.array([series.values for series, _ in fleet.values()])
    warm = 336
    bank = DetectorBank(period=24)
    bank.add(ids, warm_up=values[:, :warm])
    anomaly = np.full(values.shape, np.nan)
    for t in range(warm, values.shape[1]):
        anomaly[:, t] = bank.update_many(ids, values[:, t]).anomaly
    fig, ax = plt.subplots(figsize=(10, 3.6))
    image = ax.imshow(anomaly, aspect="auto", interpolation="nearest", cmap="Greys",
                      vmin=0.9, vmax=1.0)
    for row, (_, windows) in enumerate(fleet.values()):
        for k, (a, b) in enumerate(windows):
            ax.plot([a, b], [row, row], color="tab:red", lw=5, alpha=0.35,
                    label="labelled window" if row == k == 0 else None)
    r, c = np.nonzero(anomaly >= 0.999)
    ax.plot(c, r, "v", color="tab:orange", ms=5, label="alarm (anomaly ≥ 0.999)")
    ax.set_yticks(range(len(ids)), ids, fontsize=8)
    ax.set_xlabel("record (hours); the first two weeks: warm-up")
    ax.legend(loc="upper left", fontsize=8, ncol=2, bbox_to_anchor=(0, 1.2))
    fig.colorbar(image, ax=ax, label="anomaly")
    return _save(fig, "monitoring_fleet.png")


def main() -> None:
    thresholds = tuned_thresholds()
    for out in (cycle_figure(thresholds[0]), scores_figure(thresholds[0]),
                calibration_figure(thresholds), fleet_figure()):
        print(f"wrote {out}")
    print(f"thresholds: calibrated {thresholds[0]:.4f}, 1 - discount {thresholds[1]:.4f}")


if __name__ == "__main__":
    main()
