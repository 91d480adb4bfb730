"""``possibly changepoint``: robust online change-point detection on a series from a file.

The file holds one value per line, or delimited columns (comma, tab, semicolon or spaces) with
an optional header row; empty cells and NA/NaN mark missing observations. ``-`` reads standard
input. Prints the change points and the outliers (text, JSON or per-observation CSV).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys

import numpy as np

from possibly.changepoint import ChangepointDetector

MISSING = {"", "na", "nan", "n/a", "null", "none", "-"}


def _sigma(text: str):
    if text == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number, got {text!r}") from None


def _cell(text: str, line: int, column: str) -> float:
    s = text.strip()
    if s.lower() in MISSING:
        return math.nan
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"non-numeric cell {s!r} at line {line}, column {column}") from None


def _is_number(text: str) -> bool:
    s = text.strip()
    if s.lower() in MISSING:
        return True
    try:
        float(s)
    except ValueError:
        return False
    return True


def _split(line: str, delimiter: str | None) -> list[str]:
    if delimiter is None:
        return line.split()
    return next(csv.reader([line], delimiter=delimiter))


def read_series(text: str, column: str | None = None, source: str = "input") -> np.ndarray:
    """Parse a one-column or delimited text into a float array (NaN for missing cells).

    Examples
    --------
    >>> read_series("a,b\\n1,2\\n3,\\n", column="b").tolist()
    [2.0, nan]
    >>> read_series("1.5\\n2.5\\n").tolist()
    [1.5, 2.5]
    """
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines())
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{source} is empty: no values to analyse")
    first = lines[0][1]
    delimiter = next((d for d in (",", "\t", ";") if d in first), None)
    cells = _split(first, delimiter)
    header = None
    if not all(_is_number(c) for c in cells):
        header = [c.strip() for c in cells]
        lines = lines[1:]
        if not lines:
            raise ValueError(f"{source} has a header but no values")
    width = len(cells)
    if column is None:
        if width != 1:
            names = ", ".join(header) if header else f"0..{width - 1}"
            raise ValueError(f"{source} has {width} columns ({names}): choose one with --column")
        index, name = 0, header[0] if header else "0"
    elif header is not None and column in header:
        index, name = header.index(column), column
    else:
        try:
            index = int(column)
        except ValueError:
            known = ", ".join(header) if header else f"0..{width - 1} (no header row)"
            raise ValueError(f"column {column!r} not found in {source}; columns: {known}") \
                from None
        if not 0 <= index < width:
            raise ValueError(f"--column index must be in [0, {width}), got {index}")
        name = str(index)
    values = []
    for lineno, ln in lines:
        row = _split(ln, delimiter)
        if len(row) != width:
            raise ValueError(f"line {lineno} of {source} has {len(row)} cells, expected {width}")
        values.append(_cell(row[index], lineno, name))
    y = np.array(values, dtype=np.float64)
    if np.isnan(y).all():
        raise ValueError(f"{source}: column {name} has no observed (non-missing) value")
    return y


def _load(args) -> tuple[np.ndarray, str]:
    if args.example is not None:
        if args.file is not None:
            raise ValueError("give either FILE or --example, not both")
        from possibly.datasets import well_log

        return well_log(), "well-log example"
    if args.file is None:
        raise ValueError("give a FILE (or - for standard input) or --example well-log")
    if args.file == "-":
        return read_series(sys.stdin.read(), args.column, "standard input"), "standard input"
    try:
        with open(args.file, encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise ValueError(f"{args.file} is not a text file") from None
    return read_series(text, args.column, args.file), args.file


def run(args: argparse.Namespace) -> int:
    # parameters first: a bad value should not wait for (or trigger) a data download
    det = ChangepointDetector(sigma=args.sigma, hazard=args.hazard, forgetting=args.forgetting,
                              robust=not args.standard, tau=args.tau)
    y, source = _load(args)
    res = det.fit(y)
    cps, outs = res.changepoints, res.outliers
    if args.format == "json":
        seg_means = _segment_means(res)
        doc = {
            "source": source, "n": int(y.size), "n_missing": int(np.isnan(y).sum()),
            "sigma": res.sigma, "sigma_estimated": res.sigma_estimated,
            "hazard": args.hazard, "forgetting": args.forgetting,
            "version": "standard" if args.standard else "robust", "tau": args.tau,
            "changepoints": cps.tolist(), "outliers": outs.tolist(),
            "segments": [{"start": a, "stop": b, "mean": m}
                         for (a, b), m in zip(res.segments, seg_means, strict=True)],
        }
        print(json.dumps(doc, indent=1))
    elif args.format == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["t", "y", "map_run_length", "mean", "consistency", "discount",
                    "changepoint", "outlier"])
        is_cp, is_out = np.zeros(y.size, int), np.zeros(y.size, int)
        is_cp[cps], is_out[outs] = 1, 1
        for t in range(y.size):
            w.writerow([t, _fmt(y[t]), int(res.map_run_length[t]), _fmt(res.mean[t]),
                        _fmt(res.consistency[t]), _fmt(res.discount[t]), is_cp[t], is_out[t]])
        sys.stdout.write(buf.getvalue())
    else:
        how = "estimated: MAD of first differences / sqrt 2" if res.sigma_estimated else "given"
        print(f"{source}: {y.size} observations ({int(np.isnan(y).sum())} missing)")
        print(f"{'standard' if args.standard else 'robust'} detector: sigma = {res.sigma:.6g} "
              f"({how}), hazard = {args.hazard:g}, forgetting = {args.forgetting:g}"
              + (f", tau = {args.tau:g}" if args.tau is not None else ""))
        print(f"change points ({cps.size}): {', '.join(map(str, cps)) or 'none'}")
        print(f"outliers ({outs.size}): {', '.join(map(str, outs)) or 'none'}")
        print("segments (start, stop, mean without outliers):")
        for (a, b), m in zip(res.segments, _segment_means(res), strict=True):
            print(f"  [{a:6d}, {b:6d})  {m:.6g}" if m is not None else f"  [{a:6d}, {b:6d})  -")
    if args.plot:
        from possibly.plotting.changepoint import plot_changepoints

        path = plot_changepoints(res, args.plot, title=f"{source}: change points and outliers")
        print(f"plot written to {path}", file=sys.stderr)
    return 0


def _fmt(v: float) -> str:
    return "" if math.isnan(v) else repr(float(v))


def _segment_means(res) -> list[float | None]:
    y = res.y.copy()
    y[res.outliers] = np.nan
    out = []
    for a, b in res.segments:
        seg = y[a:b]
        seg = seg[~np.isnan(seg)]
        out.append(float(seg.mean()) if seg.size else None)
    return out


def register(sub) -> None:
    p = sub.add_parser("changepoint", help="robust online change-point detection",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("file", nargs="?", metavar="FILE", help="text/CSV file, or - for stdin")
    p.add_argument("--example", choices=["well-log"], help="use a bundled example data set")
    p.add_argument("--column", help="column name (header row) or 0-based index")
    p.add_argument("--sigma", type=_sigma, default="auto",
                   help="noise scale within a segment, or 'auto' (default: auto)")
    p.add_argument("--hazard", type=float, default=2.5e-3,
                   help="possibility of a change at each step, in (0, 1) (2.5e-3)")
    p.add_argument("--forgetting", type=float, default=0.9,
                   help="precision forgetting factor, in (0, 1] (0.9)")
    p.add_argument("--standard", action="store_true",
                   help="standard (non-robust) recursion: no discount")
    p.add_argument("--tau", type=float, default=None,
                   help="threshold variant: discount only when gamma <= tau")
    p.add_argument("--format", choices=["text", "json", "csv"], default="text",
                   help="output format (text)")
    p.add_argument("--plot", metavar="PNG", help="write a plot of the series and the results")
    p.set_defaults(func=run)
