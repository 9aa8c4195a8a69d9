"""Bottom-up list scheduling of one iteration onto the NVE's VLIW fields (seed 003 §4.3).

The scheduler walks the task graph from the bottom (the activations) up, giving every
operation the latest cycle its consumers allow. A set operation also needs its read ports
`load_latency` cycles earlier; when another set already holds that port (a weight set and an
image set both read through port A), the set backs off to an earlier cycle, and everything
above it moves up with it: the idle slots this leaves in the MAC field are the cost of the
conflict. Pixel writes are placed afterwards, as late as possible in free MEMA slots before
their reads. Times are normalized to start at cycle 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.simd.codegen.graph import Edge, TaskGraph


@dataclass(frozen=True)
class Schedule:
    """Cycle of every operation of one iteration (reads: their set's cycle − load latency),
    and the initiation interval: cycles between the starts of consecutive iterations
    (`length` for a loop body run without overlap)."""

    graph: TaskGraph
    times: tuple[int, ...]
    ii: int
    load_latency: int
    conflicts: tuple[tuple[int, int], ...] = ()  # (set op that backed off, op holding the port)

    @property
    def length(self) -> int:
        return max(self.times) + 1

    @property
    def stages(self) -> int:
        return -(-self.length // self.ii)

    def idle_mac_slots(self) -> int:
        """Cycles between the first and last VMAC operation with the VMAC field idle."""
        t = [self.times[i] for i, op in enumerate(self.graph.ops) if op.field == "VMAC"]
        return max(t) - min(t) + 1 - len(t)


def compound_edges(graph: TaskGraph, load_latency: int) -> list[Edge]:
    """Edges between schedulable operations: an edge into a read becomes an edge into its
    set, `load_latency` cycles longer."""
    owner = {r: s for s, reads in graph.reads.items() for r in reads}
    out = []
    for e in graph.edges:
        if e.dst in owner:
            out.append(Edge(e.src, owner[e.dst], e.latency + load_latency, e.distance))
        elif e.src in owner:
            raise WorkbenchError("a read feeds only its set")  # an invariant of build_graph
        else:
            out.append(e)
    return out


def resources(graph: TaskGraph, op: int, t: int, load_latency: int) -> list[tuple[str, int]]:
    """(field, cycle) pairs an operation issued at t occupies: its own field, and the port of
    each attached read load_latency cycles before."""
    used = [(graph.ops[op].field, t)]
    used += [(graph.ops[r].field, t - load_latency) for r in graph.reads.get(op, ())]
    return used


def read_times(graph: TaskGraph, times: dict[int, int], load_latency: int) -> dict[int, int]:
    return {r: times[s] - load_latency for s, reads in graph.reads.items() for r in reads}


def list_schedule(graph: TaskGraph, load_latency: int = 2) -> Schedule:
    """The automatic schedule of seed 003 §4.3 (see the module docstring)."""
    reads = {r for rs in graph.reads.values() for r in rs}
    writes = [i for i, op in enumerate(graph.ops) if op.kind == "wr"]
    main = [i for i in range(len(graph.ops)) if i not in reads and graph.ops[i].kind != "wr"]
    edges = [e for e in compound_edges(graph, load_latency) if e.distance == 0]
    succs = defaultdict(list)
    for e in edges:
        succs[e.src].append(e)
    busy: dict[tuple[str, int], int] = {}
    times: dict[int, int] = {}
    waiting = {i: sum(1 for e in edges if e.src == i and e.dst not in writes) for i in main}
    preds = defaultdict(list)
    for e in edges:
        preds[e.dst].append(e.src)
    conflicts = []
    ready = [i for i in main if waiting[i] == 0]
    while ready:
        latest = {i: min((times[e.dst] - e.latency for e in succs[i]), default=0)
                  for i in ready}
        op = max(ready, key=lambda i: (latest[i], i))
        ready.remove(op)
        t = latest[op]
        blocker = None
        while any(k in busy for k in resources(graph, op, t, load_latency)):
            held = [busy[k] for k in resources(graph, op, t, load_latency)[1:] if k in busy]
            if held and (graph.ops[op].field, t) not in busy and blocker is None:
                blocker = held[0]
            t -= 1
        if blocker is not None:
            conflicts.append((op, blocker))
        times[op] = t
        for k in resources(graph, op, t, load_latency):
            busy[k] = op
        for p in preds[op]:
            if p in waiting:
                waiting[p] -= 1
                if waiting[p] == 0:
                    ready.append(p)
    if len(times) != len(main):
        raise WorkbenchError("the task graph has a cycle within one iteration")
    times.update(read_times(graph, times, load_latency))
    for w in sorted(writes, reverse=True):
        t = min(times[e.dst] - e.latency for e in graph.edges if e.src == w and e.distance == 0)
        while ("MEMA", t) in busy:
            t -= 1
        times[w] = t
        busy[("MEMA", t)] = w
    low = min(times.values())
    flat = tuple(times[i] - low for i in range(len(graph.ops)))
    return Schedule(graph, flat, max(flat) + 1, load_latency, tuple(conflicts))
