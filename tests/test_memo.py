"""The byte-bounded memo, and that memoized prices never change an answer: a plan computed
after other objectives and platforms equals the same plan computed from empty memos."""

from __future__ import annotations

import numpy as np

from workbench import explore, layers, platforms, streaming
from workbench.memo import ByteLRU, Caches


def test_byte_lru_drops_least_recent_past_its_bytes():
    memo = ByteLRU(100, lambda a: a.nbytes)
    memo.put("a", np.zeros(5))   # 40 B
    memo.put("b", np.zeros(5))
    assert memo.get("a") is not None          # a is now the most recent
    memo.put("c", np.zeros(5))                # 120 B > 100: b goes
    assert memo.get("b") is None and memo.get("a") is not None and memo.nbytes == 80
    memo.put("huge", np.zeros(100))           # alone over the limit: kept, the rest dropped
    assert len(memo) == 1 and memo.get("huge") is not None


def _clear() -> None:
    streaming._merged.cache_clear()
    streaming._priced_chunk.cache_clear()


def test_memoized_plans_equal_fresh_plans():
    net = layers.load_network("cifar10_quick")
    shave = platforms.load_platform("shave", local_mem_bytes=48 * 1024)
    small = platforms.load_platform("shave", local_mem_bytes=24 * 1024, dma_setup_cycles=300)
    fresh = {}
    for plat in (shave, small):
        for objective in explore.OBJECTIVES:
            _clear()  # and no caches: the plan's own, empty
            fresh[plat, objective] = explore.network_plan(net, plat, objective, "off")
    _clear()
    kept = Caches()  # one session's, across platforms and objectives
    for plat in (small, shave, small):
        for objective in reversed(explore.OBJECTIVES):
            again = explore.network_plan(net, plat, objective, "off", caches=kept)
            cols = ["layer", "cores", "split", "schedule", "cycles", "energy_pj",
                    "ext_accesses", "dma_transfers"]
            assert again[cols].equals(fresh[plat, objective][cols]), (plat.local_mem_bytes,
                                                                      objective)
