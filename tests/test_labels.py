"""Point labels (`viz.labels.place_labels`): placed labels never overprint each other or another
point and stay inside the plot frame; points drawn on one spot share a label that counts
them; notebook 07's roofline keeps the roof in view."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.viz import design_plots as dp
from workbench.viz.labels import CHAR_PX, place_labels

FRAME = (400.0, 280.0)
FONT = 9.33


def _px(values, size, padding=0.2):
    """Pixels on a log axis over the values padded as DataRange1d pads (written here)."""
    logs = [math.log10(v) for v in values]
    lo, hi = min(logs), max(logs)
    span = (hi - lo) or 1.0
    start = lo - span * padding / 2
    return [(v - start) / (span * (1 + padding)) * size for v in logs]


def _box(x, y, text, align, dx, dy):
    """The text's box as bokeh draws it: anchored at x + dx, its bottom at y + dy."""
    width = len(text) * CHAR_PX * FONT
    left = {"left": x + dx, "right": x + dx - width, "center": x - width / 2}[align]
    return left, y + dy, left + width, y + dy + FONT


def _apart(a, b) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


points = st.lists(st.tuples(st.floats(0.01, 1e4), st.floats(0.01, 1e4)), min_size=1,
                  max_size=30)


@settings(max_examples=200, deadline=None)
@given(points, st.floats(0.01, 1e4))
def test_labels_neither_overprint_nor_leave_the_frame(pts, roof) -> None:
    """Placed labels: inside the frame, apart from each other, off every other point's
    marker and off the roof line; each names its point and counts at most all points."""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    names = [f"layer{i}" for i in range(len(pts))]
    out = place_labels(xs, ys, names, FRAME, marker_px=10, extra_y=[roof], lines_y=[roof])
    px = _px(xs, FRAME[0])
    py = _px([*ys, roof], FRAME[1])
    line = (0, py[-1] - 1, FRAME[0], py[-1] + 1)
    boxes, counted = [], 0
    for i, text in enumerate(out["label"]):
        if not text:
            continue
        assert text.split(" +")[0] == names[i]
        counted += 1 + (int(text.split(" +")[1]) if " +" in text else 0)
        box = _box(px[i], py[i], text, out["label_align"][i], out["label_dx"][i],
                   out["label_dy"][i])
        assert -1e-9 <= box[0] and box[2] <= FRAME[0] + 1e-9
        assert -1e-9 <= box[1] and box[3] <= FRAME[1] + 1e-9
        assert _apart(box, line)
        for j in range(len(pts)):  # no other point's marker under it
            if abs(px[j] - px[i]) >= 6 or abs(py[j] - py[i]) >= 6:
                assert _apart(box, (px[j] - 5, py[j] - 5, px[j] + 5, py[j] + 5))
        boxes.append(box)
    assert counted <= len(pts)
    for a in range(len(boxes)):
        for b in range(a):
            assert _apart(boxes[a], boxes[b])


def test_a_blob_of_points_is_counted_in_one_label() -> None:
    """Twelve points 8 px apart in a row: too close for a label each; the labels placed
    count every point."""
    xs = [10 ** (2 + k * 0.035) for k in range(12)] + [1.0, 1e4]
    out = place_labels(xs[:12], [50.0] * 12, [f"c{k}" for k in range(12)], FRAME,
                       others=([1.0, 1e4], [1.0, 1e4]))
    texts = [t for t in out["label"] if t]
    assert 1 <= len(texts) < 12
    assert sum(1 + (int(t.split(" +")[1]) if " +" in t else 0) for t in texts) == 12


def test_points_on_one_spot_share_a_label_that_counts_them() -> None:
    out = place_labels([10, 10, 10, 1000], [5, 5, 5, 50], ["conv3_1", "conv3_2", "conv3_3",
                                                           "classifier"], FRAME)
    assert out["label"] == ["conv3_1 +2", "", "", "classifier"]
    assert out["label_align"][3] == "right"  # the rightmost point's label goes left of it


def test_roofline_labels_and_the_roof_in_view() -> None:
    """Notebook 07's roofline data carries the label columns, placed with the roof's height
    in the y range (a point just under the roof has no room above it for a label)."""
    per_layer = pd.DataFrame({"layer": ["a", "b"], "schedule": ["inter_kc"] * 2,
                              "TOx": [1, 1], "TOy": [1, 1], "TOc": [1, 1], "TOn": [1, 1],
                              "TKc": [1, 1], "footprint_bytes": [1024, 1024],
                              "cycles": [10, 10], "throughput_gops": [1.0, 2.0],
                              "ctc": [1.0, 100.0], "ext_accesses": [1, 1],
                              "energy_pj": [1.0, 1.0]})
    low = dp.roofline_points_data(per_layer, None)
    assert low["label"] == ["a", "b"] and low["layer"] == ["a", "b"]
    high = dp.roofline_points_data(per_layer, 1e6)  # the roof far above: both still placed
    assert high["label"] == ["a", "b"]
    empty = dp.roofline_points_data(pd.DataFrame(), 10.0)
    assert empty["label"] == [] and empty["label_dx"] == []


def test_tradeoff_hover_reads_in_units_that_fit() -> None:
    """The time-energy plot's hover gives each size's totals in s/ms and J/mJ/µJ, not
    64,401.214 ms or 10,616,464.4 µJ."""
    sizes = pd.DataFrame({"memory_bytes": [128, 8192], "time_ms": [64401.214, 8.6],
                          "energy_pj": [1.06164644e13, 9.3e8], "throughput_gops": [1.0, 2.0],
                          "traffic_mb": [1.0, 2.0]})
    data = dp.memory_points_data(sizes)
    assert data["time_text"] == ["64.4 s", "8.60 ms"]
    assert data["energy_text"] == ["10.6 J", "930 µJ"]
    assert data["time_ms"] == [64401.214, 8.6]  # the plotted values stay in ms and µJ
