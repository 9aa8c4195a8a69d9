"""A search cancelled at any of its safe points (`workbench.hierarchy.interrupt`) leaves the
shared memos whole: the next search, which reads them, still gives the cold optimum. A search
in shares (`search(..., share=(k, n))`) gives the optimum as the least of their answers."""

from __future__ import annotations

import numpy as np
import pytest

from workbench import layers
from workbench.hierarchy import (
    ElementBytes,
    Hierarchy,
    Level,
    evaluate,
    interrupt,
)
from workbench.hierarchy.codesign import table3_energy_pj
from workbench.hierarchy.search import classes as classes_module
from workbench.hierarchy.search import search, sliced, tuning
from workbench.memo import Caches

PREC = ElementBytes(2, 2, 2, 4)


def _hier(*caps: int) -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 16, 320.0),
                      *(Level(f"L{i + 1}", c, 64) for i, c in enumerate(caps))),
                     mac_energy_pj=1.0)


def _layer(tmp_path, spec: str):
    net = tmp_path / "one.yaml"
    net.write_text(f"name: one\nlayers:\n  - {{name: c, type: conv, {spec}}}\n")
    return layers.load_network(str(net)).tiled_layers()[0]


@pytest.mark.parametrize("spec, caps", [
    ("input: [12, 12, 12], maps: 16, kernel: 3", (4096, 1024, 256)),  # slices, alone tables
    ("input: [8, 16, 16], maps: 12, kernel: 3", (4096, 1024, 256)),   # one slice, kept bounds
    ("input: [8, 16, 16], maps: 12, kernel: 3", (2048, 512)),
])
def test_a_search_cancelled_anywhere_leaves_the_memos_whole(tmp_path, monkeypatch, spec,
                                                            caps) -> None:
    """Cancelled at its 1st, 2nd, 4th, 8th, ... safe point and at six spread evenly (and a
    neighbour hierarchy's search likewise; one that ends first gives the cold optimum), a
    search then gives the cold optimum, whose blocking fits and costs it."""
    layer, hier, near = _layer(tmp_path, spec), _hier(*caps), _hier(*caps[:-1], caps[-1] * 2)
    cold = {h: search(layer, h, PREC, table3_energy_pj).energy_pj for h in (hier, near)}
    checks, armed = [0], [None]
    real_check = interrupt.check

    def counted() -> None:
        checks[0] += 1
        if checks[0] == armed[0]:
            interrupt.request()
        real_check()

    monkeypatch.setattr(interrupt, "check", counted)
    points = {}
    for h in (near, hier):  # each alone, from empty memos (no caches: its own for the call)
        checks[0] = 0
        search(layer, h, PREC, table3_energy_pj)
        points[h] = checks[0]
    assert min(points.values()) > 20  # a search passes many safe points
    kept = Caches()  # what the cancelled searches leave for the next ones
    cancelled = 0
    for h in (near, hier):  # at the 1st, 2nd, 4th, ... safe point, and 6 spread evenly
        for at in sorted({*(2**i for i in range(points[h].bit_length())),
                          *(points[h] * j // 7 for j in range(1, 7))}):
            checks[0], armed[0] = 0, at  # (with what earlier ones kept, it may pass fewer)
            try:
                energy = search(layer, h, PREC, table3_energy_pj, caches=kept).energy_pj
            except interrupt.Cancelled:
                cancelled += 1
            else:
                assert energy == pytest.approx(cold[h], rel=1e-12)
                interrupt.clear()
    assert cancelled >= 12
    armed[0] = None
    for h in (hier, near):
        found = search(layer, h, PREC, table3_energy_pj, caches=kept)
        assert found.energy_pj == pytest.approx(cold[h], rel=1e-12)
        priced = evaluate(layer, found.blocking, h, PREC, table3_energy_pj)
        assert priced.fits and priced.total_energy_pj == pytest.approx(cold[h], rel=1e-12)


def test_a_request_is_taken_once() -> None:
    """`check` raises once per `request`; `clear` forgets one."""
    interrupt.check()
    interrupt.request()
    with pytest.raises(interrupt.Cancelled):
        interrupt.check()
    interrupt.check()
    interrupt.request()
    interrupt.clear()
    interrupt.check()


@pytest.mark.parametrize("by_class", [False, True], ids=["slices", "classes"])
@pytest.mark.parametrize("spec, caps, n", [
    ("input: [12, 14, 12], maps: 16, kernel: 3", (4096, 1024, 256), 2),
    ("input: [12, 14, 12], maps: 16, kernel: 3", (2048, 1024, 128), 3),
])
def test_the_least_of_a_searchs_shares_is_its_optimum(tmp_path, monkeypatch, spec, caps, n,
                                                      by_class) -> None:
    """A sliced layer searched in n shares: the least answer equals the whole search's
    optimum, no share is below it, and each share's blocking fits and costs its energy by
    `evaluate`. Over slices (every n-th slice each; class floors off) some share alone misses
    the optimum (these cases); over classes (three levels: `search_classes`) share k prices
    only the class combinations k, k + n, … (flat index) of the three-level hierarchy (a merged
    hierarchy of two levels has its own: all in share 0 when it is one slice), and every
    share prices some."""
    layer, hier = _layer(tmp_path, spec), _hier(*caps)
    assert sliced(layer, hier)
    priced: dict[int, list[np.ndarray]] = {}
    if by_class:
        real = classes_module._price_classes
        def record(*a):  # the hierarchy's own classes, not a merged one's (`search.merged`)
            if len(a[0].space.hierarchy.levels) == len(hier.levels):  # a: search, live, best,
                priced.setdefault(current[0], []).append(a[3])          # batch, floors
            return real(*a)

        monkeypatch.setattr(classes_module, "_price_classes", record)
    else:
        monkeypatch.setattr(tuning, "CLASS_LIMIT", 0)
    current = [-1]
    whole = search(layer, hier, PREC, table3_energy_pj).energy_pj
    found = []
    for k in range(n):
        current[0] = k
        found.append(search(layer, hier, PREC, table3_energy_pj, share=(k, n)))
    assert all(r is not None for r in found)
    energies = [r.energy_pj for r in found]
    assert min(energies) == pytest.approx(whole, rel=1e-12)
    assert all(e >= whole * (1 - 1e-12) for e in energies)
    if by_class:
        assert set(priced) >= set(range(n))
        assert all(np.all(np.concatenate(priced[k]) % n == k) for k in range(n))
    else:
        assert max(energies) > whole * 1.0001
    for r in found:
        priced_again = evaluate(layer, r.blocking, hier, PREC, table3_energy_pj)
        assert priced_again.fits
        assert priced_again.total_energy_pj == pytest.approx(r.energy_pj, rel=1e-12)


def test_a_layer_of_one_slice_is_all_in_share_zero(tmp_path) -> None:
    """Not sliced: share 0 of 2 is the whole search, share 1 finds nothing (no start)."""
    layer, hier = _layer(tmp_path, "input: [8, 16, 16], maps: 12, kernel: 3"), _hier(2048, 512)
    assert not sliced(layer, hier)
    whole = search(layer, hier, PREC, table3_energy_pj).energy_pj
    assert search(layer, hier, PREC, table3_energy_pj, share=(0, 2)).energy_pj == whole
    assert search(layer, hier, PREC, table3_energy_pj, share=(1, 2)) is None
