"""Readable layer names for ONNX nodes.

torch's exporters name a node by its module scope and op: `/features/features.1/conv/conv.0/
conv.0.0/Conv`. The layer name keeps the module path as torch writes it in a state dict,
`features.1.conv.0.0`, and the op after a slash: `features.1.conv.0.0/Conv`; a node outside
any module keeps its op (`/GlobalAveragePool` → `GlobalAveragePool`). Names that are not such
scope paths are kept as they are. The mapping is per node, so the importer, the weight reader
and the quantized-model reader agree on it; the importer keeps the raw names if two nodes of
one graph would get the same short name.
"""

from __future__ import annotations


def short_name(raw: str) -> str:
    """The readable name of an ONNX node named `raw` (see the module docstring)."""
    if not raw.startswith("/") or raw.count("/") < 1 or "//" in raw:
        return raw
    parts = raw.strip("/").split("/")
    op, scopes = parts[-1], parts[:-1]
    path: list[str] = []
    for scope in scopes:
        if path and scope.startswith(path[-1] + "."):
            path[-1] = scope  # 'conv' then 'conv.0': one module path step
        else:
            path.append(scope)
    module = ".".join(path)
    return f"{module}/{op}" if module else op
