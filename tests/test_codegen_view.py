"""The notebook's code-generation view: one Gantt chart per version, driven by
ui.codegen_view, and the measured table beside it."""

from __future__ import annotations

from bokeh.models import ColumnDataSource

from workbench import layers, platforms, ui
from workbench.simd import codegen

NVE = platforms.load_platform("nve")


def test_codegen_view_draws_every_issued_operation() -> None:
    layer = layers.load_network("face_detector")["L4"]
    chart, table = ui.codegen_view(layer, NVE, rows=2)
    assert list(table["version"]) == ["automatic", "+packing", "+modulo", "+fusion"]
    assert len(chart.children) == 4
    sources = [r.data_source for fig in chart.children for r in fig.renderers]
    assert all(isinstance(s, ColumnDataSource) for s in sources)
    for version, src in zip(codegen.VERSIONS, sources, strict=True):
        c = codegen.compile_layer(layer, NVE, version)[0]
        program = codegen.layout(c.schedule, 2)
        cells = list(zip(src.data["cycle"], src.data["field"], strict=True))
        assert len(cells) == len(set(cells))          # one operation per field and cycle
        issued = len(program.init) + sum(len(b) for b in program.prologue) + \
            program.repeats * sum(len(b) for b in program.kernel) + \
            sum(len(b) for b in program.epilogue)
        assert len(cells) == issued
        assert max(src.data["cycle"]) == program.cycles - 1   # the last activation
    l4 = table.set_index("version")
    assert l4.loc["+modulo", "ii"] == 46 and l4.loc["+modulo", "mii"] == 46
    assert l4.loc["automatic", "cycles"] > l4.loc["+modulo", "cycles"]
