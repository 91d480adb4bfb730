"""Adapters to other libraries' interfaces; each module imports its library only when used.

* :mod:`possibly.integrations.sktime`: :class:`PossiblyChangepointDetector` and
  :class:`PossiblyAnomalyDetector`, sktime detectors (``pip install 'possibly[sktime]'``).
* :mod:`possibly.integrations.river`: :class:`PossiblyAnomalyDetector` and
  :class:`PossiblyDriftDetector`, river's streaming anomaly and drift detectors
  (``pip install 'possibly[river]'``).
"""
