"""Reading numbers back from what the workbench prints, for tests: SI counts and sizes,
columns of a pandas text table, and the strings of the bokeh documents of an HTML page."""

from __future__ import annotations

import html
import json
import re

SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
BINARY = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_si(text: str) -> float:
    """'98.2 M' -> 98.2e6, '1,024' -> 1024, 'n/a' -> NaN (a trailing word is ignored)."""
    m = re.fullmatch(r"(-?[\d,]*\.?\d+)(?: ([kMGT]))?(?: \S+)?", text.strip())
    if m is None:
        return float("nan")
    return float(m.group(1).replace(",", "")) * SI[m.group(2) or ""]


def parse_size(text: str) -> float:
    """'12.2 KB' -> 12.2 * 1024 bytes (1 KB = 1024 B)."""
    number, unit = text.strip().split()
    return float(number.replace(",", "")) * BINARY[unit]


def column_cells(text: str, headers: list[str], key: str | None = None,
                 rows_of: str | None = None) -> dict[str, dict[str, str]]:
    """The cells of `headers` in the first pandas `to_string` table of `text` (every column
    right-aligned, every line as long as the header) whose header line starts with the first
    of `headers` and holds them all, keyed by the cell of `key` (default the first header);
    `rows_of`: only rows whose first header's cell is that."""
    lines = text.splitlines()
    header_line = next(i for i, line in enumerate(lines) if line.lstrip().startswith(headers[0])
                       and all(h in line for h in headers))
    head = lines[header_line]
    ends = [m.end() for m in re.finditer(r"\S+", head)]
    spans, start = {}, 0
    for name in headers:
        s = head.index(name, start)
        e = s + len(name)
        spans[name] = (max([x for x in ends if x < s], default=0), e)
        start = e
    rows = {}
    for line in lines[header_line + 1:]:
        if len(line) != len(head) or line.startswith("("):
            break  # the table ended (a note under it may happen to be as long)
        cells = {name: line[a:b].strip() for name, (a, b) in spans.items()}
        if rows_of is not None and cells[headers[0]] != rows_of:
            continue
        rows[cells[key or headers[0]]] = cells
    return rows


def bokeh_strings(page: str) -> list[tuple[str, str]]:
    """(path, string) of every string in the bokeh documents embedded in an HTML page, binary
    arrays apart (a path ends with the key that holds the string)."""
    found: list[tuple[str, str]] = []

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("bytes", "ndarray"):
                return
            if node.get("type") == "map" and "entries" in node:
                for k, v in node["entries"]:
                    walk(v, f"{path}/{k if isinstance(k, str) else json.dumps(k)}")
                return
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for v in node:
                walk(v, path)
        elif isinstance(node, str):
            found.append((path, node))

    for literal in re.findall(r"const docs_json = '(.*?)';\n", page, flags=re.S):
        walk(json.loads(html.unescape(literal.replace("\\\\", "\\"))), "")
    return found
