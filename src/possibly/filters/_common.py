"""Helpers shared by the filters' modules (not part of the public API; never imported from
outside :mod:`possibly.filters`): the prepared model pieces, the linear algebra of the
Gaussian filters, argument checks and the per-step tables."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from possibly.frames import component_columns, per_step_dataset, per_step_frame
from possibly.inference import inlier_log_consistency
from possibly.validation import (
    as_finite,
    as_numbers,
    check_positive,
    check_psd,
    check_tau,
    check_unit_interval,
)

#: entries of F, Q, H, R are accepted up to this magnitude (and nonzero ones down to its
#: inverse): products of two such entries and of an entry with an observation up to 1e300
#: must not overflow in the filter's quadratic forms, which are kept in scaled form.
MAX_MAGNITUDE = 1e100


class KernelOutputs(NamedTuple):
    """The time-major output arrays of a run ``(T, B, ...)``, as the compiled loop writes them
    (:func:`possibly.filters.kalman_numba.run`); those not kept are empty, their flag False.
    One class for every caller of the loop (the filter, the start's steps, the streaming
    step): numba compiles the loop once per type of its arguments."""

    mean: np.ndarray
    variance: np.ndarray
    covariance: np.ndarray
    predicted_mean: np.ndarray
    predicted_covariance: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    keep_variance: bool
    keep_covariance: bool
    keep_predicted: bool

    @classmethod
    def allocate(cls, T: int, size: int, n: int, *, variance: bool, covariance: bool,
                 predicted: bool) -> KernelOutputs:
        vector, matrix = np.empty((0, 0, 0)), np.empty((0, 0, 0, 0))
        return cls(np.empty((T, size, n)),
                   np.empty((T, size, n)) if variance else vector,
                   np.empty((T, size, n, n)) if covariance else matrix,
                   np.empty((T, size, n)) if predicted else vector,
                   np.empty((T, size, n, n)) if predicted else matrix,
                   np.empty((T, size)), np.empty((T, size)), variance, covariance, predicted)


@dataclass(frozen=True)
class _Transition:
    """One transition, prepared for the filter's predict step."""

    F: np.ndarray
    Ft: np.ndarray
    Q: np.ndarray
    F_inv: np.ndarray | None  # None when F is singular (information-form predict impossible)
    G: np.ndarray  # Q = G Q_g G', G with orthonormal columns spanning range(Q)
    Qg_inv: np.ndarray


@dataclass(frozen=True)
class _Observation:
    """The observation model, prepared for the filter's update step."""

    H: np.ndarray
    Ht: np.ndarray
    R: np.ndarray
    W: np.ndarray  # R^-1
    resid: np.ndarray | None  # y' resid y = min_θ (y - Hθ)' W (y - Hθ); None if H is onto


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _residual_matrix(H: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``W - W H (Hᵀ W H)⁺ Hᵀ W``: the weighted least-squares residual quadratic form."""
    wh = W @ H
    return W - wh @ np.linalg.pinv(np.swapaxes(H, -1, -2) @ wh, hermitian=True) @ \
        np.swapaxes(wh, -1, -2)


def _check_magnitude(name: str, arr: np.ndarray) -> None:
    big = np.abs(arr).max(initial=0.0)
    if big > MAX_MAGNITUDE:
        raise ValueError(f"{name} must have entries of magnitude at most {MAX_MAGNITUDE:g}, got "
                         f"{float(big):g}")
    nonzero = np.abs(arr[arr != 0])
    if nonzero.size and nonzero.min() < 1.0 / MAX_MAGNITUDE:
        raise ValueError(f"{name} must have nonzero entries of magnitude at least "
                         f"{1.0 / MAX_MAGNITUDE:g}, got {float(nonzero.min()):g}")


def _checked_transition(F: Any, Q: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``F`` (n, n) or (K, n, n) and ``Q`` of matching shape."""
    F = as_finite("F", F)
    if F.ndim not in (2, 3) or F.shape[-1] != F.shape[-2] or F.shape[-1] < 1:
        raise ValueError(f"F must be a square matrix of shape (n, n), or (K, n, n) per step, "
                         f"with n >= 1, got shape {F.shape}")
    n = F.shape[-1]
    Q = check_psd("Q", Q)
    if Q.ndim not in (2, 3) or Q.shape[-2:] != (n, n):
        raise ValueError(f"Q must have shape ({n}, {n}) to match F, or (K, {n}, {n}) per "
                         f"step, got {Q.shape}")
    if F.ndim == 3 and Q.ndim == 3 and F.shape[0] != Q.shape[0]:
        raise ValueError(f"F and Q per step must have the same number of steps, got "
                         f"{F.shape[0]} and {Q.shape[0]}")
    _check_magnitude("F", F)
    _check_magnitude("Q", Q)
    return F, Q


def _checked_observation(H: Any, R: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``H`` (m, n) and ``R`` (m, m), positive definite."""
    H = as_finite("H", H)
    if H.ndim != 2 or H.shape[1] != n or H.shape[0] < 1:
        raise ValueError(f"H must have shape (m, {n}) with m >= 1 to match F, got {H.shape}")
    m = H.shape[0]
    R = check_psd("R", R, definite=True)
    if R.shape != (m, m):
        raise ValueError(f"R must have shape ({m}, {m}) to match H, got {R.shape}")
    _check_magnitude("H", H)
    _check_magnitude("R", R)
    return H, R


def kernel_arrays(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` as C-contiguous, writeable float64 arrays (copied only where they are not).

    numba compiles a kernel once per layout and writeability of its array arguments: a
    model matrix given in Fortran order, as a view or read-only would compile the whole
    loop again.
    """
    return tuple(np.require(a, np.float64, ("C", "W")) for a in arrays)


def _prepare_transition(F: np.ndarray, Q: np.ndarray) -> _Transition:
    lam, vec = np.linalg.eigh(Q)
    keep = lam > 1e-12 * max(lam.max(initial=0.0), 1e-300)
    n = F.shape[0]
    f_inv = np.linalg.inv(F) if n and np.linalg.cond(F) < 1e12 else None
    return _Transition(F=F, Ft=F.T.copy(), Q=Q, F_inv=f_inv, G=vec[:, keep],
                       Qg_inv=np.diag(1.0 / lam[keep]))


def _prepare_observation(H: np.ndarray, R: np.ndarray) -> _Observation:
    W = np.linalg.inv(R)
    onto = np.linalg.matrix_rank(H) == H.shape[0]
    resid = None if onto else _sym(_residual_matrix(H, W))
    return _Observation(H=H, Ht=H.T.copy(), R=R, W=_sym(W), resid=resid)


#: a precision whose condition number is below this is inverted into a covariance
_MAX_COND = 1e9


#: innovations larger than this are scaled by a power of two before squaring
_BIG = 1e100


def _inverse(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:  # a covariance rounded to singular: its limit
        return np.linalg.pinv(a, hermitian=True)


def _mv(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (a @ x[..., None])[..., 0]


def _well_conditioned(prec: np.ndarray) -> np.ndarray:
    if prec.shape[-1] == 0:
        return np.ones(prec.shape[:-2], dtype=bool)
    eig = np.linalg.eigvalsh(prec)
    return eig[..., 0] > eig[..., -1] / _MAX_COND


def _maybe_covariance_form(state: Any) -> Any:
    """``state`` (a KalmanState) in covariance form if every precision is well conditioned."""
    if state.precision is not None and _well_conditioned(state.precision).all():
        return dataclasses.replace(state, covariance=_sym(np.linalg.inv(state.precision)),
                                   precision=None)
    return state


def _marginal_variances(prec: np.ndarray) -> np.ndarray:
    """Variance of each component's max-marginal (the sup over the others) from a possibly
    singular precision: ``1 / (Y_ii - Y_io Y_oo⁺ Y_oi)``, ``inf`` for an uninformed component.
    """
    n = prec.shape[-1]
    # "uninformed" relative to each component's own row: the rounding left in a Schur
    # complement that is 0 scales with that row; the whole matrix's largest entry would call
    # an informed component of a small-scale axis uninformed next to a large-scale one
    scale = np.abs(prec).max(axis=-1)
    schur = np.empty(prec.shape[:-1])
    for i in range(n):
        o = [j for j in range(n) if j != i]
        s = prec[..., i, i]
        if o:
            y_io = prec[..., i, o]
            pinv = np.linalg.pinv(prec[..., o, :][..., :, o], hermitian=True)
            s = s - (y_io * _mv(pinv, y_io)).sum(-1)
        schur[..., i] = s
    informed = schur > scale / _MAX_COND
    with np.errstate(divide="ignore"):
        return np.where(informed, 1.0 / np.where(informed, schur, 1.0), np.inf)


def _covariance_or_inf(prec: np.ndarray) -> np.ndarray:
    """Inverse of each precision; where it is singular (some direction uninformed), ``inf``
    off the diagonal and the max-marginal variances on it (finite for informed components)."""
    ok = _well_conditioned(prec)
    n = prec.shape[-1]
    safe = np.where(ok[..., None, None], prec, np.eye(n))
    out = np.where(ok[..., None, None], _sym(np.linalg.inv(safe)), np.inf)
    if not ok.all():
        diag = np.arange(n)
        out[..., diag, diag] = np.where(ok[..., None], out[..., diag, diag],
                                        _marginal_variances(prec))
    return out


def _scale_exponent(*vs: np.ndarray) -> np.ndarray | None:
    """Per batch element, ``k`` with ``|v / 2**k| <= 1`` where some ``|v| > _BIG``; else None.

    Scaling by a power of two is exact, so scaled quadratic forms equal the unscaled ones bit
    for bit whenever the latter do not overflow.
    """
    big = np.max([np.abs(v).max(axis=-1) for v in vs], axis=0)
    if not (big > _BIG).any():
        return None
    return np.where(big > _BIG, np.frexp(big)[1], 0)


def _unscale(x: np.ndarray, k: np.ndarray | None) -> np.ndarray:
    return x if k is None else np.ldexp(x, k[..., None])


def _reference_table(coverage: float | None, m: int) -> np.ndarray | None:
    """``log c₀`` of the relative discount for 0..m observed components (index 0 unused:
    nothing observed), or None for the paper's discount (``coverage=None``)."""
    if coverage is None:
        return None
    table = np.array([0.0] + [inlier_log_consistency(k, coverage) for k in range(1, m + 1)])
    table.setflags(write=False)
    return table


def _check_dim_tau(dim, tau, n: int) -> tuple[float, float | None]:
    """``(dim, tau)`` checked; ``dim`` defaults to ``n``."""
    dim = float(n) if dim is None else float(check_positive("dim", dim))
    return dim, check_tau(tau)


def _check_coverage(coverage) -> float | None:
    if coverage is None:
        return None
    return float(check_unit_interval("coverage", coverage, low_open=True, high_open=True))


#: default coverage of the relative discount (docs/math.md §7; docs/choosing.md)
COVERAGE = 0.9


def _start_state_error(state: Any) -> ValueError:
    """What ``predict`` raises for the robust start's mixture ``state``: it names the fix."""
    return ValueError(f"state is the robust start's mixture (a {type(state).__name__}, during "
                      f"the first steps), which predict cannot continue: predict its leading "
                      f"hypothesis with predict(state.current)")


def _check_observation_values(y, name: str = "y") -> np.ndarray:
    arr = as_numbers(name, y)  # masked entries: NaN, missing
    if np.isinf(arr).any():
        raise ValueError("observations must be finite or NaN (missing), got an infinite value")
    if (np.abs(arr) > 1e300).any():
        raise ValueError("observations must have magnitude at most 1e300 (or be NaN: "
                         "missing)")
    return arr



def state_frame(mean: np.ndarray, variance: np.ndarray | None, log_c: np.ndarray,
                disc: np.ndarray, names: Sequence[str], index: Any,
                extra: Mapping[str, np.ndarray] | None = None) -> Any:
    """The per-step table of a filter or smoother result (see FilterResult.to_frame), with
    ``extra`` per-step columns ``(..., T)`` last."""
    cols = component_columns(mean, names)
    if variance is not None:
        with np.errstate(invalid="ignore"):
            cols.update(component_columns(np.sqrt(variance), names, "_sd"))
    cols["log_consistency"] = log_c
    cols["consistency"] = np.exp(log_c)
    cols["discount"] = disc
    cols.update(extra or {})
    return per_step_frame(cols, index)


def state_dataset(mean: np.ndarray, variance: np.ndarray | None, log_c: np.ndarray,
                  disc: np.ndarray, names: Sequence[str], index: Any,
                  extra: Mapping[str, np.ndarray] | None = None) -> Any:
    """The Dataset of a filter or smoother result (see FilterResult.to_xarray), with
    ``extra`` per-step variables ``(..., T)``."""
    data: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {
        name: (value, ("state",)) for name, value in (("mean", mean), ("variance", variance))
        if value is not None}
    data.update(log_consistency=(log_c, ()), discount=(disc, ()))
    data.update({name: (value, ()) for name, value in (extra or {}).items()})
    return per_step_dataset(data, index, {"state": list(names)})


#: what ``filter(keep=...)`` can keep besides the filtered mean
_KEEP = ("mean", "variance", "covariance", "predicted")


def _keep_set(keep: str | Iterable[str]) -> frozenset[str]:
    if isinstance(keep, str):
        keep = _KEEP if keep == "all" else (keep,)
    try:
        items = frozenset(keep)
    except TypeError:
        items = frozenset({None})  # type: ignore[arg-type]
    if not items or not items <= set(_KEEP) or "mean" not in items:
        raise ValueError(f"keep must be 'all' or a tuple of {_KEEP} including 'mean', got "
                         f"{keep!r}")
    return items


def with_rejected(filtered: Any, rejected: np.ndarray, mean: np.ndarray, cov: np.ndarray,
                  ys: np.ndarray, log_consistency: Any) -> Any:
    """``filtered`` (a FilterResult) with the observations that the robust start rejected
    reported as observed and discounted, for the smoothers: discount 0 (their weight in the
    smoother) and the consistency of each with the smoothed state at its step, which the
    other observations make (the judgement that rejected it); 0 (no information to judge by)
    where that state is not informed.

    ``rejected`` has the result's shape ``(..., T)``; ``mean``, ``cov`` and ``ys`` are the
    smoothed states and the observations, ``(..., T, ·)``; ``log_consistency(mean, cov, y)``
    is the filter's own consistency of observations with states (stacked on a first axis).
    """
    if not rejected.any():
        return filtered
    where = np.nonzero(rejected)
    m, c = mean[where], cov[where]
    informed = np.isfinite(c).all(axis=(-2, -1))
    log_c = np.zeros(len(informed))
    if informed.any():
        log_c[informed] = log_consistency(m[informed], c[informed], ys[where][informed])
    lc, disc = filtered.log_consistency.copy(), filtered.discount.copy()
    lc[where], disc[where] = log_c, 0.0
    return dataclasses.replace(filtered, log_consistency=lc, discount=disc)


#: ``engine="auto"``'s budget of numpy work per process (see :class:`AutoHistory`): about the
#: numpy time that loading numba and a compiled kernel from a warm cache costs. Below it, numpy
#: finishes first even when the kernel is cached (a first compile costs far more); past it, the
#: process runs enough to pay the load back.
AUTO_NUMPY_BUDGET = 1 << 22
#: fixed cost of a batched numpy step, in the units of :func:`numpy_work` (series of one state)
_STEP_OVERHEAD = 128


@dataclass(frozen=True)
class AutoCall:
    """What a batch call would ask of a compiled kernel: ``kernel`` names the kernel and the
    sizes numba compiles it for (each is compiled, or loaded, on its own), ``work`` estimates
    the call's numpy work (:func:`numpy_work`)."""

    kernel: tuple[Any, ...]
    work: float


def numpy_work(steps: int, series: int, n: int, weight: float = 1.0) -> float:
    """The numpy work of ``steps`` batched steps of ``series`` series of ``n`` states:
    ``weight · steps · n · (n · series + 128)``, about what numpy's batched steps cost (the
    arithmetic grows as ``n²`` per series, the fixed cost of each step as ``n``), in the units
    of :data:`AUTO_NUMPY_BUDGET`. A formula of the sizes, never a timing: the engine it chooses
    is the same in every run."""
    return weight * steps * n * (n * series + _STEP_OVERHEAD)


class AutoHistory:
    """What ``engine="auto"`` has run in this process, from which it chooses the engine of a
    batch call: the compiled kernel once it is loaded (by an earlier call, of any engine) or
    once the numpy work ``auto`` ran and the call's own reach :data:`AUTO_NUMPY_BUDGET`;
    numpy's steps before. Loading numba and a kernel costs more than numpy's whole run of a
    small call, even from a warm cache; a process that runs many such calls pays it back. The
    choice depends only on the calls made before in the process (never on a timing, nor on the
    disk cache), so a script gives the same numbers each time it runs (calls from racing
    threads come in either order)."""

    def __init__(self) -> None:
        self.numpy_work = 0.0
        self.loaded: set[tuple[Any, ...]] = set()

    def runs_numpy(self, call: AutoCall) -> bool:
        """Whether ``auto`` runs ``call`` on numpy (its work then counted)."""
        if call.kernel in self.loaded or self.numpy_work + call.work >= AUTO_NUMPY_BUDGET:
            return False
        self.numpy_work += call.work
        return True


#: this process's history of ``engine="auto"`` (the filters' batch calls)
AUTO_HISTORY = AutoHistory()


def compiled_module(engine: str, load: Callable[[], Any], unfit: str | None = None,
                    call: AutoCall | None = None) -> Any:
    """The compiled module that ``load`` imports if ``engine`` selects it, else None.

    ``engine`` is ``"auto"`` (compiled when numba is installed, the call fits and, for a batch
    ``call``, :class:`AutoHistory` chooses it; without ``call``, whenever it can),
    ``"numpy"`` or ``"numba"`` (compiled, or a clear error); ``unfit`` says why this call
    cannot run compiled (None: it can).
    """
    if engine not in ("auto", "numpy", "numba"):
        raise ValueError(f"engine must be 'auto', 'numpy' or 'numba', got {engine!r}")
    if engine == "numpy":
        return None
    if unfit is not None:
        if engine == "numba":
            raise ValueError(unfit)
        return None
    history = AUTO_HISTORY
    if engine == "auto" and call is not None and history.runs_numpy(call):
        return None
    try:
        module = load()
    except ImportError:
        if engine == "numba":
            raise ValueError("engine='numba' needs numba: pip install possibly[fast]") from None
        return None
    if call is not None:
        history.loaded.add(call.kernel)
    return module
