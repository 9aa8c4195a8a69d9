"""Network zoo (data/networks/*.yaml, and the structure-only ONNX corpus data/onnx/*.onnx) and
loading a network from a name or a file."""

from __future__ import annotations

from pathlib import Path

import yaml

from workbench.errors import FileFormatError, UnknownNameError
from workbench.layers.builder import network_from_dict
from workbench.layers.network import Network
from workbench.paths import data_file, data_files


def list_networks() -> list[str]:
    """Names of the zoo networks (YAML descriptions and ONNX corpus files) of every data
    folder (`paths.data_dirs`)."""
    return sorted({p.stem for p in data_files("networks", "*.yaml")}
                  | {p.stem for p in data_files("onnx", "*.onnx")})


def read_yaml(path: Path, what: str) -> object:
    """Parse a YAML file; a syntax error becomes a one-line FileFormatError."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise FileFormatError(f"{what} file {str(path)!r}: cannot read ({exc.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise FileFormatError(f"{what} file {str(path)!r}: malformed YAML{where}: {problem}") \
            from None


def load_network(name_or_path: str | Path, batch: int | None = None,
                 strict: bool = False) -> Network:
    """A zoo network by name, or a network file (.yaml/.yml, .onnx, .prototxt). strict: an
    operator the ONNX importer does not know is an error instead of a warning."""
    path = Path(name_or_path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".onnx", ".prototxt") or path.exists():
        if not path.exists():
            raise FileFormatError(f"network file {str(path)!r} does not exist")
        if path.is_dir():
            raise FileFormatError(f"network file {str(path)!r} is a folder")
        if suffix == ".onnx":
            from workbench.layers.onnx_import import network_from_onnx
            net = network_from_onnx(path, strict=strict)
        elif suffix == ".prototxt":
            from workbench.layers.caffe_import import network_from_prototxt
            net = network_from_prototxt(path)
        else:
            net = network_from_dict(read_yaml(path, "network"), str(path))
    elif data_file("onnx", f"{name_or_path}.onnx").exists() and not data_file(
            "networks", f"{name_or_path}.yaml").exists():
        from workbench.layers.onnx_import import network_from_onnx
        net = network_from_onnx(data_file("onnx", f"{name_or_path}.onnx"), strict=strict)
    else:
        zoo_file = data_file("networks", f"{name_or_path}.yaml")
        if not zoo_file.exists():
            raise UnknownNameError(f"unknown network {str(name_or_path)!r}; zoo networks: "
                                   + ", ".join(list_networks())
                                   + " (or a .yaml/.onnx/.prototxt path)")
        net = network_from_dict(read_yaml(zoo_file, "network"), str(zoo_file))
    return net.with_batch(batch) if batch is not None else net
