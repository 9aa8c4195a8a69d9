"""ONNX models with external data, read under the project's own guard (not only onnx's, which
differs between the onnx versions pyproject.toml allows).

`load_model(path)` reads the model without its external data, then each external tensor's
bytes: the location must be a relative path without '..' that resolves (symlinks followed)
inside the model's folder to a regular file (no FIFO, device or directory), and the offset and
length must lie within that file; the bytes together must fit the memory budget
(`resources`). Any breach is one FileFormatError line naming the model, the tensor and the rule.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from workbench import resources
from workbench.errors import FileFormatError
from workbench.resources import cut


def _tensors(graph: Any) -> Iterator[Any]:
    """Every tensor of a graph: initializers and node attributes, subgraphs included."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for sub in attr.graphs:
                yield from _tensors(sub)


def _external(tensor: Any) -> dict[str, str]:
    return {entry.key: entry.value for entry in tensor.external_data}


def _data_file(origin: str, name: str, folder: Path, location: str) -> Path:
    """The file an external tensor names, once it is proven safe to read."""
    rule = None
    if not location:
        rule = "names no file"
    elif PurePosixPath(location).is_absolute() or PureWindowsPath(location).is_absolute() \
            or PureWindowsPath(location).drive:
        rule = "is an absolute path"
    elif ".." in PurePosixPath(location.replace("\\", "/")).parts:
        rule = "leaves the model's folder ('..')"
    if rule is None:
        real = (folder / location).resolve()
        if not real.is_relative_to(folder.resolve()):
            rule = "resolves (through a symlink) outside the model's folder"
        else:
            try:
                mode = os.stat(real).st_mode
            except OSError as exc:
                rule = f"cannot be read ({exc.strerror})"
            else:
                if not stat.S_ISREG(mode):
                    rule = "is not a regular file (a FIFO, device or folder)"
    if rule is not None:
        raise FileFormatError(f"{origin}: tensor {cut(name)}: external data location "
                              f"{cut(location)} {rule}")
    return real


def _read(origin: str, name: str, real: Path, offset: int, length: int) -> bytes:
    """`length` bytes at `offset`; opened without blocking and checked again on the open file
    (a FIFO swapped in after the check never blocks the read)."""
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileFormatError(f"{origin}: tensor {cut(name)}: external data file is not a "
                                  "regular file")
        f.seek(offset)
        return f.read(length)


def load_model(path: str | Path) -> Any:
    """The ONNX model at `path` with its external data read under the guard above."""
    import onnx

    path = Path(path)
    origin = f"ONNX file {str(path)!r}"
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - onnx raises several unrelated types
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FileFormatError(f"{origin}: cannot load ({reason[:120]})") from None
    external = [t for t in _tensors(model.graph)
                if t.data_location == onnx.TensorProto.EXTERNAL]
    planned = []
    for tensor in external:
        info = _external(tensor)
        real = _data_file(origin, tensor.name, path.parent, info.get("location", ""))
        size = real.stat().st_size
        try:
            offset = int(info.get("offset", 0))
            length = int(info["length"]) if "length" in info else size - offset
        except ValueError:
            raise FileFormatError(f"{origin}: tensor {cut(tensor.name)}: external data offset "
                                  f"or length is not an integer") from None
        if offset < 0 or length < 0 or offset + length > size:
            raise FileFormatError(f"{origin}: tensor {cut(tensor.name)}: external data bytes "
                                  f"{offset}..{offset + length} lie outside its file of "
                                  f"{size} B")
        planned.append((tensor, real, offset, length))
    resources.check(f"{origin} (external data)", sum(p[3] for p in planned))
    for tensor, real, offset, length in planned:
        tensor.raw_data = _read(origin, tensor.name, real, offset, length)
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]
    return model
