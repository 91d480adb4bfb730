"""Scale-out with Dask: the change-point detector and the Kalman filter over many series.

A fleet of sensors gives one long table with a column naming the series and one (or, for
tracks, several) value columns, rows in time order within each series (or a time column of
numbers or dates/times to sort each series by, with a warning when one was out of order).
The functions here read it (a Parquet file or dataset directory, a pandas or a dask
DataFrame), cut it into tasks that each hold whole series, run
:class:`possibly.ChangepointDetector` or :class:`possibly.KalmanFilter` on every series in the
task, and write the results.

How the table is cut into tasks, where the work runs (this process, a local TLS cluster or
your scheduler) and the output layout of ``out=DIR`` are described in docs/integrations.md
("Dask: many series"). Dask, pandas and pyarrow are optional (``pip install
'possibly[dask]'``); importing this module does not import them.

Examples
--------
>>> import numpy as np, pandas as pd, possibly as ps
>>> from possibly.integrations.scaleout import changepoints_many
>>> y, _, _ = ps.datasets.piecewise_constant(300, n_changes=2, seed=3)
>>> df = pd.DataFrame({"sensor": np.repeat(["a", "b"], 300), "v": np.concatenate([y, -y])})
>>> res = changepoints_many(df, "sensor", "v", scheduler="synchronous", sigma=1.0,
...                         hazard=1e-3)
>>> res.summary[["id", "n_points", "n_changepoints"]]
  id  n_points  n_changepoints
0  a       300               2
1  b       300               2
>>> alone = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y).changepoints
>>> found = res.events.query("id == 'a' and kind == 'changepoint'")["index"]
>>> bool(np.array_equal(found, alone))
True

On a cluster (here one started for the call, on loopback):

>>> res = changepoints_many("fleet.parquet", "sensor", "v", out="cps/")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import numbers
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from possibly._files import replace_file, write_text_atomic
from possibly.progress import progress_counter

__all__ = ["ManyResult", "changepoints_many", "kalman_many", "series_path"]

_INSTALL = "pip install 'possibly[dask]'"

#: joins the names of a series' segment models in the summary's ``segment_models`` column
SEGMENT_MODEL_SEPARATOR = "; "


# -- optional imports ------------------------------------------------------------------------
def _need(module: str) -> Any:
    """Import an optional dependency, or say which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"possibly.integrations.scaleout needs {module.split('.')[0]} ({exc}); "
                          f"install it with: {_INSTALL}") from None


# -- results -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ManyResult:
    """Output of :func:`changepoints_many` and :func:`kalman_many`.

    Attributes
    ----------
    summary : pandas.DataFrame
        One row per series, sorted by id (see the functions for the columns).
    events : pandas.DataFrame or None
        Change points: every change point and outlier, columns ``id, index, kind, value``
        (``index`` is the 0-based position within the series, ``kind`` is ``"changepoint"``
        or ``"outlier"``). None for the Kalman filter.
    states : pandas.DataFrame or None
        Kalman filter with ``out=None``: the filtered means, consistency and discount of every
        step of every track (with ``out`` they are in the per-series files instead).
    out : pathlib.Path or None
        The output directory, if one was written.
    """

    summary: Any
    events: Any = None
    states: Any = None
    out: Path | None = None

    @property
    def n_failed(self) -> int:
        """Number of series that could not be processed (their ``error`` is set)."""
        return int(self.summary["error"].notna().sum())

    def to_frame(self, table: str = "summary") -> Any:
        """One of the result's tables: ``"summary"`` (default), ``"events"`` or ``"states"``.

        Examples
        --------
        >>> import pandas as pd
        >>> res = ManyResult(summary=pd.DataFrame({"id": ["a"], "error": [None]}))
        >>> res.to_frame().columns.tolist()
        ['id', 'error']
        """
        tables = {"summary": self.summary, "events": self.events, "states": self.states}
        if table not in tables:
            raise ValueError(f"table must be one of {sorted(tables)}, got {table!r}")
        if tables[table] is None:
            held = ", ".join(repr(k) for k, v in tables.items() if v is not None)
            raise ValueError(f"this result has no {table!r} table (it holds {held})")
        return tables[table]

    def to_xarray(self, table: str = "summary") -> Any:
        """The table :meth:`to_frame` returns, as an xarray Dataset over its rows.

        Examples
        --------
        >>> import pandas as pd
        >>> res = ManyResult(summary=pd.DataFrame({"id": ["a", "b"], "error": [None, None]}))
        >>> dict(res.to_xarray().sizes)
        {'index': 2}
        """
        try:
            import xarray  # noqa: F401
        except ImportError:
            raise ImportError('to_xarray needs xarray: pip install "possibly[xarray]"') from None
        return self.to_frame(table).to_xarray()


#: the file of a series' results inside its partition directory ``series/id=<id>/``
PART_FILE = "part-0.parquet"


def series_path(key: Any) -> str:
    """Path of one series' results under ``DIR/series/``: ``id=<encoded id>/part-0.parquet``.

    A Hive partition: the directory name decodes (percent-decoding, as pyarrow reads it) to
    the id's text. It is ASCII and distinct for distinct ids even on a file system that
    ignores case: capital letters are percent-encoded too (``P`` is ``%50``), as is ``~``.
    An id whose encoding is longer than 200 characters (names are limited to 255 bytes) is
    replaced by ``~sha1-`` and its digest, which is then what the directory name reads as;
    the summary's ``file`` column still names each series' file.

    Examples
    --------
    >>> series_path("pump/7"), series_path(12)
    ('id=pump%2F7/part-0.parquet', 'id=12/part-0.parquet')
    >>> series_path("Pump")
    'id=%50ump/part-0.parquet'
    """
    text = str(key)
    encoded = quote(text, safe="", errors="surrogatepass").replace("~", "%7E")
    # capitals (not the hex digits of an escape) escaped: Pump and pump differ ignoring case
    encoded = re.sub(r"%[0-9A-F]{2}|[A-Z]", lambda m: m.group() if len(m.group()) == 3
                     else f"%{ord(m.group()):02X}", encoded)
    if len(encoded) > 200:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        return f"id=~sha1-{digest}/{PART_FILE}"
    return f"id={encoded}/{PART_FILE}"


# -- argument checks -------------------------------------------------------------------------
def _check_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty column name, got {value!r}")
    return value


def _check_numeric(column: str, dtype: Any, is_numeric: bool) -> None:
    if not is_numeric:
        raise ValueError(f"value column {column!r} must be numeric (NaN for missing), "
                         f"got dtype {dtype}")


def _load(data: Any, id_column: str, value_columns: Sequence[str],
          other_columns: Sequence[str] = ()):
    """The columns ``[id_column, *value_columns, *other_columns]`` of the input, columns and
    types checked (the value columns numeric, the others of any type): a pandas DataFrame
    for a pandas input (made a dask one by :func:`_as_dask` only when the work goes through
    Dask), a dask DataFrame otherwise."""
    dd = _need("dask.dataframe")
    pd = _need("pandas")
    cols = [id_column, *value_columns, *other_columns]
    if len(set(cols)) != len(cols):
        raise ValueError(f"the id, value and time columns must be distinct, got {cols}")
    if isinstance(data, (str, os.PathLike)):
        pa = _need("pyarrow")
        pads = _need("pyarrow.dataset")
        path = Path(data)
        if not path.exists():
            raise FileNotFoundError(f"input {str(path)!r}: no such file or directory")
        try:
            schema = pads.dataset(path, format="parquet").schema
        except (pa.ArrowException, OSError) as exc:
            raise OSError(f"input {str(path)!r} is not a readable Parquet file or dataset: "
                          f"{exc}") from None
        _check_columns(cols, schema.names, f"input {str(path)!r}")
        for c in value_columns:
            t = schema.field(c).type
            ok = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            _check_numeric(c, t, ok)
        return dd.read_parquet(str(path), columns=cols)
    if isinstance(data, pd.DataFrame):
        _check_columns(cols, list(data.columns), "the pandas DataFrame")
        _check_dtypes(data, value_columns)
        _check_id_kinds(id_column, _id_kinds(data[id_column]))  # before Dask makes it text
        return data[cols]
    if isinstance(data, dd.DataFrame):
        _check_columns(cols, list(data.columns), "the dask DataFrame")
        _check_dtypes(data, value_columns)
        return data[cols]
    raise ValueError(f"data must be a Parquet path, a pandas or a dask DataFrame, got "
                     f"{type(data).__name__}")


def _as_dask(frame: Any) -> Any:
    """The table :func:`_load` returned, as a dask DataFrame."""
    dd = _need("dask.dataframe")
    if isinstance(frame, dd.DataFrame):
        return frame
    # sort=False keeps the row order (the time order of each series); the partitions only
    # bound the size of a piece, the tasks are cut by id in _task_frames
    npartitions = max(1, min(64, len(frame) // 100_000))
    return dd.from_pandas(frame, npartitions=npartitions, sort=False)


def _as_dask_types(frame: Any) -> Any:
    """A pandas table with the column types Dask gives it (text columns as pyarrow strings,
    when Dask's ``dataframe.convert-string`` is on, as by default): the same results in
    this process as through Dask."""
    pd = _need("pandas")
    pa = _need("pyarrow")
    if not _need("dask.dataframe.utils").pyarrow_strings_enabled():
        return frame
    # Dask's rule: any string or object column that is not already a pyarrow string
    kept = (pd.StringDtype("pyarrow"), pd.ArrowDtype(pa.string()))
    text = {c: pd.StringDtype("pyarrow") for c, dtype in frame.dtypes.items()
            if pd.api.types.is_string_dtype(dtype) and dtype not in kept}
    return frame.astype(text) if text else frame


def _id_kinds(ids: Any) -> set[str]:
    """The kinds of value in an id column: one for a typed column; for an object column, each
    of text, bytes, bool, integer, real or the type's name that occurs."""
    if ids.dtype != object:
        return {str(ids.dtype)}
    kinds = set()
    for kind in set(map(type, ids.dropna())):  # not unique values: True == 1 == 1.0
        if issubclass(kind, str):
            kinds.add("text")
        elif issubclass(kind, (bool, np.bool_)):
            kinds.add("bool")
        elif issubclass(kind, numbers.Integral):
            kinds.add("integer")
        elif issubclass(kind, numbers.Real):
            kinds.add("real")
        else:
            kinds.add(kind.__name__)
    return kinds


def _check_id_kinds(id_column: str, kinds: set[str]) -> None:
    # 1 and "1" (or True and 1, 1 and 1.0) would become one series: Dask turns an object
    # column into text, and Python takes True == 1 == 1.0
    if len(kinds) > 1:
        raise ValueError(f"id column {id_column!r} mixes kinds of value ({', '.join(sorted(kinds))}"
                         "), e.g. 1 and '1', which would be taken as one series: convert it to "
                         "one type first (e.g. .astype(str))")


def _check_columns(cols: Sequence[str], available: Sequence[Any], source: str) -> None:
    """Every column of ``cols`` is in ``available``, the columns of ``source`` (the data)."""
    missing = [c for c in cols if c not in available]
    if missing and not len(available):
        raise ValueError(f"column {missing[0]!r} not found: {source} has no columns (an empty "
                         "dataset)")
    if missing:
        raise ValueError(f"column {missing[0]!r} not found in {source}; its columns are "
                         f"{', '.join(map(str, available))}")


def _check_dtypes(frame: Any, value_columns: Sequence[str]) -> None:
    api = _need("pandas.api.types")
    for c in value_columns:
        dtype = frame[c].dtype
        _check_numeric(c, dtype, api.is_numeric_dtype(dtype) and not api.is_bool_dtype(dtype))


# -- the cluster -----------------------------------------------------------------------------
#: ``scheduler=None`` runs a table with fewer rows in this process. Measured on 2 shared cores
#: (change points, sigma given, one change per 400 points): 3 x 400 rows 0.01-0.5 s in process
#: vs 1.9-2.3 s on a 2-worker local cluster; 10^6 rows 1.8 s vs 5.6 s; 5 * 10^6 rows 15.7 s
#: vs 9.2 s: the cluster pays from about 2 * 10^6 rows (sooner with more cores)
LOCAL_CLUSTER_MIN_ROWS = 2_000_000


def _job_rows(data: Any) -> int | None:
    """Rows of the input, when known without reading it (Parquet metadata, a pandas frame)."""
    if isinstance(data, (str, os.PathLike)):
        try:
            return int(_need("pyarrow.dataset").dataset(Path(data), format="parquet")
                       .count_rows())
        except Exception:  # unreadable input is reported by _load; unknown size: a cluster
            return None
    pd = _need("pandas")
    return len(data) if isinstance(data, pd.DataFrame) else None


def _local_cluster(distributed: Any, n_workers: int | None) -> Any:
    """A cluster of worker processes that only this process can use.

    Loopback is reachable by every user of the machine, and a Dask server runs any code it
    is sent. So every connection is TLS with mutual authentication by a certificate made for
    this cluster (held in memory and handed to the worker processes; Dask writes it only
    briefly into a private temporary folder): a client without it is refused. The HTTP
    servers (dashboard, task and log pages) serve nothing.
    """
    _need("cryptography")  # distributed's temporary credentials are made with it
    dask = _need("dask")
    security = distributed.Security.temporary()
    no_pages: dict[str, list] = {"distributed.scheduler.http.routes": [],
                                 "distributed.worker.http.routes": []}
    with dask.config.set(no_pages):  # read when the scheduler and the workers are made
        return distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False},
            security=security)


def _check_cluster(scheduler: Any, n_workers: Any) -> None:
    """Refuse a bad ``scheduler`` or ``n_workers`` (before any work)."""
    if n_workers is not None and (isinstance(n_workers, bool) or int(n_workers) != n_workers
                                  or n_workers < 1):
        raise ValueError(f"n_workers must be an integer >= 1, got {n_workers!r}")
    if scheduler is None or isinstance(scheduler, str) and scheduler.strip():
        return
    distributed = sys.modules.get("distributed")  # a Client given: it is imported
    if distributed is None or not isinstance(scheduler, distributed.Client):
        raise ValueError(f"scheduler must be None, 'synchronous', an address such as "
                         f"'tcp://127.0.0.1:8786' or a distributed.Client, got {scheduler!r}")


@contextlib.contextmanager
def _client(scheduler: Any, n_workers: int | None, connect_timeout: float,
            data: Any = None) -> Iterator[Any]:
    """Yield a distributed Client (None: run in this process), closing what it started.

    ``scheduler=None`` without ``n_workers`` runs a job of fewer than
    :data:`LOCAL_CLUSTER_MIN_ROWS` rows of ``data`` in this process, a larger (or unknown) one
    on a local cluster; the rows are counted only then.
    """
    if isinstance(scheduler, str) and scheduler == "synchronous":
        yield None
        return
    if scheduler is None and n_workers is None:
        rows = _job_rows(data)
        if rows is not None and rows < LOCAL_CLUSTER_MIN_ROWS:
            yield None  # a small job: no cluster
            return
    distributed = _need("distributed")
    if isinstance(scheduler, distributed.Client):
        yield scheduler
        return
    _check_cluster(scheduler, n_workers)
    if scheduler is None:
        # one thread per worker process: the detector's loop holds the GIL
        # every server (scheduler, workers, the scheduler's HTTP endpoint) on loopback only;
        # port 0 because dashboard_address=None still binds the busy default 8787
        cluster = _local_cluster(distributed, n_workers)
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(scheduler, timeout=connect_timeout)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ValueError(f"scheduler: cannot connect to {scheduler!r} "
                         f"({type(exc).__name__}: {exc})") from None
    try:
        yield client
    finally:
        client.close()


def _nthreads(client: Any) -> int:
    return 1 if client is None else max(1, sum(client.nthreads().values()))


def _compute(client: Any, tasks: list, progress: bool, desc: str) -> list:
    """Results of the delayed ``tasks``, in order, with a progress bar when asked."""
    import dask

    if client is None:
        return list(dask.compute(*tasks, scheduler="synchronous"))
    from distributed import as_completed

    from possibly.progress import progress_bar

    futures = client.compute(tasks)
    for _ in progress_bar(as_completed(futures), enabled=progress, total=len(futures),
                          desc=desc):
        pass
    return client.gather(futures)


# -- cutting the table into tasks ------------------------------------------------------------
def _partition_ids(df: Any, id_column: str) -> tuple[Any, bool, set[str]]:
    ids = df[id_column]
    return ids.drop_duplicates().to_numpy(), bool(ids.isna().any()), _id_kinds(ids)


def _split(df: Any, id_column: str, k: int) -> tuple:
    """Cut one partition into ``k`` buckets by a hash of the id (rows keep their order)."""
    import pandas as pd

    h = pd.util.hash_pandas_object(df[id_column], index=False).to_numpy() % np.uint64(k)
    return tuple(df[h == j] for j in range(k))


def _concat(pieces: list) -> Any:
    import pandas as pd

    return pd.concat(pieces, ignore_index=True)


def _distinct_ids(found: list, id_column: str) -> list:
    """The distinct ids, in order of first appearance, from the :func:`_partition_ids` of the
    pieces of the table in row order; ValueError for missing ids, ids of mixed kinds or no
    rows."""
    if any(has_null for _, has_null, _ in found):
        raise ValueError(f"id column {id_column!r} has missing values")
    _check_id_kinds(id_column, set().union(*(kinds for _, _, kinds in found)))
    distinct = list(dict.fromkeys(x for keys, _, _ in found for x in keys.tolist()))
    if not distinct:
        raise ValueError("the input has no rows")
    return distinct


def _task_frames(ddf: Any, id_column: str, client: Any, ids: list | None = None) -> list:
    """The delayed frames of the tasks, each holding whole series.

    ``ids``, when given, receives the distinct ids (read before any task runs).
    """
    import dask

    ddf = _as_dask(ddf)
    parts = ddf.to_delayed()
    id_parts = ddf[[id_column]].to_delayed()
    found = _compute(client, [dask.delayed(_partition_ids)(p, id_column) for p in id_parts],
                     False, "")
    distinct = _distinct_ids(found, id_column)
    n_series = len(distinct)
    if ids is not None:
        ids.extend(distinct)
    n_ids = sum(len(keys) for keys, _, _ in found)
    threads = _nthreads(client)
    if n_ids == n_series and len(parts) >= threads:
        return list(parts)  # every series in one partition
    k = max(1, min(n_series, 4 * threads))
    if k == 1:
        return [dask.delayed(_concat)(parts)]
    pieces = [dask.delayed(_split, nout=k)(p, id_column, k) for p in parts]
    return [dask.delayed(_concat)([pc[j] for pc in pieces]) for j in range(k)]


def _series_rows(df: Any, id_column: str) -> tuple[list, list[np.ndarray]]:
    """The ids of the series of one task, in order of first appearance, and the positions of
    each one's rows, in row order (the time order of the series)."""
    import pandas as pd

    codes, uniques = pd.factorize(df[id_column], sort=False)
    keys = list(pd.Index(uniques))  # the Python values a groupby gives as keys
    if not keys:  # a hash bucket that received no series
        return [], []
    order = np.argsort(codes, kind="stable")
    return keys, np.split(order, np.cumsum(np.bincount(codes, minlength=len(keys)))[:-1])


def _sortable_stamps(df: Any, time_column: str | None) -> Any:
    """The time stamps of one task to sort its series by: a numpy array for numbers,
    dates/times or durations that numpy holds, the pandas column for other such types (time
    zones, nullable numbers), None for other values (text has no order to trust: its series
    are kept in row order) or without a time column."""
    if time_column is None:
        return None
    api = _need("pandas.api.types")
    stamps = df[time_column]
    dtype = stamps.dtype
    if not (api.is_datetime64_any_dtype(dtype) or api.is_timedelta64_dtype(dtype)
            or (api.is_numeric_dtype(dtype) and not api.is_bool_dtype(dtype))):
        return None
    if isinstance(dtype, np.dtype):
        return stamps.to_numpy()
    return stamps.reset_index(drop=True)


def _in_time_order(stamps: Any, rows: np.ndarray, key: Any, time_column: str | None
                   ) -> tuple[np.ndarray, bool]:
    """The rows of one series sorted by their time stamps (stably: rows sharing a stamp keep
    their order), and whether they were out of order; ``stamps`` as
    :func:`_sortable_stamps` gives them.

    ValueError, naming the series, when the rows need sorting and one has no time stamp
    (there is no place to put it).
    """
    if stamps is None:
        return rows, False
    if isinstance(stamps, np.ndarray):
        mine = stamps[rows]
        known = (mine[~np.isnat(mine)] if mine.dtype.kind in "mM"
                 else mine[~np.isnan(mine)] if mine.dtype.kind in "fc" else mine)
    else:
        mine = stamps.iloc[rows]
        known = mine.dropna().to_numpy()
    if not (known[1:] < known[:-1]).any():
        return rows, False
    if len(known) < len(mine):
        raise ValueError(f"series {key!r} is not in time order (column {time_column!r}) and "
                         f"{len(mine) - len(known)} of its rows have no time stamp to sort "
                         "them by: fill in the stamps, or sort the rows yourself")
    if isinstance(mine, np.ndarray):
        return rows[np.argsort(mine, kind="stable")], True
    return rows[mine.reset_index(drop=True).sort_values(kind="stable").index.to_numpy()], True


def _warn_time_order(results: Sequence[Any], time_column: str | None) -> None:
    """One warning for the series that were sorted by time (the tasks' third results)."""
    moved = [k for r in results for k in r[2]]
    if moved:
        warnings.warn(f"{len(moved)} series were not in time order (column {time_column!r}, "
                      f"e.g. {moved[0]!r}): each was sorted by its time stamps (rows sharing "
                      "a stamp kept in row order); positions count from 0 in time order",
                      UserWarning, stacklevel=3)


#: the list of the files a run wrote into its ``out`` directory, which ``overwrite`` removes
MANIFEST = ".possibly-manifest.json"
_MANIFEST_FORMAT = "possibly scale-out outputs"
#: the tables written next to ``series/`` (by either function: a directory may hold both)
_TABLES = ("events.parquet", "summary.parquet")


def _is_ours(rel: str) -> bool:
    """True for a name that a run writes: a table or ``series/id=.../part-0.parquet``."""
    if rel in _TABLES:
        return True
    parts = rel.split("/")
    return (len(parts) == 3 and parts[0] == "series" and parts[1].startswith("id=")
            and parts[2] == PART_FILE)


def _read_manifest(out: Path) -> set[str] | None:
    """The files the manifest of ``out`` lists (None without a manifest); ValueError if it is
    unreadable or lists anything a run does not write."""
    path = out / MANIFEST
    if not os.path.lexists(path):
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        files = doc["files"] if doc.get("format") == _MANIFEST_FORMAT else None
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        files = None
    if not isinstance(files, list) or not all(isinstance(f, str) and _is_ours(f)
                                              for f in files):
        raise ValueError(f"out {str(out)!r}: {MANIFEST} is not a list of the files a previous "
                         "run wrote: refusing to delete anything (remove the directory's "
                         "contents yourself, or choose another directory)")
    return set(files)


def _write_manifest(out: Path, files: Sequence[str], complete: bool) -> None:
    write_text_atomic(out / MANIFEST, json.dumps(
        {"format": _MANIFEST_FORMAT, "complete": complete, "files": sorted(set(files))},
        indent=1))


def _check_apart(data: Any, out: Path) -> None:
    """Refuse an ``out`` that holds the input or lies inside it (the input is read later)."""
    if not isinstance(data, (str, os.PathLike)):
        return
    src, dst = Path(os.path.realpath(data)), Path(os.path.realpath(out))
    if src == dst or dst in src.parents or src in dst.parents:
        raise ValueError(f"out {str(out)!r} holds the input {str(data)!r} or lies inside it: "
                         "choose an output directory apart from the input")


def _own_file(out: Path, rel: str) -> bool:
    """True if ``out/rel`` is a regular file reached without a link (one a run may replace)."""
    path = out / rel
    return (not path.is_symlink() and path.is_file()
            and os.path.realpath(path) == os.path.join(os.path.realpath(out), *rel.split("/")))


def _refuse_foreign(out: Path, rel: str) -> None:
    """Refuse a path of ours that exists but is not a regular file of ``out``'s own."""
    if os.path.lexists(out / rel) and not _own_file(out, rel):
        raise ValueError(f"out {str(out)!r}: {rel} is not a regular file of its own (a link, a "
                         "directory or a special file): refusing to replace it (remove it "
                         "yourself, or choose another directory)")


@dataclass(frozen=True)
class _Out:
    """The output directory and the files its previous run listed (empty without one)."""

    path: Path
    previous: frozenset[str]


def _prepare_out(out: Any, overwrite: bool, data: Any = None) -> _Out | None:
    """Check ``out`` without changing anything: every refusal about it comes before any work.

    The files a previous run listed in the manifest are replaced or removed by
    :func:`_finish_out` once the new results are written; nothing else is ever touched.
    """
    if out is None:
        return None
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out {str(out)!r} exists and is not a directory")
    _check_apart(data, out)
    series = out / "series"
    if series.is_symlink() or (os.path.lexists(series) and not series.is_dir()):
        raise ValueError(f"out {str(out)!r}: 'series' is not a directory of its own (a link or "
                         "a file): refusing to write through it")
    found = [t for t in _TABLES if os.path.lexists(out / t)]
    if series.is_dir():
        found += sorted(f"series/{p.name}/{PART_FILE}" for p in series.iterdir()
                        if p.name.startswith("id=")
                        and os.path.lexists(p / PART_FILE))
    _refuse_foreign(out, MANIFEST)
    listed = _read_manifest(out)
    if (found or listed is not None) and not overwrite:
        first = found[0] if found else MANIFEST
        raise ValueError(f"out {str(out)!r} already holds results ({first}); pass "
                         f"overwrite=True (--overwrite) to replace them")
    if found and listed is None:
        raise ValueError(f"out {str(out)!r} holds {found[0]} but no {MANIFEST} listing what "
                         "a previous run wrote: refusing to replace files that may not be "
                         "ours (remove them yourself, or choose another directory)")
    strangers = [f for f in found if listed is not None and f not in listed]
    if strangers:
        raise ValueError(f"out {str(out)!r}: {strangers[0]} is not among the files a "
                         f"previous run wrote ({MANIFEST}): refusing to replace it")
    for rel in sorted({*_TABLES, *(listed or ())}):  # replaced by a new file, never written
        _refuse_foreign(out, rel)                      # through, nor left in the way
    return _Out(out, frozenset(listed or ()))


def _plan_files(out: _Out | None, tables: Sequence[str], ids: list) -> None:
    """Once the ids are read and before any task runs: check the series' file names and list
    them in the manifest with the previous run's, so that a run cut short can still be
    overwritten."""
    if out is None:
        return
    names = [series_path(k) for k in ids]
    if len({n.lower() for n in names}) < len(names):  # a digest collision: never overwrite
        raise ValueError("two series ids give the same file name; rename one of them")
    for name in names:
        part = out.path / "series" / name.split("/")[0]
        if os.path.lexists(part) and (part.is_symlink() or not part.is_dir()):
            raise ValueError(f"out {str(out.path)!r}: series/{part.name} is not a directory of "
                             "its own (a link or a file): refusing to write through it")
    (out.path / "series").mkdir(parents=True, exist_ok=True)
    _write_manifest(out.path, [*out.previous, *tables, *(f"series/{n}" for n in names)],
                    complete=False)


def _finish_out(out: _Out, tables: dict[str, Any], files: Sequence[str]) -> None:
    """Write the tables, remove the previous run's files that this run did not write again
    (only regular files still where that run wrote them), and complete the manifest."""
    for name, frame in tables.items():
        replace_file(out.path / name, functools.partial(frame.to_parquet, index=False))
    written = {*tables, *files}
    for rel in sorted(out.previous - written):
        if _own_file(out.path, rel):
            (out.path / rel).unlink()
            if rel.startswith("series/"):  # its partition directory, unless it holds more
                with contextlib.suppress(OSError):
                    (out.path / rel).parent.rmdir()
    _write_manifest(out.path, sorted(written), complete=True)


def _event_schema(stamps: Any) -> Any:
    """The Arrow schema of a series' events file (``stamps``: the series' time stamps, None
    without a time column): one for every file, also without events (whose empty columns
    would otherwise be written as nulls, which pyarrow cannot read together with the other
    files of ``series/``)."""
    pa = _need("pyarrow")
    time = [] if stamps is None else [("time", pa.Array.from_pandas(stamps).type)]
    return pa.schema([("index", pa.int64()), *time, ("kind", pa.string()),
                      ("value", pa.float64())])


def _write_series(frame: Any, series_dir: str, key: Any, schema: Any = None) -> str:
    """Write one series' file, with ``schema`` (an Arrow schema) when given; returns its
    relative path. The file is renamed into place once written: it replaces the file of a
    previous run (or of this task run again), and a failed write leaves none."""
    name = series_path(key)
    part = os.path.join(series_dir, name.split("/")[0])
    try:
        os.mkdir(part)
    except FileExistsError:  # left by the user in a directory of ours: never written through
        if os.path.islink(part) or not os.path.isdir(part):
            raise
    replace_file(os.path.join(series_dir, name),
                  functools.partial(frame.to_parquet, index=False, schema=schema))
    return f"series/{name}"


def _text(col: Any) -> Any:
    """Strings in pandas' default string dtype, missing values kept missing.

    Tasks whose column holds only None give object columns, the others strings; one dtype
    makes the result independent of how the series were cut into tasks.
    """
    return col.astype(str).mask(col.isna())


def _text_columns(summary: Any) -> Any:
    for c in ("file", "error"):
        summary[c] = _text(summary[c])
    return summary


def _sorted(frame: Any, by: list[str]) -> Any:
    try:
        return frame.sort_values(by, kind="stable", ignore_index=True)
    except TypeError:  # ids of mixed types: keep the order of the tasks
        return frame.reset_index(drop=True)


def _run(data: Any, id_column: str, value_columns: list[str], time_column: str | None,
         task: Callable, task_args: tuple, tables: Sequence[str], desc: str, *, scheduler: Any,
         n_workers: int | None, out: str | os.PathLike | None, overwrite: bool,
         progress: bool, connect_timeout: float) -> tuple[list, _Out | None]:
    """The run shared by :func:`changepoints_many` and :func:`kalman_many` once their own
    arguments are checked: ``task(frame, id_column, *task_args, series_dir, time_column,
    advance=...)`` on every task. Returns the tasks' results and the output directory (None
    without ``out``)."""
    import dask

    _check_cluster(scheduler, n_workers)
    extra = [] if time_column is None else [_check_name("time_column", time_column)]
    # bad input fails before any cluster starts
    table = _load(data, id_column, value_columns, extra)
    out_dir = _prepare_out(out, overwrite, data)
    series_dir = None if out_dir is None else str((out_dir.path / "series").resolve())
    ids: list = []
    with _client(scheduler, n_workers, connect_timeout, data) as client:
        # a pandas table in this process is one task, run without a task graph (whose
        # planning costs more than the grouping)
        direct = client is None and isinstance(table, _need("pandas").DataFrame)
        if direct:
            table = _as_dask_types(table)
            ids.extend(_distinct_ids([_partition_ids(table, id_column)], id_column))
        else:
            frames = _task_frames(table, id_column, client, ids)
        _plan_files(out_dir, tables, ids)
        # in this process, a bar over the series (the tasks are few); on a cluster, over the
        # tasks as they complete
        with progress_counter(len(ids), enabled=progress and client is None, desc=desc,
                              unit="series") as advance:
            if direct:
                return [task(table, id_column, *task_args, series_dir, time_column,
                             advance=advance)], out_dir
            tasks = [dask.delayed(task)(f, id_column, *task_args, series_dir, time_column,
                                        advance=advance) for f in frames]
            results = _compute(client, tasks, progress, desc)
    return results, out_dir


# -- change points ---------------------------------------------------------------------------
#: the kinds of event, in the order of the events of one index
_KINDS = ("changepoint", "outlier")


def _events(res: Any) -> tuple[np.ndarray, np.ndarray]:
    """The positions and kinds (indices into :data:`_KINDS`) of a fit's events, ordered by
    position, a change point before an outlier at the same one."""
    cps, outs = res.changepoints, res.outliers
    idx = np.concatenate([cps, outs]).astype(np.int64)
    kind = np.repeat(np.arange(len(_KINDS)), [cps.size, outs.size])
    order = np.lexsort((kind, idx))
    return idx[order], kind[order]


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The integer arrays ``parts`` end to end (empty without any)."""
    return np.concatenate([np.empty(0, np.int64), *parts])


def _series_events(idx: np.ndarray, kind: np.ndarray, y: np.ndarray, stamps: Any) -> Any:
    """The events file of one series: ``index, [time], kind, value``."""
    import pandas as pd

    ev = pd.DataFrame({"index": idx, "kind": [_KINDS[k] for k in kind.tolist()],
                       "value": y[idx]})
    if stamps is not None:  # the stamps of the events' rows, after their index
        ev.insert(1, "time", stamps.iloc[idx].to_numpy())
    return ev


def _changepoint_task(df: Any, id_column: str, value_column: str, kwargs: dict,
                      series_dir: str | None, time_column: str | None = None,
                      advance: Callable[[int], object] | None = None
                      ) -> tuple[Any, Any, list]:
    """Run the detector on every series of one task; returns (events, summary) frames and
    the ids of the series sorted by time. ``advance(1)`` is called after each series."""
    import pandas as pd

    from possibly.changepoint import ChangepointDetector

    det = ChangepointDetector(**kwargs)
    keys, groups = _series_rows(df, id_column)
    if not keys:  # a hash bucket that received no series
        return None, None, []
    values = df[value_column].to_numpy(dtype=np.float64, na_value=np.nan)
    stamps = _sortable_stamps(df, time_column)
    times = None if time_column is None else df[time_column].reset_index(drop=True)
    # the events of every series, gathered as columns: the series (its place in keys), the
    # position in the series and the row in df, the kind
    ev_series, ev_index, ev_rows, ev_kind = [], [], [], []
    rows, moved = [], []
    for s, (key, pos) in enumerate(zip(keys, groups, strict=True)):
        row = {"id": key, "n_points": pos.size, "n_changepoints": 0, "n_outliers": 0,
               "file": None, "error": None}
        try:
            pos, resorted = _in_time_order(stamps, pos, key, time_column)
            if resorted:
                moved.append(key)
            y = values[pos]
            res = det.fit(y)
        except ValueError as exc:  # one bad sensor must not stop the fleet
            row.update(n_changepoints=-1, n_outliers=-1, error=str(exc))
        else:
            idx, kind = _events(res)
            n_cps = int(np.count_nonzero(kind == 0))
            row.update(n_changepoints=n_cps, n_outliers=idx.size - n_cps)
            if res.sigma is not None:  # σ belongs to NormalMean; other models have none
                row["sigma"] = float(res.sigma)
            else:
                row["segment_models"] = SEGMENT_MODEL_SEPARATOR.join(res.segment_model_names)
            ev_series.append(np.full(idx.size, s))
            ev_index.append(idx)
            ev_rows.append(pos[idx])
            ev_kind.append(kind)
            if series_dir is not None:  # a failed series gets no file
                mine = None if times is None else times.iloc[pos]
                row["file"] = _write_series(_series_events(idx, kind, y, mine), series_dir, key,
                                            _event_schema(mine))
        rows.append(row)
        if advance is not None:
            advance(1)
    at = _joined(ev_rows)
    # the ids as pandas makes a column of them (their type, e.g. str or datetime64)
    events = pd.DataFrame({"id": pd.Series(keys).iloc[_joined(ev_series)]
                           .reset_index(drop=True), "index": _joined(ev_index),
                           "kind": [_KINDS[k] for k in _joined(ev_kind).tolist()],
                           "value": values[at]})
    if times is not None:  # the stamps of the events' rows, after their index
        stamps = times.iloc[at].to_numpy()
        eventless = len(ev_index) < len(keys) or any(i.size == 0 for i in ev_index)
        if stamps.dtype == object and eventless:
            # a series without events has an empty object column, which the others' join
            stamps = pd.Series(stamps, dtype=object)
        events.insert(2, "time", stamps)
    return events, pd.DataFrame(rows), moved


def changepoints_many(data: Any, id_column: str, value_column: str, *, scheduler: Any = None,
                      n_workers: int | None = None, out: str | os.PathLike | None = None,
                      overwrite: bool = False, progress: bool = False,
                      connect_timeout: float = 10.0, time_column: str | None = None,
                      **detector_kwargs: Any) -> ManyResult:
    """Run :class:`possibly.ChangepointDetector` on every series of a long table with Dask.

    Parameters
    ----------
    data : str, os.PathLike, pandas.DataFrame or dask.dataframe.DataFrame
        The table, or the path of a Parquet file or dataset directory. Rows are in time order
        within each series; NaN values are missing observations.
    id_column : str
        Column naming the series (any hashable values, no missing ones).
    value_column : str
        Numeric column of observations.
    scheduler : None, str or distributed.Client
        None: by the size of the job, this process or a local cluster on 127.0.0.1 for this
        call; an address of a running scheduler; a Client; or ``"synchronous"`` (this
        process, no cluster). See the module docstring.
    n_workers : int, optional
        Worker processes of the local cluster (``scheduler=None``: given, a cluster is started
        whatever the size of the job); Dask's default otherwise.
    out : path, optional
        Directory to write (see the module docstring for the layout).
    overwrite : bool
        Replace the results of a previous run in ``out`` (otherwise an error).
    progress : bool
        Show a progress bar (tqdm, when installed and stderr is a terminal): over the series
        in this process, over the tasks as they complete on a cluster.
    connect_timeout : float
        Seconds to wait for a scheduler given by address.
    time_column : str, optional
        Column of time stamps (any type): the ``events`` table (``DIR/events.parquet`` and
        the per-series files too) gets a ``time`` column after ``index``, the stamp of the
        event's row. Stamps that are numbers, dates/times or durations put each series in
        time order first (a stable sort: rows sharing a stamp keep their order), with a
        warning when a series was out of order; such a series with a missing stamp fails
        (its error names it). Other stamps (text) are kept in row order.
    **detector_kwargs
        Passed to :class:`possibly.ChangepointDetector` (``sigma``, ``hazard``,
        ``forgetting``, ``robust``, ``tau``, ``model``, ...), checked before anything runs.
        None gives the detector's default models (``model="auto"``); ``model="normal"`` (or
        ``sigma=...``) the paper's model; the ``changepoint-many`` command passes its
        ``--model``.

    Returns
    -------
    ManyResult
        ``events`` (``id, index, kind, value``, sorted by id and index) and ``summary`` (``id,
        n_points, n_changepoints, n_outliers, sigma or segment_models, file, error``; the
        counts are ``-1`` and ``error`` is set for a series that could not be processed).
        ``sigma`` (the noise scale used) is there for the normal-mean model, otherwise
        ``segment_models``: the names of the models of the series' segments in order
        (:func:`possibly.changepoint.result.model_name`, joined by ``"; "``, e.g. ``"level;
        linear trend"``); missing for a series that failed, absent when none was processed.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> level = np.r_[np.zeros(30), np.full(30, 5.0)]        # sensor 1 steps up at t = 30
    >>> noise = np.round(0.2 * np.sin(np.arange(60.0) ** 2), 1)  # no cycle
    >>> df = pd.DataFrame({"id": np.repeat([1, 2], 60),
    ...                    "y": np.r_[level + noise, noise]})   # sensor 2 stays at 0
    >>> res = changepoints_many(df, "id", "y", scheduler="synchronous", sigma=0.2)
    >>> res.events
       id  index         kind  value
    0   1     30  changepoint    5.2
    >>> res.summary[["id", "n_points", "n_changepoints", "n_outliers", "sigma"]]
       id  n_points  n_changepoints  n_outliers  sigma
    0   1        60               1           0    0.2
    1   2        60               0           0    0.2

    The default models report the model of each segment instead of a σ:

    >>> changepoints_many(df, "id", "y", scheduler="synchronous").summary["segment_models"]
    0    level; level
    1           level
    Name: segment_models, dtype: str
    """
    from possibly.changepoint import ChangepointDetector

    id_column = _check_name("id_column", id_column)
    value_column = _check_name("value_column", value_column)
    ChangepointDetector(**detector_kwargs)  # bad parameters fail here, before any work
    results, out_dir = _run(data, id_column, [value_column], time_column, _changepoint_task,
                            (value_column, detector_kwargs), list(_TABLES), "change points",
                            scheduler=scheduler, n_workers=n_workers, out=out,
                            overwrite=overwrite, progress=progress,
                            connect_timeout=connect_timeout)
    pd = _need("pandas")
    results = [r for r in results if r[1] is not None]
    _warn_time_order(results, time_column)
    events = _sorted(pd.concat([e for e, _, _ in results], ignore_index=True),
                     ["id", "index"])
    events["kind"] = _text(events["kind"])
    summary = _text_columns(_sorted(pd.concat([s for _, s, _ in results], ignore_index=True),
                                    ["id"]))
    # one column order whatever the tasks held: sigma (normal model) or segment_models
    model_columns = [c for c in ("sigma", "segment_models") if c in summary.columns]
    if "segment_models" in model_columns:
        summary["segment_models"] = _text(summary["segment_models"])
    summary = summary[["id", "n_points", "n_changepoints", "n_outliers", *model_columns,
                       "file", "error"]]
    if out_dir is not None:
        _finish_out(out_dir, {"events.parquet": events, "summary.parquet": summary},
                    list(summary["file"].dropna()))
    return ManyResult(summary=summary, events=events,
                      out=None if out_dir is None else out_dir.path)


# -- Kalman filter ---------------------------------------------------------------------------
def _warn_tracks(fractions: np.ndarray) -> None:
    """One :class:`~possibly.filters.filter_result.MostlyDiscountedWarning` for the tracks with more
    than half their observations discounted."""
    from possibly.filters.filter_result import MOSTLY_DISCOUNTED, MostlyDiscountedWarning

    bad = np.nan_to_num(fractions, nan=0.0) > MOSTLY_DISCOUNTED
    if bad.any():
        warnings.warn(f"{int(bad.sum())} of {fractions.size} tracks have more than half their "
                      "observations discounted below 0.1 (summary column discounted_fraction): "
                      "the model does not fit them, most likely its noise scale R (in other "
                      "units than the data?); set it per track from the data "
                      "(possibly.filters.constant_velocity_noise)", MostlyDiscountedWarning,
                      stacklevel=3)


def _track_filter(model: Callable, options: dict, ys: np.ndarray) -> Any:
    """The filter of one track whose model is ``model(ys)`` (``kalman_many`` with a callable
    model)."""
    from possibly.filters.kalman import KalmanFilter
    from possibly.filters.state_space import LinearGaussianModel

    return KalmanFilter(LinearGaussianModel.of(model(ys)), **options)


def _failed_track(key: Any, n_steps: int, exc: Exception) -> dict[str, Any]:
    """The summary row of a track that could not be filtered."""
    return {"id": key, "n_steps": n_steps, "n_missing": -1, "n_discounted": -1,
            "min_discount": math.nan, "discounted_fraction": math.nan, "file": None,
            "error": str(exc)}


def _ordered_tracks(df: Any, id_column: str, time_column: str | None
                    ) -> tuple[list, list, list]:
    """The tracks of one task, each ``(id, positions of its rows in time order)``; the summary
    rows of those that could not be put in order; the ids of those that were sorted."""
    keys, groups = _series_rows(df, id_column)
    stamps = _sortable_stamps(df, time_column)
    tracks, unordered, moved = [], [], []
    for key, pos in zip(keys, groups, strict=True):
        try:
            pos, resorted = _in_time_order(stamps, pos, key, time_column)
        except ValueError as exc:  # that track fails, the others still run
            unordered.append(_failed_track(key, pos.size, exc))
            continue
        tracks.append((key, pos))
        if resorted:
            moved.append(key)
    return tracks, unordered, moved


def _batches(lengths: list[int], shared: bool) -> Iterator[list[int]]:
    """The positions of the tracks filtered together: those of equal ``lengths`` with a
    ``shared`` filter, each alone otherwise."""
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_length.setdefault(n if shared else i, []).append(i)
    yield from by_length.values()


def _filter_batch(filt: Any, ys: np.ndarray, engine: str) -> Any:
    """``filt.filter(ys, engine=engine)`` keeping the means, without its warning (kalman_many
    warns once, for every track)."""
    from possibly.filters.filter_result import MostlyDiscountedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MostlyDiscountedWarning)
        return filt.filter(ys, keep=("mean",), engine=engine)


def _track_frame(columns: dict[str, np.ndarray], names: list[str], stamps: Any) -> Any:
    """The states frame of filtered tracks: ``columns`` holds the steps (``step``), the
    means (``mean``, ``(T, n)``), ``consistency`` and ``discount`` of their steps, ``stamps``
    their time stamps (None without a time column)."""
    import pandas as pd

    cols = {"step": columns["step"]}
    if stamps is not None:  # each step's stamp, after it
        cols["time"] = stamps
    mean = columns["mean"]
    cols.update({f"mean_{s}": mean[:, j] for j, s in enumerate(names)})
    cols["consistency"] = columns["consistency"]
    cols["discount"] = columns["discount"]
    return pd.DataFrame(cols)


def _track_row(key: Any, n_steps: int, disc: np.ndarray, outlier_level: float
               ) -> dict[str, Any]:
    """The summary row of a track filtered with the discounts ``disc``."""
    from possibly.filters.filter_result import discounted_fraction

    return {"id": key, "n_steps": n_steps,
            "n_missing": int(np.isnan(disc).sum()),
            "n_discounted": int(np.sum(disc < outlier_level)),
            "min_discount": float(np.nanmin(disc)) if np.isfinite(disc).any()
            else math.nan, "discounted_fraction": float(discounted_fraction(disc)),
            "file": None, "error": None}


def _tracks_states(tracks: list, states: list, names: list, times: Any) -> Any:
    """One frame of the states of the filtered ``tracks`` (those whose ``states`` are set), in
    track order, with an ``id`` column last; None if none was filtered."""
    import pandas as pd

    done = [i for i, st in enumerate(states) if st is not None]
    if not done:
        return None
    if any(names[i] != names[done[0]] for i in done):  # models with other states: by track
        return pd.concat([_track_frame(states[i], names[i], None if times is None else
                                       times.iloc[tracks[i][1]].to_numpy())
                          .assign(id=tracks[i][0]) for i in done], ignore_index=True)
    joined = {c: np.concatenate([states[i][c] for i in done]) for c in states[done[0]]}
    at = np.concatenate([tracks[i][1] for i in done])
    frame = _track_frame(joined, names[done[0]],
                         None if times is None else times.iloc[at].to_numpy())
    keys = pd.Series([tracks[i][0] for i in done])  # the ids as pandas makes a column of them
    frame["id"] = keys.iloc[np.repeat(np.arange(len(done)), [tracks[i][1].size for i in done])
                            ].reset_index(drop=True)
    return frame


def _kalman_task(df: Any, id_column: str, value_columns: list[str], kf: Any,
                 state_names: list[str] | None, outlier_level: float, engine: str,
                 series_dir: str | None, time_column: str | None = None,
                 advance: Callable[[int], object] | None = None) -> tuple[Any, Any, list]:
    """Filter every track of one task: tracks of equal length as one batch when ``kf`` is a
    filter, each with its own filter ``kf(ys)`` otherwise. Returns the states (None with
    ``series_dir``, where they are written), the summary and the ids of the tracks sorted by
    time. ``advance(n)`` is called after each batch of ``n`` tracks."""
    import pandas as pd

    from possibly.filters.kalman import KalmanFilter

    tracks, unordered, moved = _ordered_tracks(df, id_column, time_column)
    values = df[value_columns].to_numpy(dtype=np.float64, na_value=np.nan)
    times = None if time_column is None else df[time_column].reset_index(drop=True)
    shared = isinstance(kf, KalmanFilter)
    # each filtered track's states: steps, means (T, n), consistency, discount
    states: list[Any] = [None] * len(tracks)
    rows: list[Any] = [None] * len(tracks)
    names: list[list[str]] = [[]] * len(tracks)  # the state names of each track's model
    for idx in _batches([pos.size for _, pos in tracks], shared):
        ys = np.stack([values[tracks[i][1]] for i in idx])
        try:
            filt = kf if shared else kf(ys[0])
            res = _filter_batch(filt, ys, engine)
        except ValueError as exc:  # reported per track, the others still run
            for i in idx:
                rows[i] = _failed_track(tracks[i][0], ys.shape[1], exc)
        else:
            batch_names = state_names or list(filt.model.names)
            consistency = res.consistency  # computed for the whole batch: once
            for b, i in enumerate(idx):
                key, pos = tracks[i]
                names[i] = batch_names
                states[i] = {"step": np.arange(pos.size, dtype=np.int64), "mean": res.mean[b],
                             "consistency": consistency[b], "discount": res.discount[b]}
                rows[i] = _track_row(key, pos.size, res.discount[b], outlier_level)
                if series_dir is not None:
                    stamps = None if times is None else times.iloc[pos].to_numpy()
                    rows[i]["file"] = _write_series(_track_frame(states[i], batch_names, stamps),
                                                    series_dir, key)
        if advance is not None:
            advance(len(idx))
    states_df = None
    if series_dir is None:
        states_df = _tracks_states(tracks, states, names, times)
    if advance is not None and unordered:
        advance(len(unordered))
    rows = [r for r in rows if r is not None] + unordered
    return states_df, (pd.DataFrame(rows) if rows else None), moved


def _column_names(value_columns: str | Sequence[str]) -> list[str]:
    """``value_columns`` as a non-empty list of column names."""
    if isinstance(value_columns, str):
        value_columns = [value_columns]
    value_columns = [_check_name("value_columns", c) for c in value_columns]
    if not value_columns:
        raise ValueError("value_columns must name at least one column")
    return value_columns


def _kalman_setup(model: Any, n_columns: int, state_names: Sequence[str] | None,
                  options: dict[str, Any]) -> tuple[Any, list[str] | None]:
    """The filter of :func:`kalman_many` (or, for a callable ``model``, the function making
    a track's filter) and the state names, checked against the ``n_columns`` observed."""
    from possibly.filters.kalman import KalmanFilter
    from possibly.filters.state_space import LinearGaussianModel, constant_velocity

    if callable(model):
        # one model per track: the options are checked now (on a stand-in model), the
        # model's shapes per track
        KalmanFilter(constant_velocity(ndim=n_columns), **options)
        kf: Any = functools.partial(_track_filter, model, options)
        state_dim = None
    else:
        kf = KalmanFilter(LinearGaussianModel.of(model), **options)
        state_dim = kf.state_dim
        if kf.obs_dim != n_columns:
            raise ValueError(f"value_columns has {n_columns} column(s) but the model "
                             f"observes {kf.obs_dim} value(s) per step")
        if state_names is None:
            state_names = list(kf.model.names)
    if state_names is None:
        return kf, None
    names = [str(s) for s in state_names]
    count = len(names) if state_dim is None else state_dim
    if len(names) != count or len(set(names)) != count:
        raise ValueError(f"state_names must be {count} distinct names, got {names}")
    return kf, names


def _check_compiled_kalman(kf: Any) -> None:
    """Refuse ``engine="numba"`` here, before any task runs, where every track's filter would
    refuse it (each track's failure would only be reported in the summary): without numba, or
    for one model that is time-varying or observes through an ``H`` not of full row rank (a
    model per track is checked per track)."""
    import importlib.util

    from possibly.filters.kalman import KalmanFilter

    if importlib.util.find_spec("numba") is None:
        raise ValueError("engine='numba' needs numba: pip install possibly[fast]")
    if isinstance(kf, KalmanFilter) and not kf.model.compiles:
        raise ValueError("engine='numba' needs a time-invariant model whose H has full row "
                         "rank; use engine='numpy' or engine='auto'")


def kalman_many(data: Any, id_column: str, value_columns: str | Sequence[str], model: Any,
                *, robust: bool = True, tau: float | None = None, dim: float | None = None,
                coverage: float | None = 0.9,
                state_names: Sequence[str] | None = None, outlier_level: float = 0.1,
                scheduler: Any = None, n_workers: int | None = None,
                out: str | os.PathLike | None = None, overwrite: bool = False,
                progress: bool = False, connect_timeout: float = 10.0,
                time_column: str | None = None, engine: str = "auto") -> ManyResult:
    """Run :class:`possibly.KalmanFilter` on every track of a long table with Dask.

    Within each task, tracks of equal length go through the filter together along its batch
    dimension (the same arithmetic per track as filtering it alone).

    Parameters
    ----------
    data, id_column, scheduler, n_workers, out, overwrite, progress, connect_timeout
        As in :func:`changepoints_many`; here ``out`` gets ``series/`` (one file per track:
        ``step``, ``mean_<state>``, ``consistency``, ``discount``) and ``summary.parquet``.
    value_columns : str or sequence of str
        The ``m`` observation columns (NaN = missing component).
    model : LinearGaussianModel or (F, Q, H, R), or a function of a track
        The linear-Gaussian model, e.g. :func:`possibly.filters.constant_velocity`; or a
        function ``model(ys)`` returning one from a track's observations ``ys`` (shape
        ``(T, m)``), called on each track (e.g. noise scales set per track by
        :func:`possibly.filters.constant_velocity_noise`; it must pickle for a cluster). A
        ValueError it raises fails that track only.
    robust, tau, dim, coverage
        Passed to :class:`possibly.KalmanFilter`.
    state_names : sequence of str, optional
        Names of the ``n`` state components; the model's (``x0, x1, ...`` if it has none) by
        default.
    outlier_level : float
        Summary column ``n_discounted`` counts the steps whose discount fell below this.
    time_column : str, optional
        Column of time stamps (any type): the states (and the per-track files) get a
        ``time`` column after ``step``. Each track is put in time order by it first, as in
        :func:`changepoints_many`.
    engine : {"auto", "numpy", "numba"}
        Passed to :meth:`possibly.KalmanFilter.filter`. ``"auto"`` (default) chooses by
        what each process ran before, so a cluster's fresh workers and one long process can
        differ by rounding (about 1e-12); ``"numba"`` pins the arithmetic, the same numbers
        wherever a task runs (``"numpy"`` batches the tracks of equal length in a task, whose
        products can round with the batch). ``"numba"`` is refused at once without numba or
        for a model that the compiled loop cannot run (time-varying, or ``H`` not of full row
        rank); with a model per track, such a track fails alone (its ``error``).

    Returns
    -------
    ManyResult
        ``summary`` (``id, n_steps, n_missing, n_discounted, min_discount,
        discounted_fraction, file, error``; ``discounted_fraction`` is that of
        :attr:`possibly.filters.FilterResult.discounted_fraction`) and, when ``out`` is None,
        ``states`` (``step, mean_<state>..., consistency, discount, id``). A
        :class:`~possibly.filters.filter_result.MostlyDiscountedWarning` says how many tracks had
        more than half their observations discounted.

    Examples
    --------
    >>> import pandas as pd, possibly as ps
    >>> df = pd.DataFrame({"track": ["a"] * 5 + ["b"] * 5,
    ...                    "pos": [0, 1, 2, 30, 4, 0, -1, -2, -3, -4]})
    >>> res = kalman_many(df, "track", "pos", ps.filters.constant_velocity(),
    ...                   scheduler="synchronous")
    >>> res.summary[["id", "n_steps", "n_discounted"]]
      id  n_steps  n_discounted
    0  a        5             1
    1  b        5             0
    >>> res.states.query("id == 'a'")["mean_position"].round(2).tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    id_column = _check_name("id_column", id_column)
    value_columns = _column_names(value_columns)
    options: dict[str, Any] = {"robust": robust, "tau": tau, "dim": dim, "coverage": coverage}
    kf, names = _kalman_setup(model, len(value_columns), state_names, options)
    if not 0.0 < float(outlier_level) <= 1.0:
        raise ValueError(f"outlier_level must be in (0, 1], got {outlier_level!r}")
    if engine not in ("auto", "numpy", "numba"):
        raise ValueError(f"engine must be 'auto', 'numpy' or 'numba', got {engine!r}")
    if engine == "numba":
        _check_compiled_kalman(kf)
    results, out_dir = _run(data, id_column, value_columns, time_column, _kalman_task,
                            (value_columns, kf, names, float(outlier_level), engine),
                            ["summary.parquet"], "Kalman filter", scheduler=scheduler,
                            n_workers=n_workers, out=out, overwrite=overwrite,
                            progress=progress, connect_timeout=connect_timeout)
    pd = _need("pandas")
    _warn_time_order(results, time_column)
    summary = _text_columns(_sorted(pd.concat([s for _, s, _ in results if s is not None],
                                              ignore_index=True), ["id"]))
    _warn_tracks(summary["discounted_fraction"].to_numpy())
    states = None
    if out_dir is None:
        parts = [s for s, _, _ in results if s is not None]
        if parts:
            states = pd.concat(parts, ignore_index=True)
            states = _sorted(states[["id", *[c for c in states.columns if c != "id"]]],
                             ["id", "step"])
    else:
        _finish_out(out_dir, {"summary.parquet": summary}, list(summary["file"].dropna()))
    return ManyResult(summary=summary, states=states,
                      out=None if out_dir is None else out_dir.path)
