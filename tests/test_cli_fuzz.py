"""Fuzzing the command line's reader (#14): random CSV text (delimiters, blanks, BOM, headers,
numbers up to 1e308, NaN/inf text, dates, junk, raw bytes) through ``changepoint`` and
``kalman``: the exit status is 0, or 2 with one line on stderr naming the command; never a
traceback, an internal error, a numpy repr or an undecodable-byte escape."""

from __future__ import annotations

import csv
import io
import math

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
    if code == 2:
        assert err.count("\n") == 1 and err.startswith(f"possibly {command}"), err
    else:
        assert err == "", err


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
