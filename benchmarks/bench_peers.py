"""Benchmark: our exact tiling search next to the ZigZag DSE framework (zigzag-dse, LOMA mapper).

One conv layer (AlexNet-Oxford102 conv3, batch 1: 13x13x384 outputs, 3x3x256 kernels, pad 1) on
the same hardware in both tools: DRAM plus one scratchpad of M bytes shared by inputs, weights
and outputs, 16-bit elements, single buffering; ZigZag also gets a 1-D array of 32 MACs fed
straight from the scratchpad (no register files). For each (M, ZigZag lpf_limit) row it prints
the wall time of ZigZag's whole API call and of our search (best_tiles over the five schedules;
our first row may include one-off cache set-up), each tool's least DRAM traffic in elements
split into inputs / weights / outputs, their ratio, the mappings found, and the model
differences that explain the gap. It asserts nothing.

ZigZag has no "DRAM traffic" objective, so it runs with opt="energy" on a hardware whose only
energy is DRAM: read and write cost 1 per DRAM access, scratchpad and MAC energy 0 (its access
count is elements x 16 / 512 bits here, so energy is proportional to elements, up to rounding).
The traffic printed is read from the best mapping's cost model,
`cme.mapping.unit_mem_data_movement[op][-1]`: data element moves at the top memory level, reads
to and writes from the scratchpad.

Run: .venv/bin/python benchmarks/bench_peers.py [--row KB:LPF ...]
The default rows (16, 64 and 256 KB at ZigZag's default lpf_limit=6, and 64 KB at lpf_limit=7)
take about 2 minutes on a 2-core machine, almost all of it in ZigZag: its LOMA search grows
factorially with lpf_limit (64 KB measured here: lpf 6 10-15 s, 7 about 60-75 s, 8 460-620 s;
`--row 64:8` reached 1,079,424 elements: our optimum, same 13x13x128 output tile, minus the
padding halo of the inputs, 3 x (57,600 - 43,264)).
Needs the optional extra: pip install -e ".[peers]" (zigzag-dse).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import yaml

from workbench import explore, layers, tiling
from workbench.layers.spec import ConvLayer

ELEM_BITS = 16  # the idsp preset's elem_bytes=2
MACS = 32
DRAM_WORD_BITS = MACS * ELEM_BITS  # DRAM port width; traffic is counted in elements anyway
DEFAULT_ROWS = ("16:6", "64:6", "256:6", "64:7")
NETWORK, LAYER = "alexnet_oxford102", "conv3"

NOTES = """\
Where the two models differ (read in zigzag-dse's source, or visible in the numbers above):
- Padding: ZigZag's input tensor is the unpadded Ix x Iy (pr_loop_sizes, as its ONNX parser
  sets them) and a tile's input extent (O-1)*S+K is clipped to it (LayerNode.calc_tensor_dim),
  so only a tile spanning a whole dimension loses its padding; our counts take every tile at
  full size with halos including padding. Whole layer read once: ZigZag {zz_once:,} input
  elements, ours {our_once:,}. At lpf_limit=8 this was the only gap (see the docstring).
- Tile sizes: LOMA splits each loop (after the spatial unrolling) into prime factors, merged
  down to lpf_limit loops, so a tile extent is a product of some of those factors (a divisor
  of the loop) and a prime extent such as 13 is all or nothing. With lpf_limit=6 and six
  non-trivial loops (K, C, OX, OY, FX, FY) every loop stays whole. Ours: any extent ceil(O/n),
  last tile counted at full size.
- Spatial unrolling: ZigZag unrolls one layer dimension over the 32 MACs (it tries
  nb_spatial_mappings_generated=3 candidates) and allocates those spatial loops to the
  scratchpad first, so a tile holds at least 32 along that dimension. Our search has no array.
- Mapping space: LOMA enumerates every order of those loop factors (FX and FY included, so a
  tile may hold part of the kernel) and, for each order, allocates loops greedily bottom-up,
  every operand taking its own prefix of the same order as long as the three fit together
  (temporal_mapping_type "uneven"). Irrelevant loops at the bottom of the DRAM level are
  merged down (the operand stays in the scratchpad, like our inter_* schedules). Ours: one
  tile shared by the three arrays, Kx x Ky never split, under the five seed-000 schedules,
  searched exactly.
- Input overlap: ZigZag's scratchpad input fills are MACs / (irrelevant-loop reuse at and
  below the scratchpad), so a tile's whole input window, halo included, is fetched again on
  every DRAM-level OX/OY step (its code says it ignores "the input FIFO effect"), as in our
  schedules except inter_oxoyon_dirx, which keeps the Kx-Sx overlap columns.
- Partial sums: both write a partial output tile to DRAM and read it back on every later
  input-map step (ZigZag: operand size x (ir-loop product - 1) reads; ours: (2nk - 1) x Bout).
  ZigZag can give partial sums a wider precision (O vs O_final); here both are 16 bits.
- Objective: ZigZag optimizes energy, latency or EDP; DRAM traffic is minimized here only via
  the energy costs above. Its memory allocator ranks loop prefixes by its own access estimate."""


def zigzag_workload(layer: ConvLayer) -> list[dict]:
    """The layer in ZigZag's manual workload format (one Conv node, sizes in elements)."""
    return [{
        "id": 0, "name": layer.name, "operator_type": "Conv",
        "equation": "O[b][g][k][oy][ox]+=W[g][k][c][fy][fx]*I[b][g][c][iy][ix]",
        "dimension_relations": [f"ix={layer.Sx}*ox+1*fx", f"iy={layer.Sy}*oy+1*fy"],
        "loop_dims": ["B", "K", "G", "OX", "OY", "C", "FX", "FY"],
        "loop_sizes": [layer.On, layer.Oc // layer.groups, layer.groups, layer.Ox, layer.Oy,
                       layer.Kc, layer.Kx, layer.Ky],
        "operand_precision": {"W": ELEM_BITS, "I": ELEM_BITS, "O": ELEM_BITS,
                              "O_final": ELEM_BITS},
        "operand_source": {"I": 0, "W": 0},
        "pr_loop_dims": ["IX", "IY"],
        "pr_loop_sizes": [layer.Ix, layer.Iy],
        "padding": [[layer.Px, layer.Px], [layer.Py, layer.Py]],
    }]


def _port(name: str, bw_min: int, bw_max: int, allocation: list[str]) -> dict:
    return {"name": name, "type": "read_write", "bandwidth_min": bw_min,
            "bandwidth_max": bw_max, "allocation": allocation}


def zigzag_hardware(memory_bytes: int) -> dict:
    """DRAM over one shared scratchpad over 32 MACs; only DRAM accesses cost energy."""
    wide = 64 * ELEM_BITS  # scratchpad ports: wide enough never to matter
    every = ["I1, fh", "I1, tl", "I2, fh", "I2, tl", "O, fh", "O, tl", "O, fl", "O, th"]
    spad = {"size": memory_bytes * 8, "r_cost": 0.0, "w_cost": 0.0, "area": 0.0, "latency": 1,
            "operands": ["I1", "I2", "O"],
            "ports": [_port("rw_port_1", wide, wide, ["I1, tl", "I1, fh"]),
                      _port("rw_port_2", wide, wide, ["I2, tl", "I2, fh"]),
                      _port("rw_port_3", wide, wide, ["O, tl", "O, fl", "O, fh", "O, th"])],
            "served_dimensions": ["D1"]}
    dram = {"size": 1 << 40, "r_cost": 1.0, "w_cost": 1.0, "area": 0.0, "latency": 1,
            "operands": ["I1", "I2", "O"],
            "ports": [_port("rw_port_1", ELEM_BITS, DRAM_WORD_BITS, every)],
            "served_dimensions": ["D1"]}
    return {"name": "spad_dram", "memories": {"spad": spad, "dram": dram},  # bottom level first
            "operational_array": {"input_precision": [ELEM_BITS, ELEM_BITS], "unit_energy": 0.0,
                                  "unit_area": 1.0, "dimensions": ["D1"], "sizes": [MACS]}}


def zigzag_search(layer: ConvLayer, memory_bytes: int, lpf: int) -> tuple[float, dict, str]:
    """ZigZag's best mapping: (seconds of the API call, DRAM traffic per operand, mapping)."""
    from zigzag.api import get_hardware_performance_zigzag
    from zigzag.hardware.architecture.memory_port import DataDirection
    from zigzag.mapping.data_movement import DataMoveAttr

    mapping = [{"name": "default", "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]
    with tempfile.TemporaryDirectory(prefix="zigzag_") as tmp:
        hw_file, map_file = Path(tmp, "hardware.yaml"), Path(tmp, "mapping.yaml")
        hw_file.write_text(yaml.safe_dump(zigzag_hardware(memory_bytes), sort_keys=False))
        map_file.write_text(yaml.safe_dump(mapping, sort_keys=False))
        start = time.perf_counter()
        _, _, cmes = get_hardware_performance_zigzag(
            zigzag_workload(layer), str(hw_file), str(map_file), opt="energy",
            dump_folder=str(Path(tmp, "out")), lpf_limit=lpf, loma_show_progress_bar=False)
        seconds = time.perf_counter() - start
    cme = cmes[0][1][0][0]  # the best CostModelEvaluation of the only layer
    traffic = {}
    for op, levels in cme.mapping.unit_mem_data_movement.items():
        moves = levels[-1].get_attribute(DataMoveAttr.DATA_ELEM_MOVE_COUNT)  # DRAM level
        traffic[str(op)] = int(moves.get(DataDirection.RD_OUT_TO_LOW)
                               + moves.get(DataDirection.WR_IN_BY_LOW))
    spatial = cme.spatial_mapping.mapping_dict_origin[cme.layer.output_operand][0]
    loops = cme.temporal_mapping.mapping_dic_stationary
    spad = {str(op): "".join(f"{d}{s:g}" for d, s in levels[0]) or "-"
            for op, levels in loops.items()}
    text = (f"spatial {' '.join(f'{d}{s:g}' for d, s in spatial)}; scratchpad loops "
            + ", ".join(f"{op}: {v}" for op, v in spad.items()))
    return seconds, traffic, text


def our_search(layer: ConvLayer, memory_bytes: int) -> tuple[float, dict, str]:
    """Our exact optimum over the five schedules: (seconds, traffic per array, tile)."""
    start = time.perf_counter()
    best = {s: explore.best_tiles(layer, s, memory_bytes=memory_bytes, elem_bytes=ELEM_BITS // 8,
                                  double_buffer=False) for s in tiling.SCHEDULES}
    seconds = time.perf_counter() - start
    schedule = min(best, key=lambda s: (best[s][1], best[s][2]))
    tile, accesses, footprint = best[schedule]
    c = tiling.counts(layer, tile, schedule)
    assert c.ext_accesses == accesses
    dims = "x".join(str(v) for v in tile.as_tuple())
    text = f"{schedule}, tile TOx x TOy x TOc x TOn x TKc = {dims}, {footprint:,} bytes"
    return seconds, {"I": c.in_accesses, "W": c.w_accesses, "O": c.out_accesses}, text


def _split(traffic: dict) -> str:
    return "/".join(f"{traffic[k]:,}" for k in ("I", "W", "O"))


def compare(layer: ConvLayer, rows: list[tuple[int, int]]) -> None:
    """Run both searches per row and print the table, then the mappings found."""
    head = (f"{'memory':>7s} {'lpf':>3s} {'ZigZag s':>9s} {'ours ms':>8s} "
            f"{'ZigZag DRAM elems':>18s} {'ours DRAM elems':>16s} {'ratio':>6s}   "
            "ZigZag in/w/out | ours in/w/out")
    print(head)
    print("-" * len(head))
    details = []
    for kb, lpf in rows:
        ours_s, ours, ours_text = our_search(layer, kb * 1024)
        try:
            zz_s, zz, zz_text = zigzag_search(layer, kb * 1024, lpf)
        except Exception as exc:  # a mapping ZigZag cannot find is a result, not a crash
            print(f"{kb:>4d} KB {lpf:3d}  ZigZag failed: {type(exc).__name__}: {exc}")
            continue
        zz_total, ours_total = sum(zz.values()), sum(ours.values())
        print(f"{kb:>4d} KB {lpf:3d} {zz_s:9.1f} {ours_s * 1e3:8.1f} {zz_total:18,d} "
              f"{ours_total:16,d} {zz_total / ours_total:6.3f}   {_split(zz)} | {_split(ours)}")
        details.append(f"  {kb:>4d} KB lpf {lpf}: ZigZag {zz_text}\n"
                       f"  {'':>4s}          ours   {ours_text}")
    print("\nBest mappings (ZigZag loops innermost first, ir loops merged into the scratchpad):")
    print("\n".join(details))


def parse_rows(specs: list[str]) -> list[tuple[int, int]]:
    rows = []
    for spec in specs:
        kb, _, lpf = spec.partition(":")
        rows.append((int(kb), int(lpf or 6)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", action="append", metavar="KB:LPF",
                        help="scratchpad KB and ZigZag lpf_limit (repeatable; default "
                             + " ".join(DEFAULT_ROWS) + ")")
    args = parser.parse_args()
    try:
        import zigzag.api  # noqa: F401
    except ImportError:
        print('zigzag-dse is not installed: pip install -e ".[peers]" installs it')
        return 0
    logging.getLogger("zigzag").setLevel(logging.ERROR)  # ZigZag logs every stage at INFO
    from importlib.metadata import version

    layer = layers.load_network(NETWORK, batch=1)[LAYER]
    print(f"{NETWORK} {LAYER} (batch 1): {layer.Ox}x{layer.Oy}x{layer.Oc} outputs, "
          f"{layer.Kx}x{layer.Ky}x{layer.Kc} kernels, stride {layer.Sx}, pad {layer.Px}; "
          f"{ELEM_BITS}-bit elements, DRAM + one shared scratchpad, single-buffered; "
          f"zigzag-dse {version('zigzag-dse')}, {MACS} MACs\n")
    compare(layer, parse_rows(args.row or list(DEFAULT_ROWS)))
    once = tiling.counts(layer, tiling.Tile(layer.Ox, layer.Oy, layer.Oc // layer.groups,
                                            layer.On, layer.Kc), "intra")
    print()
    print(NOTES.format(zz_once=layer.Ix * layer.Iy * layer.Kc * layer.groups * layer.On,
                       our_once=once.in_accesses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
