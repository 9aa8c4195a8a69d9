"""The search's tuning constants in one place: each trades time or memory for another and never
changes an answer (every one of them is exact; tests set several to extremes and check the same
energies). Read at call time as `tuning.NAME`, so a test may set one for a call."""

from __future__ import annotations

import os

# slicing and batching: how much is priced in one numpy pass or kernel call
SMALL = 1 << 21  # tile combinations up to which a layer is one slice: less Python, more memory
CHUNK = 1 << 21  # combinations per numpy pass of `search_r` (a quarter for S): memory vs passes
BATCH = 1 << 16  # points per kernel call at the innermost level: memory vs calls and pruning
FIRST = 1 << 10  # innermost points of lowest bound priced first (×4 a batch): an early best
SEED = 1 << 12   # points of lowest floor priced first with no best energy yet: a start, cheaply
WEAK = 16        # a best with over WEAK × SEED points below it is improved by seeds first

# the compiled calls: two halves at once on two threads
SPLIT = 1 << 9  # points from which a call is split in two halves: a thread's start vs its share
CPUS = os.cpu_count() or 1  # processors; one: never split

# tables per class of chains instead of pricing per slice or point
TABLE_LIMIT = 1 << 23  # class combinations up to which an alone table is priced (64 MB a table)
SHARE = 4  # ... and only when the slices' points are SHARE × as many: table work vs slice work
CLASS_LIMIT = 1 << 23  # class combinations up to which the class floors are tabled: memory

# what searches keep for later ones (`context.SearchMemo`), bytes: memory vs work redone
ALONE_BYTES = 128 * 2**20  # one-slice searches' unit alone floors
TABLE_BYTES = 512 * 2**20  # alone and inner-bound tables per class
LEVEL_BYTES = 256 * 2**20  # outer levels' best placements per class
KEPT_BYTES = 64 * 2**20    # the innermost level's kept bounds (`memory.KeptBounds`)
PER_KEY = 24  # kept bounds per (layer, arrays held): sources and capacities remembered

TIE = 1.0 + 1e-9  # above an energy by more than two pricings of it differ (a few ulps): equal
# optima are searched below it (docs/search.md, "One answer among equal optima")

__all__ = ["ALONE_BYTES", "BATCH", "CHUNK", "CLASS_LIMIT", "CPUS", "FIRST", "KEPT_BYTES",
           "LEVEL_BYTES", "PER_KEY", "SEED", "SHARE", "SMALL", "SPLIT", "TABLE_BYTES",
           "TABLE_LIMIT", "TIE", "WEAK"]
