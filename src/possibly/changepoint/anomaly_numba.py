"""The anomaly calibration compiled by numba (``pip install possibly[fast]``).

:func:`calibrate_one` is :func:`possibly.changepoint.anomaly.calibrate_one` compiled
unchanged, and :func:`calibrate` its loop over many records (also unchanged), so the
compiled and the Python paths run the same code (tested equal): its helpers are compiled
unchanged where it calls them, except the rank's count,
:func:`possibly.changepoint.anomaly.count_at_least`, compiled from a plain loop (where
``np.count_nonzero`` of a comparison would allocate).
:func:`bank_calibration` is the same step as the per-stream hook of a
:class:`~possibly.changepoint.DetectorBank`'s compiled loop (inlined there, allocating
nothing).
"""

from __future__ import annotations

from typing import Any

import numba
from numba.extending import overload, register_jitable

import possibly.compiled  # noqa: F401  (the package's cache folder, before njit(cache=True))
from possibly.changepoint import anomaly
from possibly.changepoint.compiled_engine import BANK_COLUMNS, LINE, memory_prefetch

__all__ = ["ANOMALY_COLUMN", "bank_calibration", "bank_prefetch", "calibrate", "calibrate_one",
           "calibrate_one_entry"]

#: the processor's prefetch hint, for :func:`bank_prefetch`
prefetch = memory_prefetch()
#: the statistics of each ring hinted (more, in a full window, would crowd the caches)
HINTED = 128

#: the column of a bank's output row that :func:`bank_calibration` writes (after
#: :data:`~possibly.changepoint.compiled_engine.BANK_COLUMNS`)
ANOMALY_COLUMN = len(BANK_COLUMNS)
_Y, _LOG_C = BANK_COLUMNS.index("y"), BANK_COLUMNS.index("log_consistency")

@overload(anomaly.count_at_least, jit_options={"nogil": True}, inline="always")
def _count_at_least(values, level):  # pragma: no cover - compiled
    def count(values, level):
        at_least = 0
        for i in range(values.shape[0]):
            if values[i] >= level:  # a branch: faster here than adding the comparison
                at_least += 1
        return at_least

    return count


# the step's helpers, compiled unchanged where the step calls them
for _helper in (anomaly.insert_sorted, anomaly.beyond_p_value, anomaly.upper_p_value,
                anomaly.repeat_p_value):
    register_jitable(_helper)
#: where the step reads (bank_prefetch's global: part of the bank loop's fingerprint)
ring_layout = register_jitable(anomaly.ring_layout)


#: :func:`possibly.changepoint.anomaly.calibrate_one`, compiled
calibrate_one = numba.njit(cache=True, nogil=True)(anomaly.calibrate_one)


#: the same, inlined into its caller (compiled with the caller's flags: the bank's loop
#: without numba's runtime)
calibrate_inline = numba.njit(nogil=True, inline="always")(anomaly.calibrate_one)


def bank_calibration(post, row, out):  # pragma: no cover - compiled into the bank's loop
    """The per-stream hook of :func:`~possibly.changepoint.compiled_engine.step_streams`:
    the stream's calibration state ``post[row]`` advanced by its step's record (its
    observation and its surprise ``−log c``, as :meth:`possibly.ChangepointDetector.update`),
    the anomaly written to ``out[ANOMALY_COLUMN]``."""
    out[ANOMALY_COLUMN] = calibrate_inline(post[row], out[_Y], -out[_LOG_C])


def bank_prefetch(post, near, far):  # pragma: no cover - compiled into the bank's loop
    """The per-stream hint of :func:`~possibly.changepoint.compiled_engine.step_streams`
    before a step: :func:`prefetch` the statistics the next :func:`calibrate_one` of
    ``post[near]`` reads (its header was hinted as ``far`` the call before) and the header of
    ``post[far]`` (none when ``far < 0``). Changes nothing."""
    width = post.shape[1]
    ring, window, n, pos = ring_layout(post[near])
    first = near * width + ring
    for e in range(0, min(n, HINTED), LINE):  # the processor streams the rest
        prefetch(post, first + e)
        prefetch(post, first + window + e)
    prefetch(post, first + pos)
    prefetch(post, first + window + pos)
    for e in range(0, anomaly.SPAN, LINE):
        prefetch(post, first + 2 * window + e)
    if far >= 0:
        for e in range(0, anomaly.HEAD, LINE):
            prefetch(post, far * width + e)


@overload(anomaly.calibrate_one, jit_options={"nogil": True})
def _calibrate_one(state, y, surprise):  # pragma: no cover - compiled
    def impl(state, y, surprise):
        return calibrate_one(state, y, surprise)
    return impl


#: :func:`possibly.changepoint.anomaly.calibrate` compiled unchanged (its calls of
#: :func:`~possibly.changepoint.anomaly.calibrate_one` compiled through the overload above)
calibrate = numba.njit(cache=True, nogil=True)(anomaly.calibrate)


def calibrate_one_entry() -> Any:
    """:func:`calibrate_one` for a float64 state array and a Python float, without numba's
    dispatch by argument types (a per-call cost comparable to the step itself): for
    :meth:`possibly.ChangepointDetector.update`, which always passes those types. The
    dispatcher itself (same numbers) where numba's compiled overloads are not found.

    Examples
    --------
    >>> from possibly.changepoint.anomaly import new_calibration
    >>> step, state, other = calibrate_one_entry(), new_calibration(None), new_calibration(None)
    >>> records = [(0.0, 1.0), (1.0, 3.0), (1.0, 2.0), (2.0, 5.0)]
    >>> [step(state, y, s) for y, s in records] == [
    ...     anomaly.calibrate_one(other, y, s) for y, s in records]
    True
    """
    state = anomaly.new_calibration(None, window=1)
    calibrate_one(state, 0.0, 0.0)  # compiled (or loaded from the cache) for these types
    try:
        compiled = calibrate_one.overloads[(numba.typeof(state), numba.typeof(0.0),
                                            numba.typeof(0.0))]
        return compiled.entry_point  # type: ignore[attr-defined]
    except (KeyError, AttributeError, TypeError):  # numba's internals changed: its dispatcher
        return calibrate_one
