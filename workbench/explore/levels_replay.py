"""A mapping on memory levels replayed literally (`explore.composed`): every core's share runs
through `hierarchy.executor` (the full loop nest, small layers only), and what the replay
counts is set beside what the model says: accesses per level, DRAM elements by array over the
bus, and DMA transfers, per core and for all cores.

Kept maps (fusion) are accounted as the model defines them: the kept array's transfers that
DRAM would source are sourced by the outermost on-chip level.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.explore.composed import LevelsMapping, ShareMapping
from workbench.hierarchy.accesses import level_accesses
from workbench.hierarchy.executor import execute

ARRAYS = ("I", "W", "O")


def replay_share(m: LevelsMapping, share: ShareMapping) -> dict[str, Any]:
    """One core of a share, from the executor: accesses per level index (elements), DRAM
    elements per array, DMA transfers (refills of DRAM-fed holders and those reading partial
    sums back) and bits moved per level (partial sums at 32 bits: the tests' widths)."""
    n = len(m.hierarchy.levels)
    counts = execute(share.layer, share.blocking, m.hierarchy.datapath)
    accesses, bus, dma = [0] * n, dict.fromkeys(ARRAYS, 0), 0
    partial = [0] * n
    for array in ARRAYS:
        source = 0
        for level in sorted(level for a, level in counts if a == array):
            c = counts[array, level]
            both = c["moved"] + c["partial_reads"]
            if source == 0:
                dma += c["refills"] + c["reread_refills"]
            kept = (array == "I" and m.kept[0]) or (array == "O" and m.kept[1])
            src = 1 if source == 0 and kept else source
            part = c["moved"] - c["final_writes"] + c["partial_reads"] if array == "O" else 0
            accesses[src] += both
            partial[src] += part
            if level < n:
                accesses[level] += both
                partial[level] += part
            if src == 0:
                bus[array] += both
            source = level
    return {"accesses": accesses, "partial_accesses": partial, "bus": bus, "dma": dma}


def replay_counts(m: LevelsMapping) -> dict[str, Any]:
    """All cores of the mapping, from the executor: accesses per level, partial-sum accesses
    per level, DRAM elements per array (each core's own fetches) and DMA transfers."""
    n = len(m.hierarchy.levels)
    out = {"accesses": [0] * n, "partial_accesses": [0] * n,
           "bus": dict.fromkeys(ARRAYS, 0), "dma": 0}
    for share in m.shares:
        one = replay_share(m, share)
        for key in ("accesses", "partial_accesses"):
            out[key] = [a + share.cores * b for a, b in zip(out[key], one[key], strict=True)]
        for array in ARRAYS:
            out["bus"][array] += share.cores * one["bus"][array]
        out["dma"] += share.cores * one["dma"]
    return out


def replay_table(m: LevelsMapping) -> pd.DataFrame:
    """Per share (one core of it) and quantity: the model's count, the replay's, and whether
    they agree; quantities are each level's accesses, the DRAM elements and DMA transfers."""
    names = [lvl.name for lvl in m.hierarchy.levels]
    rows = []
    for i, share in enumerate(m.shares):
        replayed = replay_share(m, share)
        model = level_accesses(share.transfers, len(names))
        dram = sum(t.moved + t.partial_reads for t in share.transfers if t.source == 0)
        pairs = [(f"{name} accesses", model[k].total(), replayed["accesses"][k])
                 for k, name in enumerate(names)]
        pairs += [("DRAM elements over the bus", dram, sum(replayed["bus"].values())),
                  ("DMA transfers", share.dma_transfers, replayed["dma"])]
        for what, a, b in pairs:
            rows.append({"share": i, "cores": share.cores, "layer": share.layer.name,
                         "count": what, "model": int(a), "replay": int(b), "equal": a == b})
    return pd.DataFrame(rows)
