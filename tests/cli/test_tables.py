"""``possibly.cli.tables``: the one reader of the command line (#14 "files read the way users
write them", #11 item 5). Expected values are written out by hand from the file texts."""

from __future__ import annotations

import io

import numpy as np
import pytest

from possibly.cli.tables import display, parse_table, read_table, read_text


def values(text: str, *columns: str) -> list:
    return parse_table(text).numbers(list(columns) or ["0"]).tolist()


def test_blank_lines_are_missing_rows_never_dropped():
    # #14: 51 of 60 observations kept, "0 missing": every blank line is a row
    text = "\n".join(["1.0", "", "2.0", "", "", "3.0"]) + "\n\n"  # trailing blanks: EOF noise
    t = parse_table(text)
    assert t.n_rows == 6 and t.lines == (1, 2, 3, 4, 5, 6)
    got = t.numbers(["0"])[:, 0]
    np.testing.assert_array_equal(np.isnan(got), [False, True, False, True, True, False])
    # a blank first line of a headerless column is a missing first observation
    assert np.isnan(values("\n1\n2\n")[0][0]) and parse_table("\n1\n2\n").n_rows == 3
    # with a header, blank lines before it are not rows; blank lines after it are
    t = parse_table("\ny\n\n1\n")
    assert t.names == ("y",) and t.n_rows == 2


def test_blank_cells_are_missing_in_every_delimiter():
    for text in ("a,b\n1,\n,2\n", "a;b\n1;\n;2\n", "a\tb\n1\t\n\t2\n"):
        got = np.array(values(text, "a", "b"))
        np.testing.assert_array_equal(np.isnan(got), [[False, True], [True, False]])
    for mark in ("NA", "nan", "N/A", "null", "None", "-", "NaN"):
        assert np.isnan(values(f"y\n1\n{mark}\n", "y")[1][0])


def test_header_detected_by_content_not_position():
    # #14: a headerless date,value file lost its first row as a header
    t = parse_table("2024-01-01,1.5\n2024-01-02,2.5\n")
    assert not t.has_header and t.n_rows == 2 and t.names == ("0", "1")
    assert t.numbers(["1"])[:, 0].tolist() == [1.5, 2.5]
    assert t.detect_time() == 0
    t = parse_table("date,value\n2024-01-01,1.5\n")
    assert t.has_header and t.names == ("date", "value") and t.n_rows == 1
    assert not parse_table("1,2\n3,4\n").has_header
    assert parse_table("x,y\n1,2\n").has_header
    # a label column stays data: the header is found in the numeric column
    t = parse_table("sensor,v\na,1\nb,2\n")
    assert t.has_header and t.column(0) == ["a", "b"]
    t = parse_table("a,1\nb,2\n")
    assert not t.has_header and t.n_rows == 2


def test_bom_is_stripped():
    # #14: a UTF-8 BOM header (spreadsheet export) broke the column lookup
    t = parse_table("\ufeffvalue,other\n1,2\n")
    assert t.names == ("value", "other") and t.numbers(["value"]).tolist() == [[1.0]]


def test_bom_stripped_from_bytes_and_stdin(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbfy\n1\n2\n")
    assert read_table(str(p)).names == ("y",)
    assert read_text("-", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbfy\n3\n")))[0] == "y\n3\n"
    assert read_table("-", io.StringIO("\ufeffy\n3\n")).names == ("y",)


def test_delimiters_sniffed():
    assert values("1;2\n3;4\n", "0", "1") == [[1.0, 2.0], [3.0, 4.0]]
    assert values("1\t2\n3\t4\n", "0", "1") == [[1.0, 2.0], [3.0, 4.0]]
    assert values("1 2\n3   4\n", "0", "1") == [[1.0, 2.0], [3.0, 4.0]]
    assert values("1,2\n3,4\n", "0", "1") == [[1.0, 2.0], [3.0, 4.0]]
    # semicolon files from locales with a decimal comma
    assert values("a;b\n1,5;-2,25e1\n", "a", "b") == [[1.5, -22.5]]
    assert values('a,b\n"1",2\n', "a", "b") == [[1.0, 2.0]]  # quoted cells


def test_time_column_detected_and_parsed():
    t = parse_table("when,v\n2024-01-01T10:00:00,1\n,2\n2024-01-01T12:30:00+01:00,3\n")
    assert t.detect_time() == 0
    axis = t.time_axis(0)
    assert axis.name == "when" and axis.labels[1] == "" and axis.label(1) == "?"
    assert axis.values.dtype == np.dtype("datetime64[us]")
    assert str(axis.values[0]) == "2024-01-01T10:00:00.000000"
    assert np.isnat(axis.values[1])
    assert str(axis.values[2]) == "2024-01-01T11:30:00.000000"  # in UTC
    num = parse_table("depth,v\n1.5,1\n2.5,2\n")
    assert num.detect_time() is None  # numbers are never guessed to be time
    assert num.time_axis(0).values.tolist() == [1.5, 2.5]
    assert parse_table("k,v\na,1\nb,2\n").time_axis(0).values is None


def test_choose_columns():
    t = parse_table("date,value\n2024-01-01,1\n")
    assert t.choose(None, None) == ([1], 0)  # the time column is set aside
    t = parse_table("t,x,y\n0,1,2\n")
    assert t.choose(["x", "y"], "t") == ([1, 2], 0)
    assert t.choose(["2"], None) == ([2], None)
    with pytest.raises(ValueError, match=r"has 3 columns \(t, x, y\): choose one with --column"):
        t.choose(None, None)
    with pytest.raises(ValueError, match="--time 'x' is also a value column"):
        t.choose(["x"], "x")
    with pytest.raises(ValueError, match=r"--time 'z': no such column .* \(columns: t, x, y\)"):
        t.choose(["x"], "z")
    with pytest.raises(ValueError, match="names a column twice"):
        t.choose(["x", "1"], None)
    with pytest.raises(ValueError, match=r"a column index must be in \[0, 2\]"):
        t.choose(["3"], None)


@pytest.mark.parametrize(("text", "match"), [
    ("", "is empty"),
    ("# only a comment\n\n", "is empty"),
    ("y\n", "header but no values"),
    ("y\nNA\n\n", "column y has no observed value"),
    ("1,2\n3\n", r"line 2: 1 cell\(s\), expected 2"),
    ("y\n1\nabc\n", "line 3, column y: non-numeric cell 'abc'"),
    ("y\n1\n-inf\n", "line 3, column y: infinite or out-of-range value '-inf'"),
    ("y\n1\n2e308\n", "infinite or out-of-range value '2e308'"),
])
def test_errors_name_the_file_line_and_column(text, match):
    with pytest.raises(ValueError, match=match) as exc:
        parse_table(text, "f.csv").numbers(["0"] if "y" not in text else ["y"])
    assert str(exc.value).startswith("f.csv") and "\n" not in str(exc.value)


def test_largest_finite_numbers_are_kept():
    assert values("y\n1.7976931348623157e308\n-1e308\n5e-324\n", "y") == \
        [[1.7976931348623157e308], [-1e308], [5e-324]]


def test_binary_and_undecodable_input_one_line_naming_the_file(tmp_path):
    for name, data, match in (("b.bin", b"\x00\x01\x02", "is not a text file: it holds NUL"),
                              ("u16.csv", "y\n1\n".encode("utf-16"), "looks like UTF-16"),
                              ("l1.csv", b"y\n\xe9\n", "not a text file in UTF-8")):
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(ValueError, match=match) as exc:
            read_table(str(p))
        assert str(exc.value).startswith(str(p)) and "\\udc" not in str(exc.value)
    with pytest.raises(ValueError, match="cannot read .*: No such file or directory"):
        read_table(str(tmp_path / "none.csv"))
    with pytest.raises(ValueError, match="cannot read"):
        read_table(str(tmp_path))  # a directory


def test_display_never_shows_surrogate_escapes():
    name = b"\xffdata.csv".decode("utf-8", "surrogateescape")
    assert name == "\udcffdata.csv"
    shown = display(name)
    assert shown == "?data.csv"
    shown.encode("utf-8")  # printable


@pytest.mark.parametrize("columns", [["y"], ["x", "y"]])
@pytest.mark.parametrize("index", ["dates", "range", None])
def test_pandas_to_csv_round_trip_keeps_missing_values_and_time_stamps(columns, index):
    # pandas writes NaN as an empty cell, and as "" in a one-column CSV without an index
    # (the csv module quotes a lone empty field so that the row is not a blank line)
    pd = pytest.importorskip("pandas")
    values = {"x": [1.5, np.nan, 3.0, np.nan, -2.0], "y": [np.nan, 2.0, np.nan, np.nan, 4.25]}
    if index == "dates":  # a missing time stamp (NaT) too
        stamps = pd.DatetimeIndex(["2024-01-01", "2024-01-02", None, "2024-01-04 06:30",
                                   "2024-01-05"], name="date")
    else:
        stamps = None
    frame = pd.DataFrame({c: values[c] for c in columns}, index=stamps)
    text = frame.to_csv(index=index is not None)
    if columns == ["y"] and index is None:
        assert '""' in text  # the case the reader used to refuse
    table = parse_table(text)
    assert table.n_rows == len(frame)
    np.testing.assert_array_equal(table.numbers(columns), frame.to_numpy())  # NaNs equal
    t = table.choose(columns, None)[1]
    if index == "dates":
        assert table.names[t] == "date"
        np.testing.assert_array_equal(table.time_axis(t).values,
                                      frame.index.to_numpy().astype("datetime64[us]"))
    else:
        assert t is None
        if index == "range":  # the unnamed index column: named by its position, numbers
            assert table.names[0] == "0"
            np.testing.assert_array_equal(table.time_axis(0).values, np.arange(len(frame)))
    # without a header, and the file read back through the command line's reader
    bare = parse_table(frame.to_csv(index=False, header=False))
    np.testing.assert_array_equal(bare.numbers(list(range(len(columns)))), frame.to_numpy())


def test_quoted_cells_without_a_delimiter_are_unquoted():
    table = parse_table('"level"\n1\n""\n"2.5"\n')
    assert table.names == ("level",)
    np.testing.assert_array_equal(table.numbers(["level"])[:, 0], [1.0, np.nan, 2.5])
    with pytest.raises(ValueError, match=r"line 3, column level: non-numeric cell '\"a'"):
        parse_table('level\n1\n"a\n').numbers(["level"])  # not one quoted field: kept


# -- spreadsheet and pandas exports ------------------------------------------------------------

def test_pandas_numeric_header_is_a_header_with_a_note():
    # pd.Series(y).to_csv(f, index=False) writes the header "0": read as an observation, it
    # shifted every row (and every change point) by one
    pd = pytest.importorskip("pandas")
    y = np.array([0.5, 1.25, -3.0, 4.0])
    t = parse_table(pd.Series(y).to_csv(index=False), "s.csv")
    assert t.has_header and t.names == ("0",) and t.n_rows == 4 and t.lines[0] == 2
    np.testing.assert_array_equal(t.numbers(["0"])[:, 0], y)
    assert len(t.notes) == 1 and "line 1 ('0') is read as a header" in t.notes[0]
    frame = pd.DataFrame(np.arange(6.0).reshape(3, 2))  # unnamed columns: header 0,1
    t = parse_table(frame.to_csv(index=False))
    assert t.names == ("0", "1") and t.n_rows == 3 and t.notes
    # the choice can be made explicitly, either way
    t = parse_table("0\n0.5\n1.5\n", header=False)
    assert not t.has_header and t.n_rows == 3 and t.notes == ()
    assert parse_table("level\n1\n", header=False).column(0) == ["level", "1"]
    assert parse_table("1\n2\n", header=True).names == ("1",)
    # not the positions 0, 1, ...: data, as before
    for text in ("1\n2\n", "0,2\n3,4\n", "1,0\n3,4\n", "0.0\n1\n"):
        t = parse_table(text)
        assert not t.has_header and t.notes == () and t.n_rows == 2
    assert not parse_table("0\n").has_header  # a lone 0 is a value, not an empty table


def test_pandas_numeric_header_after_an_unnamed_index():
    # pd.Series(y).to_csv(f) (the index kept) writes ",0": the header row became a data row
    # (a missing index, the value 0) in front of the series
    pd = pytest.importorskip("pandas")
    y = np.array([1.5, -2.0, 4.25])
    t = parse_table(pd.Series(y).to_csv())
    assert t.has_header and t.names == ("index", "0") and t.n_rows == 3 and t.notes
    np.testing.assert_array_equal(t.numbers(["0"])[:, 0], y)  # by name: pandas' column 0
    np.testing.assert_array_equal(t.numbers(["index"])[:, 0], [0.0, 1.0, 2.0])
    days = pd.date_range("2024-01-01", periods=3, freq="D")
    t = parse_table(pd.DataFrame(np.c_[y, -y], index=days).to_csv())
    assert t.names == ("index", "0", "1") and t.choose(["1"], None) == ([2], 0)
    np.testing.assert_array_equal(t.time_axis(0).values, days.to_numpy().astype("M8[us]"))
    # an empty header cell keeps its position name when no column has it
    assert parse_table(",x\n0,1\n").names == ("0", "x")


@pytest.mark.parametrize("error", ["#N/A", "#n/a", "#N/A N/A", "#NA", "#VALUE!", "#DIV/0!",
                                   "#REF!", "#NUM!", "#NAME?", "#NULL!", "#ERROR!"])
def test_spreadsheet_error_values_are_missing_not_comments(error):
    # Excel and Sheets export a cell without a value as #N/A: at the start of a line it made
    # the line a comment, and the row was dropped instead of counted as missing
    for text, column in ((f"y\n1\n{error}\n3\n", "y"), (f"1\n{error}\n3\n", "0")):
        got = parse_table(text).numbers([column])[:, 0]
        np.testing.assert_array_equal(got, [1.0, np.nan, 3.0])
    for sep in (",", ";", "\t", " "):
        t = parse_table(f"a{sep}b\n{error}{sep}2\n3{sep}{error}\n")
        np.testing.assert_array_equal(t.numbers(["a", "b"]), [[np.nan, 2.0], [3.0, np.nan]])
        assert t.lines == (2, 3)


def test_comments_are_still_comments():
    t = parse_table("# exported 2024\n#comment\n#NAME without a question mark\ny\n1\n# x\n2\n")
    assert t.names == ("y",) and t.column(0) == ["1", "2"] and t.lines == (5, 7)


def test_rows_sorted_by_time_never_analysed_backwards():
    t = parse_table("date,v\n2024-01-03,3\n2024-01-02,2\n\n2024-01-01,1\n".replace("\n\n", "\n"),
                    "r.csv")
    s, notes = t.in_time_order(0)
    assert s.column(1) == ["1", "2", "3"] and s.lines == (4, 3, 2)
    assert notes == ("r.csv: rows sorted by time (column date): the file lists them newest "
                     "first; rows are numbered from 0 in time order",)
    # unsorted: sorted, the note names the first line out of order
    t = parse_table("t,v\n1.5,a\n3,b\n2,c\n4,d\n", "u.csv")
    s, notes = t.in_time_order(0)
    assert s.column(1) == ["a", "c", "b", "d"] and s.lines == (2, 4, 3, 5)
    assert "line 4 (2) is earlier than line 3 (3) above it" in notes[0]
    # in order: the same table, no note; missing stamps in an ordered column are kept
    t = parse_table("date,v\n2024-01-01,1\n,2\n2024-01-03,3\n")
    assert t.in_time_order(0) == (t, ())
    # unsorted with a row without a time stamp: where would it go? refused, naming the line
    t = parse_table("date,v\n2024-01-03,1\n,2\n2024-01-01,3\n", "m.csv")
    with pytest.raises(ValueError, match=r"^m.csv: the rows are not in time order \(column "
                                         r"date\), and line 3 has no time stamp"):
        t.in_time_order(0)
    # repeated time stamps: kept in file order, one step each, and said
    t = parse_table("date,v\n2024-01-02,1\n2024-01-01,2\n2024-01-02,3\n", "d.csv")
    s, notes = t.in_time_order(0)
    assert s.column(1) == ["2", "1", "3"] and len(notes) == 2
    assert notes[1] == ("d.csv: 1 row(s) repeat the time stamp of the row before (first: "
                        "2024-01-02 on lines 2 and 4); they are kept in file order, one step each")
    # labels have no order
    t = parse_table("k,v\nb,1\na,2\n")
    assert t.in_time_order(0) == (t, ())


def test_quoted_cell_spanning_lines_is_read():
    # a line break typed in a spreadsheet cell (a notes column): "zip() argument 2 is shorter"
    text = 'v,note\n1,"first line\nsecond, line"\n\n2,plain\n3,"a ""quote"""\n'
    t = parse_table(text)
    assert t.names == ("v", "note") and t.lines == (2, 4, 5, 6)
    assert t.column(1) == ["first line\nsecond, line", "", "plain", 'a "quote"']
    np.testing.assert_array_equal(t.numbers(["v"])[:, 0], [1.0, np.nan, 2.0, 3.0])
    # a header of quoted names, and a cell spanning three lines in a semicolon file
    t = parse_table('"a";"b"\n1,5;"x\n\ny"\n2;z\n')
    assert t.names == ("a", "b") and t.lines == (2, 5)
    assert t.numbers(["a"])[:, 0].tolist() == [1.5, 2.0]


@pytest.mark.parametrize(("text", "match"), [
    ("a,b\n1,2\n3," + "9" * 140000 + "\n", r"^f.csv, line 3: a cell of more than 131072 "
                                         r"characters$"),
    ('a,b\n1,2\n3,"' + "x\n" * 70000 + "4,5\n", r"^f.csv, line 3: a cell of more than 131072 "
                                               r"characters \(a quote opened on line 3 is "
                                               r"still open on line \d+\)$"),
    ('a,b\n1,2\n"x\ny",3,4\n', r"^f.csv, lines 3-4 \(a quoted cell spans them\): 3 cell\(s\), "
                              r"expected 2"),
    ("y\n1\n" + "9" * 140000 + "\n", r"^f.csv, line 3, column y: infinite or out-of-range "
                                      r"value '9{40}'\.\.\. \(140000 characters\)"),
    ("y\n1\n" + "x" * 1000 + "\n", r"^f.csv, line 3, column y: non-numeric cell "
                                    r"'x{40}'\.\.\. \(1000 characters\)"),
])
def test_long_or_multiline_cells_one_line_naming_the_file_and_line(text, match):
    with pytest.raises(ValueError, match=match) as exc:
        parse_table(text, "f.csv").numbers(["a" if text.startswith("a") else "y"])
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 300


def test_positions_and_names_are_not_confused():
    # pandas' header ",0,1": the name "0" is the second column, position 0 the index
    t = parse_table(",0,1\n0,0.5,\n1,0.7,\n")
    assert t.choose(["0"], None) == ([1], None)
    np.testing.assert_array_equal(t.numbers([1])[:, 0], [0.5, 0.7])  # a position
    np.testing.assert_array_equal(t.numbers(["0"])[:, 0], [0.5, 0.7])  # a name
    np.testing.assert_array_equal(t.numbers([0])[:, 0], [0.0, 1.0])


def test_a_zero_first_row_above_whole_numbers_is_refused_not_guessed():
    """``0, 1`` above whole numbers may be pandas' column names or the first row of data
    (a counter column, counts starting at 0): refused, naming --header, never a row lost."""
    from possibly.cli.tables import parse_table

    for text in ("0,1\n1,3\n2,5\n3,7\n", "0\n3\nnan\n5\n2\n"):
        with pytest.raises(ValueError, match="--header yes or --header no"):
            parse_table(text, "data.csv")
        table = parse_table(text, "data.csv", header=False)
        assert len(table.cells) == text.count("\n")
    # below it, a number with a point: pandas' header of float data
    table = parse_table("0\n1.5\n2.25\n", "data.csv")
    assert table.has_header and len(table.cells) == 2
