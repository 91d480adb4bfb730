"""The top-level namespace: everything in ``__all__`` exists, one public name per object."""

import collections

import possibly as ps


def test_all_names_exist_and_name_distinct_objects():
    by_object = collections.defaultdict(list)
    for name in ps.__all__:
        by_object[id(getattr(ps, name))].append(name)
    assert [names for names in by_object.values() if len(names) > 1] == []
    assert len(set(ps.__all__)) == len(ps.__all__)


def test_base_classes_for_new_families_are_exported():
    assert issubclass(ps.ExponentialFamily, ps.Possibility)
    for family in (ps.Normal, ps.Gamma, ps.Beta, ps.NormalGamma, ps.InverseWishart):
        assert issubclass(family, ps.ExponentialFamily)


def _library_estimators():
    import importlib
    import pkgutil

    from possibly.sequential import SequentialEstimator

    for info in pkgutil.walk_packages(ps.__path__, "possibly."):
        if any(part in info.name for part in (".experiments", ".cli", ".integrations", "__main__")):
            continue
        importlib.import_module(info.name)
    found, todo = set(), [SequentialEstimator]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("possibly.") and not sub.__name__.startswith("_"):
                found.add(sub)
    return found


def test_every_estimator_and_its_result_are_in_the_namespace():
    import inspect
    import typing

    estimators = _library_estimators()
    assert len(estimators) >= 9
    for cls in estimators:
        assert getattr(ps, cls.__name__, None) is cls, cls
        hints = typing.get_type_hints(cls.fit)
        result = hints["return"]
        if inspect.isclass(result):
            assert getattr(ps, result.__name__, None) is result, (cls, result)


def test_internals_stay_in_their_modules():
    for name in ("Info", "SequentialEstimator", "SegmentModel", "RunState", "KalmanState",
                 "models", "metrics", "NormalMeanVariance", "GaussianNoise", "step", "init"):
        assert name not in ps.__all__, name
