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
