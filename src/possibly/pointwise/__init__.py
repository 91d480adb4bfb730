"""Possibility functions known at points: on a grid (any likelihood, evaluated anywhere by
interpolation) or at particles (drawn at random), with the operations of the algebra."""

from possibly.pointwise.grid import GridPossibility, LogLikelihood, PointPossibility
from possibly.pointwise.particles import ParticlePossibility

__all__ = ["GridPossibility", "LogLikelihood", "ParticlePossibility", "PointPossibility"]
