"""Everything the workbench writes for people to read, in one package:

- `summary`: what a mapping report shows (`build`), the per-layer table in human units, the
  network totals and the manager's summary (time, energy, bottlenecks, I/O-bound layers);
- `notebook`: runs notebooks/report.ipynb with papermill, each run in a private runtime folder;
- `page`: the self-contained HTML pages (the exported report, `explore --html`);
- `sweep_page`: a sweep's results browser as one offline page (`report --sweep`);
- `output`: output paths checked before work starts, files written atomically.

It sits above `explore` and `viz` (it imports them, never the reverse); the CLI imports it.
"""

from workbench.report.sections import levels_html, solutions_html, sweep_html
from workbench.report.summary import (
    REPORT_STYLE,
    ReportData,
    ReportSettings,
    build,
    findings_html,
    headline,
    key_findings,
    per_layer_table,
    summary_html,
    totals_text,
)

__all__ = ["REPORT_STYLE", "ReportData", "ReportSettings", "build", "findings_html", "headline",
           "key_findings", "levels_html", "per_layer_table", "solutions_html", "summary_html",
           "sweep_html", "totals_text"]
