"""Argument checks shared by every public entry point.

Each check names the offending argument and the accepted range, so that bad input fails at
the call site with a readable message instead of a NaN or a traceback from inside numpy.
"""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np

__all__ = [
    "as_finite",
    "as_numbers",
    "broadcast",
    "check_nonnegative",
    "check_bool",
    "check_int",
    "check_observations",
    "check_positive",
    "check_psd",
    "check_unit_interval",
    "describe",
    "refuse_non_numbers",
    "symmetrise",
]

#: numpy dtype kinds of dates and durations
_TIME_KINDS = "Mm"
#: the largest float (a Python integer beyond it cannot be converted)
_FLOAT_MAX = float(np.finfo(np.float64).max)
_TIME_TYPES = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)


def describe(value) -> str:
    """A short description of ``value`` for an error message, never its whole repr.

    Examples
    --------
    >>> describe(np.zeros((2, 3)))
    'an array of shape (2, 3) and dtype float64'
    >>> describe("abc")
    "'abc'"
    """
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        name = "array" if isinstance(value, np.ndarray) else type(value).__name__
        article = "an" if name[:1].lower() in "aeiou" else "a"
        return f"{article} {name} of shape {shape} and dtype {dtype}"
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:60]}... (a {type(value).__name__})"


def _refuse_kind(name: str, kind: str, value) -> None:
    if kind == "c":
        raise ValueError(f"{name} must hold real numbers, got complex values "
                         f"({describe(value)}): pass {name}.real or abs({name}) if that is "
                         "what you mean")
    if kind in _TIME_KINDS:
        raise ValueError(f"{name} must hold numbers, got dates, times or durations "
                         f"({describe(value)}): the values must be numbers; put the time "
                         "stamps in the index (pandas.Series(values, index=times))")


def _pandas_values(name: str, value) -> np.ndarray:
    """A pandas object's values as numbers: nullable NA as NaN; dates, complex refused."""
    dtypes = list(value.dtypes) if hasattr(value, "columns") else [value.dtype]
    for dtype in dtypes:
        kind = getattr(dtype, "kind", "O")
        if str(dtype).startswith(("period", "interval")):
            kind = "M"
        _refuse_kind(name, kind, value)
    try:
        return value.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):  # objects: the element refused is found below
        return value.to_numpy()


def as_numbers(name: str, value, *, missing: bool = True,
               what: str = "numeric (an array of numbers, NaN for missing)") -> np.ndarray:
    """``value`` as a float64 array, refusing what would silently change its meaning.

    The one conversion of user arrays (observations and parameters): complex values are
    refused (the imaginary part would be dropped), so are dates, times and durations
    (``datetime64``, pandas Timestamps: the time belongs in the index); the masked entries of
    a numpy masked array become NaN (missing) when ``missing``, else the array is refused;
    pandas' nullable NA becomes NaN. Other values that are not numbers are refused as not
    ``what`` (``"{name} must be {what}, got ..."``). Messages describe the value, never print
    it whole. The result is writeable (a read-only input is copied).

    Examples
    --------
    >>> as_numbers("y", np.ma.masked_array([1.0, 1e3, 3.0], mask=[0, 1, 0]))
    array([ 1., nan,  3.])
    >>> as_numbers("y", [1 + 2j])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: y must hold real numbers, got complex values ([(1+2j)]): pass y.real or abs(y)...
    """
    if type(value) is np.ndarray and value.dtype == np.float64:  # the common cases, quickly
        return _writeable(value)
    if type(value) is float or (type(value) is int and -2**63 <= value < 2**63):
        return np.asarray(value, dtype=np.float64)
    if isinstance(value, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(value)
        data = as_numbers(name, np.ma.getdata(value), missing=missing, what=what)
        if mask.any():
            if not missing:
                raise ValueError(f"{name} is a masked array with {int(mask.sum())} masked "
                                 f"entries, and {name} cannot have missing values: fill them "
                                 f"({name}.filled(...)) or drop them ({name}.compressed())")
            data = np.where(mask, np.nan, data)
        return data
    given = value
    if type(value).__module__.startswith("pandas"):
        value = _pandas_values(name, value)
    arr: np.ndarray | None
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # a ragged sequence
        arr = None
    if arr is None or (arr.dtype.kind == "O" and arr.size and not _plain_objects(name, arr,
                                                                                  given)):
        raise ValueError(f"{name} must be {what}, got {describe(given)}")
    _refuse_kind(name, arr.dtype.kind, given)
    try:
        return _writeable(arr.astype(np.float64, copy=False))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {describe(given)}") from None
    except OverflowError:  # a Python integer beyond the floats
        raise ValueError(f"{name} must be {what}, got {describe(given)}, beyond the range of "
                         "a float (about ±1.8e308)") from None


def refuse_non_numbers(name: str, value, what: str) -> None:
    """Refuse what numpy would read as a number though it is none: text (``"1.0"``), bytes,
    None and booleans, alone or inside a list or array (``"{name} must be {what}, ..."``).

    For one observation given on its own, where a slip (a value read as text, a flag) would
    otherwise be taken silently for 1.0 or NaN.

    Examples
    --------
    >>> refuse_non_numbers("y", 1.5, "a number")
    >>> refuse_non_numbers("y", "1.0", "a number")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: y must be a number, got '1.0': text, None and booleans are not numbers...
    """
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    items: Any
    if kind is None and isinstance(value, (list, tuple)):
        try:
            items = np.asarray(value, dtype=object).ravel()
        except (TypeError, ValueError):  # ragged: refused by the caller's conversion
            return
    elif kind == "O":
        items = np.asarray(value).ravel()
    else:
        items = (value,)
    if kind in ("U", "S", "b") or any(x is None or isinstance(x, (str, bytes, bool, np.bool_))
                                      for x in items):
        raise ValueError(f"{name} must be {what}, got {describe(value)}: text, None and "
                         "booleans are not numbers (pass float(...) of a number read as "
                         "text, NaN for a missing value)")
    if any(type(x) is int and not -_FLOAT_MAX <= x <= _FLOAT_MAX for x in items):
        raise ValueError(f"{name} must be {what}, got {describe(value)}, beyond the range of "
                         "a float (about ±1.8e308)")


def _writeable(arr: np.ndarray) -> np.ndarray:
    """``arr``, or a copy of it when it is read-only (pandas' arrays, ``np.load(mmap_mode="r")``):
    numba compiles a second version of every kernel for read-only arrays, seconds on a first
    call, while a copy costs one pass over the data."""
    return arr if arr.flags.writeable else arr.copy()


def _plain_objects(name: str, arr: np.ndarray, given) -> bool:
    """Whether an object array holds no masked element; dates and complex refused."""
    for x in arr.flat:
        if isinstance(x, _TIME_TYPES):
            _refuse_kind(name, "M", given)
        if isinstance(x, (complex, np.complexfloating)):
            _refuse_kind(name, "c", given)
        if np.ma.isMaskedArray(x) or x is np.ma.masked:
            return False
    return True


def as_finite(name: str, value, *, allow_inf: bool = False) -> np.ndarray:
    """Return ``value`` as a float64 array, rejecting NaN (and infinities unless allowed)."""
    arr = as_numbers(name, value, missing=False)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    if not allow_inf and np.isinf(arr).any():
        raise ValueError(f"{name} must be finite, got an infinite value")
    return arr


def check_nonnegative(name: str, value) -> np.ndarray:
    arr = as_finite(name, value)
    if (arr < 0).any():
        raise ValueError(f"{name} must be >= 0, got {float(arr[arr < 0].ravel()[0]):g}")
    return arr


def check_bool(name: str, value) -> bool:
    """A bool (numpy's included), as a Python bool; a TypeError naming ``name`` otherwise, so
    that strings such as ``"no"`` are not taken for True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_int(name: str, value, low: int) -> int:
    """An integer (not a bool; numpy integers accepted) ``>= low``, as a Python int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_positive(name: str, value) -> np.ndarray:
    arr = as_finite(name, value)
    if (arr <= 0).any():
        raise ValueError(f"{name} must be > 0, got {float(arr[arr <= 0].ravel()[0]):g}")
    return arr


def check_unit_interval(name: str, value, *, low_open: bool, high_open: bool) -> np.ndarray:
    """Check ``value`` lies in the unit interval with the given open/closed ends."""
    arr = as_finite(name, value)
    low_bad = arr <= 0 if low_open else arr < 0
    high_bad = arr >= 1 if high_open else arr > 1
    if (low_bad | high_bad).any():
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lo}0, 1{hi}, got {value!r}")
    return arr


def check_tau(tau) -> float | None:
    """The threshold ``τ`` of the robust update: None (no threshold) or a float in (0, 1]."""
    if tau is None:
        return None
    return float(check_unit_interval("tau", tau, low_open=True, high_open=False))


def broadcast(**arrays: tuple[np.ndarray, int]) -> dict[str, np.ndarray]:
    """Broadcast the batch dimensions of several arrays.

    Each keyword maps a name to ``(array, event_ndim)``; only the leading (batch) dimensions
    are broadcast, the trailing ``event_ndim`` dimensions are kept.
    """
    batch_shapes = {}
    for name, (arr, ev) in arrays.items():
        if arr.ndim < ev:
            raise ValueError(f"{name} must have at least {ev} dimension(s), got shape {arr.shape}")
        batch_shapes[name] = arr.shape[: arr.ndim - ev]
    try:
        batch = np.broadcast_shapes(*batch_shapes.values())
    except ValueError:
        desc = ", ".join(f"{k} {v}" for k, v in batch_shapes.items())
        raise ValueError(f"batch shapes do not broadcast: {desc}") from None
    out = {}
    for name, (arr, ev) in arrays.items():
        shape = batch + arr.shape[arr.ndim - ev :]
        out[name] = np.array(np.broadcast_to(arr, shape), dtype=np.float64)
    return out


def symmetrise(arr: np.ndarray) -> np.ndarray:
    """``(A + Aᵀ) / 2``, computed as ``A/2 + Aᵀ/2`` so that entries near 1e308 do not overflow.

    Halving is exact, so for ordinary values this is bit-identical to ``0.5 * (A + Aᵀ)``.
    """
    return 0.5 * arr + 0.5 * np.swapaxes(arr, -1, -2)


def check_psd(name: str, value, *, definite: bool = False, rtol: float = 1e-10) -> np.ndarray:
    """Check a (batch of) symmetric positive semi-definite (or definite) matrices."""
    arr = as_finite(name, value)
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{name} must be a square matrix (..., d, d), got shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must be at least 1 x 1, got shape {arr.shape}")
    # initial=0: an empty batch of matrices is valid (and has nothing to check)
    scale = np.maximum(np.abs(arr).max(axis=(-2, -1), keepdims=True, initial=0.0), 1e-300)
    asym = np.abs(arr - np.swapaxes(arr, -1, -2)) / scale
    if (asym > 1e-8).any():
        raise ValueError(f"{name} must be symmetric")
    arr = symmetrise(arr)
    # eigenvalues relative to the largest entry: no overflow for entries near 1e308
    eig = np.linalg.eigvalsh(arr / scale)
    tol = rtol
    if definite:
        if (eig <= tol).any():
            raise ValueError(f"{name} must be positive definite")
    elif (eig < -tol).any():
        raise ValueError(f"{name} must be positive semi-definite")
    return arr


def check_observations(name: str, y, *, positive: bool = False,
                       max_abs: float | None = None) -> np.ndarray:
    """Validate a stream of observations ``(..., T)``: NaN allowed (missing), infinities
    rejected, at least one observation; ``positive`` rejects ``y <= 0``, ``max_abs`` rejects
    ``|y| > max_abs``.

    Examples
    --------
    >>> check_observations("y", [1.0, float("nan")])
    array([ 1., nan])
    >>> check_observations("y", [])
    Traceback (most recent call last):
    ...
    ValueError: y must hold at least one observation along its last (time) axis, got shape (0,)
    """
    arr = as_numbers(name, y)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have a time axis (shape (..., T)), got a scalar")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must hold at least one observation along its last (time) "
                         f"axis, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} must be finite or NaN (NaN entries are missing), "
                         "got an infinite value")
    if positive and (arr <= 0).any():
        raise ValueError(f"{name} must be > 0 (NaN entries are missing), "
                         f"got {float(arr[arr <= 0].ravel()[0]):g}")
    if max_abs is not None and (np.abs(arr) > max_abs).any():
        raise ValueError(f"{name} must satisfy |{name}| <= {max_abs:g} (rescale the data), "
                         f"got {float(arr[np.abs(arr) > max_abs].ravel()[0]):g}")
    return arr
