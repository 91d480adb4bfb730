"""Compiled (numba) loop of the covariance-form Kalman filter, for single series and batches
(``KalmanFilter.filter(engine="numba")``, and ``"auto"`` when numba is installed; requires
``pip install possibly[fast]``).

The same formulas as the numpy kernels of :mod:`possibly.filters.kalman` (docs/math.md §2):
predict ``F μ, F P Fᵀ + Q``; update with the innovation ``v = y - H μ``, ``log c = -½ vᵀ S⁻¹ v``
(scaled by a power of two when ``v`` is huge), the (relative) discount from
:func:`possibly.compiled.discount_scalar` (the twin of :func:`possibly.inference.discount`)
and the gain ``K = ρ P Hᵀ (ρ H P Hᵀ + R)⁻¹``, the covariance in the Joseph or information form
where the prior is diffuse relative to ``R``; missing components decoupled exactly as in
``_observation_at``. Time-invariant models with an onto ``H`` only; the information-form
start runs in numpy first. Tested equal to the numpy path to ~1e-12 (not bit for bit: the
order of floating-point operations differs).

Why explicit loops: the states are tiny (n = 4, m = 2 in the tracking benchmark), so the
cost of ``x @ Ft`` or ``np.linalg.inv`` inside a compiled loop is their allocation, not their
arithmetic. Every work array is allocated once per call and the ``m × m`` systems are solved
by Gaussian elimination with partial pivoting (as LAPACK's ``getrf`` behind ``inv``; a
matrix with an exactly zero pivot is refused and ``filter`` runs numpy's steps, with their
pseudo-inverse fallback, from there); ``n`` and ``m`` are compile-time constants (one
compiled loop per ``(n, m)``, cached on disk like the rest). WoLF's tracking model (n = 4,
m = 2): about 0.14 µs per step, against 2.5 µs for the previous loop that allocated small
arrays every step.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numba
import numpy as np

from possibly.compiled import discount_scalar

__all__ = ["run", "sizes", "step", "step_buffers"]

_BIG = 1e100  # as possibly.filters._common._BIG
_DIFFUSE = 1e4  # as possibly.filters.kalman._DIFFUSE (the numpy step)


def sizes(n: int, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ``n_tup, m_tup`` arguments of :func:`run` for ``n`` states and ``m`` observed
    components."""
    return (0,) * n, (0,) * m


@numba.njit(cache=True, nogil=True, inline="always")  # inlined: 20% faster
def _solve(a, rhs, k):  # pragma: no cover - compiled
    """Overwrite ``rhs[:, :k]`` with ``a⁻¹ rhs[:, :k]`` (``a`` is destroyed); partial
    pivoting. False if ``a`` is singular (an exactly zero pivot, as LAPACK's getrf)."""
    m = a.shape[0]
    for c in range(m):
        p = c
        best = abs(a[c, c])
        for i in range(c + 1, m):
            if abs(a[i, c]) > best:
                best = abs(a[i, c])
                p = i
        if best == 0.0 or math.isnan(best):
            return False
        if p != c:
            for j in range(m):
                a[c, j], a[p, j] = a[p, j], a[c, j]
            for j in range(k):
                rhs[c, j], rhs[p, j] = rhs[p, j], rhs[c, j]
        for i in range(c + 1, m):
            f = a[i, c] / a[c, c]
            if f != 0.0:
                for j in range(c + 1, m):
                    a[i, j] -= f * a[c, j]
                for j in range(k):
                    rhs[i, j] -= f * rhs[c, j]
    for c in range(m - 1, -1, -1):
        for j in range(k):
            s = rhs[c, j]
            for i in range(c + 1, m):
                s -= a[c, i] * rhs[i, j]
            rhs[c, j] = s / a[c, c]
    return True


@numba.njit(cache=True, nogil=True, inline="always")  # inlined: 20% faster
def _mul_abt(a, b, out):  # pragma: no cover - compiled
    """``out = a @ b.T`` (each entry summed in the order of the columns)."""
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            acc = 0.0
            for c in range(a.shape[1]):
                acc += a[i, c] * b[j, c]
            out[i, j] = acc


@numba.njit(cache=True, nogil=True, inline="always")
def _add_congruence(x, M, scale, out):  # pragma: no cover - compiled
    """``out += scale · xᵀ M x`` (``x`` is k × n, ``M`` k × k)."""
    k = x.shape[0]
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            acc = 0.0
            for c in range(k):
                for d in range(k):
                    acc += x[c, i] * M[c, d] * x[d, j]
            out[i, j] += scale * acc


@numba.njit(cache=True, nogil=True)
def _joseph(P, kt, H, R, rho, a, ap, out):  # pragma: no cover - compiled
    """``out = (I - K H) P (I - K H)ᵀ + K R Kᵀ / ρ`` (``kt`` is ``Kᵀ``, m × n; ``a``, ``ap``
    work arrays): the updated covariance as a sum of two positive semi-definite terms, used
    where the prior is diffuse relative to ``R`` (as :func:`possibly.filters.kalman._joseph`)."""
    n, m = P.shape[0], H.shape[0]
    for i in range(n):
        for j in range(n):
            acc = 1.0 if i == j else 0.0
            for c in range(m):
                acc -= kt[c, i] * H[c, j]
            a[i, j] = acc
    _mul_abt(a, P, ap)  # A P (P symmetric)
    _mul_abt(ap, a, out)  # (A P) Aᵀ
    _add_congruence(kt, R, 1.0 / rho, out)
    for i in range(n):
        for j in range(i, n):
            x = 0.5 * (out[i, j] + out[j, i])
            out[i, j] = x
            out[j, i] = x


@numba.njit(cache=True, nogil=True)
def _information_update(P, H, R, hph, rho, ja, jb, wm, wd, out):  # pragma: no cover
    """``out = (P⁻¹ + ρ Hᵀ R⁻¹ H)⁻¹`` for a square ``H`` where ``ρ H P Hᵀ - 10⁴ R`` is
    positive definite (the prior diffuse in every direction); False (``out`` not set) where it
    is not, or a matrix is singular by rounding (as
    :func:`possibly.filters.kalman._information_update`)."""
    n, m = P.shape[0], H.shape[0]
    for i in range(m):  # Cholesky of ρ H P Hᵀ - 10⁴ R: it exists iff positive definite
        for j in range(m):
            wd[i, j] = rho * hph[i, j] - _DIFFUSE * R[i, j]
    for j in range(m):
        d = wd[j, j]
        for k in range(j):
            d -= wd[j, k] * wd[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        wd[j, j] = d
        for i in range(j + 1, m):
            acc = wd[i, j]
            for k in range(j):
                acc -= wd[i, k] * wd[j, k]
            wd[i, j] = acc / d
    for i in range(n):
        for j in range(n):
            ja[i, j] = P[i, j]
            jb[i, j] = 1.0 if i == j else 0.0
    for i in range(m):
        for j in range(m):
            wd[i, j] = R[i, j]
            wm[i, j] = 1.0 if i == j else 0.0
    if not _solve(ja, jb, n) or not _solve(wd, wm, m):  # P⁻¹, R⁻¹
        return False
    for i in range(n):
        for j in range(n):
            ja[i, j] = jb[i, j]
            out[i, j] = 1.0 if i == j else 0.0
    _add_congruence(H, wm, rho, ja)  # P⁻¹ + ρ Hᵀ R⁻¹ H
    return _solve(ja, out, n)


@numba.njit(cache=True, nogil=True)
def run(ys, t0, mean, cov, model, rule, n_tup, m_tup, out):  # pragma: no cover - compiled
    """Filter steps ``t0..T-1`` of every series, writing the time-major outputs in place.

    ``ys`` has shape (T, B, m); ``mean`` (B, n) and ``cov`` (B, n, n) are the state before
    step ``t0`` (predicted first unless ``t0 == 0``) and are overwritten with the final state.
    ``model`` is ``(F, Q, H, R)``; ``rule`` is ``(robust, dim, tau, log_c0)``: ``tau`` NaN for
    no threshold, ``log_c0[k]`` the reference log consistency of the relative discount with
    ``k`` observed components (zeros: the paper's discount). ``n_tup`` and ``m_tup`` are
    tuples of ``n`` and ``m`` zeros (:func:`sizes`). ``out`` is the named tuple of output
    arrays and flags of :mod:`possibly.filters.kalman` (``mean, variance, covariance,
    predicted_mean, predicted_covariance, log_consistency, discount, keep_variance,
    keep_covariance, keep_predicted``; arrays not kept may be empty). Returns False if a
    matrix to invert is singular by rounding (``mean``, ``cov`` and the outputs are then
    partly written): the caller reruns from its own copy of the state with numpy's
    fallbacks.
    """
    F, Q, H, R = model
    robust, dim, tau, log_c0 = rule
    o_mean, o_var, o_cov = out.mean, out.variance, out.covariance
    o_pmean, o_pcov = out.predicted_mean, out.predicted_covariance
    o_logc, o_disc = out.log_consistency, out.discount
    keep_var, keep_cov, keep_pred = out.keep_variance, out.keep_covariance, out.keep_predicted
    T, B, _ = ys.shape
    # n and m as compile-time constants (a tuple's length is part of its numba type): one
    # compiled loop per (n, m), whose fixed-count small loops LLVM unrolls (~40% faster)
    n, m = len(n_tup), len(m_tup)
    # work arrays, allocated once
    x = np.empty(n)
    P = np.empty((n, n))
    pf = np.empty((n, n))
    k1 = np.empty(n)
    ph = np.empty(n)
    obs = np.empty(m, dtype=np.bool_)
    hm = np.empty((m, n))
    rm = np.empty((m, m))
    hp = np.empty((m, n))
    hph = np.empty((m, m))
    s = np.empty((m, m))
    v = np.empty(m)
    rhs = np.empty((m, n + 1))  # [v | H P]: S⁻¹ v and the standard gain in one solve
    ja = np.empty((n, n))  # work arrays of the diffuse updates
    jb = np.empty((n, n))
    wm = np.empty((m, m))
    wd = np.empty((m, m))
    # time outer, series inner: the time-major inputs and outputs are then read and written
    # contiguously (series outer strides through them: slower for large batches); the state
    # of each series lives in mean[b], cov[b] between its steps
    for t in range(t0, T):
        for b in range(B):
            for i in range(n):
                x[i] = mean[b, i]
                for j in range(n):
                    P[i, j] = cov[b, i, j]
            if t > 0:
                # x = F x; P = sym((P Fᵀ)ᵀ Fᵀ) + Q, as _predict
                for i in range(n):
                    acc = 0.0
                    for j in range(n):
                        acc += F[i, j] * x[j]
                    k1[i] = acc
                for i in range(n):
                    x[i] = k1[i]
                _mul_abt(P, F, pf)  # P Fᵀ
                _mul_abt(F, pf.T, P)  # F (P Fᵀ), the transpose of (P Fᵀ)ᵀ Fᵀ: same sym()
                for i in range(n):
                    for j in range(i, n):
                        a = 0.5 * (P[i, j] + P[j, i])
                        P[i, j] = a + Q[i, j]
                        P[j, i] = a + Q[j, i]
            if keep_pred:
                for i in range(n):
                    o_pmean[t, b, i] = x[i]
                    for j in range(n):
                        o_pcov[t, b, i, j] = P[i, j]
            n_obs = 0
            for i in range(m):
                obs[i] = not math.isnan(ys[t, b, i])
                if obs[i]:
                    n_obs += 1
            if n_obs == 0:
                log_c = math.nan
                rho = math.nan
            elif m == 1:
                r = R[0, 0]
                hph0 = 0.0
                v0 = ys[t, b, 0]
                for i in range(n):
                    acc = 0.0
                    for j in range(n):
                        acc += P[i, j] * H[0, j]
                    ph[i] = acc
                for i in range(n):
                    hph0 += ph[i] * H[0, i]
                    v0 -= x[i] * H[0, i]
                s0 = hph0 + r
                log_c = min(-0.5 * v0 * v0 / s0, 0.0)
                rho = discount_scalar(min(log_c - log_c0[1], 0.0), dim, tau, robust)
                kk = rho / (rho * hph0 + r) if robust else 1.0 / s0
                for i in range(n):
                    k1[i] = kk * ph[i]
                    x[i] += k1[i] * v0
                rho1 = rho if robust else 1.0
                if rho1 * hph0 > _DIFFUSE * r and n == 1:  # P r / (ρ h² P + r)
                    P[0, 0] *= r / (rho1 * hph0 + r)
                elif rho1 * hph0 > _DIFFUSE * r:
                    _joseph(P, k1.reshape((1, n)), H, R, rho1, ja, jb, pf)
                    for i in range(n):  # not P[:, :] = pf, whose shape check compiles slowly
                        for j in range(n):
                            P[i, j] = pf[i, j]
                else:
                    for i in range(n):
                        for j in range(n):
                            P[i, j] -= k1[i] * ph[j]
            else:
                # missing components decoupled exactly (as _observation_at)
                for i in range(m):
                    for j in range(n):
                        hm[i, j] = H[i, j] if obs[i] else 0.0
                    for j in range(m):
                        rm[i, j] = R[i, j] if obs[i] and obs[j] else 0.0
                    if not obs[i]:
                        rm[i, i] = 1.0
                _mul_abt(hm, P.T, hp)  # H P
                big = 0.0
                for i in range(m):
                    acc = ys[t, b, i] if obs[i] else 0.0
                    for j in range(n):
                        acc -= hm[i, j] * x[j]
                    v[i] = acc
                    big = max(big, abs(acc))
                _mul_abt(hp, hm, hph)  # H P Hᵀ
                scale = 1.0
                if big > _BIG:  # exact power-of-two scaling: vᵀ S⁻¹ v cannot overflow
                    scale = 2.0 ** math.frexp(big)[1]
                for i in range(m):
                    rhs[i, 0] = v[i] / scale
                    for j in range(m):
                        s[i, j] = hph[i, j] + rm[i, j]
                    for j in range(n):
                        rhs[i, j + 1] = hp[i, j]
                if not _solve(s, rhs, 1 if robust else n + 1):
                    return False
                q = 0.0
                for i in range(m):
                    q += v[i] / scale * rhs[i, 0]
                log_c = -0.5 * q
                if scale != 1.0 and q > 0:
                    log_c = -0.5 * q * scale * scale
                log_c = min(log_c, 0.0)
                rho = discount_scalar(min(log_c - log_c0[n_obs], 0.0), dim, tau, robust)
                if robust:
                    # K = ρ P Hᵀ (ρ H P Hᵀ + R)⁻¹: continuous down to ρ = 0
                    for i in range(m):
                        for j in range(m):
                            s[i, j] = rho * hph[i, j] + rm[i, j]
                        for j in range(n):
                            rhs[i, j + 1] = rho * hp[i, j]
                    if not _solve(s, rhs[:, 1:], n):
                        return False
                # rhs[:, 1:] is now Kᵀ (m, n)
                for i in range(n):
                    acc = 0.0
                    for j in range(m):
                        acc += rhs[j, i + 1] * (v[j] / scale)
                    x[i] += acc * scale
                rho1 = rho if robust else 1.0
                diffuse = False
                for i in range(m):
                    if rho1 * hph[i, i] > _DIFFUSE * rm[i, i]:
                        diffuse = True
                if diffuse and not (m == n and n_obs == m and _information_update(
                        P, hm, rm, hph, rho1, ja, jb, wm, wd, pf)):
                    _joseph(P, rhs[:, 1:], hm, rm, rho1, ja, jb, pf)
                elif not diffuse:
                    for i in range(n):
                        for j in range(n):
                            acc = 0.0
                            for c in range(m):
                                acc += rhs[c, i + 1] * hp[c, j]
                            pf[i, j] = P[i, j] - acc
                for i in range(n):
                    for j in range(i, n):
                        a = 0.5 * (pf[i, j] + pf[j, i])
                        P[i, j] = a
                        P[j, i] = a
            for i in range(n):
                o_mean[t, b, i] = x[i]
            o_logc[t, b] = log_c
            o_disc[t, b] = rho
            if keep_cov:
                for i in range(n):
                    for j in range(n):
                        o_cov[t, b, i, j] = P[i, j]
            if keep_var:
                for i in range(n):
                    o_var[t, b, i] = P[i, i]
            for i in range(n):
                mean[b, i] = x[i]
                for j in range(n):
                    cov[b, i, j] = P[i, j]
    return True


class _StepOutputs(NamedTuple):
    """The outputs of :func:`run` that :func:`step` keeps (the others empty)."""

    mean: Any
    variance: Any
    covariance: Any
    predicted_mean: Any
    predicted_covariance: Any
    log_consistency: Any
    discount: Any
    keep_variance: bool
    keep_covariance: bool
    keep_predicted: bool


def step_buffers(model: tuple[np.ndarray, ...], rule: tuple[Any, ...]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``io``, ``state`` and ``settings`` arrays of :func:`step` for ``model``
    ``(F, Q, H, R)`` and ``rule`` ``(robust, dim, tau, log_c0)`` (as :func:`run`'s)."""
    F, Q, H, R = model
    robust, dim, tau, log_c0 = rule
    n, m = H.shape[1], H.shape[0]
    settings = np.concatenate([F.ravel(), Q.ravel(), H.ravel(), R.ravel(), log_c0,
                               [float(robust), dim, tau]])
    return np.zeros(2 * m + 2 * n + 4), np.zeros(n + n * n), settings


@numba.njit(cache=True, nogil=True)
def step(io, state, settings, predict, n_tup, m_tup):  # pragma: no cover - compiled
    """One step of :func:`run` for one series, on flat buffers (few arguments: each costs a
    call from Python about 0.2 µs). ``state`` is ``(mean, covariance)``, overwritten; the
    observation is ``io[m:2m]``, predicted first when ``predict``; the step writes the
    filtered mean at ``io[2m + n:2m + 2n]``, ``log c`` at ``io[2m + 2n + 1]`` and the
    discount at ``io[2m + 2n + 3]``. ``settings``: :func:`step_buffers`. Returns
    :func:`run`'s flag (False: a matrix singular by rounding; ``state`` is then partly
    written)."""
    n, m = len(n_tup), len(m_tup)
    F = settings[:n * n].reshape((n, n))
    Q = settings[n * n:2 * n * n].reshape((n, n))
    H = settings[2 * n * n:2 * n * n + m * n].reshape((m, n))
    at = 2 * n * n + m * n
    R = settings[at:at + m * m].reshape((m, m))
    log_c0 = settings[at + m * m:at + m * m + m + 1]
    at += m * m + m + 1
    rule = (settings[at] != 0.0, settings[at + 1], settings[at + 2], log_c0)
    # rows first..1 of run's time axis: step 1 predicts first, step 0 (first = 1) does not
    first = 0 if predict else 1
    rows = 2 - first
    ys = io[first * m:2 * m].reshape((rows, 1, m))
    at = 2 * m + 2 * n
    out = _StepOutputs(io[2 * m + first * n:at].reshape((rows, 1, n)), np.empty((0, 1, n)),
                       np.empty((0, 1, n, n)), np.empty((0, 1, n)), np.empty((0, 1, n, n)),
                       io[at + first:at + 2].reshape((rows, 1)),
                       io[at + 2 + first:at + 4].reshape((rows, 1)), False, False, False)
    return run(ys, 1 - first, state[:n].reshape((1, n)), state[n:].reshape((1, n, n)),
               (F, Q, H, R), rule, n_tup, m_tup, out)
