"""Compiled (numba) loop of the Kalman filter and the smoother's information-form steps, for
single series and batches (``KalmanFilter.filter(engine="numba")``, and ``"auto"`` when numba
is installed; requires ``pip install possibly[fast]``).

The same formulas as the numpy kernels of :mod:`possibly.filters.kalman` (docs/math.md §2):
predict ``F μ, F P Fᵀ + Q``; update with the innovation ``v = y - H μ``, ``log c = -½ vᵀ S⁻¹ v``
(scaled by a power of two when ``v`` is huge), the discount from
:func:`possibly.compiled.discount_scalar` and the gain ``K = ρ P Hᵀ (ρ H P Hᵀ + R)⁻¹``, the
covariance in the Joseph or information form where the prior is diffuse relative to ``R``;
missing components decoupled as in ``_observation_at``. Time-invariant models with an onto
``H`` only. :func:`run` is the plain recursion; :func:`run_start` the robust start's mixture:
its information-form steps (Jacobi pseudo-inverses, as ``np.linalg.pinv(hermitian=True)``;
the smoother's take them too, :func:`backward_information`), then its covariance-form steps
through :func:`run` or, with one observed component, :func:`_hypothesis_steps` (only the
hypotheses' states written; those that can never lead again skipped; two states in scalars,
the same operations). Equal to numpy's to ~1e-12 where the information form is well
conditioned, ~1e-6 from a flat prior with 3 states or a diffuse model (pseudo-inverses round).

Why explicit loops: the states are tiny (n = 4, m = 2 when tracking), so the cost of ``x @ Ft``
or ``np.linalg.inv`` in a compiled loop is their allocation, not their arithmetic. Work arrays
are allocated once per call; the ``m × m`` systems are solved by Gaussian elimination with
partial pivoting (as LAPACK's ``getrf``; an exactly zero pivot is refused and ``filter`` runs
numpy's steps, with their pseudo-inverse fallback, from there); ``n`` and ``m`` are
compile-time constants (one loop per ``(n, m)``, cached on disk).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from possibly.compiled import discount_scalar
from possibly.filters._common import KernelOutputs
from possibly.filters.elimination_numba import solve_in_place

__all__ = ["backward_information", "run", "run_start", "sizes", "step", "step_buffers"]

_BIG = 1e100  # as possibly.filters._common._BIG
_DIFFUSE = 1e4  # as possibly.filters.kalman._DIFFUSE (the numpy step)
_MAX_COND = 1e9  # as possibly.filters._common._MAX_COND


#: the compiled helpers of the loops below: they allocate nothing and take their arrays from
#: the caller, which holds them, so they skip numba's reference counting (``_nrt=False``):
#: its atomic increments and decrements of every array argument and view cost more than the
#: 2 × 2 arithmetic of a step of the robust start
_NO_REFCOUNTS: dict[str, Any] = (  # numba's private switch (not in its stubs), where it has it
    {"_nrt": False} if hasattr(numba.core.options.DefaultOptions, "_nrt") else {})
_helper = numba.njit(cache=True, nogil=True, **_NO_REFCOUNTS)


def sizes(n: int, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ``n_tup, m_tup`` arguments of :func:`run` for ``n`` states and ``m`` observed
    components."""
    return (0,) * n, (0,) * m


@numba.njit(cache=True, nogil=True, inline="always")  # inlined: no call per use
def _mul_abt(a, b, out):  # pragma: no cover - compiled
    """``out = a @ b.T`` (each entry summed in the order of the columns)."""
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            acc = 0.0
            for c in range(a.shape[1]):
                acc += a[i, c] * b[j, c]
            out[i, j] = acc


@numba.njit(cache=True, nogil=True, inline="always")
def _mul_ax_in_place(a, x, scratch):  # pragma: no cover - compiled
    """``x = a @ x`` (each entry summed in the order of the columns; ``scratch``: x's size)."""
    for i in range(a.shape[0]):
        acc = 0.0
        for j in range(a.shape[1]):
            acc += a[i, j] * x[j]
        scratch[i] = acc
    for i in range(a.shape[0]):
        x[i] = scratch[i]


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


@_helper
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


@_helper
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
    if not solve_in_place(ja, jb, n) or not solve_in_place(wd, wm, m):  # P⁻¹, R⁻¹
        return False
    for i in range(n):
        for j in range(n):
            ja[i, j] = jb[i, j]
            out[i, j] = 1.0 if i == j else 0.0
    _add_congruence(H, wm, rho, ja)  # P⁻¹ + ρ Hᵀ R⁻¹ H
    return solve_in_place(ja, out, n)


# -- the robust start: information-form steps and the mixture of start hypotheses -------------
@numba.njit(cache=True, nogil=True, inline="always")
def _jacobi_rotation(app, aqq, apq):  # pragma: no cover - compiled
    """``(t, s, τ)``: the tangent, sine and ``s / (1 + cos)`` of the Jacobi rotation that
    zeroes ``apq`` (the smaller angle)."""
    theta = (aqq - app) / (2.0 * apq)
    t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
    if theta < 0.0:
        t = -t
    c = 1.0 / math.sqrt(t * t + 1.0)
    s = t * c
    return t, s, s / (1.0 + c)


@numba.njit(cache=True, nogil=True, inline="always")
def _eigh2(a, w, V):  # pragma: no cover - compiled
    """:func:`_eigh` of a 2 × 2 ``a``: its loop's single rotation (the next sweep finds
    ``a[0, 1] == 0`` and stops), written out with the same operations, so the same bits."""
    v00, v01, v10, v11 = 1.0, 0.0, 0.0, 1.0
    apq = a[0, 1]
    if apq != 0.0:
        app, aqq = a[0, 0], a[1, 1]
        if abs(apq) > 1e-18 * (abs(app) + abs(aqq)):
            t, s, tau = _jacobi_rotation(app, aqq, apq)
            a[0, 0] = app - t * apq
            a[1, 1] = aqq + t * apq
            v00, v01 = v00 - s * (v01 + tau * v00), v01 + s * (v00 - tau * v01)
            v10, v11 = v10 - s * (v11 + tau * v10), v11 + s * (v10 - tau * v11)
        a[0, 1] = a[1, 0] = 0.0
    V[0, 0], V[0, 1], V[1, 0], V[1, 1] = v00, v01, v10, v11
    w[0] = a[0, 0]
    w[1] = a[1, 1]


@_helper
def _eigh(a, w, V, n):  # pragma: no cover - compiled
    """Eigenvalues ``w[:n]`` and eigenvectors (the columns of ``V[:n, :n]``) of the symmetric
    ``a[:n, :n]`` (destroyed), by cyclic Jacobi rotations: as accurate as LAPACK's ``syevd``
    behind ``np.linalg.eigh`` (to a few ulps of the largest eigenvalue) with no allocation.
    The size is an argument, not the arrays' shape: a top-left block of the work arrays
    passes them whole, so this is compiled once (a slice would be another array layout)."""
    if n == 2:  # one rotation, as the loop below makes it (the same operations)
        _eigh2(a, w, V)
        return
    for i in range(n):
        for j in range(n):
            V[i, j] = 1.0 if i == j else 0.0
    for _ in range(64):
        off = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = a[p, q]
                if apq == 0.0:
                    continue
                app, aqq = a[p, p], a[q, q]
                if abs(apq) <= 1e-18 * (abs(app) + abs(aqq)):  # below their rounding
                    a[p, q] = a[q, p] = 0.0
                    continue
                off = True
                t, s, tau = _jacobi_rotation(app, aqq, apq)
                a[p, p] = app - t * apq
                a[q, q] = aqq + t * apq
                a[p, q] = a[q, p] = 0.0
                for r in range(n):
                    if r != p and r != q:
                        arp, arq = a[r, p], a[r, q]
                        a[r, p] = a[p, r] = arp - s * (arq + tau * arp)
                        a[r, q] = a[q, r] = arq + s * (arp - tau * arq)
                for r in range(n):
                    vrp, vrq = V[r, p], V[r, q]
                    V[r, p] = vrp - s * (vrq + tau * vrp)
                    V[r, q] = vrq + s * (vrp - tau * vrq)
        if not off:
            break
    for i in range(n):
        w[i] = a[i, i]


@_helper
def _pinv_mv(a, r, out, ea, w, V, n):  # pragma: no cover - compiled
    """``out[:n] = pinv(a[:n, :n]) r[:n]`` for a symmetric ``a`` (as
    ``np.linalg.pinv(a, hermitian=True)``: eigenvalues below ``1e-15`` times the largest in
    magnitude are dropped); ``ea``, ``w``, ``V`` work arrays (their top-left blocks used)."""
    for i in range(n):
        for j in range(n):
            ea[i, j] = a[i, j]
        out[i] = 0.0
    _eigh(ea, w, V, n)
    top = 0.0
    for i in range(n):
        top = max(top, abs(w[i]))
    for c in range(n):
        if abs(w[c]) > 1e-15 * top:
            acc = 0.0
            for i in range(n):
                acc += V[i, c] * r[i]
            acc /= w[c]
            for i in range(n):
                out[i] += V[i, c] * acc


@_helper
def _well_conditioned(a, ea, w, V):  # pragma: no cover - compiled
    """Whether the precision ``a`` has condition number below 10⁹ (as
    ``possibly.filters._common._well_conditioned``)."""
    n = a.shape[0]
    for i in range(n):
        for j in range(n):
            ea[i, j] = a[i, j]
    _eigh(ea, w, V, n)
    lo, hi = w[0], w[0]
    for i in range(n):
        lo = min(lo, w[i])
        hi = max(hi, w[i])
    return lo > hi / _MAX_COND


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _covariance_or_inf2(Y, out):  # pragma: no cover - compiled
    """:func:`_covariance_or_inf` of a 2 × 2 ``Y`` in scalars, every operation in the same
    order (the Schur complements' 1 × 1 pseudo-inverses as :func:`_pinv_mv`'s)."""
    if _well_conditioned2(Y):
        for i in range(2):
            for j in range(2):
                out[i, j] = Y[i, j]
        return _sym_inverse2(out)
    for i in range(2):
        for j in range(2):
            out[i, j] = math.inf
    for i in range(2):
        o = 1 - i
        scale = max(max(0.0, abs(Y[i, 0])), abs(Y[i, 1]))
        r0, w0 = Y[i, o], Y[o, o]
        step = 0.0
        if abs(w0) > 1e-15 * max(0.0, abs(w0)):
            step = 0.0 + 1.0 * ((0.0 + 1.0 * r0) / w0)
        schur = Y[i, i] - r0 * step
        out[i, i] = 1.0 / schur if schur > scale / _MAX_COND else math.inf
    return True


@_helper
def _covariance_or_inf(Y, out, ea, eb, w, V, r, step):  # pragma: no cover - compiled
    """``out = sym(Y⁻¹)`` for a well-conditioned precision ``Y``; else ``inf`` off the
    diagonal and the max-marginal variances on it, ``1 / (Y_ii - Y_io Y_oo⁺ Y_oi)`` or ``inf``
    for an uninformed component (as ``possibly.filters._common._covariance_or_inf``); False
    if ``Y`` is singular by rounding after all. The other arrays are work arrays."""
    n = Y.shape[0]
    if n == 2:
        return _covariance_or_inf2(Y, out)
    if _well_conditioned(Y, ea, w, V):
        for i in range(n):
            for j in range(n):
                ea[i, j] = Y[i, j]
                eb[i, j] = 1.0 if i == j else 0.0
        if not solve_in_place(ea, eb, n):
            return False
        for i in range(n):
            for j in range(n):
                out[i, j] = 0.5 * (eb[i, j] + eb[j, i])
        return True
    for i in range(n):
        for j in range(n):
            out[i, j] = math.inf
    for i in range(n):
        scale = 0.0  # "uninformed" relative to the component's own row, as numpy's
        for j in range(n):
            scale = max(scale, abs(Y[i, j]))
        schur = Y[i, i]
        if n > 1:
            oi = 0
            for a in range(n):
                if a == i:
                    continue
                r[oi] = Y[i, a]
                oj = 0
                for c in range(n):
                    if c != i:
                        ea[oi, oj] = Y[a, c]
                        oj += 1
                oi += 1
            k = n - 1
            _pinv_mv(ea, r, step, eb, w, V, k)
            for c in range(k):
                schur -= r[c] * step[c]
        out[i, i] = 1.0 / schur if schur > scale / _MAX_COND else math.inf
    return True

# not inlined (nor _update_information): run only while the start is in information form (a
# few steps), while numba's typing of one large loop with their bodies written in grows faster
# than their size (a longer first compile of the default filter)
@_helper
def _predict_information(Y, F_inv, G, Qg_inv, ea, eb, ec, n_tup):  # pragma: no cover
    """``Y = sym(M - M G (Q_g⁻¹ + Gᵀ M G)⁻¹ Gᵀ M)``, ``M = F⁻ᵀ Y F⁻¹``: the precision of
    ``_predict`` in information form; ``ea``, ``eb``, ``ec`` n × n work arrays (``n`` as the
    length of ``n_tup``, a compile-time constant: loops of known length are unrolled)."""
    n, g = len(n_tup), G.shape[1]
    for i in range(n):
        for j in range(n):  # F⁻ᵀ Y
            acc = 0.0
            for c in range(n):
                acc += F_inv[c, i] * Y[c, j]
            ea[i, j] = acc
    for i in range(n):  # M = (F⁻ᵀ Y) F⁻¹
        for j in range(n):
            acc = 0.0
            for c in range(n):
                acc += ea[i, c] * F_inv[c, j]
            Y[i, j] = acc
    if g:
        for i in range(n):  # mg = M G, in ea[:, :g]
            for j in range(g):
                acc = 0.0
                for c in range(n):
                    acc += Y[i, c] * G[c, j]
                ea[i, j] = acc
        for i in range(g):  # a = Q_g⁻¹ + Gᵀ mg, in eb[:g, :g]; rhs mgᵀ in ec[:g, :]
            for j in range(g):
                acc = 0.0
                for c in range(n):
                    acc += G[c, i] * ea[c, j]
                eb[i, j] = Qg_inv[i, j] + acc
            for j in range(n):
                ec[i, j] = ea[j, i]
        if not solve_in_place(eb[:g, :g], ec[:g, :], n):
            return False
        for i in range(n):
            for j in range(n):
                acc = 0.0
                for c in range(g):
                    acc += ea[i, c] * ec[c, j]
                Y[i, j] -= acc
    for i in range(n):
        for j in range(i, n):
            a = 0.5 * (Y[i, j] + Y[j, i])
            Y[i, j] = a
            Y[j, i] = a
    return True


@_helper
def _update_information(ys, t, b, x, Y, H, R, W, robust, dim, tau, log_c0, obs, hm, wmat, rm,
                        htw, j_, b_, vs, ea, w, V, step, eb, n_tup, m_tup):  # pragma: no cover
    """Update ``x``, ``Y`` (information form, ``Y`` the precision) in place with ``y =
    ys[t, b]`` (NaN components missing), as ``_update`` in information form; returns ``(ok,
    log c, ρ, well conditioned)``, the last whether the new ``Y`` passes
    :func:`_well_conditioned` (1 or 0; -1 not known), read from the eigenvalues its step's
    pseudo-inverse found (the same bits as that test's). The arrays from ``obs`` on are
    work arrays (one by one: a tuple of arrays costs their reference counts at every call;
    the caller's view of ``y`` would too)."""
    y = ys[t, b]
    n, m = len(n_tup), len(m_tup)
    n_obs = 0
    for i in range(m):
        obs[i] = not math.isnan(y[i])
        if obs[i]:
            n_obs += 1
    if n_obs == 0:
        return True, math.nan, math.nan, -1
    # missing components decoupled exactly (as _observation_at): W = sym(R⁻¹) of the rest
    for i in range(m):
        for j in range(n):
            hm[i, j] = H[i, j] if obs[i] else 0.0
        for j in range(m):
            if n_obs == m:
                wmat[i, j] = W[i, j]
            else:
                rm[i, j] = R[i, j] if obs[i] and obs[j] else 0.0
                wmat[i, j] = 1.0 if i == j else 0.0
        if not obs[i]:
            rm[i, i] = 1.0
    if n_obs < m:
        if not solve_in_place(rm, wmat, m):
            return False, math.nan, math.nan, -1
        for i in range(m):
            for j in range(i, m):
                a = 0.5 * (wmat[i, j] + wmat[j, i])
                wmat[i, j] = a
                wmat[j, i] = a
    big = 0.0
    for i in range(m):
        y0 = y[i] if obs[i] else 0.0
        acc = y0
        for j in range(n):
            acc -= hm[i, j] * x[j]
        vs[i] = acc
        big = max(big, abs(acc), abs(y0))
    scale = 1.0
    if big > _BIG:  # as _scale_exponent: exact power-of-two scaling
        scale = 2.0 ** math.frexp(big)[1]
        for i in range(m):
            vs[i] /= scale
    for i in range(n):  # Hᵀ W
        for j in range(m):
            acc = 0.0
            for c in range(m):
                acc += hm[c, i] * wmat[c, j]
            htw[i, j] = acc
    informed = False
    for i in range(n):
        acc = 0.0
        for c in range(m):
            acc += htw[i, c] * vs[c]
        b_[i] = acc
        for j in range(n):
            acc = 0.0
            for c in range(m):
                acc += htw[i, c] * hm[c, j]
            j_[i, j] = acc
            if Y[i, j] != 0.0:
                informed = True
    q = 0.0
    for i in range(m):
        acc = 0.0
        for c in range(m):
            acc += wmat[i, c] * vs[c]
        q += vs[i] * acc
    if informed:  # from the uninformative prior every y fits exactly: c = 1
        for i in range(n):
            for j in range(n):
                eb[i, j] = Y[i, j] + j_[i, j]
        _pinv_mv(eb, b_, step, ea, w, V, Y.shape[0])  # not n: a literal, another version
        for i in range(n):
            q -= b_[i] * step[i]
    else:
        q = 0.0
    log_c = -0.5 * q
    if scale != 1.0 and q > 0:
        log_c = -0.5 * q * scale * scale
    log_c = min(log_c, 0.0)
    rho = discount_scalar(min(log_c - log_c0[n_obs], 0.0), dim, tau, robust)
    rho1 = rho if robust else 1.0
    # with ρ = 1 the new precision is often Y + J bit for bit, whose pseudo-inverse step is
    # already in `step` (the same input gives the same bits): then it is not solved again
    again = not informed or rho1 != 1.0
    for i in range(n):
        for j in range(i, n):
            a = 0.5 * ((Y[i, j] + rho1 * j_[i, j]) + (Y[j, i] + rho1 * j_[j, i]))
            if not again and not (_same_bits(a, eb[i, j]) and _same_bits(a, eb[j, i])):
                again = True
            Y[i, j] = a
            Y[j, i] = a
        b_[i] *= rho1
    if again:
        _pinv_mv(Y, b_, step, ea, w, V, Y.shape[0])
    for i in range(n):
        x[i] += step[i] * scale
    # w: the eigenvalues of the new Y (its pseudo-inverse's, above or Y + J's, the same bits)
    lo, hi = w[0], w[0]
    for i in range(n):
        lo = min(lo, w[i])
        hi = max(hi, w[i])
    return True, log_c, rho, 1 if lo > hi / _MAX_COND else 0


@numba.njit(cache=True, nogil=True, inline="always")
def _pinv2(a00, a01, a11, r0, r1):  # pragma: no cover - compiled
    """:func:`_pinv_mv` of a 2 × 2 ``a`` (its ``a[1, 0]`` is not read) in scalars, every
    operation in the same order (:func:`_eigh2`'s rotation): ``(out0, out1, w0, w1)``, the
    step and the eigenvalues."""
    v00, v01, v10, v11 = 1.0, 0.0, 0.0, 1.0
    if a01 != 0.0:
        app, aqq, apq = a00, a11, a01
        if abs(apq) > 1e-18 * (abs(app) + abs(aqq)):
            t, s, tau = _jacobi_rotation(app, aqq, apq)
            a00 = app - t * apq
            a11 = aqq + t * apq
            v00, v01 = v00 - s * (v01 + tau * v00), v01 + s * (v00 - tau * v01)
            v10, v11 = v10 - s * (v11 + tau * v10), v11 + s * (v10 - tau * v11)
    w0, w1 = a00, a11
    top = max(max(0.0, abs(w0)), abs(w1))
    out0, out1 = 0.0, 0.0
    if abs(w0) > 1e-15 * top:
        acc = ((0.0 + v00 * r0) + v10 * r1) / w0
        out0 += v00 * acc
        out1 += v10 * acc
    if abs(w1) > 1e-15 * top:
        acc = ((0.0 + v01 * r0) + v11 * r1) / w1
        out0 += v01 * acc
        out1 += v11 * acc
    return out0, out1, w0, w1


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _update_information2(y0, x, Y, H, w, robust, dim, tau, log_c0):  # pragma: no cover
    """:func:`_update_information` with two states and one observed component ``y0`` (``w``
    is ``R⁻¹``, ``log_c0`` the reference of one component), in scalars: every operation in
    the same order, so the same bits. Returns ``(log c, ρ, well conditioned)``."""
    h0, h1 = H[0, 0], H[0, 1]
    vs = (y0 - h0 * x[0]) - h1 * x[1]
    big = max(0.0, abs(vs), abs(y0))
    scale = 1.0
    if big > _BIG:  # as _scale_exponent: exact power-of-two scaling
        scale = 2.0 ** math.frexp(big)[1]
        vs /= scale
    t0, t1 = 0.0 + h0 * w, 0.0 + h1 * w  # Hᵀ W
    b0, b1 = 0.0 + t0 * vs, 0.0 + t1 * vs
    j00, j01, j10, j11 = 0.0 + t0 * h0, 0.0 + t0 * h1, 0.0 + t1 * h0, 0.0 + t1 * h1
    y00, y01, y10, y11 = Y[0, 0], Y[0, 1], Y[1, 0], Y[1, 1]
    informed = y00 != 0.0 or y01 != 0.0 or y10 != 0.0 or y11 != 0.0
    q = 0.0 + vs * (0.0 + w * vs)
    e00, e01, e10, e11 = y00 + j00, y01 + j01, y10 + j10, y11 + j11
    s0, s1, w0, w1 = 0.0, 0.0, 0.0, 0.0
    if informed:  # from the uninformative prior every y fits exactly: c = 1
        s0, s1, w0, w1 = _pinv2(e00, e01, e11, b0, b1)
        q -= b0 * s0
        q -= b1 * s1
    else:
        q = 0.0
    log_c = -0.5 * q
    if scale != 1.0 and q > 0:
        log_c = -0.5 * q * scale * scale
    log_c = min(log_c, 0.0)
    rho = discount_scalar(min(log_c - log_c0, 0.0), dim, tau, robust)
    rho1 = rho if robust else 1.0
    a00 = 0.5 * ((y00 + rho1 * j00) + (y00 + rho1 * j00))
    a01 = 0.5 * ((y01 + rho1 * j01) + (y10 + rho1 * j10))
    a11 = 0.5 * ((y11 + rho1 * j11) + (y11 + rho1 * j11))
    again = (not informed or rho1 != 1.0 or not (
        _same_bits(a00, e00) and _same_bits(a01, e01) and _same_bits(a01, e10)
        and _same_bits(a11, e11)))
    Y[0, 0], Y[0, 1], Y[1, 0], Y[1, 1] = a00, a01, a01, a11
    if again:
        s0, s1, w0, w1 = _pinv2(a00, a01, a11, b0 * rho1, b1 * rho1)
    x[0] += s0 * scale
    x[1] += s1 * scale
    lo, hi = min(min(w0, w0), w1), max(max(w0, w0), w1)
    return log_c, rho, 1 if lo > hi / _MAX_COND else 0


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _well_conditioned2(a):  # pragma: no cover - compiled
    """:func:`_well_conditioned` of a 2 × 2 ``a`` in scalars (the same operations): 1 or 0."""
    _, _, w0, w1 = _pinv2(a[0, 0], a[0, 1], a[1, 1], 0.0, 0.0)
    lo, hi = min(min(w0, w0), w1), max(max(w0, w0), w1)
    return 1 if lo > hi / _MAX_COND else 0


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _predict_information2(Y, F_inv, G, qg):  # pragma: no cover - compiled
    """:func:`_predict_information` of two states and a one-column ``G`` (``qg`` is
    ``Q_g⁻¹``) in scalars, every operation in the same order; False where it is singular."""
    f00, f01, f10, f11 = F_inv[0, 0], F_inv[0, 1], F_inv[1, 0], F_inv[1, 1]
    y00, y01, y10, y11 = Y[0, 0], Y[0, 1], Y[1, 0], Y[1, 1]
    e00 = (0.0 + f00 * y00) + f10 * y10  # F⁻ᵀ Y
    e01 = (0.0 + f00 * y01) + f10 * y11
    e10 = (0.0 + f01 * y00) + f11 * y10
    e11 = (0.0 + f01 * y01) + f11 * y11
    m00 = (0.0 + e00 * f00) + e01 * f10  # M = (F⁻ᵀ Y) F⁻¹
    m01 = (0.0 + e00 * f01) + e01 * f11
    m10 = (0.0 + e10 * f00) + e11 * f10
    m11 = (0.0 + e10 * f01) + e11 * f11
    g0, g1 = G[0, 0], G[1, 0]
    mg0 = (0.0 + m00 * g0) + m01 * g1  # M G
    mg1 = (0.0 + m10 * g0) + m11 * g1
    a = qg + ((0.0 + g0 * mg0) + g1 * mg1)  # Q_g⁻¹ + Gᵀ M G
    if abs(a) == 0.0 or math.isnan(abs(a)):  # as solve_in_place's pivot
        return False
    c0, c1 = mg0 / a, mg1 / a
    m00 -= 0.0 + mg0 * c0
    m01 -= 0.0 + mg0 * c1
    m10 -= 0.0 + mg1 * c0
    m11 -= 0.0 + mg1 * c1
    Y[0, 0] = 0.5 * (m00 + m00)
    Y[0, 1] = Y[1, 0] = 0.5 * (m01 + m10)
    Y[1, 1] = 0.5 * (m11 + m11)
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _same_bits(a, b):  # pragma: no cover - compiled
    """Whether the floats ``a`` and ``b`` are the same bits (NaN never is; signed zeros)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _leader(score, rank):  # pragma: no cover - compiled
    """The leading hypothesis (as ``robust_start.leader``): the largest score up to a
    relative 1e-9, ties to the smallest ``rank``; every hypothesis ties where all are -inf."""
    top = -math.inf
    for h in range(score.shape[0]):
        top = max(top, score[h])
    low = top - 1e-9 * (1.0 + abs(top))
    best, best_rank = 0, rank.shape[0]
    for h in range(score.shape[0]):
        if (score[h] >= low or top == -math.inf) and rank[h] < best_rank:
            best, best_rank = h, rank[h]
    return best


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
    fallbacks. :func:`run_start` runs its covariance-form steps through it.
    """
    F, Q, H, R = model
    robust, dim, tau, log_c0 = rule
    o_mean, o_var, o_cov = out.mean, out.variance, out.covariance
    o_pmean, o_pcov = out.predicted_mean, out.predicted_covariance
    o_logc, o_disc = out.log_consistency, out.discount
    keep_var, keep_cov, keep_pred = out.keep_variance, out.keep_covariance, out.keep_predicted
    T, B = ys.shape[0], ys.shape[1]
    n, m = len(n_tup), len(m_tup)  # compile-time constants, as in run_start
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
    # time outer, series inner (as run_start); the state of each series lives in mean[b],
    # cov[b] between its steps
    for t in range(t0, T):
        for b in range(B):
            for i in range(n):
                x[i] = mean[b, i]
                for j in range(n):
                    P[i, j] = cov[b, i, j]
            if t > 0:
                # x = F x; P = sym((P Fᵀ)ᵀ Fᵀ) + Q, as _predict
                _mul_ax_in_place(F, x, k1)
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
                if not solve_in_place(s, rhs, 1 if robust else n + 1):
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
                    if not solve_in_place(s, rhs[:, 1:], n):
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


@numba.njit(cache=True, nogil=True)
def run_start(ys, t0, t_end, mean, mat, information, model, inverse, rule, mixture, n_tup,
              m_tup, out, precisions, forms, lead):  # pragma: no cover - compiled
    """Steps ``t0..t_end-1`` of every series of the robust start's mixture of hypotheses
    (``robust_start.start_step``; one hypothesis: the plain recursion), in information form
    while a direction of the state is uninformed (else through :func:`run`), writing the
    leader's outputs into ``out`` (as :func:`run`).

    ``mean`` (B, n) and ``mat`` (B, n, n) are the state before step ``t0`` (a covariance, or
    a precision if ``information``; with several hypotheses ``t0`` is 0 and this is the
    prior), overwritten with the leader's state after the last step. ``inverse`` is ``(F⁻¹,
    has F⁻¹, G, Q_g⁻¹, R⁻¹)`` of the prepared model (read in information form only);
    ``mixture`` is ``(drop, rank, rep, floor)``: the hypotheses' dropped observations (H, k),
    their rank among ties, the first hypothesis that drops the same observations up to step
    ``t < k`` (k, H) and ``log ε`` (``robust_start.mixture_tables``). While the batch is in
    information form (one batch, as numpy's steps) the leader's filtered and predicted
    precisions go to ``precisions[0][t]``, ``precisions[1][t]``, ``forms[t]`` says which
    were, and their covariances (``inf`` where singular, as numpy's record) to ``out``.
    ``lead`` (B, integers, zeros) receives each series' leading hypothesis after the last step.
    Returns 0 if a matrix to invert is singular by rounding, or ``F`` is not invertible while
    in information form (the caller reruns these steps in numpy), 1 if the final state is in
    covariance form, 2 in information form.
    """
    F, Q, H, R = model
    robust, dim, tau, log_c0 = rule
    F_inv, has_inv, G, Qg_inv, W = inverse
    drop, rank, rep, floor = mixture
    o_mean, o_var, o_cov = out.mean, out.variance, out.covariance
    o_pmean, o_pcov = out.predicted_mean, out.predicted_covariance
    o_logc, o_disc = out.log_consistency, out.discount
    keep_var, keep_cov, keep_pred = out.keep_variance, out.keep_covariance, out.keep_predicted
    f_prec, p_prec = precisions
    B = ys.shape[1]
    nh, k = drop.shape
    # n and m as compile-time constants (a tuple's length is part of its numba type): one
    # compiled loop per (n, m), whose fixed-count small loops LLVM unrolls
    n, m = len(n_tup), len(m_tup)
    # the hypotheses' states; one hypothesis: the caller's arrays, updated in place
    if nh == 1:
        hx = mean.reshape((B, 1, n))
        hM = mat.reshape((B, 1, n, n))
    else:
        hx = np.empty((B, nh, n))
        hM = np.empty((B, nh, n, n))
        for b in range(B):
            for h in range(nh):
                for i in range(n):
                    hx[b, h, i] = mean[b, i]
                    for j in range(n):
                        hM[b, h, i, j] = mat[b, i, j]
    score = np.zeros((B, nh))
    px = np.empty((B, nh, n))  # each hypothesis' predicted state and its step's log c, ρ
    pM = np.empty((B, nh, n, n))
    lc = np.empty((B, nh))
    dc = np.empty((B, nh))
    hcond = np.empty((B, nh), dtype=np.int8)  # _update_information's conditioning, or -1
    # the covariance-form steps' inputs and outputs in run (rows 0..1 of its time axis, as
    # in step): every hypothesis of every series a row of one batch
    y1, y2 = np.empty((1, B * nh, m)), np.empty((2, B * nh, m))
    hout = KernelOutputs(np.empty((2, B * nh, n)), np.empty((0, B * nh, n)),
                         np.empty((0, B * nh, n, n)), np.empty((2, B * nh, n)),
                         np.empty((2, B * nh, n, n)), np.empty((2, B * nh)),
                         np.empty((2, B * nh)), False, False, True)
    h_pmean, h_pcov = hout.predicted_mean, hout.predicted_covariance  # read once, not per row
    h_logc, h_disc = hout.log_consistency, hout.discount
    # work arrays of the information-form steps, allocated once
    x = np.empty(n)
    P = np.empty((n, n))
    k1 = np.empty(n)
    ea, eb, ec, ew, ev = (np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.empty(n),
                          np.empty((n, n)))
    iobs, ihm, iwm, irm, ihtw = (np.empty(m, dtype=np.bool_), np.empty((m, n)),
                                 np.empty((m, m)), np.empty((m, m)), np.empty((n, m)))
    ij, ib, ivs, istep = np.empty((n, n)), np.empty(n), np.empty(m), np.empty(n)
    kt = np.empty((1, n))  # the gain of _hypothesis_steps
    info = information
    # time outer, series inner: the time-major inputs and outputs are then read and written
    # contiguously (series outer strides through them: slower for large batches)
    for t in range(t0, t_end):
        info_before = info
        if t > 0 and info and not has_inv:
            return 0
        if not info and nh > 1 and m == 1:
            # every later step is in covariance form: the hypotheses' steps write their
            # states only, the mixture the leader's outputs
            _hypothesis_steps(ys, t, t_end, hx, hM, px, pM, score, lc, dc, lead, model, rule,
                              mixture, o_mean, o_var, o_cov, o_pmean, o_pcov, o_logc, o_disc,
                              keep_var, keep_cov, keep_pred, x, P, ea, eb, ec, kt, ib, n_tup)
            break
        if not info:
            # covariance form: the plain loop (run) over every hypothesis of every series as
            # one batch, y missing where the hypothesis drops it
            row = 0 if t == 0 else 1  # run predicts unless it starts at step 0
            yt = y1 if t == 0 else y2
            for b in range(B):
                for h in range(nh):
                    dropped = t < k and drop[h, t]
                    for i in range(m):
                        yt[row, b * nh + h, i] = math.nan if dropped else ys[t, b, i]
            if not run(yt, row, hx.reshape((B * nh, n)), hM.reshape((B * nh, n, n)), model,
                       rule, n_tup, m_tup, hout):
                return 0
            # run's outputs of this step, read in place (series b's hypotheses are rows
            # b * nh .. b * nh + nh - 1)
            slc, sdc = h_logc[row].reshape((B, nh)), h_disc[row].reshape((B, nh))
            spx, spM = h_pmean[row].reshape((B, nh, n)), h_pcov[row].reshape((B, nh, n, n))
        else:
            slc, sdc, spx, spM = lc, dc, px, pM
        for b in range(B):
            for h in range(nh):
                if not info:
                    break  # stepped above
                if t < k and rep[t, h] != h:
                    hcond[b, h] = hcond[b, rep[t, h]]
                    continue  # the same state as its representative's: copied below
                same = rep[t - 1, h] if 0 < t <= k else h
                if same != h:
                    # it dropped the same observations as hypothesis `same` before this
                    # step, so their predictions are the same: copied (stepped above)
                    for i in range(n):
                        x[i] = px[b, same, i]
                        for j in range(n):
                            P[i, j] = pM[b, same, i, j]
                else:
                    for i in range(n):
                        x[i] = hx[b, h, i]
                        for j in range(n):
                            P[i, j] = hM[b, h, i, j]
                if t > 0 and same == h:  # x = F x, as _predict
                    _mul_ax_in_place(F, x, k1)
                    if n == 2 and G.shape[1] == 1:  # in scalars, the same operations
                        if not _predict_information2(P, F_inv, G, Qg_inv[0, 0]):
                            return 0
                    elif not _predict_information(P, F_inv, G, Qg_inv, ea, eb, ec, n_tup):
                        return 0
                for i in range(n):
                    px[b, h, i] = x[i]
                    for j in range(n):
                        pM[b, h, i, j] = P[i, j]
                n_obs = 0
                if not (t < k and drop[h, t]):  # else y is missing for this hypothesis
                    for i in range(m):
                        if not math.isnan(ys[t, b, i]):
                            n_obs += 1
                hcond[b, h] = -1
                if n_obs == 0:
                    log_c = math.nan
                    rho = math.nan
                elif n == 2 and m == 1:  # in scalars, the same operations
                    log_c, rho, hcond[b, h] = _update_information2(
                        ys[t, b, 0], x, P, H, W[0, 0], robust, dim, tau, log_c0[1])
                else:
                    ok, log_c, rho, hcond[b, h] = _update_information(
                        ys, t, b, x, P, H, R, W, robust, dim, tau, log_c0, iobs, ihm, iwm,
                        irm, ihtw, ij, ib, ivs, ea, ew, ev, istep, eb, n_tup, m_tup)
                    if not ok:
                        return 0
                lc[b, h] = log_c
                dc[b, h] = rho
                for i in range(n):
                    hx[b, h, i] = x[i]
                    for j in range(n):
                        hM[b, h, i, j] = P[i, j]
        if nh == 1:
            for b in range(B):
                o_logc[t, b] = slc[b, 0]
                o_disc[t, b] = sdc[b, 0]
        else:  # every series' mixture in one call (few calls: each passes many arrays)
            _mixture_step(score, slc, sdc, hx, hM, spx, spM, ys, t, drop, rank, rep, floor,
                          o_logc, o_disc, lead)
        for b in range(B):
            best = lead[b]
            if keep_pred:
                for i in range(n):
                    o_pmean[t, b, i] = spx[b, best, i]
                    for j in range(n):
                        if info_before:
                            p_prec[t, b, i, j] = spM[b, best, i, j]
                        else:
                            o_pcov[t, b, i, j] = spM[b, best, i, j]
            for i in range(n):
                o_mean[t, b, i] = hx[b, best, i]
            if not info:  # else the step may end in either form: written below
                if keep_cov:
                    for i in range(n):
                        for j in range(n):
                            o_cov[t, b, i, j] = hM[b, best, i, j]
                if keep_var:
                    for i in range(n):
                        o_var[t, b, i] = hM[b, best, i, i]
        if info:
            form = _to_covariance_form(hM, hcond, ea, eb, ew, ev)
            if form < 0:
                return 0
            info = form == 0
            for b in range(B):
                best = lead[b]
                for i in range(n):
                    for j in range(n):
                        if info:
                            f_prec[t, b, i, j] = hM[b, best, i, j]
                        elif keep_cov:
                            o_cov[t, b, i, j] = hM[b, best, i, j]
                    if keep_var and not info:
                        o_var[t, b, i] = hM[b, best, i, i]
            forms[t, 0] = info
            forms[t, 1] = True
            # the covariances of the steps in information form, as numpy's record
            for b in range(B):
                if keep_pred and not _covariance_or_inf(p_prec[t, b], o_pcov[t, b], ea, eb,
                                                        ew, ev, ib, istep):
                    return 0
                if keep_var and info:
                    if not _covariance_or_inf(f_prec[t, b], ec, ea, eb, ew, ev, ib, istep):
                        return 0
                    for i in range(n):
                        o_var[t, b, i] = ec[i, i]
                        if keep_cov:
                            for j in range(n):
                                o_cov[t, b, i, j] = ec[i, j]
    if nh > 1:
        for b in range(B):
            best = lead[b]
            for i in range(n):
                mean[b, i] = hx[b, best, i]
                for j in range(n):
                    mat[b, i, j] = hM[b, best, i, j]
    return 2 if info else 1


@_helper
def _hypothesis_steps(ys, t0, t_end, hx, hM, px, pM, score, lc, dc, lead, model, rule, mixture,
                      o_mean, o_var, o_cov, o_pmean, o_pcov, o_logc, o_disc, keep_var, keep_cov,
                      keep_pred, x, P, ja, jb, pf, kt, ph, n_tup):  # pragma: no cover
    """Steps ``t0..t_end-1`` of :func:`run_start` for one observed component (``m = 1``)
    once every hypothesis is in covariance form: each hypothesis' step is :func:`run`'s
    (the same operations, so the same bits), then the mixture's (:func:`_mixture_step`);
    nothing but the hypotheses' states and the leader's outputs is written. A hypothesis
    that drops the same observations as its representative is copied, not stepped, and one
    that can never lead again (:func:`_out_of_reach`) is dropped. The arrays from ``x`` on are
    work arrays (``kt`` 1 × n); ``n_tup`` as :func:`run`'s (``n`` a compile-time constant)."""
    F, Q, H, R = model
    robust, dim, tau, log_c0 = rule
    drop, rank, rep, floor = mixture
    nh, k = drop.shape
    n = len(n_tup)
    r = R[0, 0]
    for t in range(t0, t_end):
        for b in range(hx.shape[0]):
            y0 = ys[t, b, 0]
            bound = _out_of_reach(score[b], t_end - t, floor) if t >= k else -math.inf
            for h in range(nh):
                if t < k and rep[t, h] != h:
                    continue  # the same state as its representative's: copied below
                if score[b, h] < bound:  # it can never lead again: not stepped
                    score[b, h] = -math.inf
                    lc[b, h] = math.nan
                    continue
                dropped = math.isnan(y0) or (t < k and drop[h, t])
                if n == 2 and _hypothesis_step2(hx[b, h], hM[b, h], px[b, h], pM[b, h], y0, t,
                                                dropped, F, Q, H, r, robust, dim, tau,
                                                log_c0[1], lc[b], dc[b], h):
                    continue
                for i in range(n):
                    x[i] = hx[b, h, i]
                    for j in range(n):
                        P[i, j] = hM[b, h, i, j]
                if t > 0:  # as run's prediction
                    _mul_ax_in_place(F, x, ph)
                    _mul_abt(P, F, pf)
                    _mul_abt(F, pf.T, P)
                    for i in range(n):
                        for j in range(i, n):
                            a = 0.5 * (P[i, j] + P[j, i])
                            P[i, j] = a + Q[i, j]
                            P[j, i] = a + Q[j, i]
                for i in range(n):
                    px[b, h, i] = x[i]
                    for j in range(n):
                        pM[b, h, i, j] = P[i, j]
                if dropped:
                    log_c = math.nan
                    rho = math.nan
                else:  # as run's step with m = 1
                    hph0 = 0.0
                    v0 = y0
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
                    rel = min(log_c - log_c0[1], 0.0)
                    # exp(0) is 1 exactly, for every rule: no call for the consistent steps
                    rho = 1.0 if rel == 0.0 else discount_scalar(rel, dim, tau, robust)
                    kk = rho / (rho * hph0 + r) if robust else 1.0 / s0
                    for i in range(n):
                        kt[0, i] = kk * ph[i]
                        x[i] += kt[0, i] * v0
                    rho1 = rho if robust else 1.0
                    if rho1 * hph0 > _DIFFUSE * r and n == 1:
                        P[0, 0] *= r / (rho1 * hph0 + r)
                    elif rho1 * hph0 > _DIFFUSE * r:
                        _joseph(P, kt, H, R, rho1, ja, jb, pf)
                        for i in range(n):
                            for j in range(n):
                                P[i, j] = pf[i, j]
                    else:
                        for i in range(n):
                            for j in range(n):
                                P[i, j] -= kt[0, i] * ph[j]
                lc[b, h] = log_c
                dc[b, h] = rho
                for i in range(n):
                    hx[b, h, i] = x[i]
                    for j in range(n):
                        hM[b, h, i, j] = P[i, j]
            best = _series_mixture_step(score[b], lc[b], dc[b], hx[b], hM[b], px[b], pM[b],
                                        ys[t, b], t, b, drop, rank, rep, floor, o_logc,
                                        o_disc)
            lead[b] = best
            if keep_pred:
                for i in range(n):
                    o_pmean[t, b, i] = px[b, best, i]
                    for j in range(n):
                        o_pcov[t, b, i, j] = pM[b, best, i, j]
            for i in range(n):
                o_mean[t, b, i] = hx[b, best, i]
            if keep_cov:
                for i in range(n):
                    for j in range(n):
                        o_cov[t, b, i, j] = hM[b, best, i, j]
            if keep_var:
                for i in range(n):
                    o_var[t, b, i] = hM[b, best, i, i]


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _out_of_reach(score, steps, floor):  # pragma: no cover - compiled
    """A score below which a hypothesis can never lead in the next ``steps`` steps after the
    observations the hypotheses label (-inf if there is none): each step adds to a score
    between ``floor`` (``log ε``) and 0 (a missing observation: 0), so the leader's stays
    above ``top + steps · floor`` and another's below its own; the margin covers the ties'
    tolerance of :func:`_leader` (relative 1e-9) and the sums' rounding many times over."""
    top = -math.inf
    for h in range(score.shape[0]):
        top = max(top, score[h])
    if top == -math.inf:  # every hypothesis ties: none is out of reach
        return -math.inf
    reach = top + steps * floor
    return reach - 1e-6 * (1.0 + abs(top) + steps * abs(floor))


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _hypothesis_step2(x, P, px, pM, y0, t, dropped, F, Q, H, r, robust, dim, tau, log_c0, lc,
                      dc, h):  # pragma: no cover - compiled
    """One step of :func:`_hypothesis_steps` for two states, in scalars (registers, not work
    arrays): every operation of :func:`run`'s step in the same order (sums from ``0.0``, as
    its loops), so the same bits. False where the update is diffuse (only the prediction
    ``px``, ``pM`` written): the caller's general step (the Joseph form) runs it."""
    x0, x1 = x[0], x[1]
    p00, p01, p10, p11 = P[0, 0], P[0, 1], P[1, 0], P[1, 1]
    if t > 0:  # x = F x; P = sym(F (P Fᵀ)) + Q
        x0, x1 = (0.0 + F[0, 0] * x0) + F[0, 1] * x1, (0.0 + F[1, 0] * x0) + F[1, 1] * x1
        f00 = (0.0 + p00 * F[0, 0]) + p01 * F[0, 1]  # P Fᵀ
        f01 = (0.0 + p00 * F[1, 0]) + p01 * F[1, 1]
        f10 = (0.0 + p10 * F[0, 0]) + p11 * F[0, 1]
        f11 = (0.0 + p10 * F[1, 0]) + p11 * F[1, 1]
        q00 = (0.0 + F[0, 0] * f00) + F[0, 1] * f10  # F (P Fᵀ)
        q01 = (0.0 + F[0, 0] * f01) + F[0, 1] * f11
        q10 = (0.0 + F[1, 0] * f00) + F[1, 1] * f10
        q11 = (0.0 + F[1, 0] * f01) + F[1, 1] * f11
        a = 0.5 * (q00 + q00)
        p00 = a + Q[0, 0]
        a = 0.5 * (q01 + q10)
        p01 = a + Q[0, 1]
        p10 = a + Q[1, 0]
        a = 0.5 * (q11 + q11)
        p11 = a + Q[1, 1]
    px[0], px[1] = x0, x1
    pM[0, 0], pM[0, 1], pM[1, 0], pM[1, 1] = p00, p01, p10, p11
    if dropped:
        log_c = math.nan
        rho = math.nan
    else:
        h0, h1 = H[0, 0], H[0, 1]
        ph0 = (0.0 + p00 * h0) + p01 * h1
        ph1 = (0.0 + p10 * h0) + p11 * h1
        hph0 = (0.0 + ph0 * h0) + ph1 * h1
        v0 = (y0 - x0 * h0) - x1 * h1
        s0 = hph0 + r
        log_c = min(-0.5 * v0 * v0 / s0, 0.0)
        rel = min(log_c - log_c0, 0.0)
        # exp(0) is 1 exactly, for every rule: no call for the consistent steps
        rho = 1.0 if rel == 0.0 else discount_scalar(rel, dim, tau, robust)
        rho1 = rho if robust else 1.0
        if rho1 * hph0 > _DIFFUSE * r:
            return False
        kk = rho / (rho * hph0 + r) if robust else 1.0 / s0
        k0, k1 = kk * ph0, kk * ph1
        x0 += k0 * v0
        x1 += k1 * v0
        p00 -= k0 * ph0
        p01 -= k0 * ph1
        p10 -= k1 * ph0
        p11 -= k1 * ph1
    lc[h] = log_c
    dc[h] = rho
    x[0], x[1] = x0, x1
    P[0, 0], P[0, 1], P[1, 0], P[1, 1] = p00, p01, p10, p11
    return True


@_helper
def _mixture_step(scores, lcs, dcs, hxs, hMs, pxs, pMs, ys, t, drop, rank, rep, floor,
                  o_logc, o_disc, lead):  # pragma: no cover - compiled
    """Every series' mixture after step ``t`` (as ``robust_start.mixture_scores``): copies
    each hypothesis that was not stepped from its representative, updates the scores
    ``scores[b]`` from the log consistencies ``lcs[b]``, writes the reported log consistency
    and discount (``o_logc[t, b]``, ``o_disc[t, b]``) and the leader ``lead[b]``. The arrays
    are the whole batch's: views of series ``b`` cost reference counts in the caller, not
    here."""
    for b in range(scores.shape[0]):
        lead[b] = _series_mixture_step(scores[b], lcs[b], dcs[b], hxs[b], hMs[b], pxs[b],
                                       pMs[b], ys[t, b], t, b, drop, rank, rep, floor,
                                       o_logc, o_disc)


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _series_mixture_step(score, lc, dc, hx, hM, px, pM, y, t, b, drop, rank, rep, floor,
                         o_logc, o_disc):  # pragma: no cover - compiled
    """Series ``b``'s part of :func:`_mixture_step`; returns its leader."""
    nh, k = drop.shape
    n = hx.shape[1]
    if t < k:
        for h in range(nh):
            r = rep[t, h]
            if r != h:
                lc[h], dc[h] = lc[r], dc[r]
                for i in range(n):
                    hx[h, i] = hx[r, i]
                    px[h, i] = px[r, i]
                    for j in range(n):
                        hM[h, i, j] = hM[r, i, j]
                        pM[h, i, j] = pM[r, i, j]
    observed = False
    for i in range(y.shape[0]):
        if not math.isnan(y[i]):
            observed = True
    top = -math.inf
    for h in range(nh):
        top = max(top, score[h])
    mixed = -math.inf  # the consistency of y with the mixture (where the leader drops y)
    for h in range(nh):
        if math.isnan(lc[h]):
            gain = 0.0
        else:
            gain = max(lc[h], floor) if t >= k else lc[h]
            val = score[h] - top + lc[h]
            mixed = math.nan if math.isnan(val) or math.isnan(mixed) else max(mixed, val)
        if t < k:
            gain = gain + (floor if observed and drop[h, t] else 0.0)
        score[h] = score[h] + gain
    best = _leader(score, rank)
    if observed:
        o_logc[t, b] = mixed if math.isnan(lc[best]) else lc[best]
        o_disc[t, b] = 0.0 if math.isnan(dc[best]) else dc[best]
    else:
        o_logc[t, b] = math.nan
        o_disc[t, b] = math.nan
    return best


@numba.njit(cache=True, nogil=True, inline="always", **_NO_REFCOUNTS)
def _sym_inverse2(a):  # pragma: no cover - compiled
    """``a = sym(a⁻¹)`` for a 2 × 2 ``a``, in scalars: :func:`solve_in_place` with the
    identity on the right and its every operation in the same order, so the same bits; False
    (``a`` unchanged) where it is singular."""
    a00, a01, a10, a11 = a[0, 0], a[0, 1], a[1, 0], a[1, 1]
    r00, r01, r10, r11 = 1.0, 0.0, 0.0, 1.0
    best = abs(a00)
    if abs(a10) > best:  # partial pivoting: swap the rows
        best = abs(a10)
        a00, a01, a10, a11 = a10, a11, a00, a01
        r00, r01, r10, r11 = r10, r11, r00, r01
    if best == 0.0 or math.isnan(best):
        return False
    f = a10 / a00
    if f != 0.0:
        a11 -= f * a01
        r10 -= f * r00
        r11 -= f * r01
    best = abs(a11)
    if best == 0.0 or math.isnan(best):
        return False
    r10 = r10 / a11
    r11 = r11 / a11
    r00 = (r00 - a01 * r10) / a00
    r01 = (r01 - a01 * r11) / a00
    a[0, 0] = 0.5 * (r00 + r00)
    a[0, 1] = a[1, 0] = 0.5 * (r01 + r10)
    a[1, 1] = 0.5 * (r11 + r11)
    return True


@_helper
def _to_covariance_form(hM, cond, ea, eb, w, V):  # pragma: no cover - compiled
    """The precisions ``hM`` (B, H, n, n) replaced by their covariances ``sym(Y⁻¹)`` if every
    one is well conditioned (as ``_maybe_covariance_form`` on the batch; ``cond`` (B, H): 1 or
    0 where that is known, else -1): 1 if they were, 0 if not, -1 if one is singular by
    rounding after all (``hM`` then partly converted)."""
    B, nh, n = hM.shape[0], hM.shape[1], hM.shape[2]
    for b in range(B):
        for h in range(nh):
            known = cond[b, h]
            if n == 2 and known < 0:  # in scalars, the same operations
                known = _well_conditioned2(hM[b, h])
            if known == 0 or (known < 0 and not _well_conditioned(hM[b, h], ea, w, V)):
                return 0
    for b in range(B):
        for h in range(nh):
            if n == 2:
                if not _sym_inverse2(hM[b, h]):
                    return -1
                continue
            for i in range(n):
                for j in range(n):
                    ea[i, j] = hM[b, h, i, j]
                    eb[i, j] = 1.0 if i == j else 0.0
            if not solve_in_place(ea, eb, n):
                return -1
            for i in range(n):
                for j in range(n):
                    hM[b, h, i, j] = 0.5 * (eb[i, j] + eb[j, i])
    return 1


@numba.njit(cache=True, nogil=True)
def backward_information(f_mean, f_pre, p_mean, p_pre, s_mean, s_cov, s_prec, from_covariance,
                         F, G, Qg_inv, t_hi, n_tup):  # pragma: no cover - compiled
    """The RTS smoother's steps ``t = t_hi, ..., 0`` in information form (those whose
    filtered state is; ``smoother._information_step``, a time-invariant model) of every
    series, in place, with this module's pseudo-inverses (:func:`_pinv_mv`,
    :func:`_covariance_or_inf`: as the start's steps).

    Time-major arrays as ``smoother_numba.backward``'s; ``f_pre`` and ``p_pre`` the filtered
    and predicted precisions of the steps in information form. ``s_prec`` (B, n, n): the
    smoothed precision at ``t_hi + 1`` (``from_covariance``: written first, ``sym`` of the
    inverse of ``s_cov[t_hi + 1]``), then at each step's. ``G`` and ``Qg_inv``: ``Q = G Q_g
    Gᵀ``. Returns -1 when every step is done, else the step ``t`` that numpy must run (a mean
    beyond ``_BIG``, a matrix singular by rounding; nothing of it kept): the steps after it
    are done and ``s_prec`` holds the smoothed precision at ``t + 1``."""
    B = f_mean.shape[1]
    n = len(n_tup)
    g = G.shape[1]
    lam = np.empty((n, n))
    back = np.empty((n, n))
    lg = np.empty((n, g))
    a = np.empty((g, g))
    x = np.empty((g, n + 1))  # a⁻¹ [Gᵀ h, Gᵀ Λ]
    lgx = np.empty((n, n + 1))
    h = np.empty(n)
    rhs = np.empty(n)
    d = np.empty(n)
    new = np.empty((B, n, n))  # the step's precisions: s_prec keeps t + 1's until it is done
    ea, eb, w, V = np.empty((n, n)), np.empty((n, n)), np.empty(n), np.empty((n, n))
    r, step = np.empty(n), np.empty(n)
    if from_covariance:
        for b in range(B):
            for i in range(n):
                for j in range(n):
                    ea[i, j] = s_cov[t_hi + 1, b, i, j]
                    eb[i, j] = 1.0 if i == j else 0.0
            if not solve_in_place(ea, eb, n):
                return t_hi
            for i in range(n):
                for j in range(n):
                    s_prec[b, i, j] = 0.5 * (eb[i, j] + eb[j, i])
    for t in range(t_hi, -1, -1):
        for b in range(B):
            big = 0.0
            for i in range(n):
                big = max(big, abs(s_mean[t + 1, b, i]), abs(p_mean[t + 1, b, i]),
                          abs(f_mean[t, b, i]))
            if big > _BIG:  # numpy's step scales the means
                return t
            for i in range(n):
                acc = 0.0
                for j in range(n):
                    lam[i, j] = s_prec[b, i, j] - p_pre[t + 1, b, i, j]
                    acc += s_prec[b, i, j] * s_mean[t + 1, b, j]
                acc2 = 0.0
                for j in range(n):
                    acc2 += p_pre[t + 1, b, i, j] * p_mean[t + 1, b, j]
                h[i] = acc - acc2
            if g:  # the sup over the process noise in range(Q)
                _mul_abt(lam, G.T, lg)  # Λ G
                _mul_abt(G.T, lg.T, a)  # Gᵀ Λ G
                for c in range(g):
                    for e in range(g):
                        a[c, e] = Qg_inv[c, e] + a[c, e]
                    acc = 0.0
                    for j in range(n):
                        acc += h[j] * G[j, c]
                    x[c, 0] = acc
                    for i in range(n):
                        x[c, i + 1] = lg[i, c]
                if not solve_in_place(a, x, n + 1):
                    return t
                _mul_abt(lg, x.T, lgx)  # Λ G a⁻¹ [Gᵀ h, Gᵀ Λ]
                for i in range(n):
                    h[i] -= lgx[i, 0]
                    for j in range(n):
                        lam[i, j] -= lgx[i, j + 1]
            _mul_abt(lam, F.T, ea)  # Fᵀ Λ F
            _mul_abt(F.T, ea.T, back)
            for i in range(n):
                for j in range(n):
                    new[b, i, j] = f_pre[t, b, i, j] + back[i, j]
            for i in range(n):
                for j in range(i, n):
                    v = 0.5 * (new[b, i, j] + new[b, j, i])
                    new[b, i, j] = v
                    new[b, j, i] = v
            for i in range(n):  # Fᵀ h - back μ_t
                acc = 0.0
                for c in range(n):
                    acc += F[c, i] * h[c]
                acc2 = 0.0
                for c in range(n):
                    acc2 += back[i, c] * f_mean[t, b, c]
                rhs[i] = acc - acc2
            _pinv_mv(new[b], rhs, d, ea, w, V, n)
            for i in range(n):
                s_mean[t, b, i] = f_mean[t, b, i] + d[i]
            if not _covariance_or_inf(new[b], s_cov[t, b], ea, eb, w, V, r, step):
                return t
        for b in range(B):
            for i in range(n):
                for j in range(n):
                    s_prec[b, i, j] = new[b, i, j]
    return -1


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
    """One step of :func:`run` for one series, on flat buffers (few arguments: each adds to
    the cost of a call from Python). ``state`` is ``(mean, covariance)``, overwritten; the
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
    out = KernelOutputs(io[2 * m + first * n:at].reshape((rows, 1, n)), np.empty((0, 1, n)),
                        np.empty((0, 1, n, n)), np.empty((0, 1, n)), np.empty((0, 1, n, n)),
                        io[at + first:at + 2].reshape((rows, 1)),
                        io[at + 2 + first:at + 4].reshape((rows, 1)), False, False, False)
    return run(ys, 1 - first, state[:n].reshape((1, n)), state[n:].reshape((1, n, n)),
               (F, Q, H, R), rule, n_tup, m_tup, out)
