"""Fuzzed YAML documents: the shipped network files (data/networks/*.yaml) and sweep grids,
mutated by hypothesis strategies — values swapped for NaN, infinity, wrong types, huge or
negative numbers; keys dropped or invented; layers duplicated, dropped or replaced; and the
text itself cut, spliced with YAML syntax, anchors and tags, made deep, or made invalid UTF-8.
Every file must load cleanly or fail with one WorkbenchError line within 10 s
(`test_fuzz_harness`); `make fuzz` runs 2,000+ files per format and prints the counts.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import strategies as st
from test_fuzz_harness import check, fuzz_count, generate

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = sorted((ROOT / "data" / "networks").glob("*.yaml"))

NASTY = [float("nan"), float("inf"), -float("inf"), -1, 0, 1, 2, 3, 2.5, True, False, None,
         "abc", "", [], [1], [1, 2], [3, 3, 3], [0, 0], [-1, 2], {"a": 1}, 10**12, 2**63,
         -10**30, [[0], [1]], [[0, 0]], "3", 1e308, [1.5, 2], [[0, 99]], "max", "sum", "conv"]
LAYER_KEYS = ["maps", "kernel", "stride", "pad", "groups", "out", "connections", "size", "alpha",
              "beta", "k", "inputs", "op", "parts", "mode", "ceil_mode", "global", "outputs",
              "input", "type", "name", "bogus"]
SPLICES = ["{", "}", "[", "]", ": ", "- ", "&a ", "*a", "!!python/object/apply:os.system ",
           "\t", "---\n", "...\n", "%YAML 1.1\n", "? ", "|\n", ">\n", "'", '"', "#", "\x00",
           "\ufeff", "é", " 1e999", " .nan", " !!binary aGVsbG8=", "<<: *a\n", "\n  - ",
           "!!set {a, b}", "2001-13-45", " 0x1F", " 0o17", " ~", "\\u0000"]
GRIDS = [
    {"networks": ["lenet5"], "platforms": ["idsp"]},
    {"networks": ["lenet5", "cifar10_quick"], "platforms": ["idsp", "shave"], "batch": 2,
     "memory_kb": [16, 64.5], "acc_bits": [16, 24], "schedules": ["intra", "inter_kc"],
     "overrides": {"cores": [1, 2], "dma_broadcast": [False, True]}, "bound": "weights",
     "objectives": ["cycles", "edp"], "fusion": ["auto", "off"], "reports": False,
     "report_timeout_s": 60, "report_retries": 0},
    {"networks": ["vgg16"], "platforms": ["nve"], "traffic_models": ["seed000", "dataflow"],
     "weights": {"lenet5": "lenet5_mnist.npz"}, "data": {"lenet5": "digits.npz"}},
]


@functools.cache
def _network_docs() -> tuple[Any, ...]:
    return tuple(yaml.safe_load(p.read_text()) for p in NETWORKS)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path into `doc`."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _paths(value, (*prefix, index))
    return out


def _set(doc: Any, path: tuple, value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def structural(draw: st.DrawFn, doc: Any, keys: list[str]) -> Any:
    """The document with 1–4 value-level mutations."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        how = draw(st.sampled_from(["value", "value", "key", "delete", "layers", "tweak",
                                    "tweak"]))
        path = draw(st.sampled_from(paths))
        nasty = copy.deepcopy(draw(st.sampled_from(NASTY)))  # never the shared pool entry
        numbers = [p for p in paths if type(_get(doc, p)) in (int, float)]
        if how == "tweak" and numbers:  # a plausible size: reaches the cross-field rules
            doc = _set(doc, draw(st.sampled_from(numbers)), draw(st.integers(0, 70)))
        elif how == "value":
            doc = _set(doc, path, nasty)
        elif how == "delete" and path:
            doc = _set(doc, path, None, delete=True)
        elif how == "key":
            target = draw(st.sampled_from([p for p in paths if isinstance(
                _get(doc, p), dict)] or [()]))
            if isinstance(_get(doc, target), dict):
                _get(doc, target)[draw(st.sampled_from(keys))] = nasty
        elif how == "layers" and isinstance(doc, dict) and isinstance(doc.get("layers"), list) \
                and doc["layers"]:
            items = doc["layers"]
            index = draw(st.integers(0, len(items) - 1))
            op = draw(st.sampled_from(["dup", "drop", "swap", "replace"]))
            if op == "dup":
                items.insert(index, copy.deepcopy(items[index]))
            elif op == "drop":
                items.pop(index)
            elif op == "swap":
                other = draw(st.integers(0, len(items) - 1))
                items[index], items[other] = items[other], items[index]
            else:
                items[index] = nasty
    return doc


def _get(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def textual(draw: st.DrawFn, text: str) -> bytes:
    """The text with 0–3 syntax-level mutations, as bytes (possibly not UTF-8)."""
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["splice"] * 4 + ["cut"] * 2 + ["truncate", "deep",
                                                                   "bomb"]))
        if how == "splice":
            text = text[:pos] + draw(st.sampled_from(SPLICES)) + text[pos:]
        elif how == "cut":
            text = text[:pos] + text[pos + draw(st.integers(1, 40)):]
        elif how == "truncate":
            text = text[:pos]
        elif how == "deep":
            depth = draw(st.sampled_from([30, 70, 5000]))
            text = text[:pos] + "[" * depth + "]" * depth + text[pos:]
        else:
            text = ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
                f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + text)
    data = text.encode("utf-8")
    if draw(st.integers(0, 19)) == 0:
        flips = bytearray(data)
        for _ in range(draw(st.integers(1, 5))):
            if flips:
                flips[draw(st.integers(0, len(flips) - 1))] = draw(st.integers(128, 255))
        data = bytes(flips)
    return data


@st.composite
def mutated_network(draw: st.DrawFn) -> bytes:
    doc = draw(st.sampled_from(_network_docs()))
    doc = draw(structural(doc, LAYER_KEYS))
    return draw(textual(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)))


@st.composite
def mutated_grid(draw: st.DrawFn) -> bytes:
    doc = draw(structural(draw(st.sampled_from(GRIDS)), [*GRIDS[1], "traffic_models",
                                                         "weights", "data", "bogus"]))
    return draw(textual(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)))


def _write(tmp_path: Path, name: str, blobs: list[bytes]) -> list[Path]:
    files = []
    for index, data in enumerate(blobs):
        path = tmp_path / f"{name}{index}.yaml"
        path.write_bytes(data)
        files.append(path)
    return files


def test_mutated_network_yaml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blobs = generate(mutated_network(), fuzz_count(400), fixed_seed=17)
    items = [("network", p) for p in _write(tmp_path, "net", blobs)]
    items += [("network", p) for p in NETWORKS]  # the originals load
    counts = check("network YAML", items, tmp_path, capsys)
    assert counts["ok"] >= len(NETWORKS) and counts["error"] > len(blobs) // 3


def test_mutated_grid_yaml(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    blobs = generate(mutated_grid(), fuzz_count(300), fixed_seed=17)
    originals = [yaml.safe_dump(doc).encode() for doc in GRIDS]
    items = [("grid", p) for p in _write(tmp_path, "grid", blobs + originals)]
    counts = check("grid YAML", items, tmp_path, capsys)
    assert counts["ok"] >= len(GRIDS) and counts["error"] > len(blobs) // 3
