"""Benchmark: seed 001 table 3 (memory access energy per 16 bits) beside ours, the extension
rule past 1 MB, and what the `size_aware_energy` flag does to a buffer-size sweep. Prints
figures.

1. Every printed entry of table 3 (typed here from the seed) beside
   `platforms.memory_energy_pj_per_16b` at the same size and width: they must match exactly.
2. Our derived rows at 2, 4, 8 and 16 MB (the seed prints none): each the row before times
   one growth per doubling (the geometric mean of 1 MB / 128 KB over the widths, per octave),
   and DRAM above 16 MB. And, opt-in (`extend_below_1kb`), rows at 0.5 and 0.25 KB for
   register files (the seed's SRAMs start at 0.25 KB; energies unpublished): each the row
   above divided by the growth per doubling of the 1–8 KB rows (geometric mean over widths).
3. The seed 001 preset (`yang_256mac`, 256-bit local words) swept over local-memory sizes on
   LeNet5 (best plan by energy): local pJ per access, and the network's local and total
   energy, with the flag on and off (off: the preset with a fixed 50 pJ per access).

Run: .venv/bin/python benchmarks/bench_seed001_energy.py   (seconds)
"""

from __future__ import annotations

import math

import numpy as np

from workbench import explore, layers, platforms

KB, MB = 1024, 1024 * 1024
WIDTHS = (64, 128, 256, 512)
TABLE3 = {  # seed 001 table 3, pJ/16b by size (KB) at 64, 128, 256, 512 bits, as printed
    1: (1.20, 0.93, 0.69, 0.57), 2: (1.54, 1.37, 0.91, 0.68), 4: (2.11, 1.68, 1.34, 0.90),
    8: (3.19, 2.71, 2.21, 1.33), 16: (4.36, 3.57, 2.66, 2.19), 32: (5.82, 4.80, 3.52, 2.64),
    64: (8.10, 7.51, 5.79, 4.67), 128: (11.66, 11.50, 8.46, 6.15),
    256: (15.60, 15.51, 13.09, 8.99), 512: (23.37, 23.24, 17.93, 15.76),
    1024: (36.32, 32.81, 28.88, 25.22)}
DRAM_PJ = 320.0  # "> 16384 KB"
SWEEP_KB = (4, 16, 64, 256, 1024, 4096, 16384)


def table3_beside_ours() -> int:
    """Print table 3 and ours side by side; return the number of mismatches."""
    energy = platforms.memory_energy_pj_per_16b
    print("Seed 001 table 3, pJ per 16-bit access: seed / ours at 64, 128, 256, 512 bits")
    mismatches = 0
    for kb, row in TABLE3.items():
        ours = [energy(kb * KB, w) for w in WIDTHS]
        mismatches += sum(a != b for a, b in zip(row, ours, strict=True))
        cells = "  ".join(f"{a:6.2f} / {b:6.2f}" for a, b in zip(row, ours, strict=True))
        print(f"  {kb:6d} KB  {cells}")
    dram = [energy(16 * MB + 1, w) for w in WIDTHS]
    mismatches += sum(d != DRAM_PJ for d in dram)
    print(f"  > 16 MB   DRAM {DRAM_PJ:g} / " + ", ".join(f"{d:g}" for d in dram))
    print(f"  exact at all {len(TABLE3) * len(WIDTHS) + len(WIDTHS)} entries: "
          f"{'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}")
    return mismatches


def extension_rows() -> None:
    energy = platforms.memory_energy_pj_per_16b
    growth = math.prod(a / b for a, b in zip(TABLE3[1024], TABLE3[128], strict=True)) ** (1 / 12)
    print(f"\nExtension past 1 MB (derived, not printed in the seed): x{growth:.4f} per "
          f"doubling (energy ~ size^{math.log2(growth):.2f}), pJ/16b")
    print("            " + "  ".join(f"{w:>7d} b" for w in WIDTHS))
    for size_mb in (1, 2, 4, 8, 16):
        print(f"  {size_mb:6d} MB " + "  ".join(f"{energy(size_mb * MB, w):9.2f}"
                                               for w in WIDTHS))
    print("  > 16 MB   " + "  ".join(f"{energy(17 * MB, w):9.2f}" for w in WIDTHS) + "  (DRAM)")
    small = math.prod(a / b for a, b in zip(TABLE3[8], TABLE3[1], strict=True)) ** (1 / 12)
    print(f"\nExtension below 1 KB (derived, opt-in extend_below_1kb): ÷{small:.4f} per halving "
          "from the 1 KB row, the 0.25 KB row below that")
    for kb in (0.125, 0.25, 0.5, 1):
        print(f"  {kb:6g} KB " + "  ".join(f"{energy(kb * KB, w, extend_below_1kb=True):9.2f}"
                                           for w in WIDTHS))


def preset_sweep() -> None:
    base = platforms.load_platform("yang_256mac", local_access_pj=50.0)
    net = layers.load_network("lenet5")
    print(f"\nLeNet5 on {base.name} ({base.local_access_bytes * 8}-bit local words), best plan "
          "by energy per local-memory size; off = fixed 50 pJ per access")
    print("   memory   pJ/access on   local uJ on   total uJ on   local uJ off   total uJ off")
    for kb in SWEEP_KB:
        cols = []
        for flag in (True, False):
            plat = base.replace(local_mem_bytes=kb * KB, size_aware_energy=flag)
            plan = explore.network_plan(net, plat, "energy")
            cols.append((plat.effective_local_access_pj, plan["energy_local_pj"].sum() / 1e6,
                         plan["energy_pj"].sum() / 1e6))
        (pj, local_on, total_on), (_, local_off, total_off) = cols
        size = f"{kb // 1024} MB" if kb >= 1024 else f"{kb} KB"
        print(f"  {size:>7}   {pj:12.2f}   {local_on:11.3f}   {total_on:11.3f}   "
              f"{local_off:12.3f}   {total_off:12.3f}")
    per_access = [base.replace(local_mem_bytes=kb * KB).effective_local_access_pj
                  for kb in SWEEP_KB]
    print("  pJ per access non-decreasing in size: "
          f"{'yes' if np.all(np.diff(per_access) >= 0) else 'NO'}")


def main() -> None:
    table3_beside_ours()
    extension_rows()
    preset_sweep()


if __name__ == "__main__":
    main()
