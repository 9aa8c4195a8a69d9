"""Blocking searches kept on disk (explore.search_store): a new session finds the very answer
a search gives, never a wrong one."""

from __future__ import annotations

import dataclasses
import os

import pytest

from workbench.explore import hierarchy_plan as hp
from workbench.explore import search_store
from workbench.explore.search_store import SearchStore, search_key
from workbench.hierarchy.levels import Hierarchy, Level
from workbench.hierarchy.search import NoFitError, search
from workbench.layers import ConvLayer
from workbench.memo import Caches

HIER = Hierarchy((Level("DRAM", None, 16, 320.0), Level("SRAM", 4096, 64)), "small", 1.0)
LAYERS = [ConvLayer(name="a", Ox=12, Oy=10, Oc=16, Kc=8, Kx=3, Ky=3, Px=1, Py=1),
          ConvLayer(name="b", Ox=7, Oy=7, Oc=24, Kc=12, Kx=1, Ky=1, Sx=1, Sy=1),
          ConvLayer(name="c", Ox=9, Oy=9, Oc=8, Kc=4, Kx=5, Ky=5, Sx=2, Sy=2)]


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    return tmp_path


def _counting(monkeypatch) -> list[str]:
    calls: list[str] = []

    def counting(layer, hierarchy, precision, size_energy, bypass=True, caches=None):
        calls.append(layer.name)
        return search(layer, hierarchy, precision, size_energy, bypass=bypass, caches=caches)

    monkeypatch.setattr(hp, "search", counting)
    return calls


@pytest.mark.parametrize("bypass", [True, False])
def test_a_new_session_loads_what_a_search_finds(cache, monkeypatch, bypass) -> None:
    calls = _counting(monkeypatch)
    for layer in LAYERS:
        hp.layer_plan(layer, HIER, caches=Caches(), bypass=bypass)
    assert len(calls) == len(LAYERS)
    for layer in LAYERS:
        loaded = hp.layer_plan(layer, HIER, caches=Caches(), bypass=bypass).found
        fresh = search(layer, HIER, hp.DEFAULT_PRECISION, hp.SIZE_ENERGY, bypass=bypass)
        assert loaded == fresh  # blocking, energy, chains and combinations
    assert len(calls) == len(LAYERS)  # the second sessions searched nothing


def test_the_key_is_the_shape_not_the_names(cache, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    hp.layer_plan(LAYERS[0], HIER, caches=Caches())
    renamed = dataclasses.replace(LAYERS[0], name="other")
    hp.layer_plan(renamed, Hierarchy(HIER.levels, "other name", 1.0), caches=Caches())
    wider = Hierarchy((HIER.levels[0], Level("SRAM", 8192, 64)), "small", 1.0)
    hp.layer_plan(LAYERS[0], wider, caches=Caches())
    assert calls == ["a", "a"]  # the renamed pair was found; a new capacity was searched


def test_broken_or_foreign_files_are_searched_again(cache, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    first = hp.layer_plan(LAYERS[0], HIER, caches=Caches()).found
    (path,) = (cache / f"searches-{search_store.code_hash()}").glob("*.json")
    path.write_text(path.read_text()[:40])  # a crash mid-write
    assert hp.layer_plan(LAYERS[0], HIER, caches=Caches()).found == first
    text = path.read_text().replace('"key": "', '"key": "x', 1)  # another key's file
    path.write_text(text)
    assert hp.layer_plan(LAYERS[0], HIER, caches=Caches()).found == first
    assert calls == ["a", "a", "a"]


def test_no_fit_is_searched_each_time_with_its_own_names(cache, monkeypatch) -> None:
    calls = _counting(monkeypatch)
    tiny = Hierarchy((HIER.levels[0], Level("SRAM", 4, 64)), "tiny", 1.0)
    for layer in (LAYERS[0], dataclasses.replace(LAYERS[0], name="same shape")):
        with pytest.raises(NoFitError, match=f"layer '{layer.name}'"):
            hp.layer_plan(layer, tiny, caches=Caches(), bypass=False)
    assert calls == ["a", "same shape"]


def test_tables_without_a_name_are_not_stored() -> None:
    assert search_key(LAYERS[0], HIER, hp.DEFAULT_PRECISION, lambda *a: 1.0, True) is None
    assert search_key(LAYERS[0], HIER, hp.DEFAULT_PRECISION, hp.SIZE_ENERGY, True) is not None
    assert search_key(LAYERS[0], HIER, hp.DEFAULT_PRECISION, None, True) is not None


def test_the_folder_is_bounded_and_old_code_goes(cache, monkeypatch) -> None:
    old = cache / "searches-000000000000"
    old.mkdir()
    (old / "x.json").write_text("{}")
    monkeypatch.setattr(search_store, "FILES_KEPT", 2)
    store = SearchStore()
    found = search(LAYERS[0], HIER, hp.DEFAULT_PRECISION, hp.SIZE_ENERGY)
    for i in range(4):
        store.save(f"key {i}", found)
        os.utime(store._path(f"key {i}"), (1000 + i, 1000 + i))
    assert not old.exists() and len(list(store.folder.glob("*.json"))) == 4  # tidied once
    SearchStore().save("key 4", found)  # a new session tidies first: the two newest stay
    assert sorted(p.name for p in store.folder.glob("*.json")) == sorted(
        store._path(k).name for k in ("key 2", "key 3", "key 4"))
