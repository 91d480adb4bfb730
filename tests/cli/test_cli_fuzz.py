"""Fuzzing the command line's reader (#14): random CSV text (delimiters, blanks, BOM, headers,
numbers up to 1e308, NaN/inf text, dates, junk, raw bytes) through ``changepoint`` and
``kalman``: the exit status is 0, or 2 with one line on stderr naming the command; never a
traceback, an internal error, a numpy repr or an undecodable-byte escape.

Spreadsheet-style exports (``#N/A`` and other error values, pandas' numeric header, a date
column listed newest first, a notes column with quoted delimiters and line breaks, CRLF, BOM)
are read back to the values they were generated from, in time order."""

from __future__ import annotations

import csv
import datetime as dt
import io
import math

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from possibly.cli import main

NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: f"{v:g}"),
    st.integers(-10**6, 10**6).map(str),
    st.sampled_from(["1e308", "-1.7976931348623157e308", "5e-324", "0", "-0.0", "1,5"]),
)
SPECIAL = st.sampled_from(["", "", "NA", "nan", "NaN", "n/a", "-", "null", "inf", "-inf",
                           "Infinity", "1e309", "abc", "2024-01-01", "2024-01-01T10:00:00",
                           "12:30", '"1"', '"a,b"', "\ufeff1", " 7 ", "1_000", "0x10"])
CELL = st.one_of(NUMBERS, NUMBERS, SPECIAL)
CLEAN = st.one_of(NUMBERS, NUMBERS, NUMBERS, st.sampled_from(["", "NA", "nan", " 1.5 "]))
NAME = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]),
               min_size=0, max_size=6)


@st.composite
def csv_text(draw) -> bytes:
    if draw(st.integers(0, 19)) == 0:  # raw bytes: binary, undecodable, anything
        return draw(st.binary(max_size=200))
    if draw(st.integers(0, 19)) == 0:  # arbitrary text
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    delimiter = draw(st.sampled_from([",", ";", "\t", " ", "  "]))
    width = draw(st.sampled_from([1, 1, 2, 3]))
    clean = draw(st.booleans())  # half the files are well formed: the analysis runs too
    cell = CLEAN if clean else CELL
    rows = []
    if draw(st.booleans()):
        names = st.lists(NAME, min_size=width, max_size=width) if not clean else \
            st.just([f"c{j}" for j in range(width)])
        rows.append(delimiter.join(draw(names)))
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.integers(0, 9)) == 0:
            rows.append(draw(st.sampled_from(["", "   ", "# comment"])))
            continue
        n = width if clean or draw(st.integers(0, 14)) else draw(st.integers(1, 4))  # ragged
        rows.append(delimiter.join(draw(st.lists(cell, min_size=n, max_size=n))))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(rows) + draw(st.sampled_from(["", newline, newline * 3]))
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text.encode("utf-8")


def check(code: int, err: str, command: str) -> None:
    event(f"{command} exit {code}")  # --hypothesis-show-statistics: both outcomes are reached
    assert code in (0, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "np.float64(" not in err and "\\udc" not in err and "\udcff" not in err, err
    lines = err.splitlines()
    notes = [ln for ln in lines if ln.startswith(f"possibly {command}: note: ")]
    if code == 2:  # notes of the reader, then the one error line
        assert len(lines) == len(notes) + 1 and lines[-1].startswith(f"possibly {command}: "
                                                                     "error: "), err
    else:  # notes, and a warning when the model does not fit (a readable line, no crash)
        warnings = [ln for ln in lines if ln.startswith(f"possibly {command}: warning: ")]
        assert sorted(lines) == sorted(notes + warnings), err


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=csv_text(), column=st.sampled_from([None, "0", "1"]),
       sigma=st.sampled_from([None, "auto", "1", "1e-100", "1e100"]))
def test_cli_reader_fuzz(tmp_path, capsys, data, column, sigma):
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    extra = [] if column is None else ["--column", column]
    capsys.readouterr()
    # no --sigma: the default models (--model auto); --sigma: the paper's model
    code = main(["changepoint", str(path), *([] if sigma is None else ["--sigma", sigma]),
                 *extra])
    check(code, capsys.readouterr().err, "changepoint")
    code = main(["kalman", str(path), *extra])
    captured = capsys.readouterr()
    check(code, captured.err, "kalman")
    if code == 0:  # finite positions and velocities at every step, or a refusal (exit 2)
        rows = list(csv.reader(io.StringIO(captured.out)))
        head = rows[0]
        cols = [j for j, name in enumerate(head) if name.startswith(("position", "velocity"))
                and "_sd" not in name]
        assert cols and all(math.isfinite(float(r[j])) for r in rows[1:] for j in cols), rows


# -- spreadsheet-style exports, read back to the values they were made from ---------------------

ERRORS = st.sampled_from(["", "#N/A", "#N/A N/A", "#NA", "#VALUE!", "#DIV/0!", "#REF!",
                          "#NUM!", "#NAME?", "#NULL!", "#n/a", "NA"])
NOTES = st.one_of(st.just(""), st.text(alphabet='ab ,;\t"\n#', max_size=12),
                  st.sampled_from(["pump restarted,\nsee log", "#N/A", '12" pipe', "0"]))


def _cell(text: str, delimiter: str) -> str:
    """``text`` as a spreadsheet writes it: quoted when it holds a delimiter, quote or break."""
    if any(c in text for c in (delimiter, '"', "\n", "\r")) or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


@st.composite
def spreadsheet_export(draw):
    """(file bytes, value column, expected values in time order, expected note keywords)."""
    n = draw(st.integers(4, 40))
    # noisy values (a series of repeated values tests the models, not the reader)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e4]))
    values = (rng.normal(size=n) * scale + draw(st.sampled_from([0.0, 1e3]))).tolist()
    gone = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if sum(not g for g in gone) < 3:
        gone = [False] * n
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    header = draw(st.sampled_from(["names", "pandas", "none"]))
    dated = header != "pandas" and draw(st.booleans())
    noted = header != "none" and draw(st.booleans())
    indexed = header == "pandas" and draw(st.booleans())  # to_csv() with its RangeIndex
    newest_first = dated and draw(st.booleans())
    digits = draw(st.sampled_from([None, 3, 6]))
    cells, expected = [], []
    for t in range(n):
        text = repr(values[t]) if digits is None else f"{values[t]:.{digits}f}"
        expected.append(math.nan if gone[t] else float(text))
        if delimiter == ";" and (dated or noted) and "." in text and draw(st.booleans()):
            text = text.replace(".", ",")  # a decimal comma, as such locales write it
        mark = draw(ERRORS)
        if mark == "" and not dated and not noted:
            mark = '""'  # pandas' empty cell in a one-column file: not a blank line at the end
        row = [mark if gone[t] else text]
        if dated:
            row.insert(0, (dt.date(2020, 1, 1) + dt.timedelta(days=t)).isoformat())
        if noted:
            row.append(_cell(draw(NOTES), delimiter))
        if indexed:
            row.insert(0, str(t))
        cells.append(delimiter.join(row))
    if newest_first:
        cells.reverse()
    width = 1 + dated + noted
    names = {"names": ["date"] * dated + ["level"] + ["note"] * noted,
             "pandas": [""] * indexed + [str(j) for j in range(width)], "none": []}[header]
    column = "level" if header == "names" else str(int(dated))  # pandas' names: by name
    lines = ([delimiter.join(names)] if names else []) + cells
    if draw(st.booleans()):
        lines.insert(0, "# exported from a spreadsheet")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines) + newline
    if draw(st.booleans()):
        text = "\ufeff" + text
    notes = ["is read as a header"] * (header == "pandas") + ["newest first"] * newest_first
    return text.encode("utf-8"), column, expected, notes


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(export=spreadsheet_export())
def test_spreadsheet_exports_read_back(tmp_path, capsys, export):
    data, column, expected, notes = export
    path = tmp_path / "export.csv"
    path.write_bytes(data)
    capsys.readouterr()
    code = main(["changepoint", str(path), "--column", column, "--format", "csv"])
    captured = capsys.readouterr()
    check(code, captured.err, "changepoint")
    assert code == 0, captured.err
    said = captured.err.splitlines()
    assert len(said) == len(notes) and all(k in s for k, s in zip(notes, said, strict=True))
    rows = list(csv.reader(io.StringIO(captured.out)))
    y = rows[0].index("y")
    got = [math.nan if r[y] == "" else float(r[y]) for r in rows[1:]]
    assert len(got) == len(expected)
    assert all(g == e or (math.isnan(g) and math.isnan(e)) for g, e in
               zip(got, expected, strict=True)), (got, expected)
    code = main(["kalman", str(path), "--column", column])
    check(code, capsys.readouterr().err, "kalman")
