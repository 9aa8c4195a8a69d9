"""Candidate sets: the exact dominance filter, the on-disk cache, and the central claim that the
optimum over a candidate set equals the optimum over every tile, for any platform, memory size,
objective and buffering mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, layers, perf, platforms, tiling
from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer
from workbench.memo import Caches
from workbench.tiling import candidates
from workbench.tiling.dominance import nondominated


@settings(max_examples=examples(150))
@given(rows=st.lists(st.tuples(*[st.integers(0, 4)] * 4), min_size=1, max_size=60),
       d=st.integers(1, 4))
def test_nondominated_equals_pairwise_definition(rows, d) -> None:
    v = np.array(rows, dtype=np.int64)[:, :d]
    kept = set(nondominated(v).tolist())
    for i in range(len(v)):
        dominated = any(np.all(v[j] <= v[i]) and np.any(v[j] < v[i]) for j in range(len(v)))
        first_of_equals = not any(np.array_equal(v[j], v[i]) for j in range(i))
        assert (i in kept) == (not dominated and first_of_equals), (i, v[i])


def test_nondominated_on_a_large_random_cloud() -> None:
    rng = np.random.default_rng(1)
    v = rng.integers(0, 50, size=(3000, 5))
    kept = nondominated(v)
    front = v[kept]
    # nothing kept is dominated by anything, and everything dropped is dominated or repeated
    for row in front[:200]:
        assert not np.any(np.all(v <= row, axis=1) & np.any(v < row, axis=1))
    dropped = np.setdiff1d(np.arange(len(v)), kept)
    for i in dropped[:300]:
        assert np.any(np.all(front <= v[i], axis=1))


layers_st = st.builds(  # grouped layers: tiles may span whole groups (TOc = g·Oc/groups)
    lambda ox, oy, oc, on, kc, k, s, g, d: ConvLayer(
        name="r", Ox=ox, Oy=oy, Oc=oc * g, On=on, Kx=k, Ky=max(1, k - 1), Kc=kc, Sx=s,
        Sy=1, Px=(k - 1) // 2, Py=0, groups=g, Dx=d),
    ox=st.integers(1, 9), oy=st.integers(1, 7), oc=st.integers(1, 8), on=st.integers(1, 3),
    kc=st.integers(1, 6), k=st.integers(1, 4), s=st.integers(1, 3),
    g=st.sampled_from([1, 1, 2, 3, 5]), d=st.sampled_from([1, 1, 1, 2]))


@settings(max_examples=examples(40))
@given(layer=layers_st, schedule=st.sampled_from(tiling.SCHEDULES))
def test_candidate_set_is_the_front_of_the_whole_reduced_grid(layer, schedule) -> None:
    """The (TOx, TOy) pre-reduction loses nothing: same vectors as filtering every tile."""
    tiles = np.concatenate(list(tiling.gen_tiles(layer)))
    vectors = candidates.count_vectors(layer, tiles, schedule)
    front = vectors[nondominated(vectors)]
    cs = candidates.build(layer, schedule)
    assert sorted(map(tuple, cs.vectors)) == sorted(map(tuple, front))
    assert np.array_equal(candidates.count_vectors(layer, cs.tiles, schedule), cs.vectors)
    assert np.all(np.diff(cs.column("footprint_elems")) >= 0)
    assert cs.grid_size == len(tiles)


platforms_st = st.builds(
    lambda **f: platforms.load_platform("idsp", **f),
    clock_mhz=st.floats(1, 2000), bus_elems_per_cycle=st.floats(0.05, 64),
    macs_per_cycle=st.floats(0.5, 256), elem_bytes=st.integers(1, 4),
    dma_setup_cycles=st.floats(0.01, 1000), register_file_bytes=st.integers(1, 4096),
    double_buffer=st.booleans(), core_pj_per_cycle=st.floats(0.01, 500),
    local_access_pj=st.floats(0.01, 100), local_access_bytes=st.integers(1, 128),
    ext_access_pj=st.floats(0.01, 5000), ext_access_bytes=st.integers(1, 64))


def _reference_best(layer, plat, schedule, memory, objective, reduced: bool):
    """The ranking key of the best tile among every enumerated tile that fits (or None)."""
    scale = plat.elem_bytes * (2 if plat.double_buffer else 1)
    best = None
    for tiles in tiling.gen_tiles(layer, memory / scale, reduced=reduced):
        c = tiling.counts_array(layer, tiles, schedule)
        r = perf.estimate_array(layer, tiles, schedule, plat, counted=c)
        cols = r | {"ext_accesses": c["in_accesses"] + c["w_accesses"] + c["out_accesses"],
                    "footprint_bytes": (c["bin"] + c["bw"] + c["bout"]) * scale,
                    "edp": r["energy_pj"] * r["cycles"]}
        keys = [np.asarray(cols[k], dtype=np.float64) for k in explore.ranking(objective)]
        i = np.lexsort(keys[::-1])[0]
        cand = tuple(float(k[i]) for k in keys)
        best = cand if best is None or cand < best else best
    return best


@settings(max_examples=examples(60))
@given(layer=layers_st, plat=platforms_st, schedule=st.sampled_from(tiling.SCHEDULES),
       objective=st.sampled_from(explore.OBJECTIVES),
       memories=st.lists(st.integers(16, 40000), min_size=1, max_size=4))
def test_candidate_optimum_equals_enumeration_and_brute_force(layer, plat, schedule, objective,
                                                              memories) -> None:
    fast = explore.best_mappings([layer], plat, memories, [schedule], objective,
                                 per_schedule=True)
    for memory in memories:
        full = _reference_best(layer, plat, schedule, memory, objective, reduced=True)
        brute = _reference_best(layer, plat, schedule, memory, objective, reduced=False)
        assert full == brute
        rows = fast[fast.buffer_bytes == memory]
        if full is None:
            assert rows.empty
            continue
        got = tuple(float(rows.iloc[0][k]) for k in explore.ranking(objective))
        assert got == full  # identical, not approximately equal


@settings(max_examples=examples(25))
@given(layer=layers_st, plat=platforms_st, memory=st.integers(64, 40000))
def test_network_best_is_the_best_schedule_and_matches_the_estimate(layer, plat, memory) -> None:
    for objective in explore.OBJECTIVES:
        per = explore.best_mappings([layer], plat, [memory], objective=objective,
                                    per_schedule=True)
        one = explore.best_mappings([layer], plat, [memory], objective=objective)
        if per.empty:
            assert one.empty
            continue
        keys = list(explore.ranking(objective))
        assert tuple(one.iloc[0][keys]) == min(tuple(r) for r in per[keys].itertuples(False))
        row = one.iloc[0]
        e = perf.estimate(layer, tiling.Tile(*(int(row[d]) for d in tiling.TILE_DIMS)),
                          row["schedule"], plat)
        assert e.cycles == row["cycles"] and e.energy_total_pj == pytest.approx(row["energy_pj"])
        assert e.counts.ext_accesses == row["ext_accesses"]


@settings(max_examples=examples(30))
@given(layer=layers_st, memory=st.integers(32, 20000), double=st.booleans())
def test_pareto_front_from_candidates_is_complete(layer, memory, double) -> None:
    plat = platforms.load_platform("idsp", double_buffer=double, bus_elems_per_cycle=3.0)
    try:
        every = explore.explore_layer(layer, plat, buffer_sizes=[memory], keep="all")
    except explore.solutions.WorkbenchError:
        return
    mine = explore.fitting_candidates(layer, plat, memory_bytes=memory)
    values = lambda df: set(zip(df.throughput_gops, df.ctc, strict=True))  # noqa: E731
    assert values(explore.pareto(mine)) == values(explore.pareto(every))


@settings(max_examples=examples(30))
@given(layer=layers_st, register_file=st.integers(1, 600), elem_bytes=st.integers(1, 3))
def test_local_accesses_is_the_brute_force_minimum(layer, register_file, elem_bytes) -> None:
    perf.local_accesses.cache_clear()
    got = perf.local_accesses(layer, register_file, elem_bytes)
    best = None
    for schedule in tiling.SCHEDULES:
        for tiles in tiling.gen_tiles(layer, register_file // elem_bytes, reduced=False):
            c = tiling.counts_array(layer, tiles, schedule)
            low = int((c["in_accesses"] + c["w_accesses"] + c["out_accesses"]).min())
            best = low if best is None else min(best, low)
    if best is None:
        c = tiling.counts(layer, tiling.Tile(1, 1, 1, 1, 1), "intra")
        best = c.ext_accesses
    assert got == best


LAYER = ConvLayer(name="c", Ox=13, Oy=11, Oc=24, On=2, Kx=3, Ky=3, Kc=10, Px=1, Py=1)


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    yield tmp_path  # (a call given no caches keeps nothing in memory)


def _cache_file(cache: Path) -> Path:
    (path,) = cache.rglob("cost-inter_kc-*.npz")
    return path


def test_a_second_process_reuses_the_disk_cache(cache) -> None:
    built = candidates.candidate_set(LAYER, "inter_kc")
    assert _cache_file(cache).exists()
    code = ("from workbench.tiling import candidates\n"
            "from workbench.layers import ConvLayer\n"
            "def refuse(*a):\n    raise SystemExit('rebuilt instead of reusing the cache')\n"
            "candidates.build = refuse\n"
            "cs = candidates.candidate_set(ConvLayer(name='other', Ox=13, Oy=11, Oc=24, On=2, "
            "Kx=3, Ky=3, Kc=10, Px=0, Py=0), 'inter_kc')\n"
            "print(len(cs.tiles))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=os.environ | {"WORKBENCH_CACHE_DIR": str(cache)}, check=True)
    assert out.stdout.strip() == str(len(built.tiles))


def test_lookups_read_the_cache_folder_once_and_see_other_processes_files(
        cache, monkeypatch) -> None:
    """A folder of thousands of files is listed once per session (its `Caches`), not per
    lookup (the session's writes update the listing); a set another process writes later is
    still found on disk."""
    from workbench.tiling import candidate_set

    sets = [ConvLayer(name=f"s{i}", Ox=4 + i, Oy=3, Oc=2, Kx=3, Ky=3, Kc=2) for i in range(4)]
    candidates.candidate_set(sets[0], "inter_kc")
    folder = _cache_file(cache).parent
    for i in range(3000):  # files of other sets
        (folder / f"cost-inter_kc-{i:024x}.npz").touch()
    real_scandir, scans = os.scandir, []
    monkeypatch.setattr(candidate_set.os, "scandir",
                        lambda path: scans.append(path) or real_scandir(path))
    session = Caches()
    for layer in sets:  # one listing; the three sets built and written update it
        candidates.candidate_set(layer, "intra", caches=session)
        candidates.candidate_set(layer, "inter_kc", caches=session)
    assert len(scans) == 1
    code = ("from workbench.tiling import candidates\n"
            "from workbench.layers import ConvLayer\n"
            "candidates.candidate_set(ConvLayer(name='o', Ox=9, Oy=3, Oc=2, Kx=3, Ky=3, Kc=2),"
            " 'inter_kc')\n")
    subprocess.run([sys.executable, "-c", code], check=True,
                   env=os.environ | {"WORKBENCH_CACHE_DIR": str(cache)})
    monkeypatch.setattr(candidates, "build", lambda *a, **k: pytest.fail("built, not loaded"))
    other = candidates.candidate_set(ConvLayer(name="p", Ox=9, Oy=3, Oc=2, Kx=3, Ky=3, Kc=2),
                                     "inter_kc", caches=session)
    assert len(other.tiles) > 0


def test_writes_under_the_limit_scan_the_cache_only_now_and_then(cache, monkeypatch) -> None:
    """After a write, the cache's files are scanned (`prune`) only when the session's view
    passes the limit or is PRUNE_RESCAN_S old."""
    from workbench.tiling import candidate_set

    real_prune, pruned = candidate_set.prune, []
    monkeypatch.setattr(candidate_set, "prune",
                        lambda *a, **k: pruned.append(1) or real_prune(*a, **k))
    layers_ = [ConvLayer(name=f"s{i}", Ox=4 + i, Oy=3, Oc=2, Kx=3, Ky=3, Kc=2)
               for i in range(6)]
    session = Caches()
    for layer in layers_[:3]:
        candidates.candidate_set(layer, "inter_kc", caches=session)
    assert len(pruned) == 1  # the first write: no view yet
    monkeypatch.setattr(candidate_set, "PRUNE_RESCAN_S", 0.0)
    candidates.candidate_set(layers_[3], "inter_kc", caches=session)
    assert len(pruned) == 2
    monkeypatch.setattr(candidate_set, "PRUNE_RESCAN_S", 3600.0)
    limit = sum(p.stat().st_size for p in _cache_files(cache))  # the four sets written
    monkeypatch.setenv("WORKBENCH_CACHE_MAX_MB", str(limit / 2**20))
    candidates.candidate_set(layers_[4], "inter_kc", caches=session)  # past the limit: scanned
    assert len(pruned) == 3
    assert sum(p.stat().st_size for p in _cache_files(cache)) <= limit
    assert len(_cache_files(cache)) < 5


def _cache_files(cache: Path) -> list[Path]:
    return sorted(cache.rglob("cost-inter_kc-*.npz"))


def _sized_sets(cache: Path) -> list[Path]:
    """Three small sets on disk (distinct shapes), their files oldest first (mtimes set 10 s
    apart)."""
    paths = []
    for i, ox in enumerate((5, 6, 7)):
        candidates.candidate_set(ConvLayer(name=f"s{i}", Ox=ox, Oy=4, Oc=4, Kx=3, Ky=3, Kc=3),
                                 "inter_kc")
        (path,) = set(cache.rglob("cost-inter_kc-*.npz")) - set(paths)
        os.utime(path, (1_000_000 + 10 * i, 1_000_000 + 10 * i))
        paths.append(path)
    return paths


def test_the_cache_keeps_within_its_limit_least_recently_used_first(cache) -> None:
    """Over the limit, files of another model version and crashed writes go first, then the
    least recently used sets (a load marks a set used); a fresh temporary file stays; an
    evicted set is rebuilt when asked for again."""
    old, middle, new = _sized_sets(cache)
    stale = cache / "candidates-v1-000000000000"
    stale.mkdir()
    (stale / "cost-inter_kc-x.npz").write_bytes(b"0" * 5000)
    crashed, writing = old.parent / "a.tmp", old.parent / "b.tmp"
    crashed.write_bytes(b"0" * 300)
    writing.write_bytes(b"0" * 200)
    os.utime(crashed, (1_000_000, 1_000_000))
    sizes = {p: p.stat().st_size for p in (old, middle, new)}
    removed = candidates.prune(sizes[middle] + sizes[new] + 200)
    assert removed == 5000 + 300 + sizes[old]
    assert {p.name for p in cache.rglob("*") if p.is_file()} == \
        {middle.name, new.name, writing.name}
    assert not stale.exists()
    again = candidates.candidate_set(ConvLayer(name="s0", Ox=5, Oy=4, Oc=4, Kx=3, Ky=3, Kc=3),
                                     "inter_kc")
    assert old.exists() and len(again.tiles) > 0
    candidates.candidate_set(ConvLayer(name="s1", Ox=6, Oy=4, Oc=4, Kx=3, Ky=3, Kc=3),
                             "inter_kc")  # loaded from disk: used now
    assert middle.stat().st_mtime > new.stat().st_mtime


def test_the_cache_limit_comes_from_the_environment(cache, monkeypatch) -> None:
    """WORKBENCH_CACHE_MAX_MB bounds the files after each write (0: only the set just
    written stays); a value that is not a size is refused, naming the variable."""
    monkeypatch.setenv("WORKBENCH_CACHE_MAX_MB", "0")
    _sized_sets(cache)
    assert len(list(cache.rglob("*.npz"))) == 1
    monkeypatch.setenv("WORKBENCH_CACHE_MAX_MB", "lots")
    with pytest.raises(WorkbenchError, match="WORKBENCH_CACHE_MAX_MB must be a number"):
        candidates.cache_limit_bytes()
    monkeypatch.setenv("WORKBENCH_CACHE_MAX_MB", "-1")
    with pytest.raises(WorkbenchError, match="WORKBENCH_CACHE_MAX_MB must be >= 0"):
        candidates.cache_limit_bytes()


@pytest.mark.parametrize("damage", ["truncate", "flip_tile", "garbage", "stale_version",
                                    "other_shape", "other_schedule"])
def test_damaged_or_stale_cache_files_are_rebuilt(cache, damage) -> None:
    fresh = candidates.build(LAYER, "inter_kc")
    candidates.candidate_set(LAYER, "inter_kc")
    path = _cache_file(cache)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "garbage":
        path.write_bytes(b"not a cache file")
    else:
        import json

        with np.load(path) as f:
            meta, tiles, vectors = json.loads(str(f["meta"])), f["tiles"], f["vectors"]
        if damage == "flip_tile":
            tiles = tiles.copy()
            tiles[0, 0] += 1
        elif damage == "stale_version":
            meta["version"] = -1
        elif damage == "other_schedule":  # a whole file of another key, copied over
            other = candidates.build(LAYER, "intra")
            tiles, vectors = other.tiles, other.vectors
            meta["checksum"] = candidates._checksum(meta, tiles, vectors)
        elif damage == "other_shape":
            meta["shape"] = [1] * len(meta["shape"])
        np.savez(path.with_suffix(".tmp.npz"), meta=json.dumps(meta), tiles=tiles,
                 vectors=vectors)
        path.with_suffix(".tmp.npz").replace(path)
    again = candidates.candidate_set(LAYER, "inter_kc")  # no caches: nothing in memory
    assert np.array_equal(again.tiles, fresh.tiles)
    assert np.array_equal(again.vectors, fresh.vectors)
    reloaded = candidates._load(path, LAYER, "inter_kc", "cost")  # rebuilt: whole again
    assert reloaded is not None and np.array_equal(reloaded.tiles, fresh.tiles)


def test_platform_changes_never_enumerate_tiles_again(monkeypatch) -> None:
    """Once a network's sets exist, memory, bus, DMA setup, MACs per cycle, clock, element
    bytes, double buffering, energies and register file are answered without enumerating."""
    from workbench import layers

    net = layers.load_network("lenet5", batch=8)
    base = platforms.load_platform("idsp")
    # sets are capped at the largest memory asked: ask first for one (4 MiB at 4 bytes an
    # element: 2^20) that covers every variant below (up to 1 MiB at 1 byte an element)
    session = Caches()
    explore.best_mappings(net.tiled_layers(), base, [4 << 20], caches=session)

    def refuse(*args, **kwargs):
        raise AssertionError("tiles enumerated again")

    monkeypatch.setattr(candidates, "build", refuse)
    monkeypatch.setattr(tiling.model, "gen_tiles", refuse)
    monkeypatch.setattr(explore.solutions, "gen_tiles", refuse)
    monkeypatch.setattr(perf, "counts_array", refuse)
    variants = [base.replace(**change) for change in (
        {"local_mem_bytes": 4096}, {"bus_elems_per_cycle": 3.5}, {"dma_setup_cycles": 7},
        {"macs_per_cycle": 100}, {"clock_mhz": 1000}, {"elem_bytes": 1},
        {"double_buffer": False}, {"ext_access_pj": 10}, {"register_file_bytes": 512})]
    for objective in explore.OBJECTIVES:
        table = explore.best_mappings(net.tiled_layers(), variants, [4096, 65536, 1 << 20],
                                      objective=objective, caches=session)
        assert set(table["platform"]) == set(range(len(variants)))


def test_report_states_the_objective_of_every_mapping() -> None:
    from workbench import report

    data = report.build("lenet5", "idsp", report.ReportSettings(batch=8, sweep_memory_kb=(16,),
                                                                objective="energy"))
    html = report.summary_html(data)
    assert "chosen by least energy" in html
    table = report.per_layer_table(data.per_layer)
    assert list(table["chosen by"]) == ["energy"] * len(layers.load_network("lenet5").layers)


@settings(max_examples=examples(40))
@given(layer=layers_st, widths=st.tuples(*[st.sampled_from([0.5, 1, 2, 4])] * 4),
       sizes=st.lists(st.integers(8, 30000), min_size=1, max_size=4))
def test_mixed_precision_traffic_equals_every_tile(layer, widths, sizes) -> None:
    """explore.traffic_table's seed000 model (traffic candidate sets) against the least
    traffic over every tile, inputs/weights/outputs/partial sums at random widths."""
    from workbench.tiling.dataflow import Precision

    precision = Precision(*widths)
    got = explore.traffic_table([layer], sizes, ["seed000"], precision)
    best = {size: np.inf for size in sizes}
    for schedule in tiling.SCHEDULES:
        for tiles in tiling.gen_tiles(layer, reduced=False):
            c = tiling.counts_array(layer, tiles, schedule)
            final = (c["n_tiles"] // -(-layer.Kc // tiles[:, 4])) * c["bout"]
            traffic = (precision.inputs * c["in_accesses"] + precision.weights * c["w_accesses"]
                       + precision.outputs * final
                       + precision.partial_sums * (c["out_accesses"] - final))
            buffer = (precision.inputs * c["bin"] + precision.weights * c["bw"]
                      + precision.partial_sums * c["bout"])
            for size in sizes:
                if (buffer <= size).any():
                    best[size] = min(best[size], float(traffic[buffer <= size].min()))
    table = dict(zip(got["memory_bytes"], got["traffic_bytes"], strict=True))
    for size in sizes:
        want = best[size]
        assert (np.isnan(table[size]) and want == np.inf) or table[size] == want


def test_building_sets_shows_progress(cache, capsys) -> None:
    plat = platforms.load_platform("idsp")
    explore.best_mappings([LAYER], plat, progress=True)
    assert "candidate sets: 100%" in capsys.readouterr().err
    explore.best_mappings([LAYER], plat, progress=True)  # all cached: no bar
    assert "candidate sets" not in capsys.readouterr().err
