"""DetectorBank.update_many reuses the rows of the previous call's ids when a call repeats
them: every call must still step the streams it names, whatever the caller did to its ids
in between (changed in place, reordered, new ids, other types, a pickled bank)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from possibly.changepoint import ChangepointDetector, DetectorBank, numba_available

NO_NUMBA = pytest.mark.skipif(not numba_available(), reason="numba is not installed")
SETUPS = [("numpy", False), pytest.param("numba", False, marks=NO_NUMBA),
          pytest.param("numba", True, marks=NO_NUMBA)]


class Reference:
    """One detector per stream (the paper's model needs no data): what each stream of the
    bank must give, fed independently of the bank's ids."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.dets: dict = {}

    def check(self, bank: DetectorBank, ids, values) -> None:
        named = list(ids) if hasattr(ids, "__next__") else ids  # a generator: read once
        info = bank.update_many(iter(named) if named is not ids else ids, values)
        for j, (i, y) in enumerate(zip(list(named), np.asarray(values, float).tolist(),
                                       strict=True)):
            det = self.dets.setdefault(i, ChangepointDetector(sigma=1.0, hazard=0.01,
                                                              engine=self.engine,
                                                              period=None))
            want = det.update(y)
            assert info.t[j] == want.t, (i, j)
            assert info.log_consistency[j] == want.log_consistency, (i, j)
            assert info.map_run_length[j] == want.map_run_length, (i, j)
            assert info.anomaly[j] == want.anomaly, (i, j)


def paper_bank(engine: str, parallel: bool = False) -> DetectorBank:
    """A bank of the paper's model (new ids start streams), as the detectors of
    :class:`Reference`."""
    return DetectorBank(sigma=1.0, hazard=0.01, engine=engine, parallel=parallel)


def levels(n: int, seed: int) -> np.ndarray:
    """``n`` values, each stream far from the others (a value sent to the wrong stream
    changes its numbers)."""
    return 10.0 * np.arange(n) + np.random.default_rng(seed).normal(size=n)


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_a_list_changed_in_place_steps_the_streams_it_now_names(engine, parallel):
    bank, ref = paper_bank(engine, parallel), Reference(engine)
    ids = ["a", "b", "c"]
    for t in range(3):
        ref.check(bank, ids, levels(3, t))
    ids.reverse()  # the same list object, reordered
    for t in range(3, 6):
        ref.check(bank, ids, levels(3, t))
    ids[1] = "d"  # the same list object, a new id
    ref.check(bank, ids, levels(3, 6))
    assert bank.t("b") == 6 and bank.t("d") == 1


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_an_array_changed_in_place_steps_the_streams_it_now_names(engine, parallel):
    bank, ref = paper_bank(engine, parallel), Reference(engine)
    ids = np.array([5, 6, 7, 8])
    for t in range(3):
        ref.check(bank, ids, levels(4, t))
    ids[:] = ids[::-1].copy()
    ref.check(bank, ids, levels(4, 3))
    ids[0] = 9
    ref.check(bank, ids, levels(4, 4))
    assert bank.t(9) == 1 and bank.t(8) == 4 and bank.t(5) == 5


@pytest.mark.parametrize("engine", ["numpy", pytest.param("numba", marks=NO_NUMBA)])
def test_new_lists_subsets_tuples_and_arrays_of_the_same_ids(engine):
    bank, ref = paper_bank(engine), Reference(engine)
    calls = [["x", "y", "z"], ("x", "y", "z"), ["x", "y", "z"], ["z", "y", "x"],
             ["x", "y"], ["y", "x", "z"], np.array(["y", "x", "z"]), np.array(["y", "x", "z"]),
             ["y", "x", "z"], (i for i in ["z", "x"]), ["y", "x", "z"]]
    for t, ids in enumerate(calls):
        n = len(ids) if not hasattr(ids, "__next__") else 2
        ref.check(bank, ids, levels(n, t))


def test_ids_equal_as_dict_keys_but_of_other_types_are_checked_again():
    bank = DetectorBank(sigma=1.0, hazard=0.01, engine="numpy")
    bank.update_many([1, 2], [0.0, 1.0])
    # an array of one value compares equal to its value, but is no label
    with pytest.raises(ValueError, match="ids must be hashable"):
        bank.update_many([np.array([1]), 2], [0.0, 1.0])
    assert bank.t(1) == 1
    # True == 1 and they are one dict key: the same stream, as without the repeat
    bank.update_many([True, 2], [0.0, 1.0])
    assert len(bank) == 2 and bank.t(1) == 2


def test_a_repeated_call_still_checks_values_and_duplicates():
    bank = DetectorBank(sigma=1.0, hazard=0.01, engine="numpy")
    bank.update_many(["a", "b"], [0.0, 1.0])
    with pytest.raises(ValueError, match="values must be"):
        bank.update_many(["a", "b"], [0.0])
    with pytest.raises(ValueError, match="values must be"):
        bank.update_many(["a", "b"], [0.0, np.inf])
    with pytest.raises(ValueError, match="distinct"):
        bank.update_many(["a", "a"], [0.0, 1.0])
    assert bank.t("a") == 1 and bank.t("b") == 1


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_a_pickled_bank_steps_the_same_ids_as_the_original(engine, parallel):
    bank, ref = paper_bank(engine, parallel), Reference(engine)
    ids = ["p", "q", "r"]
    for t in range(4):
        ref.check(bank, ids, levels(3, t))
    loaded = pickle.loads(pickle.dumps(bank))
    ref_copy = pickle.loads(pickle.dumps(ref.dets))
    ref.check(bank, ids, levels(3, 4))
    ref.check(bank, ids[::-1], levels(3, 5))
    other = Reference(engine)
    other.dets = ref_copy
    other.check(loaded, ids, levels(3, 4))
    other.check(loaded, ids[::-1], levels(3, 5))
    other.check(loaded, ["s", *ids], levels(4, 6))


@pytest.mark.parametrize("engine, parallel", SETUPS)
def test_a_masked_array_of_ids_is_read_with_its_mask_at_every_call(engine, parallel):
    # equal data with another mask are other labels (a masked id reads as None)
    bank = paper_bank(engine, parallel)
    for t in range(2):
        info = bank.update_many(np.ma.array([1, 2, 3], mask=[False, False, False]),
                                levels(3, t))
    assert len(bank) == 3 and info.t.tolist() == [1, 1, 1]
    info = bank.update_many(np.ma.array([1, 2, 3], mask=[False, True, False]), levels(3, 2))
    assert len(bank) == 4 and info.t.tolist() == [2, 0, 2]  # stream None is new
