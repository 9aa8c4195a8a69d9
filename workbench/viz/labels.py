"""Point labels that neither overprint nor leave the plot: points drawn within a few pixels of
each other share one label ('conv3_2 +1'); each label goes right of its point, or left when
that runs past the frame, or above, below or at a corner of it; one that fits no way, or
would cover a label placed before (or come within LABEL_GAP_PX of it), another point or a
line drawn (a roof, a front), or would lie nearer another point than its own, is left out
(hover still names the point), and its points are counted in the nearest label placed within
JOIN_PX ('conv1_2 +11' for a blob of 12 layers). Positions are estimated in pixels from the
data range a `DataRange1d` with `range_padding` would show and an average glyph width."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CHAR_PX = 0.58   # average glyph width per font pixel (sans-serif)
NEAR_PX = 6.0    # points closer than this (both axes) share one label
GAP_PX = 3.0     # label distance from its marker's edge
JOIN_PX = 30.0   # an unlabelled point is counted in the nearest label this close
LABEL_GAP_PX = 4.0  # labels keep this far from each other and from lines (not to read as one)


def _axis(values: Sequence[float], size_px: float, log: bool, padding: float):
    """The pixel of a value along an axis of `size_px` whose range spans `values`, padded as
    `DataRange1d(range_padding=padding)` pads it (NaN for a value a log axis cannot show)."""
    def scale(v: float) -> float:
        return math.log10(v) if log else v

    def shown(v) -> bool:
        return v is not None and (v > 0 or not log)

    seen = [scale(v) for v in values if shown(v)]
    lo, hi = (min(seen), max(seen)) if seen else (0.0, 1.0)
    span = (hi - lo) or (1.0 if log else abs(hi) or 1.0)
    start = lo - span * padding / 2
    end = start + span * (1 + padding)
    return lambda v: (scale(v) - start) / (end - start) * size_px if shown(v) else math.nan


def _pixels(values: Sequence[float], extra: Sequence[float], size_px: float, log: bool,
            padding: float) -> list[float]:
    """Each value's pixel along an axis whose range spans the values and `extra` (`_axis`)."""
    if not [v for v in [*values, *extra] if v is not None and (v > 0 or not log)]:
        return [0.0] * len(values)
    at = _axis([*values, *extra], size_px, log, padding)
    return [at(v) for v in values]


@dataclass(frozen=True)
class Scene:
    """What else a plot draws that labels must respect: `log` (x, y) axis scales; `others`
    (x, y) points also drawn (the ranges span them, labels avoid them); `extra_y` values the
    y range also spans; `lines_y` horizontal lines labels avoid (a roof: give it in both);
    `paths` polylines (x values, y values) labels do not cross (the range does not span
    them); `marker_px` the markers' size, `font_px` the text's, `padding` the range's margin
    (a fraction of it)."""

    log: tuple[bool, bool] = (True, True)
    others: tuple[Sequence[float], Sequence[float]] = ((), ())
    extra_y: Sequence[float] = ()
    lines_y: Sequence[float] = ()
    paths: Sequence[tuple[Sequence[float], Sequence[float]]] = ()
    marker_px: float = 10.0
    font_px: float = 9.33
    padding: float = 0.2


def place_labels(xs: Sequence[float], ys: Sequence[float], texts: Sequence[str],
                 frame_px: tuple[float, float], scene: Scene = Scene()) -> dict[str, list]:
    """Columns `label` (text, '' when left out), `label_align` ('left', 'right', 'center'),
    `label_dx` and `label_dy` (px offsets, the text's bottom at y + dy) for a LabelSet over
    the points, in their order; `frame_px` is the plot frame's (width, height), `scene` the
    rest of the plot (`Scene`)."""
    log, others, extra_y, lines_y, paths = (scene.log, scene.others, scene.extra_y,
                                            scene.lines_y, scene.paths)
    marker_px, font_px, padding = scene.marker_px, scene.font_px, scene.padding
    px = _pixels([*xs, *others[0]], [], frame_px[0], log[0], padding)
    py = _pixels([*ys, *others[1]], extra_y, frame_px[1], log[1], padding)
    r = marker_px / 2
    centres = [(x, y) for x, y in zip(px, py, strict=True)
               if not (math.isnan(x) or math.isnan(y))]
    marks = [(x - r, y - r, x + r, y + r) for x, y in centres]
    n = len(texts)
    px, py = px[:n], py[:n]
    label, align, dx, dy = [""] * n, ["left"] * n, [r + GAP_PX] * n, [3.0] * n
    groups: list[list[int]] = []
    for i in range(n):
        if math.isnan(px[i]) or math.isnan(py[i]):
            continue
        home = next((g for g in groups if abs(px[g[0]] - px[i]) < NEAR_PX
                     and abs(py[g[0]] - py[i]) < NEAR_PX), None)
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    # obstacles: the other points' markers, and horizontal lines (a roof) 2 px thick
    placed: list[tuple[float, float, float, float]] = [
        (0.0, y - 1, frame_px[0], y + 1)
        for y in _pixels([*ys, *others[1], *lines_y], extra_y, frame_px[1], log[1],
                         padding)[n + len(others[1]):]]
    segments = _segments(paths, [*xs, *others[0]], [*ys, *others[1], *extra_y], frame_px,
                         log, padding)
    gap = r + GAP_PX
    owner: dict[int, list[int]] = {}  # a labelled point -> the points its label counts
    for group in groups:
        i = group[0]
        text = str(texts[i]) + " +99"  # room for a count joined later
        width, height = len(text) * CHAR_PX * font_px, font_px
        own = {(px[k] - r, py[k] - r, px[k] + r, py[k] + r) for k in group}
        mine = [(px[k], py[k]) for k in group]
        strangers = [c for c in centres if not any(abs(c[0] - a) < NEAR_PX and
                                                   abs(c[1] - b) < NEAR_PX for a, b in mine)]
        # right of the point, left of it, above it, below it, then its four corners (text
        # bottom at y + dy)
        up, down = r + 2, -(r + 2 + height)
        mid = -height / 2  # the text level with its point
        for side, x0, ddx, ddy in (("left", px[i] + gap, gap, mid),
                                   ("right", px[i] - gap - width, -gap, mid),
                                   ("center", px[i] - width / 2, 0.0, up),
                                   ("center", px[i] - width / 2, 0.0, down),
                                   ("left", px[i] + r, r, up), ("left", px[i] + r, r, down),
                                   ("right", px[i] - r - width, -r, up),
                                   ("right", px[i] - r - width, -r, down)):
            box = (x0, py[i] + ddy, x0 + width, py[i] + ddy + height)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= frame_px[0] and \
                box[3] <= frame_px[1]
            # read as its point's: no other point is as near the text as its own
            near = min(_distance(c, box) for c in mine)
            if inside and not any(_overlap(_grown(box, LABEL_GAP_PX), b) for b in placed) \
                    and not any(_overlap(box, m) for m in marks if m not in own) \
                    and not any(_crosses(seg, box) for seg in segments) \
                    and all(_distance(c, box) > near for c in strangers):
                placed.append(box)
                owner[i], align[i], dx[i], dy[i] = list(group), side, ddx, ddy
                break
    for group in groups:  # the points left unlabelled: counted in the nearest label
        if group[0] in owner or not owner:
            continue
        near = min(owner, key=lambda k: math.hypot(px[k] - px[group[0]], py[k] - py[group[0]]))
        if math.hypot(px[near] - px[group[0]], py[near] - py[group[0]]) <= JOIN_PX:
            owner[near] += group
    for i, counted in owner.items():
        label[i] = str(texts[i]) + (f" +{len(counted) - 1}" if len(counted) > 1 else "")
    return {"label": label, "label_align": align, "label_dx": dx, "label_dy": dy}


def _grown(box: tuple[float, ...], by: float) -> tuple[float, ...]:
    return box[0] - by, box[1] - by, box[2] + by, box[3] + by


def _distance(point: tuple[float, float], box: tuple[float, ...]) -> float:
    """Pixels from the point to the nearest spot of the box (0 inside)."""
    return math.hypot(max(box[0] - point[0], 0.0, point[0] - box[2]),
                      max(box[1] - point[1], 0.0, point[1] - box[3]))


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _segments(paths, xs, ys, frame_px, log, padding) -> list[tuple[float, ...]]:
    """The paths' segments in pixels (x0, y0, x1, y1) on the axes the points span; a vertex a
    log axis cannot show breaks its path, as bokeh's line does."""
    if not paths:
        return []
    at_x = _axis(xs, frame_px[0], log[0], padding)
    at_y = _axis(ys, frame_px[1], log[1], padding)
    out = []
    for path_x, path_y in paths:
        pixels = [(at_x(x), at_y(y)) for x, y in zip(path_x, path_y, strict=True)]
        out += [(*a, *b) for a, b in zip(pixels, pixels[1:], strict=False)
                if not any(math.isnan(v) for v in (*a, *b))]
    return out


def _crosses(seg: tuple[float, ...], box: tuple[float, ...], pad: float = 1.0) -> bool:
    """Whether a segment passes through the box grown by `pad` px (a line's half width):
    Liang-Barsky clipping."""
    x0, y0, x1, y1 = seg
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for p, q in ((-dx, x0 - (box[0] - pad)), (dx, box[2] + pad - x0),
                 (-dy, y0 - (box[1] - pad)), (dy, box[3] + pad - y0)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
        if lo > hi:
            return False
    return True


__all__ = ["place_labels"]
