"""The whole-network plan: every layer's mapping (cores, split, tile or chunk), the layers
between convolutions, and where to fuse, chosen exactly for a per-layer objective.

Layers. Conv and fc layers take their best split over the platform's cores
(`explore.cores`); pool, LRN, eltwise, concat, activation and softmax layers are streamed
(`streaming`). Network totals add every layer.

Fusion. The boundary between a layer and the next one, which reads exactly its output, can keep
that map in local memory: the producer writes no output and the consumer reads no input
externally. Both must then fit their working set beside the kept map(s) (a map kept on the way
in and one on the way out both count), and a fused run executes on one core, whose local memory
holds the map; DMA setups are still paid (window moves inside local memory). An element-wise
activation right after a conv/fc layer can also be folded into it: applied to each output tile
before it is written (no memory, no traffic; its vector operations run on the producer's cores),
and so can a non-overlapping pooling layer after it, activation or not (`pool_fold`, seed 003
§2.1.2): the conv then writes only pooled outputs, on one core.

The choice is exact: a shortest path over the boundaries (state: is the map entering this layer
kept?), the sum of the layers' objective values (then cycles, then external accesses) being the
path length; each layer's cost in each state is itself an exact optimum. `fusion` per layer:
"auto" (the search decides), "off" (its output is never kept or folded), "force" (it must be).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from workbench import streaming
from workbench.errors import WorkbenchError
from workbench.explore import composed, pool_fold
from workbench.explore.bands import BANDS, CHANNEL_BANDS, band_of, state_of
from workbench.explore.cores import best_option, prebuild, share_rows
from workbench.explore.query import OBJECTIVE_COLUMNS, check_objective, ranking
from workbench.layers.network import Network
from workbench.layers.spec import ActivationLayer, ConcatLayer, EltwiseLayer, Layer, map_elems
from workbench.memo import Caches, caches_or_new
from workbench.perf import ENERGY_PARTS, CountVector, layer_local_accesses, price
from workbench.platforms import Platform
from workbench.resources import ResourceError
from workbench.tiling.model import SCHEDULES, TILE_DIMS

FUSION_MODES = ("auto", "off", "force")
CYCLE_PARTS = ("compute", "dma_setup", "bus_stall", "prolog_epilog")
Chain = tuple | None  # a plan: (earlier plan, its last steps) or None, shared by extensions


def fusable(producer: Layer, consumer: Layer) -> bool:
    """The consumer reads exactly the producer's output (and nothing else)."""
    if isinstance(consumer, EltwiseLayer | ConcatLayer):
        return False
    return map_elems(producer, "out") == map_elems(consumer, "in")


def fusable_at(net: Network, i: int) -> bool:
    """Layer i's output may stay on chip for layer i + 1: that layer reads exactly it and
    nothing else, and no other layer reads it (in a branching graph, a map another layer
    also reads must go to external memory anyway)."""
    return fusable_boundaries(net)[i] if 0 <= i < len(net) else False


def fusable_boundaries(net: Network) -> list[bool]:
    """`fusable_at` for every layer, in one pass over the layers and their inputs (linear in
    the layer count: a 100k-layer network takes milliseconds, not a square of them)."""
    layers = net.layers
    n = len(layers)
    ok = [i + 1 < n and fusable(layers[i], layers[i + 1]) for i in range(n)]
    if net.inputs is None:  # a chain
        return ok
    readers: dict[str, int] = {}
    for layer in layers:
        for src in net.inputs.get(layer.name, ("",)):
            readers[src] = readers.get(src, 0) + 1
    for i in range(n - 1):
        if ok[i]:
            reads = tuple(net.inputs.get(layers[i + 1].name, ("",)))
            ok[i] = reads == (layers[i].name,) and readers.get(layers[i].name, 0) == 1
    return ok


def _tiled_kept(layer, platform: Platform, objective: str, in_kept: bool, out_kept: bool,
                schedules: Sequence[str], local_traffic: bool, caches: Caches) -> dict | None:
    """Best single-core mapping of a conv/fc layer with its input and/or output kept."""
    kept = (in_kept * map_elems(layer, "in") + out_kept * map_elems(layer, "out")) \
        * platform.elem_bytes
    one = platform.replace(cores=1)
    if kept >= one.local_mem_bytes:
        return None
    rows = share_rows(layer, one, schedules, one.local_mem_bytes - kept, kind="arrays",
                      caches=caches)
    if len(rows.n) == 0:
        return None
    ext = rows.ext - in_kept * rows.acc[:, 0] - out_kept * rows.acc[:, 2]
    v = CountVector.of(rows.footprint, ext, rows.dma, rows.n, rows.tile_macs)
    n_local = layer_local_accesses(layer, one, local_traffic)
    p = price(one, v, n_local, parts=False)
    p["edp"] = p["cycles"] * p["energy_pj"]
    p["ext_accesses"] = ext
    p["footprint_bytes"] = rows.footprint
    key = [p[OBJECTIVE_COLUMNS[c] if c in OBJECTIVE_COLUMNS else c]
           for c in reversed(ranking(objective))]
    i = int(np.lexsort(key)[0])
    pick = np.array([i])
    v1 = CountVector.of(rows.footprint[pick], ext[pick], rows.dma[pick], rows.n[pick],
                        rows.tile_macs[pick])
    q = {k: float(x[0]) for k, x in price(one, v1, n_local).items()}
    acc = rows.acc[i] * np.array([not in_kept, 1, not out_kept])
    row = {"split": "oc", "cores": 1, "schedule": schedules[int(rows.schedule[i])],
           **{d: int(rows.tiles[i, j]) for j, d in enumerate(TILE_DIMS)},
           "cycles": q["cycles"], "energy_pj": q["energy_pj"],
           "ext_accesses": int(ext[i]), "in_accesses": int(acc[0]), "w_accesses": int(acc[1]),
           "out_accesses": int(acc[2]), "dma_transfers": int(rows.dma[i]),
           "footprint_bytes": int(rows.footprint[i]) * platform.elem_bytes
           * (2 if platform.double_buffer else 1) + kept,
           "compute_cycles": q["cycles_compute"],
           "shares": ((1, schedules[int(rows.schedule[i])],
                       tuple(int(x) for x in rows.tiles[i])),)}
    row |= {f"cycles_{part}": q[f"cycles_{part}"] for part in CYCLE_PARTS}
    row |= {f"energy_{part}_pj": q[f"energy_{part}_pj"] for part in ENERGY_PARTS}
    return row


def _tiled(layer, platform, objective, schedules, local_traffic, caches: Caches) -> dict:
    best = best_option(layer, platform, objective, schedules, local_traffic=local_traffic,
                       caches=caches)
    return {k: v for k, v in best.items() if k not in ("layer", "speedup", "edp",
                                                       "throughput_gops", "utilization",
                                                       "bus_cycles", "bound")}


def _levels(layer, platform: Platform, objective: str, in_kept: bool, out_kept: bool,
            caches: Caches) -> dict | None:
    """A conv/fc layer on a platform with levels (`composed`): its best mapping's row."""
    found = composed.best(layer, platform, objective, (in_kept, out_kept), caches)
    if found is None:
        return None
    return {k: v for k, v in found[1].items() if k not in ("edp", "bus_cycles")}


def _with_bar(items: list[int], work) -> None:
    """`work(item)` for each item, with a progress bar on stderr (layers searched)."""
    from tqdm import tqdm

    with tqdm(total=len(items), unit="layer", desc="blocking layers over levels",
              leave=False) as bar:
        for item in items:
            work(item)
            bar.update()


def band_kinds(layers: Sequence[Layer], i: int, cores: int) -> list[str]:
    """How the boundary after layer i may keep its map in bands across all `cores` cores
    (`bands` states), between the layer (i, or i − 1 with an activation folded into it at
    i) and the layer after the boundary, which reads exactly its map: each side split by
    rows ("xy": a conv layer with at least one output row per core) or by output maps ("oc":
    a dense conv or fc layer with at least one output map per core)."""
    producer = i - 1 if isinstance(layers[i], ActivationLayer) and i > 0 else i
    if cores < 2 or i + 1 >= len(layers):
        return []
    first, second = layers[producer], layers[i + 1]
    if not (first.tiled and second.tiled and second.in_maps == first.Oc
            and second.Iy == first.Oy and map_elems(second, "in") == map_elems(first, "out")):
        return []

    def kinds(layer) -> list[str]:
        rows = [BANDS] if layer.kind == "conv" and layer.Oy >= cores else []
        dense = layer.groups == 1 and layer.connections is None and layer.Oc >= cores
        return rows + ([CHANNEL_BANDS] if dense else [])

    return [state_of(p, c) for p in kinds(first) for c in kinds(second)]


def _streamed(layer, platform, objective, in_kept, out_kept) -> dict | None:
    try:
        c = streaming.best_stream(layer, platform, objective,
                                  cores=1 if in_kept or out_kept else None,
                                  kept=(in_kept, out_kept))
    except ResourceError:  # beyond the memory budget: the layer's own refusal, not "no fit"
        raise
    except WorkbenchError:
        return None
    row = {"split": "maps", "cores": c.cores, "schedule": "stream", "rows": c.rows,
           "maps": c.maps, "cycles": c.cycles, "energy_pj": c.energy_pj,
           "ext_accesses": c.ext_accesses, "dma_transfers": c.dma_transfers,
           "footprint_bytes": c.footprint_elems * platform.elem_bytes
           * (2 if platform.double_buffer else 1), "compute_cycles": c.breakdown["cycles_compute"]}
    row |= {k: v for k, v in c.breakdown.items() if k.startswith(("cycles_", "energy_"))}
    if composed.applies(platform):  # its per-level columns, as a conv's on this platform
        row |= composed.single_level_columns(platform, row, c.local_accesses)
    return row


def _folded(layer: ActivationLayer, cores: int, platform: Platform) -> dict:
    """An activation applied to its producer's output tiles: vector ops on its cores only
    (their compute energy and, for those cycles, their static energy)."""
    cycles = layer.ops / (platform.simd_lanes * cores)
    energy = cycles * cores * platform.core_pj_per_cycle
    static = cycles * cores * platform.static_pj_per_cycle
    row = {"split": "folded", "cores": cores, "schedule": "folded", "folded": True,
           "cycles": cycles,
           "energy_pj": energy + static, "ext_accesses": 0, "dma_transfers": 0,
           "footprint_bytes": 0, "compute_cycles": cycles}
    row |= {f"cycles_{part}": 0.0 for part in CYCLE_PARTS} | {"cycles_compute": cycles}
    row |= {f"energy_{part}_pj": 0.0 for part in ENERGY_PARTS} | {"energy_compute_pj": energy,
                                                                  "energy_static_pj": static}
    if composed.applies(platform):  # no memory traffic on any level
        row |= composed.single_level_columns(platform, row, 0)
    return row


def _key(row: dict, objective: str) -> tuple[float, float, float]:
    value = row["cycles"] * row["energy_pj"] if objective == "edp" \
        else row[OBJECTIVE_COLUMNS[objective]]
    return (float(value), float(row["cycles"]), float(row["ext_accesses"]))


def fusion_modes(net: Network, fusion: str | Mapping[str, str]) -> list[str]:
    """Per layer mode; "force" for the whole network forces every boundary that can fuse."""
    names = [layer.name for layer in net]
    if isinstance(fusion, str):
        if fusion == "force":
            can = fusable_boundaries(net)
            table = {layer.name: "force" if can[i] else "auto"
                     for i, layer in enumerate(net)}
        else:
            table = dict.fromkeys(names, fusion)
    else:
        unknown = set(fusion) - set(names)
        if unknown:
            raise WorkbenchError(f"fusion: network {net.name!r} has no layer(s) "
                                 f"{sorted(unknown)}")
        table = dict.fromkeys(names, "auto") | dict(fusion)
    for name, mode in table.items():
        if mode not in FUSION_MODES:
            raise WorkbenchError(f"fusion mode of layer {name!r} must be one of "
                                 f"{FUSION_MODES}, got {mode!r}")
    return [table[n] for n in names]


def network_plan(net: Network, platform: Platform, objective: str = "cycles",
                 fusion: str | Mapping[str, str] = "auto",
                 schedules: Sequence[str] = SCHEDULES, local_traffic: bool = True,
                 compare_unfused: bool = False, progress: bool = False,
                 caches: Caches | None = None) -> pd.DataFrame:
    """One row per layer in network order: cores, split, tile (conv/fc) or chunk (streamed),
    cycles and energy by part, external accesses, `fused_in`/`fused_out`, `folded`, `bound`
    ("compute" or "I/O"), throughput, utilization. df.attrs["unfused_ext_accesses"]: the same
    network's external accesses with fusion off (when `compare_unfused`). `progress`: a bar
    on stderr while missing candidate sets are built (on a platform with levels: while each
    conv/fc layer's shares are blocked). `caches`: what the plan keeps for later
    ones (an app's, a command's; none: for this call)."""
    check_objective(objective)
    caches = caches_or_new(caches)
    layers = list(net)
    modes = fusion_modes(net, fusion)
    levels = composed.applies(platform)
    if progress and not levels:
        prebuild(net.tiled_layers(), platform, schedules,
                 single_core_arrays=any(mode != "off" for mode in modes), caches=caches)
    n = len(layers)
    fusable_ = fusable_boundaries(net)
    ok_boundary = [modes[i] != "off" and fusable_[i] for i in range(n)]
    for i in range(n):
        if modes[i] == "force" and not ok_boundary[i]:
            raise WorkbenchError(f"layer {layers[i].name!r}: fusion forced, but "
                                 + ("it is the last layer" if i + 1 == n else
                                    f"{layers[i + 1].name!r} does not read exactly its output"))
    cache: dict[tuple, dict | None] = {}
    shapes = [dataclasses.replace(layer, name="_") for layer in layers]  # names cost nothing

    def cost(i: int, kin: bool, kout: bool) -> dict | None:
        # layers alike but for their names share one cost: repeated blocks are priced once
        if (shapes[i], kin, kout) not in cache:
            layer = layers[i]
            if layer.tiled and levels:
                row = _levels(layer, platform, objective, kin, kout, caches)
            elif layer.tiled:
                row = _tiled(layer, platform, objective, schedules, local_traffic, caches) \
                    if not (kin or kout) else _tiled_kept(layer, platform, objective, kin, kout,
                                                          schedules, local_traffic, caches)
            else:
                row = None if band_of(kin, kout) else \
                    _streamed(layer, platform, objective, kin, kout)
            cache[shapes[i], kin, kout] = row
        return cache[shapes[i], kin, kout]

    if progress and levels:  # the searches of each conv/fc layer's shares, with a bar
        _with_bar([i for i in range(n) if layers[i].tiled], lambda i: cost(i, False, False))

    def outs(i: int) -> list:
        if not ok_boundary[i]:
            return [False]
        kept = [True, *band_kinds(layers, i, platform.cores)] if levels else [True]
        return kept if modes[i] == "force" else [False, *kept]

    def _fold_pool(i: int, kin: bool, key: tuple, plan: Chain) -> None:
        """conv (+ activation) + pool in one pass: pool_fold."""
        if levels or not (layers[i].tiled and ok_boundary[i]):
            return  # pool folding is priced by the single-level model only
        j, act = i + 1, None
        if isinstance(layers[j], ActivationLayer) and ok_boundary[j]:
            j, act = j + 1, layers[j]
        if not pool_fold.foldable(layers[i], layers[j]):
            return
        for kout in outs(j):
            if (i, j, kin, kout) not in cache:
                cache[i, j, kin, kout] = pool_fold.best_folded(
                    layers[i], layers[j], platform, objective, kin, kout, schedules,
                    local_traffic)
            if cache[i, j, kin, kout] is None:
                continue
            row, pooled = cache[i, j, kin, kout]
            steps = [(i, kin, kout, row)]
            if act is not None:
                steps.append((i + 1, False, kout, _folded(act, 1, platform)))
            steps.append((j, False, kout, pooled))
            _relax(best, j + 1, kout, key, [_key(r, objective) for *_, r in steps],
                   (plan, tuple(steps)))

    # shortest path: best[i][kept] = (key, plan) for the boundary before layer i
    # a plan is a chain (earlier plan, its last steps): extending it copies nothing
    best: list[dict[bool, tuple]] = [{False: ((0.0, 0.0, 0.0), None)}] + [{} for _ in range(n)]
    for i in range(n):
        for kin, (key, plan) in list(best[i].items()):
            for kout in outs(i):
                if (row := cost(i, kin, kout)) is not None:
                    _relax(best, i + 1, kout, key, [_key(row, objective)],
                           (plan, ((i, kin, kout, row),)))
            _fold_pool(i, kin, key, plan)
            # an activation folded into its conv/fc producer: the pair writes one map
            if layers[i].tiled and ok_boundary[i] and isinstance(layers[i + 1], ActivationLayer):
                for kout in outs(i + 1):
                    if (row := cost(i, kin, kout)) is not None:
                        fold = _folded(layers[i + 1], row["cores"], platform)
                        _relax(best, i + 2, kout, key,
                               [_key(row, objective), _key(fold, objective)],
                               (plan, ((i, kin, kout, row), (i + 1, False, kout, fold))))
    if False not in best[n]:
        forced = [layers[i].name for i in range(n) if modes[i] == "force"]
        raise WorkbenchError(f"network {net.name!r}: no plan fits {platform.local_mem_bytes} B "
                             "of local memory" + (f" with fusion forced after {forced}"
                                                  if forced else ""))
    df = _frame(net, platform, objective, _steps(best[n][False][1]))
    if compare_unfused:
        off = df if fusion == "off" else network_plan(net, platform, objective, "off",
                                                      schedules, local_traffic, caches=caches)
        df.attrs["unfused_ext_accesses"] = int(off["ext_accesses"].sum())
    return df


def _steps(plan: Chain) -> list[tuple]:
    """The steps of a chained plan, first to last."""
    parts = []
    while plan is not None:
        plan, steps = plan
        parts.append(steps)
    return [step for steps in reversed(parts) for step in steps]


def _relax(best: list, j: int, kout: bool, key: tuple, adds: list[tuple], plan: Chain) -> None:
    total = tuple(sum(parts) for parts in zip(key, *adds, strict=True))
    if kout not in best[j] or total < best[j][kout][0]:
        best[j][kout] = (total, plan)


def role(layer: Layer) -> str:
    """What a conv layer does: "depthwise" (one input map per output map, groups = maps),
    "pointwise" (1×1, dense), "grouped", "conv"; other layers: their kind."""
    if layer.kind != "conv":
        return layer.kind
    if layer.groups > 1 and layer.Kc == 1 and layer.groups == layer.Oc:
        return "depthwise"
    if layer.groups > 1:
        return "grouped"
    if layer.Kx == layer.Ky == 1:
        return "pointwise"
    return "conv"


def _frame(net: Network, platform: Platform, objective: str, plan: list) -> pd.DataFrame:
    rows = []
    layers = net.layers
    for i, kin, kout, row in plan:
        layer = layers[i]
        r = {"layer": layer.name, "kind": layer.kind, "role": role(layer)} | row
        r |= {"fused_in": bool(kin), "fused_out": bool(kout),
              **({"fused_across": ",".join(dict.fromkeys(
                  state for state in (kin, kout) if isinstance(state, str)))}
                 if composed.applies(platform) else {}),
              "folded": bool(row.get("folded", False)),
              "objective": objective, "macs": layer.macs, "ops": layer.ops}
        rows.append(r)
    df = pd.DataFrame(rows)
    df["folded"] = df["folded"].astype(bool)
    io = df["ext_accesses"] / platform.bus_elems_per_cycle
    single = np.where(df["compute_cycles"] >= io, "compute", "I/O")
    df["bound"] = df["bound"].where(df["bound"].notna(), single) if "bound" in df else single
    # work: 2 ops per MAC of conv/fc layers, the vector ops of the others (rooflines)
    df["work_ops"] = np.where(df["macs"] > 0, 2.0 * df["macs"], df["ops"])
    df["throughput_gops"] = platform.clock_mhz * df["work_ops"] / df["cycles"] * 1e-3
    df["utilization"] = df["macs"] / (platform.macs_per_cycle * df["cores"]) / df["cycles"]
    ext_bytes = (df["ext_accesses"] * platform.elem_bytes).where(df["ext_accesses"] > 0)
    df["ctc"] = df["work_ops"] / ext_bytes   # NaN: no external traffic (fused or folded)
    df["edp"] = df["cycles"] * df["energy_pj"]
    # the part of the layer's time spent setting up DMA transfers (0..1)
    df["dma_setup_share"] = df["cycles_dma_setup"] / df["cycles"]
    for col in ("dma_transfers", "ext_accesses", "cores"):
        df[col] = df[col].astype(np.int64)
    return df
