"""Point labels (`viz.labels.place_labels`): placed labels never overprint each other, another
point or a line drawn (a roof, a front) and stay inside the plot frame; points drawn on one
spot share a label that counts them; notebook 07's roofline keeps the roof in view."""

from __future__ import annotations

import math

import pandas as pd
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.viz import design_plots as dp
from workbench.viz.labels import CHAR_PX, Scene, place_labels

FRAME = (400.0, 280.0)
FONT = 9.33


def _px(values, size, padding=0.2, at=None):
    """Pixels on a log axis over the values padded as DataRange1d pads (written here); of
    the values `at`, when given, on that axis."""
    logs = [math.log10(v) for v in values]
    lo, hi = min(logs), max(logs)
    span = (hi - lo) or 1.0
    start = lo - span * padding / 2
    return [(math.log10(v) - start) / (span * (1 + padding)) * size
            for v in (values if at is None else at)]


def _crossed(box, xs, ys, samples=400) -> bool:
    """Whether the polyline through the pixels (xs, ys) runs through the box: sampled."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys, strict=True), zip(xs[1:], ys[1:], strict=True),
                                  strict=False):
        for k in range(samples + 1):
            x, y = x0 + (x1 - x0) * k / samples, y0 + (y1 - y0) * k / samples
            if box[0] < x < box[2] and box[1] < y < box[3]:
                return True
    return False


def _box(x, y, text, align, dx, dy):
    """The text's box as bokeh draws it: anchored at x + dx, its bottom at y + dy."""
    width = len(text) * CHAR_PX * FONT
    left = {"left": x + dx, "right": x + dx - width, "center": x - width / 2}[align]
    return left, y + dy, left + width, y + dy + FONT


def _to_box(x, y, box) -> float:
    """Pixels from (x, y) to the box's nearest spot."""
    return math.hypot(max(box[0] - x, 0, x - box[2]), max(box[1] - y, 0, y - box[3]))


def _apart(a, b) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


points = st.lists(st.tuples(st.floats(0.01, 1e4), st.floats(0.01, 1e4)), min_size=1,
                  max_size=30)


@settings(max_examples=examples(200), deadline=None)
@given(points, st.floats(0.01, 1e4), st.lists(st.tuples(st.floats(1e-3, 1e5),
                                                        st.floats(1e-3, 1e5)), max_size=8))
def test_labels_neither_overprint_nor_leave_the_frame(pts, roof, path) -> None:
    """Placed labels: inside the frame, 4 px or more apart from each other, off every other
    point's marker, off the roof line and off a polyline drawn, nearer their own point than
    any other; each names its point and counts at most all points."""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    names = [f"layer{i}" for i in range(len(pts))]
    line_x, line_y = [p[0] for p in path], [p[1] for p in path]
    out = place_labels(xs, ys, names, FRAME, Scene(marker_px=10, extra_y=[roof],
                                                   lines_y=[roof], paths=[(line_x, line_y)]))
    px = _px(xs, FRAME[0])
    py = _px([*ys, roof], FRAME[1])
    path_px = _px(xs, FRAME[0], at=line_x), _px([*ys, roof], FRAME[1], at=line_y)
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
        assert not _crossed(box, *path_px)
        near = [j for j in range(len(pts)) if abs(px[j] - px[i]) < 6 and abs(py[j] - py[i]) < 6]
        own = min(_to_box(px[j], py[j], box) for j in near)
        for j in range(len(pts)):  # no other point's marker under it, none as near the text
            if j not in near:
                assert _apart(box, (px[j] - 5, py[j] - 5, px[j] + 5, py[j] + 5))
                assert _to_box(px[j], py[j], box) > own
        boxes.append(box)
    assert counted <= len(pts)
    for a in range(len(boxes)):  # apart, with room between them not to read as one
        for b in range(a):
            assert _apart((boxes[a][0] - 4, boxes[a][1] - 4, boxes[a][2] + 4, boxes[a][3] + 4),
                          boxes[b])


def test_a_blob_of_points_is_counted_in_one_label() -> None:
    """Twelve points 8 px apart in a row: too close for a label each; the labels placed
    count every point."""
    xs = [10 ** (2 + k * 0.035) for k in range(12)] + [1.0, 1e4]
    out = place_labels(xs[:12], [50.0] * 12, [f"c{k}" for k in range(12)], FRAME,
                       Scene(others=([1.0, 1e4], [1.0, 1e4])))
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
    far = {"x": [0.25, 400.0], "y": [1e6, 1e6], "peak": [1e6, 1e6]}
    high = dp.roofline_points_data(per_layer, far)  # the roof far above: both still placed
    assert high["label"] == ["a", "b"]
    empty = dp.roofline_points_data(pd.DataFrame(), far)
    assert empty["label"] == [] and empty["label_dx"] == []


def test_a_line_through_a_labels_place_sends_it_elsewhere() -> None:
    """A sloped roof running just right of a point takes the label's first place (right of
    it): the label goes left, above or below instead, and the roofline data passes the
    roof's whole polyline, not only its peak (the slope crossed labels before)."""
    xs, ys = [10.0, 1000.0, 30.0], [10.0, 1000.0, 5.0]
    roof = ([9.0, 40.0, 100.0], [5.0, 40.0, 40.0])  # right of (10, 10), rising, then flat
    free = place_labels(xs, ys, ["p", "q", "r"], FRAME)
    assert free["label_align"][0] == "left"  # text to the right of its point
    blocked = place_labels(xs, ys, ["p", "q", "r"], FRAME, Scene(paths=[roof]))
    assert blocked["label"][0] == "p" and blocked["label_align"][0] != "left"
    px, py = _px(xs, FRAME[0]), _px(ys, FRAME[1])
    roof_px = _px(xs, FRAME[0], at=roof[0]), _px(ys, FRAME[1], at=roof[1])
    assert _crossed(_box(px[0], py[0], "p +99", "left", free["label_dx"][0],
                         free["label_dy"][0]), *roof_px)  # where it went without the roof
    # (a label keeps room for a count joined later: " +99")
    for i, text in enumerate(blocked["label"]):
        if text:
            box = _box(px[i], py[i], text, blocked["label_align"][i], blocked["label_dx"][i],
                       blocked["label_dy"][i])
            assert not _crossed(box, *roof_px)
    per_layer = pd.DataFrame({"layer": ["a", "b", "c"], "schedule": ["inter_kc"] * 3,
                              "TOx": [1] * 3, "TOy": [1] * 3, "TOc": [1] * 3, "TOn": [1] * 3,
                              "TKc": [1] * 3, "footprint_bytes": [1024] * 3,
                              "cycles": [10] * 3, "throughput_gops": ys, "ctc": xs,
                              "ext_accesses": [1] * 3, "energy_pj": [1.0] * 3})
    data = dp.roofline_points_data(per_layer, {"x": roof[0], "y": roof[1], "peak": [40.0] * 3})
    assert data["label_align"] == place_labels(xs, ys, ["a", "b", "c"], dp.ROOFLINE_FRAME,
                                               Scene(extra_y=[40.0], paths=[roof]))["label_align"]


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
