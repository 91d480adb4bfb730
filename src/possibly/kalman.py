"""The Kalman filter (moved to :mod:`possibly.filters.kalman`; importable from here too)."""

from possibly.filters.kalman import (
    FilterResult,
    KalmanFilter,
    KalmanInfo,
    KalmanState,
    predict,
    update,
)
from possibly.filters.smoother import SmootherResult, smooth

__all__ = ["FilterResult", "KalmanFilter", "KalmanInfo", "KalmanState", "SmootherResult",
           "predict", "smooth", "update"]
