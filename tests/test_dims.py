"""One dimension vocabulary (`workbench.layers.dims`): the enum, its label tables, the
readers of old inputs, and a check that no module but dims.py spells the seeds' names as
dimension keys."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer, dims
from workbench.layers.dims import (
    KERNEL_DIMS,
    LAYER_DIMS,
    SEED000_LABEL,
    SEED000_LOOP,
    SEED000_ORDER,
    SEED002_LOOP,
    SEED002_TILE,
    SIMD_LABEL,
    Dim,
    Loop,
)
from workbench.tiling import TILE_DIMS, Tile
from workbench.tiling import dataflow as df

ROOT = Path(__file__).resolve().parents[1]


def test_dim_members_are_their_letters_and_say_what_they_count() -> None:
    assert [d.value for d in Dim] == ["X", "Y", "C", "M", "N", "FX", "FY"]
    assert set(LAYER_DIMS) | set(KERNEL_DIMS) == set(Dim)
    assert not set(LAYER_DIMS) & set(KERNEL_DIMS)
    docs = {d: d.__doc__ for d in Dim}
    assert len(set(docs.values())) == len(Dim)  # each its own line, not the class's
    assert all(doc and "\n" not in doc and "(" in doc for doc in docs.values())  # a unit
    assert "output columns" in Dim.X.__doc__ and "input channels" in Dim.C.__doc__
    # a str key and a Dim key are one key
    assert {Dim.X: 1}["X"] == 1 and {"M": 2}[Dim.M] == 2 and f"{Dim.FX}" == "FX"


def test_label_tables_are_one_to_one_over_their_dimensions() -> None:
    for table in (SEED000_LABEL, SEED002_TILE, SIMD_LABEL):
        assert set(table) == set(LAYER_DIMS)
        assert len(set(table.values())) == len(table)
    every_loop = {Loop(d, 0) for d in Dim} | {Loop(d, 1) for d in LAYER_DIMS}
    for table in (SEED002_LOOP, SEED000_LOOP):
        assert set(table) == every_loop and len(set(table.values())) == len(table)
    assert TILE_DIMS == ("TOx", "TOy", "TOc", "TOn", "TKc")
    assert set(SEED000_ORDER) == set(LAYER_DIMS)


def test_schema_datapath_dimensions_are_the_layer_dims() -> None:
    """The schemas import nothing of workbench.layers, so they restate the letters."""
    from workbench.schemas.memory import DATAPATH_DIMS

    assert DATAPATH_DIMS == tuple(d.value for d in LAYER_DIMS)


@given(sizes=st.tuples(*(st.integers(1, 64) for _ in range(5))))
def test_tile_by_dim_is_the_tile_by_position(sizes) -> None:
    tile = Tile(*sizes)
    by_label = dict(zip(TILE_DIMS, sizes, strict=True))  # the seed's columns, in order
    for d in LAYER_DIMS:
        assert tile[d] == by_label[SEED000_LABEL[d]] == getattr(tile, d.value)
    assert Tile.of({d: tile[d] for d in LAYER_DIMS}) == tile
    with pytest.raises(KeyError, match="no dimension 'FX'"):
        tile["FX"]


def _layer() -> ConvLayer:
    return ConvLayer(name="v", Ox=6, Oy=5, Oc=4, Kx=3, Ky=3, Kc=3, Px=1, Py=1, On=2)


def test_a_schedule_in_the_seed_labels_is_the_same_schedule() -> None:
    """An old input (seed 002 loop and tile names) is read into Dim: the same schedule and the
    same counts as one written in Dim."""
    old = df.DataflowSchedule(("FX", "FY", "SX", "SY", "IF", "OF", "N", "TIF", "TSX", "TSY",
                               "TOF", "TN"), {"jss": 3, "iss": 5, "css": 1, "mss": 2,
                                              "nss": 1}, {"I": 6, "W": 6, "O": 7})
    new = df.DataflowSchedule(
        df.CANONICAL + tuple(Loop(d, 1) for d in (Dim.C, Dim.X, Dim.Y, Dim.M, Dim.N)),
        {Dim.X: 3, Dim.Y: 5, Dim.C: 1, Dim.M: 2, Dim.N: 1}, {"I": 6, "W": 6, "O": 7})
    assert old == new
    assert df.evaluate(_layer(), old) == df.evaluate(_layer(), new)
    with pytest.raises(WorkbenchError, match="loop 'TQX': not a loop") as err:
        df.DataflowSchedule(("TQX",) * 12, {}, {"I": 0, "W": 0, "O": 0})
    assert "\n" not in str(err.value)
    with pytest.raises(WorkbenchError, match=r"tile sizes lack Y \(iss\)"):
        dims.read_tiles({"jss": 1, "css": 1, "mss": 1, "nss": 1})
    with pytest.raises(WorkbenchError, match="tile size 'kss': not a dimension"):
        dims.read_tiles({"kss": 1})


# --- the seeds' names live in dims.py only -----------------------------------------------------

# the seeds' dimension names that are not Dim letters themselves (N, FX, FY are both)
SEED_NAMES = (set(SEED000_LABEL.values()) | set(SEED002_TILE.values())
              | set(SEED002_LOOP.values())) - {d.value for d in Dim}
ALLOWED = {"workbench/layers/dims.py"}  # the label tables and the readers of old inputs


def seed_name_uses(source: str) -> list[str]:
    """Where a module uses a seed name as a dimension: a dict key, an element of a tuple, list
    or set, an index, a comparison operand, an attribute, a keyword or a field. Prose
    (docstrings, messages, f-string text) is not a use."""
    found = []

    def hit(node: ast.AST, what: str, name: str) -> None:
        found.append(f"line {node.lineno}: {name!r} as {what}")

    def named(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value in SEED_NAMES:
            return node.value
        return None

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if (name := named(key)):
                    hit(key, "a key", name)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            for element in node.elts:
                if (name := named(element)):
                    hit(element, "an element", name)
        elif isinstance(node, ast.Subscript) and (name := named(node.slice)):
            hit(node, "an index", name)
        elif isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                if (name := named(operand)):
                    hit(operand, "a comparison", name)
        elif isinstance(node, ast.Attribute) and node.attr in SEED_NAMES:
            hit(node, "an attribute", node.attr)
        elif isinstance(node, ast.keyword) and node.arg in SEED_NAMES:
            hit(node.value, "a keyword", node.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                node.target.id in SEED_NAMES:
            hit(node, "a field", node.target.id)
    return sorted(found, key=lambda use: int(use.split(":")[0].split()[1]))


def test_no_module_but_dims_spells_the_seed_names_as_dimensions() -> None:
    bad = {}
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in ALLOWED and (uses := seed_name_uses(path.read_text())):
            bad[rel] = uses
    assert not bad, bad


def test_the_seed_name_check_can_fail() -> None:
    """Planted uses of each kind are reported; the same code in Dim, and prose, are not."""
    planted = '''
from dataclasses import dataclass, replace

@dataclass
class T:
    TOx: int

def f(t, n, loop, tile):
    """tiles jss, loops TSX: prose"""
    a = {"jss": 1}
    b = n["TSX"]
    c = loop in ("FX", "SX")
    d = loop == "TOF"
    e = t.TKc
    g = replace(tile, TOc=2)
    h = ["css"]
    raise ValueError(f"tile TOx={a} in mss")
'''
    uses = seed_name_uses(planted)
    assert [u.split(" as ")[1] for u in uses] == [
        "a field", "a key", "an index", "an element", "a comparison", "an attribute",
        "a keyword", "an element"], uses
    assert "'jss' as a key" in uses[1] and "'SX' as an element" in uses[3]
    clean = '''
from workbench.layers.dims import Dim, Loop

def f(t, n, loop, tile):
    """tiles jss, loops TSX: prose"""
    a = {Dim.X: 1}
    b = n[Loop(Dim.X, 1)]
    c = loop.dim in (Dim.FX, Dim.X)
    e = t.C
    raise ValueError(f"tile TOx={a} in mss")
'''
    assert seed_name_uses(clean) == []
