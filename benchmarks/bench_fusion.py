"""Fusion on seed 003's face and speed-sign detectors: external traffic with and without it.

Two kinds of fusion, both exact in the model:
- feature-map fusion (seed 003 §5.3, `tiling.fmap_fusion`): output maps that read the same input
  maps are computed together, so a shared input map is loaded once (greedy Algorithm 2, with
  the exact optimum beside it);
- layer fusion (`explore.network_plan`): a layer's output map stays in local memory for the
  next layer.
The paper reports its generated code moving up to 65% less data (L2 of both detectors; L1 up
to 70%), from feature-map fusion limited by its instruction buffer.

Run: python benchmarks/bench_fusion.py
"""

from __future__ import annotations

import pandas as pd

from workbench import explore, layers, platforms
from workbench.tiling import fusion_table

PAPER = {"face_detector": {"L1": "up to 70%", "L2": "up to 65%", "L3": "0% (no shared inputs)"},
         "speed_sign_detector": {"L1": "up to 70%", "L2": "up to 65%",
                                 "L3": "0% (instruction buffer full)"}}


def main() -> None:
    nve = platforms.load_platform("nve")
    pd.set_option("display.width", 160)
    for name in ("face_detector", "speed_sign_detector"):
        net = layers.load_network(name)
        print(f"\n{name}: feature-map fusion, input-map traffic reduction on nve "
              f"({nve.local_mem_bytes // 1024} KB local memory)")
        rows = []
        for band in (None, 1, 16):
            table = fusion_table(net, nve, band_rows=band).set_index("layer")
            label = "whole maps" if band is None else f"{band}-row bands"
            rows.append(table["reduction_pct"].rename(f"{label} %"))
        out = pd.concat(rows, axis=1).round(1)
        out["paper (seed 003 §7.2.4)"] = [PAPER[name].get(layer, "-") for layer in out.index]
        print(out.to_string())
        for memory_kb in (64, 1024):
            plat = nve.replace(local_mem_bytes=memory_kb * 1024)
            plan = explore.network_plan(net, plat, "accesses", compare_unfused=True)
            fused = int(plan["ext_accesses"].sum())
            unfused = plan.attrs["unfused_ext_accesses"]
            kept = [r.layer for r in plan.itertuples() if r.fused_out]
            print(f"layer fusion, {memory_kb} KB: external accesses {unfused:,} -> {fused:,} "
                  f"({1 - fused / unfused:.1%} less); maps kept after {kept or 'no layer'}")


if __name__ == "__main__":
    main()
