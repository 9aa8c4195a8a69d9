"""Brute-force modulo scheduling for tiny task graphs (test helper, independent of
workbench.simd.codegen.modulo and listsched).

A modulo schedule at initiation interval II gives every operation a cycle t = q·II + r. For a
fixed choice of residues r (one per operation, no two operations on one field or port slot
modulo II), the dependences become difference constraints on the quotients q:
q_dst − q_src >= ceil((r_src − r_dst + latency) / II) − distance, which have an integer
solution exactly when the constraint graph has no positive cycle. Enumerating every residue
choice (depth first, pruning with the constraints among the operations chosen so far) decides
whether any modulo schedule exists at II: an exact answer, exponential in the graph's size.
"""

from __future__ import annotations


def _edges(graph, load_latency):
    owner = {r: s for s, reads in graph.reads.items() for r in reads}
    out = []
    for e in graph.edges:
        dst = owner.get(e.dst, e.dst)
        lat = e.latency + (load_latency if e.dst in owner else 0)
        out.append((e.src, dst, lat, e.distance))
    return out


def _slots(graph, op, r, ii, load_latency):
    used = [(graph.ops[op].field, r % ii)]
    used += [(graph.ops[x].field, (r - load_latency) % ii) for x in graph.reads.get(op, ())]
    return used


def _no_positive_cycle(nodes, edges, res, ii):
    dist = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes) + 1):
        changed = False
        for u, v, lat, d in edges:
            w = dist[u] - ((res[v] - res[u] - lat) // ii) - d   # ceil((ru - rv + lat)/ii) - d
            if w > dist[v]:
                dist[v], changed = w, True
        if not changed:
            return True
    return False


def schedulable(graph, ii: int, load_latency: int = 2) -> bool:
    """True when some modulo schedule of the graph at ii exists."""
    reads = {r for rs in graph.reads.values() for r in rs}
    edges = _edges(graph, load_latency)
    nodes = [i for i in range(len(graph.ops)) if i not in reads]
    res: dict[int, int] = {}
    used: set = set()

    def dfs(k: int) -> bool:
        if k == len(nodes):
            return True
        op = nodes[k]
        for r in range(ii) if k else (0,):
            slots = _slots(graph, op, r, ii, load_latency)
            if any(s in used for s in slots) or len(set(slots)) < len(slots):
                continue
            res[op] = r
            used.update(slots)
            inner = [e for e in edges if e[0] in res and e[1] in res]
            if _no_positive_cycle(list(res), inner, res, ii) and dfs(k + 1):
                return True
            used.difference_update(slots)
            del res[op]
        return False

    return dfs(0)


def min_ii(graph, load_latency: int = 2, limit: int = 64) -> int:
    """The smallest II with a modulo schedule (exhaustive), from the busiest slot up."""
    fields = [op.field for op in graph.ops]
    for ii in range(max(fields.count(f) for f in set(fields)), limit + 1):
        if schedulable(graph, ii, load_latency):
            return ii
    raise AssertionError(f"no modulo schedule up to II {limit}")
