"""Linear-Gaussian state-space models for :class:`possibly.KalmanFilter`.

A model is the tuple ``(F, Q, H, R)`` of ``θ_t = F θ_{t-1} + u_t, u_t ~ N(0, Q)`` and
``y_t = H θ_t + v_t, v_t ~ N(0, R)``.
"""

from __future__ import annotations

import numpy as np

from possibly.validation import check_positive

__all__ = ["constant_velocity"]


def constant_velocity(dt: float = 1.0, accel_sd: float = 0.05, obs_sd: float = 1.0,
                      ndim: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nearly-constant-velocity model (paper §5.2): position observed, velocity a random walk.

    The acceleration is white noise held constant over each step of duration ``dt``, so the
    process noise ``Q = accel_sd² g gᵀ`` with ``g = (dt²/2, dt)`` has rank one per axis (the
    filter handles the singular ``Q`` exactly).

    Parameters
    ----------
    dt : float > 0
        Time step Δ.
    accel_sd : float > 0
        Standard deviation σ_a of the acceleration noise.
    obs_sd : float > 0
        Standard deviation of the position measurement noise.
    ndim : int >= 1
        Number of spatial axes; the state is ``(position, velocity)`` per axis, axes in turn.

    Returns
    -------
    F : ndarray, shape (2 ndim, 2 ndim)
    Q : ndarray, shape (2 ndim, 2 ndim)
    H : ndarray, shape (ndim, 2 ndim)
    R : ndarray, shape (ndim, ndim)

    Examples
    --------
    >>> import possibly as ps
    >>> F, Q, H, R = ps.models.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    >>> F
    array([[1., 1.],
           [0., 1.]])
    >>> Q / 0.05**2
    array([[0.25, 0.5 ],
           [0.5 , 1.  ]])
    >>> H, R
    (array([[1., 0.]]), array([[1.]]))
    """
    dt = float(check_positive("dt", dt))
    accel_sd = float(check_positive("accel_sd", accel_sd))
    obs_sd = float(check_positive("obs_sd", obs_sd))
    if isinstance(ndim, bool) or not isinstance(ndim, (int, np.integer)) or ndim < 1:
        raise ValueError(f"ndim must be an integer >= 1, got {ndim!r}")
    f1 = np.array([[1.0, dt], [0.0, 1.0]])
    g = np.array([dt**2 / 2.0, dt])
    q1 = accel_sd**2 * np.outer(g, g)
    eye = np.eye(ndim)
    F = np.kron(eye, f1)
    Q = np.kron(eye, q1)
    H = np.kron(eye, np.array([[1.0, 0.0]]))
    R = obs_sd**2 * eye
    return F, Q, H, R
