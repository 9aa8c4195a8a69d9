"""A live table for the apps: a Bokeh DataTable whose cells read as the workbench writes numbers
(`workbench.numbers`, through `viz.units.readable`) but sort by their values (a click on a
header; 1,024 after 999), a filter box that keeps the rows where any cell holds its text, and
a button writing the rows shown, as numbers, to <stem>.csv. The app calls `show` with each
new result, so the table follows its controls."""

from __future__ import annotations

import html
from pathlib import Path

import ipywidgets as widgets
import pandas as pd
from bokeh.models import ColumnDataSource, DataTable, HTMLTemplateFormatter, TableColumn

from workbench.errors import WorkbenchError
from workbench.layers.dims import seed000_columns
from workbench.ui.bokeh_widget import bokeh_widget
from workbench.ui.errors import error_html
from workbench.viz.units import mapping_table

TILE_DIMS = seed000_columns()  # a tile column is sorted as its text
WIDTH_PX = 1000  # fits a 1280 px window beside JupyterLab's margins


def mapping_frames(rows: pd.DataFrame, columns: tuple[str, ...], energy_known: bool = True
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`viz.units.mapping_table` of the rows and its numbers, column for column (the tile's
    TOx stands for the tile column)."""
    raw = rows[[c for c in columns if c not in TILE_DIMS[1:]]]
    return mapping_table(rows, columns, energy_known), raw


def _numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


class LiveTable:
    """`show(text, raw)`: `text` the readable table, `raw` its numbers column for column (the
    same rows, the same number of columns in the same order; a numeric raw column sorts its
    column, others sort as text). `rows`: the raw rows shown (the filter applied)."""

    def __init__(self, stem: str, height: int = 260, note: str = "") -> None:
        self.source = ColumnDataSource({}, name=f"{stem}_table")
        self.table = DataTable(source=self.source, columns=[], sortable=True,
                               index_position=None, width=WIDTH_PX, height=height)
        self.filter = widgets.Text(description="filter", placeholder="text in any cell",
                                   continuous_update=False,
                                   layout=widgets.Layout(width="330px"))
        self.stem = widgets.Text(value=stem, description="table CSV",
                                 layout=widgets.Layout(width="330px"))
        self.csv_button = widgets.Button(description="CSV", icon="download",
                                         layout=widgets.Layout(width="80px"))
        self.message = widgets.HTML()
        self.text, self.rows = pd.DataFrame(), pd.DataFrame()
        self._all_text, self._all_raw = pd.DataFrame(), pd.DataFrame()
        self.filter.observe(lambda _: self._apply(), names="value")
        self.csv_button.on_click(lambda _: self._write_clicked())
        self.view = widgets.VBox([widgets.HBox([self.filter, self.stem, self.csv_button]),
                                  bokeh_widget(self.table),
                                  *([widgets.HTML(f"<i>{html.escape(note)}</i>")] if note
                                    else []), self.message])

    def show(self, text: pd.DataFrame, raw: pd.DataFrame) -> None:
        """New rows (the filter stays)."""
        if text.shape != raw.shape:
            raise WorkbenchError(f"live table: {text.shape} text cells but {raw.shape} numbers")
        self._all_text = text.reset_index(drop=True)
        self._all_raw = raw.reset_index(drop=True)
        self._apply()

    def _apply(self) -> None:
        query = self.filter.value.strip().lower()
        text = self._all_text.astype(str)
        keep = text.apply(lambda col: col.str.lower().str.contains(query, regex=False)) \
            .any(axis=1) if query and not text.empty else pd.Series(True, index=text.index)
        self.text, self.rows = self._all_text[keep], self._all_raw[keep]
        data, columns = {}, []
        for i, header in enumerate(self.text.columns):
            key = f"c{i}"
            cells = [str(v) for v in self.text.iloc[:, i]]
            raw = self.rows.iloc[:, i]
            numeric = _numeric(raw) and str(self.rows.columns[i]) not in TILE_DIMS
            data[f"{key}_text"] = [html.escape(c) for c in cells]
            data[key] = [float(v) for v in raw] if numeric else cells
            columns.append(TableColumn(field=key, title=str(header), sortable=True,
                                       formatter=HTMLTemplateFormatter(
                                           template=f"<%= {key}_text %>")))
        if [c.title for c in self.table.columns] != [c.title for c in columns]:
            self.table.columns = columns
        self.source.data = data

    def write_csv(self, stem: str) -> Path:
        """The rows shown, as numbers, to <stem>.csv."""
        path = Path(f"{stem}.csv")
        try:
            path.write_text(self.rows.to_csv(index=False, lineterminator="\n"),
                            encoding="utf-8")
        except OSError as exc:
            raise WorkbenchError(f"table CSV {str(path)!r}: cannot write "
                                 f"({exc.strerror or exc})") from None
        return path

    def _write_clicked(self) -> None:
        try:
            path = self.write_csv(self.stem.value)
        except WorkbenchError as exc:
            self.message.value = error_html(exc)
            return
        self.message.value = f"<i>wrote {html.escape(str(path))} ({len(self.rows):,} rows)</i>"
