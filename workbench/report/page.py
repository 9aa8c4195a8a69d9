"""Self-contained HTML pages: the executed report notebook without code cells (BokehJS
inline, nothing external referenced), and the static summary page of `workbench explore
--html` (no scripts at all)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.platforms import Platform
from workbench.report.output import write_text
from workbench.report.summary import totals_text

STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}h1,h2{font-weight:600}.jp-OutputPrompt,.jp-InputPrompt{display:none}"""


def to_html(executed: Any, title: str) -> str:
    """The executed notebook's outputs (no code) as one HTML page without external references."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="basic", exclude_input=True,
                            exclude_input_prompt=True, exclude_output_prompt=True,
                            anchor_link_text="")
    body, _ = exporter.from_notebook_node(executed)
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + html.escape(title)
            + f"</title><style>{STYLE}</style></head><body>" + body + "</body></html>\n")


def summary_page(title: str, table: pd.DataFrame, totals: dict, platform: Platform) -> str:
    """The per-layer table and network totals as a static page (no scripts, no URL)."""
    rows = "".join(f"<li>{html.escape(part)}</li>"
                   for part in totals_text(totals, platform).split(", "))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + html.escape(title)
            + "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
            "collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style>"
            "</head><body><h1>Tiling exploration</h1><p>" + html.escape(title) + "</p>"
            + table.to_html(index=False, border=0) + "<h2>Network totals</h2><ul>" + rows
            + "</ul></body></html>\n")


def write_summary_page(path: str | Path, title: str, table: pd.DataFrame, totals: dict,
                       platform: Platform) -> Path:
    """`summary_page` written atomically to `path`; returns the path."""
    return write_text(path, summary_page(title, table, totals, platform))
