"""Modulo scheduling of the loop body (seed 003 §5.2): iterations overlap, a new one starting
every II cycles.

The minimum initiation interval is the larger of the resource bound (the busiest VLIW field
or read port: operations per iteration) and the recurrence bound (the register and buffer
dependences that chain one iteration to the next). The scheduler is iterative modulo
scheduling (Rau, 1994): operations are placed in the order of the list schedule (top-down,
then, if that fails, bottom-up) at the earliest cycle their placed predecessors allow whose
slot modulo II is free in every field and port they use; when none is free within II cycles,
the operation takes its earliest cycle and evicts what is in the way. On failure II grows by
one; at the body's length the list schedule itself is a valid modulo schedule, so the search
always ends."""

from __future__ import annotations

import heapq
from collections import defaultdict

from workbench.simd.codegen.graph import FIELDS, TaskGraph
from workbench.simd.codegen.listsched import Schedule, compound_edges, read_times, resources


def resource_mii(graph: TaskGraph) -> int:
    """Operations per iteration in the busiest field (reads count on their port's field)."""
    return max(graph.count(f) for f in FIELDS)


def _nodes(graph: TaskGraph) -> list[int]:
    reads = {r for rs in graph.reads.values() for r in rs}
    return [i for i in range(len(graph.ops)) if i not in reads]


def _longest_from(start: int, order: list[int], succs: dict) -> dict[int, int]:
    """Longest in-iteration path lengths from start (a DAG: nodes in topological order)."""
    dist = {start: 0}
    for u in order[order.index(start):]:
        if u in dist:
            for e in succs[u]:
                if dist[u] + e.latency > dist.get(e.dst, -1 << 60):
                    dist[e.dst] = dist[u] + e.latency
    return dist


def cycle_graph(graph: TaskGraph, load_latency: int = 2) -> list[tuple[int, int, int, int]]:
    """The dependence cycles through the loop, condensed: every cycle runs along paths within
    one iteration joined by loop-carried edges, so it suffices to know the longest
    in-iteration path from each loop-carried edge's head to each one's tail (a pixel write
    has no predecessor and closes no cycle). Edges (from, to, latency, distance)."""
    edges = compound_edges(graph, load_latency)
    succs, indeg = defaultdict(list), defaultdict(int)
    for e in edges:
        if e.distance == 0:
            succs[e.src].append(e)
            indeg[e.dst] += 1
    has_pred = {e.dst for e in edges}
    carried = [e for e in edges if e.distance > 0 and e.src in has_pred]
    order, ready = [], [n for n in _nodes(graph) if indeg[n] == 0]
    while ready:
        u = ready.pop()
        order.append(u)
        for e in succs[u]:
            indeg[e.dst] -= 1
            if indeg[e.dst] == 0:
                ready.append(e.dst)
    small = [(e.src, e.dst, e.latency, e.distance) for e in carried]
    tails = {e.src for e in carried}
    for head in {e.dst for e in carried}:
        dist = _longest_from(head, order, succs)
        small += [(head, t, dist[t], 0) for t in tails if t in dist]
    return small


def feasible_timing(cycles: list[tuple[int, int, int, int]], ii: int) -> bool:
    """True when no dependence cycle needs more than ii cycles per iteration it spans
    (longest paths with weights latency − ii·distance have no positive cycle)."""
    nodes = {n for e in cycles for n in e[:2]}
    dist = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes) + 1):
        changed = False
        for u, v, lat, d in cycles:
            w = dist[u] + lat - ii * d
            if w > dist[v]:
                dist[v], changed = w, True
        if not changed:
            return True
    return False


def recurrence_mii(graph: TaskGraph, load_latency: int = 2) -> int:
    """The smallest II at which the dependence cycles through the loop are satisfiable."""
    cycles = cycle_graph(graph, load_latency)
    lo, hi = 1, max(1, sum(max(e[2], 0) for e in cycles))
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible_timing(cycles, mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def minimum_ii(graph: TaskGraph, load_latency: int = 2) -> int:
    """MII = max(resource MII, recurrence MII)."""
    return max(resource_mii(graph), recurrence_mii(graph, load_latency))


def _try_ii(graph: TaskGraph, ii: int, order: list[int], start: dict[int, int],
            load_latency: int, budget: int) -> dict[int, int] | None:
    edges = compound_edges(graph, load_latency)
    preds, succs = defaultdict(list), defaultdict(list)
    for e in edges:
        preds[e.dst].append(e)
        succs[e.src].append(e)
    rank = {op: k for k, op in enumerate(order)}
    uses = {op: [(f, c) for f, c in resources(graph, op, 0, load_latency)] for op in order}
    times: dict[int, int] = {}
    table: dict[tuple[str, int], int] = {}
    last_try: dict[int, int] = {}
    todo = [(rank[op], op) for op in order]
    heapq.heapify(todo)
    while todo:
        budget -= 1
        if budget < 0:
            return None
        op = heapq.heappop(todo)[1]
        if op in times:
            continue
        placed = [times[e.src] + e.latency - ii * e.distance for e in preds[op] if e.src in times]
        early = max(placed) if placed else start[op]
        slot = next((t for t in range(early, early + ii)
                     if not any((f, (t + c) % ii) in table for f, c in uses[op])), None)
        if slot is None:
            slot = max(early, last_try.get(op, early - 1) + 1)
        last_try[op] = slot
        evict = {table[(f, (slot + c) % ii)] for f, c in uses[op]
                 if (f, (slot + c) % ii) in table}
        evict |= {e.dst for e in succs[op] if e.dst in times
                  and times[e.dst] < slot + e.latency - ii * e.distance}
        evict |= {e.src for e in preds[op] if e.src in times
                  and slot < times[e.src] + e.latency - ii * e.distance}
        for v in evict - {op}:
            t_v = times.pop(v)
            for f, c in uses[v]:
                table.pop((f, (t_v + c) % ii), None)
            heapq.heappush(todo, (rank[v], v))
        times[op] = slot
        for f, c in uses[op]:
            table[(f, (slot + c) % ii)] = op
    return times


def modulo_schedule(base: Schedule, max_ii: int | None = None) -> Schedule:
    """Modulo schedule of base's task graph at the smallest II from the MII up that the
    scheduler achieves (see the module docstring); base's order guides the placement."""
    graph, ll = base.graph, base.load_latency
    nodes = _nodes(graph)
    orders = (sorted(nodes, key=lambda i: (base.times[i], i)),      # top-down
              sorted(nodes, key=lambda i: (-base.times[i], i)))     # bottom-up
    start = {i: base.times[i] for i in nodes}
    top = min(max_ii or base.length, base.length)
    for ii in range(minimum_ii(graph, ll), top):
        for order in orders:
            times = _try_ii(graph, ii, order, start, ll, budget=8 * len(nodes))
            if times is not None:
                break
        if times is not None:
            times.update(read_times(graph, times, ll))
            low = min(times.values())
            flat = tuple(times[i] - low for i in range(len(graph.ops)))
            return Schedule(graph, flat, ii, ll, base.conflicts)
    return Schedule(graph, base.times, base.length, ll, base.conflicts)
