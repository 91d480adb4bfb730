"""Read a series or a table from CSV, TSV or plain text the way users write them.

The one file reader of the command line: every command (``possibly changepoint``,
``kalman``, ``changepoint-many``, ``kalman-many``) reads its text input through it, so a file
means the same thing to all of them. Its rules (delimiter, header by content, missing marks,
quoted cells, numbering from 0, time stamps and sorting) are in docs/cli.md, "How files are
read".

Examples
--------
>>> table = parse_table("date,value\\n2024-01-01,1.5\\n2024-01-02,\\n\\n2024-01-04,2.5\\n")
>>> table.names, table.n_rows
(('date', 'value'), 4)
>>> table.numbers(["value"])[:, 0].tolist()
[1.5, nan, nan, 2.5]
>>> table.detect_time()
0
>>> parse_table("2024-01-01,1.5\\n2024-01-02,2.0\\n").n_rows  # no header: both rows kept
2
"""

from __future__ import annotations

import csv
import gc
import itertools
import math
import re
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, time, timezone

import numpy as np

__all__ = ["MISSING", "Table", "TimeAxis", "display", "parse_table", "read_table", "read_text"]

#: spreadsheet error values (Excel, Google Sheets) exported in place of a value
SPREADSHEET_ERRORS = ("#N/A N/A", "#N/A", "#NA", "#VALUE!", "#DIV/0!", "#REF!", "#NUM!",
                      "#NAME?", "#NULL!", "#ERROR!", "#SPILL!", "#CALC!", "#GETTING_DATA")
#: cell texts (case-insensitive, after stripping spaces) that mark a missing observation
MISSING = frozenset({"", "na", "nan", "n/a", "null", "none", "-",
                     *(e.lower() for e in SPREADSHEET_ERRORS)})
_DELIMITERS = ("\t", ";", ",")
_SAMPLE = 50  # rows inspected to sniff the delimiter and the header
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+([eE][+-]?\d+)?")
# a line starting with a spreadsheet error value is data, not a comment
_ERROR_START = re.compile("(?:" + "|".join(re.escape(e) for e in SPREADSHEET_ERRORS)
                          + r""")(?=$|[\s,;"])""", re.IGNORECASE)
_NA_NA = re.compile(r"#N/A N/A", re.IGNORECASE)  # one cell, though it holds a space
_SHOWN = 40  # characters of a cell shown in an error message


def display(text: object) -> str:
    """``text`` printable on any terminal: undecodable bytes (``\\udcff``) become ``?``."""
    s = str(text)
    return s.encode("utf-8", "replace").decode("utf-8").replace("\n", " ")


def _brief(cell: str) -> str:
    """``cell`` for an error message: printable, and cut after :data:`_SHOWN` characters."""
    s = display(cell)
    return repr(s) if len(s) <= _SHOWN else f"{s[:_SHOWN]!r}... ({len(s)} characters)"


def _is_comment(line: str) -> bool:
    s = line.lstrip()
    return s.startswith("#") and _ERROR_START.match(s) is None


def read_text(path: str, stdin=None) -> tuple[str, str]:
    """The text of ``path`` (``-``: standard input) and the name to show for it.

    Raises ValueError with one line naming the file when it cannot be read or is not text.
    """
    if path == "-":
        source = "standard input"
        stream = sys.stdin if stdin is None else stdin
        buffer = getattr(stream, "buffer", None)
        data = buffer.read() if buffer is not None else stream.read()
    else:
        source = display(path)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise ValueError(f"cannot read {source}: {exc.strerror or exc}") from None
    if isinstance(data, str):
        return data.removeprefix("\ufeff"), source
    return _decode(data, source), source


def _decode(data: bytes, source: str) -> str:
    if b"\x00" in data:
        hint = (" (it looks like UTF-16: save it as UTF-8 CSV)"
                if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "")
        raise ValueError(f"{source} is not a text file: it holds NUL bytes{hint}; give a "
                         "UTF-8 CSV or text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source} is not a text file in UTF-8 (undecodable byte at offset "
                         f"{exc.start}); save it as UTF-8 CSV") from None


def _number(cell: str) -> float | None:
    """The float in ``cell`` (NaN if missing), or None if it is not a number."""
    if cell.lower() in MISSING:
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return None


def _time(cell: str) -> datetime | None:
    """The date/time in ``cell`` (ISO 8601; a time of day is put on 1970-01-01), or None."""
    if len(cell) < 4 or not any(c in cell for c in "-:"):
        return None
    try:
        value = datetime.fromisoformat(cell)
    except ValueError:
        try:
            t = time.fromisoformat(cell)
        except ValueError:
            return None
        value = datetime.combine(datetime(1970, 1, 1), t)
    if value.tzinfo is not None:  # one clock for the axis: UTC
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def _kind(cell: str) -> str:
    if cell.lower() in MISSING:
        return "missing"
    if _number(cell) is not None:
        return "number"
    if _time(cell) is not None:
        return "time"
    return "text"


def _words(line: str) -> list[str]:
    """Cells separated by runs of spaces (``#N/A N/A`` is one cell)."""
    if "#" in line:
        line = _NA_NA.sub("#N/A", line)
    return line.split()


def _unquote(cell: str) -> str:
    """``cell`` without CSV quotes when it is all one quoted field (``""`` is empty)."""
    if len(cell) >= 2 and cell[0] == cell[-1] == '"':
        return cell[1:-1].replace('""', '"')
    return cell


def _sniff(sample: list[tuple[int, str]], cut: bool) -> str | None:
    """The delimiter of the sample lines (None: runs of spaces, or one column).

    ``cut``: the sample stops before the end of the input, so its last record may be partial.
    """
    for d in _DELIMITERS:
        try:
            records = [r for _, _, r in _records(sample, d, "") if r is not None]
        except ValueError:  # unreadable with this delimiter (a huge cell): not this one
            continue
        counts = {len(r) for r in (records[:-1] if cut and len(records) > 1 else records)}
        if len(counts) == 1 and counts.pop() >= 2:
            return d
    lines = [ln for _, ln in sample if ln.strip() and not _is_comment(ln)]
    counts = {len(_words(line)) for line in lines}
    if len(counts) == 1 and counts.pop() >= 2:
        return None  # columns separated by spaces (or tabs and spaces)
    present = [d for d in _DELIMITERS if any(d in line for line in lines)]
    if present:  # ragged: the most frequent one, and a row-length error names the line
        return max(present, key=lambda d: sum(line.count(d) for line in lines))
    return None


#: one record of the input: first and last line (from 1), and its cells (None: a blank line)
_Record = tuple[int, int, "list[str] | None"]


def _records(numbered: list[tuple[int, str]], delimiter: str | None,
             source: str) -> list[_Record]:
    """The records of the numbered lines: comment lines dropped, blank lines kept as None.

    With a delimiter, the csv module reads the cells, and a quoted cell may span lines.
    Raises ValueError naming the line of a cell the csv module refuses (too long).
    """
    if delimiter is None:
        quoted = any('"' in ln for _, ln in numbered)
        out: list[_Record] = []
        for no, ln in numbered:
            if not ln.strip():
                out.append((no, no, None))
            elif not _is_comment(ln):
                cells = _words(ln)
                out.append((no, no, [_unquote(c) for c in cells] if quoted else cells))
        return out
    if not any('"' in ln for _, ln in numbered):
        return _unquoted_records(numbered, delimiter, source)
    out = []
    at = {"start": True, "first": 0, "last": 0}

    def lines():  # the csv reader asks for the next line only once a record is complete
        for no, ln in numbered:
            if at["start"]:
                if not ln.strip():
                    out.append((no, no, None))
                    continue
                if _is_comment(ln):
                    continue
                at["first"], at["start"] = no, False
            at["last"] = no
            yield ln + "\n"  # the line break, kept inside a quoted cell

    reader = csv.reader(lines(), delimiter=delimiter)
    try:
        for row in reader:
            out.append((at["first"], at["last"], [c.strip() for c in row]))
            at["start"] = True
    except csv.Error as exc:
        raise _csv_error(source, at["first"], at["last"], exc) from None
    return out


def _unquoted_records(numbered: list[tuple[int, str]], delimiter: str,
                      source: str) -> list[_Record]:
    """:func:`_records` when no line holds a quote: one record per line, one csv reader."""
    filled = [(no, ln) for no, ln in numbered if ln.strip() and not _is_comment(ln)]
    reader = csv.reader([ln for _, ln in filled], delimiter=delimiter)
    try:
        split = list(reader)
    except csv.Error as exc:
        no = filled[reader.line_num - 1][0]
        raise _csv_error(source, no, no, exc) from None
    by_line = {no: [c.strip() for c in row] for (no, _), row in zip(filled, split, strict=True)}
    return [(no, no, by_line.get(no)) for no, ln in numbered
            if no in by_line or not ln.strip()]


def _csv_error(source: str, first: int, last: int, exc: csv.Error) -> ValueError:
    if "field larger than field limit" in str(exc):
        why = (f"a cell of more than {csv.field_size_limit()} characters"
               + (f" (a quote opened on line {first} is still open on line {last})"
                  if last > first else ""))
    else:
        why = f"unreadable CSV ({exc})"
    return ValueError(f"{source}, line {first}: {why}")


@dataclass(frozen=True)
class TimeAxis:
    """Time stamps of the rows: ``labels`` as written, ``values`` for a plot axis.

    ``values`` is ``datetime64[us]`` (NaT where missing) for dates/times, float for a numeric
    column (NaN where missing), or None when the column holds other text.
    """

    name: str
    labels: tuple[str, ...]
    values: np.ndarray | None

    def label(self, t: int) -> str:
        return self.labels[t] or "?"


@dataclass(frozen=True)
class Table:
    """Cells of a delimited text, as read by :func:`parse_table` (see the module docstring).

    Attributes
    ----------
    source : str
        The name to show for the input (file name or ``standard input``).
    names : tuple of str
        Column names: the header's, or ``"0"``, ``"1"``, ... without a header.
    has_header : bool
    cells : tuple of tuple of str
        Stripped cell texts per data row (a blank line: all empty).
    lines : tuple of int
        Line number (from 1) of each data row in the input.
    delimiter : str or None
        None: runs of spaces, or one column.
    notes : tuple of str
        What the reader decided that the user should hear of (a numeric header row).
    """

    source: str
    names: tuple[str, ...]
    has_header: bool
    cells: tuple[tuple[str, ...], ...]
    lines: tuple[int, ...]
    delimiter: str | None
    notes: tuple[str, ...] = ()

    @property
    def n_rows(self) -> int:
        return len(self.cells)

    @property
    def width(self) -> int:
        return len(self.names)

    def describe_columns(self) -> str:
        if self.has_header:
            return ", ".join(display(n) for n in self.names)
        return f"0..{self.width - 1}, no header row"

    def column_index(self, column: str | int, flag: str = "--column") -> int:
        """Position of ``column``: a text is a header name, else a 0-based index; an int is
        a position (a header may name a column ``0`` that is not the first one)."""
        if isinstance(column, (int, np.integer)) and not isinstance(column, bool):
            index = int(column)
        else:
            column = str(column)
            if self.has_header and column in self.names:
                return self.names.index(column)
            try:
                index = int(column)
            except ValueError:
                raise ValueError(f"{flag} {display(column)!r}: no such column in {self.source}"
                                 f" (columns: {self.describe_columns()})") from None
        if not 0 <= index < self.width:
            raise ValueError(f"{flag} {index}: a column index must be in [0, {self.width - 1}]"
                             f" for {self.source} (columns: {self.describe_columns()})")
        return index

    def column(self, j: int) -> list[str]:
        return [row[j] for row in self.cells]

    def numbers(self, columns: Sequence[str | int], flag: str = "--column") -> np.ndarray:
        """The chosen columns as floats, shape ``(n_rows, len(columns))``, NaN = missing.

        Raises ValueError naming the file, line and column of a non-numeric or infinite cell,
        and for a column without any observed value.
        """
        idx = [self.column_index(c, flag) for c in columns]
        out = np.empty((self.n_rows, len(idx)))
        for k, j in enumerate(idx):
            out[:, k] = self._column_numbers(j)
            if np.isnan(out[:, k]).all():
                raise ValueError(f"{self.source}: column {display(self.names[j])} has no "
                                 "observed value (every cell is missing)")
        return out

    def _column_numbers(self, j: int) -> np.ndarray:
        column = self.column(j)
        try:  # the fast path: numpy parses the whole column at once
            values = np.array(["nan" if c.lower() in MISSING else c for c in column],
                              dtype=np.float64)
        except ValueError:
            values = None
        if values is not None and np.isfinite(values[~np.isnan(values)]).all():
            return values
        for i, cell in enumerate(column):  # find the cell to name, and say why
            value = _number(cell)
            if value is None:
                raise ValueError(f"{self.source}, line {self.lines[i]}, column "
                                 f"{display(self.names[j])}: non-numeric cell "
                                 f"{_brief(cell)} (a number, or empty/NA for missing)")
            if math.isinf(value):
                raise ValueError(f"{self.source}, line {self.lines[i]}, column "
                                 f"{display(self.names[j])}: infinite or out-of-range "
                                 f"value {_brief(cell)} (numbers must be finite, at "
                                 "most 1.8e308 in size; empty/NA for missing)")
        raise ValueError(f"{self.source}, column {display(self.names[j])}: unreadable numbers")

    def detect_time(self, exclude: Sequence[int] = ()) -> int | None:
        """The only column of dates/times (all non-missing cells ISO 8601), if exactly one."""
        found = []
        for j in range(self.width):
            if j in exclude:
                continue
            kinds = set()
            sample = (c for c in self.column(j) if c.lower() not in MISSING)
            for c in itertools.islice(sample, _SAMPLE):  # the whole column: in time_axis
                kind = _kind(c)
                if kind not in ("time", "missing"):
                    break  # not a time column: no need to look further
                kinds.add(kind)
            else:
                if "time" in kinds:
                    found.append(j)
        return found[0] if len(found) == 1 else None

    def time_axis(self, j: int) -> TimeAxis:
        """Column ``j`` as time stamps (dates/times, numbers, or labels)."""
        labels = tuple(self.column(j))
        values: np.ndarray | None = None
        if self.detect_time(exclude=[k for k in range(self.width) if k != j]) == j:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # e.g. numpy's time-zone deprecation: slow path
                try:  # the fast path: numpy parses plain ISO 8601 dates/times at once
                    values = np.array(["NaT" if c.lower() in MISSING else c for c in labels],
                                      dtype="datetime64[us]")
                except (ValueError, Warning):
                    values = None
        if values is None:
            kinds = {_kind(c) for c in labels} - {"missing"}
            if kinds == {"time"}:
                stamps = [_time(c) if c.lower() not in MISSING else None for c in labels]
                values = np.array([np.datetime64(s, "us") if s is not None
                                   else np.datetime64("NaT", "us") for s in stamps])
            elif kinds <= {"number"}:
                values = np.array([_number(c) for c in labels], dtype=float)
        return TimeAxis(display(self.names[j]), tuple(display(c) for c in labels), values)

    def in_time_order(self, j: int) -> tuple[Table, tuple[str, ...]]:
        """The table with its rows sorted by the time column ``j``, and notes for the user.

        Rows already in time order are kept as they are. Otherwise they are sorted (stably:
        a file listing the newest first is reversed), with a note, and keep their line
        numbers for error messages. Sorting is refused when a row has no time stamp (where
        would it go?). Rows sharing a time stamp stay in file order, one step each, with a
        note. A column of labels (neither dates/times nor numbers) has no order: kept.

        Examples
        --------
        >>> t, notes = parse_table("day,v\\n2024-01-02,2\\n2024-01-01,1\\n").in_time_order(0)
        >>> t.column(1), t.lines
        (['1', '2'], (3, 2))
        """
        axis = self.time_axis(j)
        values = axis.values
        if values is None:
            return self, ()
        missing = np.isnat(values) if values.dtype.kind == "M" else np.isnan(values)
        known = np.flatnonzero(~missing)
        stamps = values[known]
        back = np.flatnonzero(stamps[1:] < stamps[:-1])
        notes = []
        table = self
        if back.size:
            if missing.any():
                i = int(np.flatnonzero(missing)[0])
                raise ValueError(f"{self.source}: the rows are not in time order (column "
                                 f"{axis.name}), and line {self.lines[i]} has no time stamp to "
                                 "sort it by: sort the file by time, or fill in its time stamp")
            order = np.argsort(values, kind="stable")
            if (stamps[1:] <= stamps[:-1]).all():
                how = "the file lists them newest first"
            else:
                a, b = known[back[0]], known[back[0] + 1]
                how = (f"line {self.lines[b]} ({axis.label(b)}) is earlier than line "
                       f"{self.lines[a]} ({axis.label(a)}) above it")
            notes.append(f"{self.source}: rows sorted by time (column {axis.name}): {how}; "
                         "rows are numbered from 0 in time order")
            table = replace(self, cells=tuple(self.cells[i] for i in order),
                            lines=tuple(self.lines[i] for i in order))
            known = np.flatnonzero(~missing[order])
            stamps = values[order][known]
        same = np.flatnonzero(stamps[1:] == stamps[:-1])
        if same.size:
            a, b = known[same[0]], known[same[0] + 1]
            notes.append(f"{self.source}: {same.size} row(s) repeat the time stamp of the row "
                         f"before (first: {table.time_axis(j).label(b)} on lines "
                         f"{table.lines[a]} and {table.lines[b]}); they are kept in file order, "
                         "one step each")
        return table, tuple(notes)

    def choose(self, columns: Sequence[str] | None, time: str | None, *,
               several: bool = False) -> tuple[list[int], int | None]:
        """Value columns and time column (or None) from ``--column`` and ``--time``.

        Without ``columns`` the value column is the only column left once the time column
        (named, or detected) is set aside; otherwise the user must choose.
        """
        t = None if time is None else self.column_index(time, "--time")
        if columns:
            idx = [self.column_index(c) for c in columns]
            if len(set(idx)) != len(idx):
                raise ValueError(f"--column names a column twice: {', '.join(columns)}")
            if t is not None and t in idx:
                raise ValueError(f"--time {display(time)!r} is also a value column (--column)")
            if time is None:
                t = self.detect_time(exclude=idx)
            return idx, t
        if t is None:
            t = self.detect_time()
        rest = [j for j in range(self.width) if j != t]
        if len(rest) != 1:
            how = ("choose one with --column (several for a vector observation)" if several
                   else "choose one with --column")
            raise ValueError(f"{self.source} has {self.width} columns "
                             f"({self.describe_columns()}): {how}")
        return rest, t


def _is_header(first: list[str], rest: list[list[str]]) -> bool:
    kinds = [_kind(c) for c in first]
    if "text" not in kinds:
        return False
    for j, kind in enumerate(kinds):
        below = [k for k in (_kind(row[j]) for row in rest if j < len(row)) if k != "missing"]
        data = sum(k in ("number", "time") for k in below)
        # a text cell over a column of data (a stray bad cell below does not hide it)
        if kind == "text" and (not below or (data and below.count("text") <= data)):
            return True
    all_text = all(k == "text" for k in kinds)
    return all_text and not any(row and all(_kind(c) == "text" for c in row) for row in rest)


def parse_table(text: str, source: str = "input", header: bool | None = None) -> Table:
    """Parse a delimited text into a :class:`Table` (conventions in the module docstring).

    ``header``: None detects a header row by content; True takes the first row as the
    header, False as data.

    Examples
    --------
    >>> t = parse_table("\\ufeffy\\n1\\n\\n3\\n")
    >>> t.names, t.numbers(["y"])[:, 0].tolist()
    (('y',), [1.0, nan, 3.0])
    >>> parse_table("a;b\\n1,5;2\\n").numbers(["a", "b"]).tolist()
    [[1.5, 2.0]]
    """
    # millions of small lists: the cyclic garbage collector would rescan them again and again
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_table(text, source, header)
    finally:
        if enabled:
            gc.enable()


def _parse_table(text: str, source: str, header: bool | None) -> Table:
    text = text.removeprefix("\ufeff")
    numbered = list(enumerate(text.splitlines(), 1))
    sample, filled = [], 0
    for no, ln in numbered:  # the lines up to the first _SAMPLE rows of cells
        if filled == _SAMPLE:
            break
        sample.append((no, ln))
        filled += bool(ln.strip()) and not _is_comment(ln)
    if not filled:
        raise ValueError(f"{source} is empty: no values to read")
    delimiter = _sniff(sample, cut=len(sample) < len(numbered))
    records = _records(numbered, delimiter, source)
    while records and records[-1][2] is None:
        records.pop()
    lead = []  # blank lines before the first row: missing rows, unless a header follows
    while records and records[0][2] is None:
        lead.append(records.pop(0))
    rows = [(first, last, row) for first, last, row in records]
    if delimiter in ("\t", ";"):  # a decimal comma cannot be a delimiter here: 1,5 -> 1.5
        rows = [(no, end, None if row is None else
                 [c.replace(",", ".") if _DECIMAL_COMMA.fullmatch(c) else c for c in row])
                for no, end, row in rows]
    first = rows[0][2]
    assert first is not None
    notes = []
    if header is None:
        header = _is_header(first, [r for _, _, r in rows[1:_SAMPLE + 1] if r is not None])
        if not header and len(rows) > 1 and _is_pandas_header(first):
            below = [r for _, _, r in rows[1:_SAMPLE + 1] if r is not None]
            if not _unlike_a_counter(first, below):
                raise ValueError(
                    f"{source}: line {rows[0][0]} ({_brief(','.join(first))}) may be the column "
                    "names pandas writes for unnamed columns or a row of whole numbers: give "
                    "--header yes or --header no")
            header = True
            notes.append(f"{source}: line {rows[0][0]} ({_brief(','.join(first))}) is read "
                         "as a header, the column names pandas writes for unnamed columns "
                         "(give --header no to read it as data)")
    width = len(first)
    if header:
        names = tuple(c or _unnamed(j, first) for j, c in enumerate(first))
        rows = rows[1:]
        if not rows:
            raise ValueError(f"{source} has a header but no values")
    else:
        names = tuple(str(j) for j in range(width))
        rows = lead + rows
    cells, lines = [], []
    for no, end, row in rows:
        if row is None:  # a blank line: a row of missing values
            row = [""] * width
        elif len(row) != width:
            where = f"line {no}" if end == no else f"lines {no}-{end} (a quoted cell spans them)"
            raise ValueError(f"{source}, {where}: {len(row)} cell(s), expected {width} "
                             f"(columns: {', '.join(display(n) for n in names)})")
        cells.append(tuple(row))
        lines.append(no)
    return Table(source, names, header, tuple(cells), tuple(lines), delimiter, tuple(notes))


def _is_pandas_header(first: list[str]) -> bool:
    """Whether the cells read ``0, 1, ...``: pandas' names of unnamed columns, after the
    empty names of unnamed index columns (``pd.Series(y).to_csv(f)`` writes ``,0``)."""
    k = 0
    while k < len(first) - 1 and first[k] == "":
        k += 1
    return all(cell == str(j) for j, cell in enumerate(first[k:]))


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def _unlike_a_counter(first: list[str], below: list[list[str]]) -> bool:
    """Whether the rows below a ``0, 1, ...`` first row show it is a header: some cell of those
    columns is not a whole number (pandas writes floats with a point). Below whole numbers only
    (counts, or a headerless file starting at 0) it may as well be data."""
    k = 0
    while k < len(first) - 1 and first[k] == "":
        k += 1
    cells = [c.strip() for row in below for c in row[k:len(first)]]
    return any(not _WHOLE_NUMBER.fullmatch(c) for c in cells if c.lower() not in MISSING)


def _unnamed(j: int, header: list[str]) -> str:
    """The name of column ``j``, empty in the header: its position, unless another column
    has that name (pandas' unnamed index before the columns ``0, 1, ...``): ``index``."""
    if str(j) not in header:
        return str(j)
    return "index" if j == 0 else f"index{j}"


def read_table(path: str, stdin=None, header: bool | None = None) -> Table:
    """Read and parse ``path`` (``-``: standard input) with :func:`parse_table`."""
    text, source = read_text(path, stdin)
    return parse_table(text, source, header)
