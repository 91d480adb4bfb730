"""Adapters to other libraries' interfaces; each module imports its library only when used.

* :mod:`possibly.integrations.sktime`: :class:`PossiblyChangepointDetector`, an sktime
  detector (``pip install 'possibly[sktime]'``).
"""
