"""``possibly kalman``: robust Kalman filtering of position measurements from a file.

The file is read by :mod:`possibly.cli.tables`, like every command's (a blank cell or line is a
missing observation, filled by prediction). One column is a 1-D track; several columns
(``--column x y``) are one vector observation per row, e.g. a 2-D track. Writes, per row
(numbered from 0, with its time stamp when there is a time column), the filtered (or smoothed)
positions and velocities with their standard deviations, and the consistency and discount of
each observation.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
import warnings

import numpy as np

from possibly.cli.arguments import (
    SCALE,
    add_input,
    add_robust,
    check_finite,
    check_robust,
    number,
    numeric_range,
    read_input,
)
from possibly.cli.outputs import check_outputs, save_plot, write_text
from possibly.cli.tables import TimeAxis, display
from possibly.filters import LinearGaussianModel, constant_velocity, constant_velocity_noise
from possibly.filters.filter_result import (
    DISCOUNTED_BELOW,
    MOSTLY_DISCOUNTED,
    MostlyDiscountedWarning,
)
from possibly.filters.kalman import COVERAGE, KalmanFilter

DESCRIPTION = (
    "Robust Kalman filter (nearly-constant-velocity model) of positions read from a CSV/TSV/"
    "text file (or standard input): one column is a 1-D track, several columns (--column x y) "
    "one vector observation per row. Writes one CSV row per time step (numbered from 0, with "
    "its time stamp when there is a time column): positions, velocities, their standard "
    "deviations, and the consistency and discount of each observation.")

#: ranges of the model's arguments on the command line: the noise covariances stay finite
DT = (1e-10, 1e10)


def _names(columns: list[str]) -> list[str]:
    """Output columns; the one-column names are kept for a 1-D track."""
    q = ("observation", "position", "velocity", "position_sd", "velocity_sd")
    if len(columns) == 1:
        return list(q)
    return [f"{name}_{c}" for name in q for c in columns]


def _format(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if math.isinf(x) else f"{x:.10g}")


def _table(ys, time, columns, mean, sd, fr) -> str:
    k = ys.shape[1]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["t", *(["time"] if time is not None else []), *_names(columns),
                "consistency", "discount"])
    pos, vel = slice(0, 2 * k, 2), slice(1, 2 * k, 2)  # state: (position, velocity) per axis
    for t in range(ys.shape[0]):
        values = [*ys[t], *mean[t, pos], *mean[t, vel], *sd[t, pos], *sd[t, vel],
                  fr.consistency[t], fr.discount[t]]
        w.writerow([t, *([time.labels[t]] if time is not None else []),
                    *(_format(float(x)) for x in values)])
    return buf.getvalue()


def _plot(ys, mean, sd, fr, path, title: str, time: TimeAxis | None, columns: list[str],
          smoothed: bool) -> None:
    """Every observed axis (one panel each) with its estimate and ±2 sd band, the discounts."""
    from possibly.plotting.kalman_plots import plot_filtered_series

    pos = slice(0, 2 * ys.shape[1], 2)  # state: (position, velocity) per axis
    save_plot(plot_filtered_series, path, ys, mean[:, pos], fr.discount, title=title,
              sd=sd[:, pos], smoothed=smoothed, ylabel=columns,
              index=None if time is None else time.values)


def model_from_data(ys: np.ndarray, dt: float, accel_sd: float | None,
                    obs_sd: float | None) -> LinearGaussianModel:
    """The constant-velocity model of a track ``ys`` (T, k), with the noise scales not given
    (None) set from the data (:func:`possibly.filters.constant_velocity_noise`); errors name
    the command-line flags."""
    given = accel_sd is not None and obs_sd is not None
    try:
        accel_sd, obs_sd = constant_velocity_noise(ys, dt, accel_sd=accel_sd, obs_sd=obs_sd)
    except ValueError as exc:  # no observation at all
        raise ValueError(str(exc).replace("give accel_sd and obs_sd",
                                          "give --accel-sd and --obs-sd")) from None
    try:
        return constant_velocity(dt=dt, accel_sd=accel_sd, obs_sd=obs_sd, ndim=ys.shape[1])
    except ValueError as exc:
        if given:
            raise
        raise ValueError(f"the noise scales set from the data (--accel-sd {accel_sd:.6g} "
                         f"--obs-sd {obs_sd:.6g}) are out of the model's range ({exc}): "
                         "rescale the data, or give both") from None


def _noise_note(model: LinearGaussianModel, args: argparse.Namespace) -> str:
    """What the noise scales were, when some were set from the data ('' otherwise)."""
    if args.accel_sd is not None and args.obs_sd is not None:
        return ""
    obs_sd = math.sqrt(float(model.R[0, 0]))
    accel_sd = math.sqrt(float(model.Q[1, 1])) / args.dt  # Q = accel_sd² g gᵀ, g₂ = dt
    return f"noise scales from the data: --accel-sd {accel_sd:.4g} --obs-sd {obs_sd:.4g}"


def _discounted_note(fr, args: argparse.Namespace) -> str:
    """A warning line when most observations were discounted ('' otherwise)."""
    frac = float(fr.discounted_fraction)
    if frac <= MOSTLY_DISCOUNTED:
        return ""
    head = (f"warning: {frac:.0%} of the observations were discounted below "
            f"{DISCOUNTED_BELOW:g}: the model does not fit the data; ")
    if args.accel_sd is None and args.obs_sd is None:  # both were set from the data already
        return head + ("the scales set from the data may be too small (values in steps or "
                       "constant stretches): give --obs-sd and --accel-sd in the data's units")
    return head + ("give --obs-sd and --accel-sd in the data's units, or leave them out to "
                   "set them from the data")


def run(args: argparse.Namespace) -> int:
    check_robust(args)
    out, plot = check_outputs(args)  # before any work
    table, idx, t = read_input(args, args.column, several=True)
    columns = [display(table.names[j]) for j in idx]
    ys = table.numbers(idx)
    time = None if t is None else table.time_axis(t)
    k = ys.shape[1]
    try:
        model = model_from_data(ys, args.dt, args.accel_sd, args.obs_sd)
    except ValueError as exc:
        raise ValueError(f"{table.source}: {exc}") from None
    kf = KalmanFilter(model, robust=not args.standard, tau=args.tau, dim=args.dim,
                      coverage=args.coverage)
    obs = ys[:, 0] if k == 1 else ys
    with numeric_range(table.source, ys), warnings.catch_warnings():
        warnings.simplefilter("ignore", MostlyDiscountedWarning)  # reported below, in one line
        # "auto": the library's rule, numpy's steps for a short input (a new process has not
        # loaded the compiled loop, which costs more than they do)
        if args.smooth:
            res = kf.smooth(obs, engine=args.engine)
            mean, variance, fr = res.mean, res.variance, res.filtered
        else:
            fr = kf.filter(obs, engine=args.engine)
            mean, variance = fr.mean, fr.variance
    check_finite(table.source, ys, mean, "filtered state")
    # the max-marginal sd of each component: finite once it is informed, inf before
    sd = np.sqrt(variance)
    text = _table(ys, time, columns, mean, sd, fr)
    kind = "standard" if args.standard else "robust"
    if plot is not None:  # files before standard output: a closed pipe must not lose them
        what = "smoother" if args.smooth else "filter"
        _plot(ys, mean, sd, fr, plot, f"{kind} Kalman {what}: {table.source}", time, columns,
              args.smooth)
    if out is not None:
        write_text(out, text)
        missing = int(np.isnan(ys).sum())  # missing values (a component of a row counts)
        low = int(np.sum(fr.discount < 1e-3))
        noise = _noise_note(model, args)
        print(f"{ys.shape[0]} time steps ({missing} missing); {low} observation(s) discounted "
              f"below 1e-3; wrote {out}" + (f" and {plot}" if plot is not None else "")
              + (f"; {noise}" if noise else ""))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
        if plot is not None:
            print(f"plot written to {plot}", file=sys.stderr)
        noise = _noise_note(model, args)
        if noise:  # on standard error: standard output is the table
            print(f"possibly kalman: note: {noise}", file=sys.stderr)
    warning = _discounted_note(fr, args)
    if warning:  # on standard error: standard output may be the table
        print(f"possibly kalman: {warning}", file=sys.stderr)
    return 0


def add_coverage(p: argparse.ArgumentParser) -> None:
    """``--coverage`` of the relative discount (shared with ``kalman-many``)."""
    inside = number(0, 1, low_open=True, high_open=True)

    def parse(text: str) -> float | None:
        return None if text.strip().lower() == "none" else inside(text)

    p.add_argument("--coverage", type=parse, default=COVERAGE, metavar="P",
                   help=f"observations inside the predictive region of probability P are "
                        f"taken whole, the others discounted relative to its edge: a number "
                        f"in (0, 1), or 'none' for the paper's discount c^(1/d) "
                        f"({COVERAGE:g})")


def add_state_space_model(p: argparse.ArgumentParser) -> None:
    """The options of the constant-velocity model (shared with ``kalman-many``)."""
    p.add_argument("--model", choices=["constant-velocity"], default="constant-velocity",
                   help="state-space model (constant-velocity: positions observed)")
    p.add_argument("--dt", type=number(*DT), default=1.0,
                   help=f"time step, in [{DT[0]:g}, {DT[1]:g}] (1)")
    p.add_argument("--accel-sd", type=number(*SCALE), default=None,
                   help=f"acceleration noise standard deviation, in [{SCALE[0]:g}, "
                        f"{SCALE[1]:g}] (default: set from the data, from the robust spread "
                        "of its second differences at several lags)")
    p.add_argument("--obs-sd", type=number(*SCALE), default=None,
                   help=f"measurement noise standard deviation, in [{SCALE[0]:g}, "
                        f"{SCALE[1]:g}] (default: set from the data, with --accel-sd)")


def register(sub) -> None:
    p = sub.add_parser("kalman", help="robust Kalman filter of a 1-D or 2-D track",
                       description=DESCRIPTION)
    add_input(p, several=True)
    add_state_space_model(p)
    add_robust(p)
    p.add_argument("--engine", choices=["auto", "numpy", "numba"], default="auto",
                   help="'numba': the compiled loop (needs numba); 'numpy': numpy's steps (the "
                        "two agree to about 1e-12); 'auto': numpy's steps for a short input, "
                        "which finish before the compiled loop would have loaded, else numba "
                        "when installed (auto)")
    add_coverage(p)
    p.add_argument("--dim", type=number(0, 1e6, low_open=True), default=None,
                   help="effective dimension d of the discount c^(1/d), in (0, 1e6] (the "
                        "state dimension)")
    p.add_argument("--smooth", action="store_true",
                   help="write smoothed instead of filtered states")
    p.add_argument("--out", metavar="CSV", default=None, help="output CSV (default: stdout)")
    p.add_argument("--plot", metavar="IMAGE", default=None,
                   help="also write a plot: one panel per observed axis (observations, "
                        "position ± 2 sd), and the discounts (.png added when there is no "
                        "extension)")
    p.set_defaults(func=run)
