"""Network zoo (data/networks/*.yaml, and the structure-only ONNX corpus data/onnx/*.onnx) and
loading a network from a name or a file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from workbench.errors import FileFormatError, UnknownNameError, WorkbenchError
from workbench.layers.builder import network_from_dict
from workbench.layers.network import Network
from workbench.paths import data_file, data_files


def list_networks() -> list[str]:
    """Names of the zoo networks (YAML descriptions and ONNX corpus files) of every data
    folder (`paths.data_dirs`)."""
    return sorted({p.stem for p in data_files("networks", "*.yaml")}
                  | {p.stem for p in data_files("onnx", "*.onnx")})


class YamlLoader(yaml.SafeLoader):
    """SafeLoader that also reads 1e-2 and 5E3 as floats (YAML 1.2; PyYAML's YAML 1.1 rule
    wants a dot, 1.0e-2, and reads 1e-2 as the string '1e-2')."""


YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))

MAX_YAML_BYTES = 4 << 20  # a document larger than this is refused before parsing
MAX_YAML_DEPTH = 64  # nesting of mappings and sequences
MAX_YAML_NODES = 1_000_000  # nodes once aliases are expanded (no "billion laughs")
_YAML_ERRORS = (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError)


def _scan_yaml(text: str, origin: str) -> None:
    """Walk the parse events (no recursion, nothing built): refuse nesting beyond
    MAX_YAML_DEPTH, more than MAX_YAML_NODES nodes with aliases expanded, and a key given
    twice in one mapping (YAML would silently keep the last)."""
    stack: list[list] = []  # per open collection: [is_mapping, children, keys, anchor, start]
    anchors: dict[str, int] = {}
    nodes = 0

    def child(event: yaml.Event) -> None:
        if not stack:
            return
        top = stack[-1]
        if top[0] and top[1] % 2 == 0 and isinstance(event, yaml.ScalarEvent):
            if event.value in top[2]:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise FileFormatError(f"{origin}: key {event.value!r} given twice in one "
                                      f"mapping (line {line})")
            top[2].add(event.value)
        top[1] += 1

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            child(event)
            size = anchors.get(event.anchor, 1) if isinstance(event, yaml.AliasEvent) else 1
            nodes += size
            if isinstance(event, yaml.ScalarEvent) and event.anchor:
                anchors[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            child(event)
            if len(stack) >= MAX_YAML_DEPTH:
                raise FileFormatError(f"{origin}: nested deeper than {MAX_YAML_DEPTH} levels")
            nodes += 1
            stack.append([isinstance(event, yaml.MappingStartEvent), 0, set(), event.anchor,
                          nodes])
        elif isinstance(event, yaml.CollectionEndEvent):
            top = stack.pop()
            if top[3]:
                anchors[top[3]] = nodes - top[4] + 1
        if nodes > MAX_YAML_NODES:
            raise FileFormatError(f"{origin}: more than {MAX_YAML_NODES} values once aliases "
                                  "are expanded")


def read_yaml(path: Path, what: str) -> object:
    """Parse a YAML file; every problem (unreadable, too large, not UTF-8 text, nested too
    deeply, an alias bomb, a key given twice, a syntax error) is a one-line
    FileFormatError."""
    origin = f"{what} file {str(path)!r}"
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise FileFormatError(f"{origin}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_YAML_BYTES:
        raise FileFormatError(f"{origin}: larger than {MAX_YAML_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileFormatError(f"{origin}: not UTF-8 text (invalid byte at offset "
                              f"{exc.start})") from None
    if "\x00" in text:
        raise FileFormatError(f"{origin}: a binary file, not YAML text")
    try:
        _scan_yaml(text, origin)
        return yaml.load(text, Loader=YamlLoader)  # noqa: S506 - a SafeLoader
    except FileFormatError:
        raise
    except _YAML_ERRORS as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0][:120] or \
            type(exc).__name__
        raise FileFormatError(f"{origin}: malformed YAML{where}: {problem}") from None


def _checked_shape(input_shape: Any) -> tuple[int, ...]:
    if (not isinstance(input_shape, tuple | list) or not input_shape
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                       for d in input_shape)):
        raise WorkbenchError(f"input_shape must be a tuple of positive integers such as "
                             f"(3, 224, 224), got {input_shape!r}")
    return tuple(input_shape)


def _from_yaml(path: Path, input_shape: tuple[int, ...] | None) -> Network:
    doc = read_yaml(path, "network")
    if input_shape is not None and isinstance(doc, dict):
        if len(input_shape) != 3:
            raise WorkbenchError(f"input_shape of network file {str(path)!r} must be "
                                 f"(channels, height, width), got {input_shape!r}")
        doc = {**doc, "input": list(input_shape)}
    return network_from_dict(doc, f"network file {str(path)!r}")


def load_network(name_or_path: str | Path, batch: int | None = None,
                 strict: bool = False, input_shape: tuple[int, ...] | None = None) -> Network:
    """A zoo network by name, or a network file (.yaml/.yml, .onnx, .prototxt). strict: an
    operator the ONNX importer does not know is an error instead of a warning. input_shape:
    (C, H, W) of one image, for an ONNX model whose input size is dynamic (or to change it; the
    batch stays the model's), or to replace a YAML network's `input`."""
    shape = _checked_shape(input_shape) if input_shape is not None else None
    if not isinstance(name_or_path, str | Path) or "\x00" in str(name_or_path):
        raise FileFormatError(f"network must be a zoo name or a file path, got "
                              f"{str(name_or_path)[:60]!r}")
    path = Path(name_or_path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".onnx", ".prototxt") or path.exists():
        if not path.exists():
            raise FileFormatError(f"network file {str(path)!r} does not exist")
        if path.is_dir():
            raise FileFormatError(f"network file {str(path)!r} is a folder")
        if suffix == ".onnx":
            from workbench.layers.onnx_import import network_from_onnx
            net = network_from_onnx(path, strict=strict, input_shape=shape)
        elif suffix == ".prototxt":
            if shape is not None:
                raise WorkbenchError(f"network file {str(path)!r}: input_shape applies to "
                                     "ONNX and YAML networks (a prototxt states its input)")
            from workbench.layers.caffe_import import network_from_prototxt
            net = network_from_prototxt(path)
        else:
            net = _from_yaml(path, shape)
    elif data_file("onnx", f"{name_or_path}.onnx").exists() and not data_file(
            "networks", f"{name_or_path}.yaml").exists():
        from workbench.layers.onnx_import import network_from_onnx
        net = network_from_onnx(data_file("onnx", f"{name_or_path}.onnx"), strict=strict,
                                input_shape=shape)
    else:
        zoo_file = data_file("networks", f"{name_or_path}.yaml")
        if not zoo_file.exists():
            raise UnknownNameError(f"unknown network {str(name_or_path)!r}; zoo networks: "
                                   + ", ".join(list_networks())
                                   + " (or a .yaml/.onnx/.prototxt path)")
        net = _from_yaml(zoo_file, shape)
    return net.with_batch(batch) if batch is not None else net
