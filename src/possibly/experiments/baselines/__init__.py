"""Comparison baselines of the paper's studies: methods that are not possibilistic.

:mod:`possibly.experiments.baselines.mmd`: the minimum-MMD location estimator (appendix A).
"""
