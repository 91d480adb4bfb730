"""``possibly changepoint``: robust online change-point detection on a series from a file.

The file is read by :mod:`possibly.cli.tables` (CSV, TSV, semicolon or spaces; header detected; a
blank cell or line is a missing observation; ``-`` reads standard input). Prints the change
points and the outliers as text, JSON or one CSV row per observation; rows are numbered from 0
and, with a time column, reported with their time stamps too. Several columns
(``--column a b``) are one vector series: :class:`~possibly.changepoint.MultivariateNormalSegments`
(a change of mean, variances or correlation), as ``ChangepointDetector()`` runs a 2-D input.

``--model auto`` (the default) runs the library's default models (``ChangepointDetector()``:
level, linear or quadratic trend per segment, unknown noise) and reports each segment's model;
``--model normal`` the paper's §5.3 normal-mean model with noise scale ``--sigma``, and reports
σ. ``--sigma`` and ``--forgetting`` belong to the paper's model: given without ``--model``
they select it (:func:`detector_options`). ``--period`` (``auto``, the default: inferred from
the series and its time column; a whole number of rows; or ``none``) sets the calibrated
anomaly signal's cycle (the ``anomaly`` column of the CSV output) and, with ``auto`` and
``--model auto``, adds the seasonal segment models when a cycle is found.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from typing import Any

import numpy as np

from possibly.changepoint import ChangepointDetector, infer_period, model_family
from possibly.changepoint.result import model_name
from possibly.cli.arguments import (
    add_input,
    add_robust,
    check_finite,
    check_robust,
    number,
    numeric_range,
    read_input,
    sigma,
)
from possibly.cli.outputs import check_outputs, save_plot, write_text
from possibly.cli.tables import TimeAxis, display

DESCRIPTION = (
    "Robust online change-point detection on one series read from a CSV/TSV/text file (or "
    "standard input): prints the change points, the outliers and the segment means (and, with "
    "--model auto, the default, each segment's model; with --model normal, the noise scale "
    "sigma). Several columns (--column a b) are one vector series (a change of mean, variance "
    "or correlation). Rows are numbered from 0; with a time column (--time, or one column of "
    "ISO dates detected) results carry its time stamps and the plot uses them.")

#: the largest hazard the detector takes with its default outlier level 2 sqrt(hazard) <= 1,
#: and the smallest one above its pruning tolerance (1e-12)
HAZARD = (1e-12, 0.25)
#: ``--model``: the default model family, or the paper's normal-mean model (known noise scale)
MODELS = ("auto", "normal")
#: ``--engine auto`` runs inputs of at most this many rows on the numpy engine
SMALL_INPUT = 1000


def _load(args) -> tuple[np.ndarray, str, TimeAxis | None, list[str] | None]:
    """The series (``(T,)``, or ``(T, k)`` for ``k`` columns), the name of its source, its time
    stamps and its column names (None for one column without a header)."""
    if args.example is not None:
        if args.file is not None:
            raise ValueError("give either FILE or --example, not both")
        if args.column is not None or args.time is not None or args.header != "auto":
            raise ValueError("--column, --time and --header apply to FILE, not to --example")
        from possibly.datasets import well_log

        return np.asarray(well_log(), dtype=float), "well-log example", None, None
    if args.file is None:
        raise ValueError("give a FILE (or - for standard input) or --example well-log")
    table, columns, t = read_input(args, args.column, several=True)
    y = table.numbers(columns)
    names: list[str] | None = [display(table.names[j]) for j in columns]
    if len(columns) == 1:
        y, names = y[:, 0], names if table.has_header else None
    return y, table.source, None if t is None else table.time_axis(t), names


def _at(indices: np.ndarray, time: TimeAxis | None) -> str:
    if time is None:
        return ", ".join(map(str, indices)) or "none"
    return ", ".join(f"{i} [{time.label(i)}]" for i in indices) or "none"


def _model_line(args, res) -> str:
    """The detector line: σ for the normal model, the candidate segment models for auto."""
    if args.model == "normal":
        how = "estimated: MAD of first differences / sqrt 2" if res.sigma_estimated else "given"
        model = f"sigma = {res.sigma:.6g} ({how})"
    elif res.y.ndim == 2:
        model = (f"model auto (a vector of {res.y.shape[1]} columns: normal segments with "
                 "unknown mean and covariance, priors from the median and MAD of each column)")
    else:
        names = [model_name(m) for m in res.params.models]
        kinds = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        model = (f"model auto (segments: {kinds}; noise scale unknown, priors from median "
                 "and MAD)")
    return (f"{'standard' if args.standard else 'robust'} detector: {model}, hazard = "
            f"{args.hazard:g}, forgetting = {res.params.forgetting:g}"
            + (f", tau = {args.tau:g}" if args.tau is not None else "")
            + ("" if args.period is None and res.period is None
               else f", period = {res.period or 'none'}"
               + (" (inferred)" if args.period in (None, "auto") else "")))


def _n_missing(y: np.ndarray) -> int:
    """Missing observations: rows with a blank cell (a vector row is observed whole or not)."""
    return int(np.isnan(y.reshape(len(y), -1)).any(axis=1).sum())


def _text(args, res, y, source, time, names) -> str:
    cps, outs = res.changepoints, res.outliers
    auto = args.model == "auto"
    vector = y.ndim == 2
    lines = [
        f"{source}: {len(y)} observations ({_n_missing(y)} missing), rows numbered "
        f"from 0" + (f"; columns {', '.join(names)} as one vector" if vector else "")
        + (f"; time column {time.name}" if time is not None else ""),
        _model_line(args, res),
        f"change points ({cps.size}): {_at(cps, time)}",
        f"outliers ({outs.size}): {_at(outs, time)}",
        "segments (start, stop, " + ("model, " if auto and not vector else "")
        + "mean without outliers" + (f" of {', '.join(names)}" if vector else "")
        + (", first time stamp):" if time is not None else "):"),
    ]
    # the model column of the default scalar family (one model for normal or a vector)
    models = res.segment_model_names if auto and not vector else [""] * len(res.segments)
    width = max(map(len, models))
    for (a, b), m, name in zip(res.segments, _segment_means(res), models, strict=True):
        mean = ", ".join(f"{v:.6g}" if v is not None else "-" for v in np.atleast_1d(m))
        lines.append(f"  [{a:6d}, {b:6d})  " + (f"{name:{width}s}  " if name else "") + mean
                     + (f"  {time.label(a)}" if time is not None else ""))
    return "\n".join(lines) + "\n"


def _json(args, res, y, source, time, names) -> str:
    cps, outs = res.changepoints, res.outliers
    doc = {
        "source": source, "n": len(y), "n_missing": _n_missing(y),
        "index_base": 0, "time_column": None if time is None else time.name,
        "model": args.model,
    }
    if y.ndim == 2:  # segment means are lists in this order
        doc["columns"] = names
    if args.model == "normal":  # σ belongs to the normal model; auto has no σ
        doc.update(sigma=res.sigma, sigma_estimated=res.sigma_estimated)
    else:
        doc["segment_models"] = [model_name(m) for m in res.params.models]
    doc.update({
        "hazard": args.hazard, "forgetting": res.params.forgetting,
        "version": "standard" if args.standard else "robust", "tau": args.tau,
        "period": res.period,
        "changepoints": cps.tolist(), "outliers": outs.tolist(),
        "segments": [{"start": a, "stop": b, "mean": m}
                     for (a, b), m in zip(res.segments, _segment_means(res), strict=True)],
    })
    if args.model == "auto":
        for seg, name in zip(doc["segments"], res.segment_model_names, strict=True):
            seg["model"] = name
    if time is not None:
        doc["changepoint_times"] = [time.labels[i] for i in cps]
        doc["outlier_times"] = [time.labels[i] for i in outs]
        for seg in doc["segments"]:
            seg["start_time"] = time.labels[seg["start"]]
    return json.dumps(doc, indent=1) + "\n"


def _csv(args, res, y, time, names) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    auto = args.model == "auto"
    n = len(y)
    # a vector series: one y and one mean column per input column (y_a, y_b, mean_a, mean_b)
    ys, means = (y, res.mean) if y.ndim == 2 else (y[:, None], res.mean[:, None])
    y_names, mean_names = (([f"y_{c}" for c in names], [f"mean_{c}" for c in names])
                           if y.ndim == 2 else (["y"], ["mean"]))
    w.writerow(["t", *(["time"] if time is not None else []), *y_names, "map_run_length",
                *mean_names, "consistency", "discount", "changepoint", "outlier",
                *(["segment_model"] if auto else []), "anomaly"])
    is_cp, is_out = np.zeros(n, int), np.zeros(n, int)
    is_cp[res.changepoints], is_out[res.outliers] = 1, 1
    # the model of the (final MAP) segment holding each row
    model = [name for (a, b), name in zip(res.segments, res.segment_model_names, strict=True)
             for _ in range(a, b)]
    # each column read once (res.consistency computes the whole array)
    consistency, discount = res.consistency.tolist(), res.discount.tolist()
    anomaly = res.anomaly.tolist()
    run_length = res.map_run_length.tolist()
    for t in range(n):
        w.writerow([t, *([time.labels[t]] if time is not None else []), *map(_fmt, ys[t]),
                    run_length[t], *map(_fmt, means[t]), _fmt(consistency[t]),
                    _fmt(discount[t]), is_cp[t], is_out[t], *([model[t]] if auto else []),
                    _fmt(anomaly[t])])
    return buf.getvalue()


def _plot(res, path, title: str, time: TimeAxis | None, names: list[str] | None) -> None:
    index = None if time is None else time.values
    if res.y.ndim == 2:
        save_plot(_plot_vector, path, res, title=title, names=names, index=index,
                  xlabel="row" if time is None else time.name)
        return
    from possibly.plotting.changepoint_plots import plot_changepoints

    save_plot(plot_changepoints, path, res, title=title, ylabel=None if names is None
              else names[0], index=index)


def _plot_vector(res, path, *, title: str, names: list[str], index=None,
                 xlabel: str = "row") -> None:
    """One panel per column: its observations, each segment's mean of the column (outliers
    left out), the change points and the outlying rows, on a shared x axis."""
    from possibly.plotting import pyplot

    plt = pyplot()
    k = res.y.shape[1]
    if index is not None and _has_gaps(index):  # rows numbered instead
        index, xlabel = None, "row"
    x = np.arange(len(res.y)) if index is None else np.asarray(index)
    fig, axes = plt.subplots(k, 1, figsize=(11, 1.2 + 2.4 * k), sharex=True,
                             layout="constrained", squeeze=False)
    means = _segment_means(res)
    outs = res.outliers
    for j, (ax, name) in enumerate(zip(axes[:, 0], names, strict=True)):
        ax.plot(x, res.y[:, j], ".", ms=2.5, color="0.35", label="observations")
        for i, ((a, b), m) in enumerate(zip(res.segments, means, strict=True)):
            if m[j] is not None:
                ax.hlines(m[j], x[a], x[b - 1], color="tab:orange", lw=2.0,
                          label="segment means" if i == 0 else None)
        for i, c in enumerate(res.changepoints):
            ax.axvline(x[c], color="tab:green", lw=1.0,
                       label="detected change points" if i == 0 else None)
        if outs.size:
            ax.plot(x[outs], res.y[outs, j], "o", mfc="none", mec="tab:red", ms=7,
                    label=f"outlying rows ({outs.size})")
        ax.set_ylabel(name)
    axes[0, 0].set_title(title, fontsize=10)
    axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    axes[-1, 0].set_xlabel(xlabel)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _has_gaps(index: np.ndarray) -> bool:
    """Whether time stamps are missing (NaT or NaN): the plot then numbers the rows."""
    return bool(np.isnat(index).any() if index.dtype.kind == "M" else np.isnan(index).any())


def run(args: argparse.Namespace) -> int:
    check_robust(args)
    # outputs first: a bad path should not wait for (or waste) the computation
    out, plot = check_outputs(args)
    # parameters next: a bad value should not wait for (or trigger) a data download
    options = detector_options(args)
    if args.column is not None and len(args.column) > 1 and args.model == "normal":
        raise ValueError(f"--column {' '.join(args.column)}: several columns are one vector "
                         "series, which --model normal (also chosen by --sigma or --forgetting "
                         "without --model) cannot take: give one column, or --model auto")
    if args.period not in (None, "none") and args.column is not None and len(args.column) > 1:
        raise ValueError(f"--period applies to one column (the cycle of one value per row), "
                         f"got --column {' '.join(args.column)}")
    # not given: "auto" (a vector series then has none); "none": None
    cycle = "auto" if args.period is None else None if args.period == "none" else args.period
    det = ChangepointDetector(hazard=args.hazard, robust=not args.standard, tau=args.tau,
                              period=cycle, **options)
    y, source, time, names = _load(args)
    # the numpy engine for a short input: numba's start in a new process (importing it and
    # loading the cached loops) costs more than the fit
    det.set_params(engine="numpy" if args.engine == "auto" and len(y) <= SMALL_INPUT
                   else args.engine)
    with numeric_range(source, y):
        if cycle == "auto":
            _calendar_cycles(det, y, time, args.model == "auto")
        res = det.fit(y)
    check_finite(source, y, res.mean, "segment mean estimate")
    if args.format == "json":
        text = _json(args, res, y, source, time, names)
    elif args.format == "csv":
        text = _csv(args, res, y, time, names)
    else:
        text = _text(args, res, y, source, time, names)
    # files before standard output: a closed pipe (| head) must not lose them
    if plot is not None:
        _plot(res, plot, f"{source}: change points and outliers", time, names)
        print(f"plot written to {plot}", file=sys.stderr)
    if out is not None:
        write_text(out, text)
        print(f"results written to {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def _calendar_cycles(det: ChangepointDetector, y: np.ndarray, time: TimeAxis | None,
                     default_models: bool) -> None:
    """For ``--period auto`` with a time column of dates: ``det`` given the periods inferred
    from the values and their dates (the seasonal models with ``default_models``, and the
    anomaly signal's period), as ``fit`` of a pandas Series with those dates would infer them,
    without importing pandas. Without dates (or with a missing one), ``det`` is left to infer
    them from the values."""
    stamps = None if time is None else time.values
    if y.ndim != 1 or stamps is None or stamps.dtype.kind != "M" or np.isnat(stamps).any():
        return
    periods = infer_period(y, stamps)
    if periods is None:
        det.set_params(period=None)
        return
    if default_models:
        det.set_params(model=model_family(period=periods))
    det.set_params(period=int(round(periods[0])))


def period(text: str) -> int | str:
    """An argparse type: ``auto``, ``none`` or a whole number of rows in ``[2, 10⁶]``.

    Examples
    --------
    >>> period("auto"), period("none"), period("24")
    ('auto', 'none', 24)
    """
    if text in ("auto", "none"):
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 2 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"must be 'auto', 'none' or a whole number of rows "
                                         f"in [2, 1000000], got {display(text)!r}")
    return value


def _fmt(v: float) -> str:
    return "" if math.isnan(v) else repr(float(v))


def _segment_means(res) -> list[Any]:
    """Per segment, the mean of its observations (outliers and missing ones left out): a
    float, or None when none is left; a list of them, one per column, for a vector series."""
    y = res.y.reshape(len(res.y), -1).copy()
    y[res.outliers] = np.nan
    out: list[Any] = []
    for a, b in res.segments:
        seg = y[a:b]
        seg = seg[~np.isnan(seg).any(axis=1)]
        means = [float(v) for v in seg.mean(axis=0)] if len(seg) else [None] * y.shape[1]
        out.append(means if res.y.ndim == 2 else means[0])
    return out


def add_model(p: argparse.ArgumentParser, sigma_help: str) -> None:
    """``--model``, ``--sigma``, ``--hazard`` and ``--forgetting``, shared with
    ``changepoint-many`` (resolved by :func:`detector_options`)."""
    p.add_argument("--model", choices=MODELS, default=None,
                   help="segment model: 'auto' = the library's default model family (constant "
                        "level, linear or quadratic trend per segment, unknown noise scale, "
                        "priors from the median and MAD of the series); 'normal' = the paper's "
                        "section 5.3 normal-mean model (constant level) with noise scale --sigma "
                        "(default: auto, or normal when --sigma or --forgetting is given)")
    p.add_argument("--sigma", type=sigma, default=None,
                   help=f"{sigma_help} of --model normal, or 'auto' (the default: MAD of first "
                        "differences / sqrt 2); given without --model it selects normal")
    p.add_argument("--hazard", type=number(*HAZARD, low_open=True), default=2.5e-3,
                   help=f"possibility of a change at each step, in ({HAZARD[0]:g}, "
                        f"{HAZARD[1]:g}] (2.5e-3)")
    p.add_argument("--forgetting", type=number(0, 1, low_open=True), default=None,
                   help="precision forgetting factor, in (0, 1]; without --model it selects "
                        "--model normal (default: 0.9 for normal, 1 for auto)")


def detector_options(args: argparse.Namespace) -> dict:
    """The model options of :class:`~possibly.changepoint.ChangepointDetector` from
    ``--model``, ``--sigma`` and ``--forgetting``; ``args.model`` is set to the one chosen.

    ``--sigma`` and ``--forgetting`` belong to the paper's model: given without ``--model``
    they select ``normal``; ``--model auto --sigma`` is refused (the family has no σ).
    """
    if args.model is None:
        given = args.sigma is not None or args.forgetting is not None
        args.model = "normal" if given else "auto"
    if args.model == "auto" and args.sigma is not None:
        raise ValueError("--sigma is the noise scale of --model normal; --model auto estimates "
                         "the noise of each segment: drop --sigma or use --model normal")
    options = {"model": args.model, "forgetting": args.forgetting}
    if args.model == "normal":
        options["sigma"] = "auto" if args.sigma is None else args.sigma
    return options


def register(sub) -> None:
    p = sub.add_parser("changepoint", help="robust online change-point detection on a series",
                       description=DESCRIPTION)
    add_input(p, several=True, required=False)
    p.add_argument("--example", choices=["well-log"], help="use a bundled example data set")
    add_model(p, "noise scale within a segment")
    p.add_argument("--period", type=period, default=None,
                   help="the series' cycles: 'auto' (default) infers them from the series and "
                        "its time column (with --model auto, a cycle found also adds seasonal "
                        "segment models; a series without a strong cycle gets the results of "
                        "'none'); a cycle length in rows, for the calibrated anomaly signal "
                        "(the anomaly column of --format csv); or 'none'")
    add_robust(p)
    p.add_argument("--engine", choices=["auto", "numpy", "numba"], default="auto",
                   help="'numba': the compiled loop (needs numba); 'numpy': numpy's steps (the "
                        "default models' results agree to about 1e-10, the paper's model's "
                        f"bit for bit); 'auto': numpy up to {SMALL_INPUT} rows, where it is "
                        "quicker to start, else numba when installed (auto)")
    p.add_argument("--format", choices=["text", "json", "csv"], default="text",
                   help="output format (text)")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="write the output to FILE instead of standard output")
    p.add_argument("--plot", metavar="IMAGE",
                   help="write a plot of the series and the results (.png added when there "
                        "is no extension)")
    p.set_defaults(func=run)
