"""Plot output is offline: BokehJS inline with no URL a browser could fetch."""

from __future__ import annotations

import re

from bokeh.plotting import figure

from workbench import viz
from workbench.viz.common import EXTERNAL_URLS

FETCHABLE = re.compile(r"""(?:src|href)\s*=\s*["'`]?https?://|https?://(?:cdn\.|maps\.googleapis"""
                       r"""|octopart)""")


def offline_problems(text: str) -> list[str]:
    """Every place in an HTML/JS text that refers to the network (empty when offline)."""
    return [m.group(0) for m in FETCHABLE.finditer(text)]


def test_offline_resources_keep_bokehjs_but_drop_every_fetchable_url() -> None:
    from bokeh.resources import INLINE

    inline, offline = INLINE.render(), viz.OFFLINE.render()
    assert any(url in inline for url in EXTERNAL_URLS)  # what bokeh ships would fetch these
    assert offline_problems(inline)
    assert offline_problems(offline) == []
    assert len(offline) > 3_000_000 and "Bokeh" in offline  # the library itself is all there


def test_standalone_page_and_report_fragment_are_offline() -> None:
    fig = figure(title="t")
    fig.scatter([1, 2], [3, 4])
    assert offline_problems(viz.standalone_html(fig, "t")) == []
    assert offline_problems(viz.bokeh_resources_html() + viz.embed_html(fig)) == []
