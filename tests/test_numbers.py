"""The one number formatter (`workbench.numbers`) and the places people read its numbers: the
command line's tables and lines on small networks, a report page and the tooltips' JavaScript.
Nowhere an exponent, nowhere a '.0' on a count or a size; values are checked against arithmetic
done here (layer shapes, preset sizes from the seeds), not against the formatter's own output."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from number_reading import bokeh_strings, column_cells, parse_si, parse_size

from workbench import numbers
from workbench.viz import units

EXPONENT = re.compile(r"\d[eE][+-]?\d")
# a number of 100 or more ending in '.0': three significant digits never write one ('24.0 µJ'
# is a measure to three digits; '1024.0', '795,791.0' are counts or sizes gone wrong). Smaller
# counts are checked cell by cell ('16 KB' and '16', not '16.0', in the sweep's table).
BARE_POINT_ZERO = re.compile(r"(?<![\w.,])(\d{3,}|\d{1,3}(,\d{3})+)\.0(?!\d)")
COUNT_CELL = re.compile(r"^-?\d{1,3}(,\d{3})*$")


# the formatter -------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (12, "12"), (9_999, "9,999"), (10_000, "10.0 k"), (98_190_080, "98.2 M"),
    (15_470_264_320, "15.5 G"), (2.5e12, "2.50 T"), (1.5, "1.50"), (float("nan"), "n/a")])
def test_si_counts(value: float, text: str) -> None:
    assert numbers.fmt_si(value) == text


def test_si_with_the_things_counted() -> None:
    assert numbers.fmt_si(98_190_080, "MACs") == "98.2 M MACs"
    assert numbers.fmt_si(800, "params") == "800 params"


@pytest.mark.parametrize(("value", "text"), [
    (64.0, "64"), (1024.0, "1,024"), (795_791.418, "795,791"), (0.5, "0.500"), (-3.0, "-3"),
    (float("inf"), "n/a"), (None, "n/a")])
def test_a_value_of_unknown_kind_is_whole_when_it_is_whole(value, text: str) -> None:
    if value == 795_791.418:
        assert numbers.fmt_count(value) == text  # cycles: whole
    else:
        assert numbers.fmt_value(value) == text


@pytest.mark.parametrize(("value", "text"), [(5 * 2**40, "5 TB"), (64 * 1024, "64 KB"),
                                             (257 * 1024, "257 KB"), (12_544, "12.2 KB")])
def test_sizes_in_binary_units(value: float, text: str) -> None:
    assert numbers.fmt_bytes(value) == text


@given(st.integers(min_value=-10**15, max_value=10**15))
def test_a_count_reads_back_exactly(n: int) -> None:
    text = numbers.fmt_count(n)
    assert COUNT_CELL.match(text) and int(text.replace(",", "")) == n
    assert numbers.fmt_value(float(n)) == text if abs(n) < 2**53 else True


@given(st.floats(min_value=1e-9, max_value=1e16, allow_nan=False))
def test_no_formatter_writes_an_exponent_and_si_reads_back(x: float) -> None:
    for text in (numbers.fmt_number(x), numbers.fmt_value(x), numbers.fmt_si(x),
                 numbers.fmt_bytes(x), numbers.fmt_energy(x), numbers.fmt_seconds(x),
                 numbers.fmt_traffic(x), numbers.fmt_gops(x)):
        assert not EXPONENT.search(text), text
    back = parse_si(numbers.fmt_si(x))
    assert back == pytest.approx(x, rel=5e-3, abs=5e-3)
    assert parse_size(numbers.fmt_bytes(x)) == pytest.approx(x, rel=5e-3, abs=5e-3)


def test_the_tooltip_javascript_follows_the_python_rules() -> None:
    """HOVER_JS, run by node, gives the text `workbench.numbers` gives, kind by kind."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no node to run the tooltip's JavaScript")
    values = [0.0, 1.0, 12.0, 64.0, 1024.0, 0.5, 1.5, 2.5, -0.5, -1.5, 3.14159, 99.96, 1185.3,
              12_345.678, 795_791.418, 2.5e-6, 7.3e-4, 4.5e7, 1.2345e10, 6.02e14, -42.5]
    python = {"value": numbers.fmt_value, "count": numbers.fmt_count,
              "bytes": numbers.fmt_bytes, "traffic": numbers.fmt_traffic,
              "energy": numbers.fmt_energy, "time": numbers.fmt_seconds, "gops": numbers.fmt_gops}
    cases = [(v, kind, scale) for kind in python for v in values for scale in (1.0, 1024.0)]
    script = ("const f = (value, kind, scale) => {" + units.HOVER_JS + "};"
              f"const cases = {json.dumps(cases)};"
              "console.log(JSON.stringify(cases.map(([v, k, s]) => f(v, k, s))));")
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True)
    for (v, kind, scale), text in zip(cases, json.loads(out.stdout), strict=True):
        assert text == python[kind](v * scale), (v, kind, scale)
    assert units.hover_kind("energy_uj") == ("energy", 1e6)
    assert units.hover_kind("local_mem_kb") == ("bytes", 1024.0)
    assert units.hover_kind("cores") == ("value", 1.0)


# the command line ----------------------------------------------------------------------------
GRID = "networks: [lenet5]\nplatforms: [idsp]\nbatch: 8\nmemory_kb: [16, 64]\nacc_bits: [16]\n"
COMMANDS = {
    "show": ["show", "lenet5", "--batch", "8"],
    "networks": ["networks"],
    "platforms": ["platforms"],
    "explore": ["explore", "lenet5", "--platform", "idsp", "--batch", "8"],
    "explore_json": ["--json", "explore", "lenet5", "--platform", "idsp", "--batch", "8"],
    "explore_levels": ["explore", "lenet5", "--platform", "seed001_3level"],
    "traffic": ["traffic", "lenet5", "--memory-kb", "4", "64"],
    "simd": ["simd", "lenet5", "--batch", "8"],
    "hierarchy": ["hierarchy", "lenet5", "--levels", "seed001_two_level", "--budget-kb", "64"],
    "sweep": ["sweep", "grid.yaml", "--out", "sw/", "--jobs", "1"],
    "status": ["sweep", "--status", "sw/"],
    "report": ["report", "lenet5", "--platform", "idsp", "--params", "batch=8",
               "buffer_sizes_kb=[4, 64]", "--out", "lenet5.html"],
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """stdout of each command of COMMANDS, run in order in one scratch folder."""
    work = tmp_path_factory.mktemp("numbers")
    (work / "grid.yaml").write_text(GRID)
    out = {}
    for name, argv in COMMANDS.items():
        run = subprocess.run([sys.executable, "-m", "workbench.cli", *argv], cwd=work,
                             capture_output=True, text=True, timeout=600,
                             stdin=subprocess.DEVNULL)
        assert run.returncode == 0, (name, run.stderr[-2000:])
        out[name] = run.stdout
    out["report_html"] = (work / "lenet5.html").read_text(encoding="utf-8")
    return out


def test_no_command_prints_an_exponent_or_a_bare_point_zero(outputs: dict[str, str]) -> None:
    for name, text in outputs.items():
        if name in ("explore_json", "report_html"):
            continue
        assert not EXPONENT.search(text), (name, EXPONENT.search(text))
        bad = BARE_POINT_ZERO.search(text)
        assert bad is None, (name, text[max(0, bad.start() - 80):bad.end() + 20])


def test_show_counts_and_sizes(outputs: dict[str, str]) -> None:
    text = outputs["show"]
    per_image = 28 * 28 * 32 * 25 + 14 * 14 * 64 * 25 * 32 + 3136 * 512 + 512 * 10
    title = " ".join(text.split("\nlayer")[0].split())  # the title, wrapped at 100 columns
    macs = re.search(r"batch 8, (.+?) MACs", title).group(1)
    assert parse_si(macs) == pytest.approx(8 * per_image, rel=5e-3)
    cells = column_cells(text, ["layer", "macs", "params", "input"])
    assert cells["conv1"]["macs"] == f"{8 * 28 * 28 * 32 * 25:,}"
    assert cells["fc3"]["params"] == f"{3136 * 512:,}"
    assert cells["conv2"]["macs"] == f"{8 * 14 * 14 * 64 * 25 * 32:,}"
    assert parse_size(cells["conv1"]["input"]) == pytest.approx(8 * 28 * 28 * 2, rel=5e-3)
    assert parse_size(cells["fc3"]["input"]) == 8 * 3136 * 2
    for row in cells.values():
        assert COUNT_CELL.match(row["macs"]) and COUNT_CELL.match(row["params"])


def test_platforms_and_networks_in_human_units(outputs: dict[str, str]) -> None:
    """Preset figures as the seeds give them: idsp 450 MHz and 128 KB (seed 000), nve 64 KB
    (seed 003), shave's 12 cores (seed 004)."""
    rows = column_cells(outputs["platforms"], ["platform", "clock", "bus elem/cycle",
                                               "local memory", "cores"])
    assert rows["idsp"]["clock"] == "450 MHz" and rows["idsp"]["local memory"] == "128 KB"
    assert rows["nve"]["local memory"] == "64 KB" and rows["shave"]["cores"] == "12"
    assert rows["hwc"]["bus elem/cycle"] == "12"  # 12.0 in the file
    nets = column_cells(outputs["networks"], ["network", "layers", "tiled", "MACs"])
    assert nets["lenet5"]["layers"] == "10" and nets["lenet5"]["tiled"] == "4"
    assert parse_si(nets["vgg16"]["MACs"]) == pytest.approx(15_470.3e6, rel=5e-3)
    assert parse_si(nets["lenet5"]["MACs"]) == pytest.approx(12.27e6, rel=5e-3)


def test_explore_cycles_are_whole_and_add_up_to_the_total(outputs: dict[str, str]) -> None:
    text = outputs["explore"]
    cells = column_cells(text, ["layer", "ext. accesses", "cycles"])
    for row in cells.values():
        for col in ("ext. accesses", "cycles"):
            assert COUNT_CELL.match(row[col]), row
    total = int(re.search(r"^total: ([\d,]+) cycles", text, flags=re.M).group(1)
                .replace(",", ""))
    assert total == sum(int(r["cycles"].replace(",", "")) for r in cells.values())
    doc = json.loads(outputs["explore_json"])
    assert total == round(doc["totals"]["cycles"])


def test_sweep_messages_and_table(outputs: dict[str, str]) -> None:
    text = outputs["sweep"]
    assert "2 of 2 cases in sw/results.parquet" in text and "//" not in text
    rows = column_cells(text, ["network", "platform", "memory", "acc_bits"], key="memory")
    assert set(rows) == {"16 KB", "64 KB"}
    assert all(r["acc_bits"] == "16" for r in rows.values())


def test_hierarchy_sizes_and_counts(outputs: dict[str, str]) -> None:
    text = outputs["hierarchy"]
    prose = " ".join(text.split())  # lines are wrapped at 100 columns
    assert "seed001_two_level (257 KB on chip)" in prose  # a 256 KB SRAM and a 1 KB RF
    assert "co-designed within 64 KB" in prose and "level sizes 1, 2, 4, 8, 16, 32, 64 KB" in prose
    cells = column_cells(text, ["layer", "level", "I", "W"], rows_of="conv1",
                         key="level")
    assert cells["DRAM"]["W"] == "800"  # conv1's 5×5×1×32 weights, read once from DRAM


def test_traffic_sizes(outputs: dict[str, str]) -> None:
    rows = [line.split()[:2] for line in outputs["traffic"].splitlines()
            if re.match(r"\d", line)]  # the rows of the table, by memory size
    assert rows == [["4", "KB"], ["64", "KB"]]


def test_report_page_text_and_plots(outputs: dict[str, str]) -> None:
    """What the page shows (its text and every string of its plots and tables, JavaScript
    code and binary arrays apart): no exponent and no bare '.0'; every tooltip of a number
    formats it (bokeh's default writes '1.185e+3')."""
    page = outputs["report_html"]
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.S)
    shown = [html.unescape(re.sub(r"<[^>]+>", " ", body))]
    strings = bokeh_strings(page)
    assert strings, "no bokeh document found in the report"
    shown += [s for path, s in strings if not path.endswith("/code")]
    for text in shown:
        assert not EXPONENT.search(text), text[:200]
        assert not BARE_POINT_ZERO.search(text), text[:200]
    raw = {s for path, s in strings if path.endswith("/tooltips")
           and re.fullmatch(r"@\{?\w+\}?", s)}
    text_fields = {"@layer", "@schedule", "@tile", "@bound", "@kind", "@part", "@cores",
                   "@name", "@label", "@case_id"}
    assert raw <= text_fields, raw - text_fields


def test_parsers_of_this_file() -> None:
    assert parse_si("98.2 M") == 98.2e6 and parse_si("1,024") == 1024
    assert parse_size("12.2 KB") == 12.2 * 1024 and parse_size("0 B") == 0
    assert math.isnan(parse_si("n/a"))

