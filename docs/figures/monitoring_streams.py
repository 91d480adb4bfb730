"""Figures of docs/monitoring.md, "Monitoring streams", drawn from the synthetic streaming suite.

Run from the repository root: ``python docs/figures/monitoring_streams.py``. It writes
``monitoring_cycle.png`` (a cyclic stream with its labelled windows, the change points the
detector flags online and finds in hindsight, and the alarms of the one threshold) and
``monitoring_scores.png`` (the per-record score on several streams against that one
threshold) next to itself. Everything is generated: :data:`possibly.datasets.STREAMING_SUITE`
at fixed seeds.

As ``benchmarks/bench_streaming.py`` does: each stream's first eighth is its warm-up (the
priors come from it, its records are not scored), and the one threshold for all streams is
the one :func:`~possibly.changepoint.metrics.best_threshold` picks on seeds 0 to 4 of the
whole suite; the figures show held-out seed 5.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np

import possibly as ps
from possibly.changepoint import automatic_prior, model_family
from possibly.changepoint.metrics import alarm_indices, best_threshold

HERE = Path(__file__).resolve().parent
TUNE_SEEDS = (0, 1, 2, 3, 4)
SHOWN_SEED = 5
CYCLE = "cycle_level_shift"
SHOWN = ("cycle_idle", "cycle_level_shift", "cycle_missing_peak", "cpu_bursts",
         "latency_heavy_tail", "idle_stream")


def warm_up(n: int) -> int:
    return n // 8


def stream_score(y: np.ndarray) -> tuple[np.ndarray, ps.ChangepointResult]:
    """The per-record score of the default detector, priors from the warm-up (NaN there), and
    the detector's result. The score is ``1 − discount`` (what ``score_one`` of the river
    adapter gives); ``fit`` gives the same numbers as ``update`` record by record."""
    # TODO(coordinator): the calibrated signal, result.anomaly, once it is on main
    w = warm_up(len(y))
    det = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:w])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = det.fit(y)
    score = 1.0 - np.asarray(res.discount, dtype=float)
    score[:w] = np.nan
    score[~np.isfinite(score)] = np.nan
    return score, res


def online_flags(y: np.ndarray) -> np.ndarray:
    """The records after the warm-up whose ``update`` set ``change_detected``."""
    w = warm_up(len(y))
    det = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:w])),
                                 history=False)
    det.fit(y[:w])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([t for t in range(w, len(y)) if det.update(y[t]).change_detected],
                        dtype=np.int64)


def tuned_threshold() -> float:
    scores, windows = [], []
    for make in ps.datasets.STREAMING_SUITE.values():
        for seed in TUNE_SEEDS:
            series, w = make(seed=seed)
            scores.append(stream_score(series.values)[0])
            windows.append(w)
    return best_threshold(scores, windows).threshold


def _shade(ax, index, windows, warm: int) -> None:
    ax.axvspan(index[0], index[warm - 1], color="0.9", lw=0, label="warm-up")
    for k, (a, b) in enumerate(windows):
        ax.axvspan(index[a], index[b - 1], color="tab:red", alpha=0.2, lw=0,
                   label="labelled window" if k == 0 else None)


def cycle_figure(threshold: float) -> Path:
    series, windows = ps.datasets.STREAMING_SUITE[CYCLE](seed=SHOWN_SEED)
    y, index = series.values, series.index
    score, res = stream_score(y)
    alarms = alarm_indices(score, threshold)
    warm = warm_up(len(y))
    final = res.changepoints[res.changepoints >= warm]
    flags = online_flags(y)

    fig = plt.figure(figsize=(10, 8.5))
    top = fig.add_subplot(3, 1, 1)
    zoom = fig.add_subplot(3, 1, 2)
    low = fig.add_subplot(3, 1, 3, sharex=top)
    a = int(windows[0, 0])
    span = slice(max(a - 14 * 24, 0), a + 7 * 24)  # two weeks before the first shift, one after
    for ax, part in ((top, slice(None)), (zoom, span)):
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
    top.set_title(f"{CYCLE} (hourly, seed {SHOWN_SEED}), {len(windows)} level shifts: "
                  f"{flags.size} change flags online, {final.size} change points in hindsight "
                  "after the warm-up", fontsize=10)
    top.legend(loc="lower left", fontsize=8, ncol=4)
    zoom.xaxis.set_major_locator(mdates.DayLocator(interval=3))
    zoom.xaxis.set_major_formatter(mdates.DateFormatter("%b %d"))
    zoom.set_title("three weeks around the first shift: the daily cycle is cut into segments",
                   fontsize=9)
    axes = [top, low]
    ax = axes[1]
    _shade(ax, index, windows, warm)
    ax.plot(index, score, lw=0.6, color="tab:purple")
    ax.axhline(threshold, color="k", lw=0.8, ls="--", label=f"one threshold ({threshold:.3f})")
    ax.plot(index[alarms], score[alarms], "v", color="tab:orange", ms=6,
            label=f"alarm ({alarms.size})")
    ax.set_ylabel("1 − discount")
    ax.set_ylim(-0.02, 1.3)
    ax.legend(loc="upper left", fontsize=8, ncol=4)
    fig.tight_layout()
    out = HERE / "monitoring_cycle.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def scores_figure(threshold: float) -> Path:
    fig, axes = plt.subplots(len(SHOWN), 1, figsize=(10, 1.6 * len(SHOWN)))
    for ax, name in zip(axes, SHOWN, strict=True):
        series, windows = ps.datasets.STREAMING_SUITE[name](seed=SHOWN_SEED)
        score, _ = stream_score(series.values)
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
    axes[0].set_title(f"1 − discount per record (seed {SHOWN_SEED}); dashed: the one threshold "
                      f"{threshold:.3f} tuned on seeds 0–4; red: labelled windows; "
                      "triangles: alarms", fontsize=9)
    axes[-1].set_xlabel("record")
    fig.tight_layout()
    out = HERE / "monitoring_scores.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main() -> None:
    threshold = tuned_threshold()
    for out in (cycle_figure(threshold), scores_figure(threshold)):
        print(f"wrote {out}")
    print(f"threshold {threshold:.4f}")


if __name__ == "__main__":
    main()
