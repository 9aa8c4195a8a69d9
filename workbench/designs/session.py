"""Sessions: what an app shows, saved to a small YAML file and read back. A session names its
app, the network and batch, the objective, the app's own selections (a mapping of names to
plain values) and the whole platform in the platform-file form (`docs/platforms.md`), so the
file also loads as a platform elsewhere after cutting out its `platform:` part.

    workbench: session
    version: 1
    app: plan
    network: lenet5
    batch: 1
    objective: cycles
    selections: {fusion: auto, quantity: accesses}
    platform: {name: shave_cmx, clock_mhz: 600, memory: ..., datapath: ..., ...}

Writing is byte-stable: a file read and written again is the same bytes. A bad or foreign file
is one FileFormatError line naming the file and the rule."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from workbench import platforms
from workbench.errors import FileFormatError, WorkbenchError
from workbench.explore.query import OBJECTIVES
from workbench.layers.zoo import read_yaml
from workbench.numbers import finite

KIND, VERSION = "session", 1
APPS = {"plan": "the plan app (notebook 11)", "tiles": "the tile explorer (notebook 03)"}
KEYS = ("workbench", "version", "app", "network", "batch", "objective", "selections",
        "platform")


def platform_doc(plat: platforms.Platform) -> dict[str, Any]:
    """The platform as a platform file writes it: parts, levels DRAM first with banks and the
    MAC array's unroll as mappings (plain values only: it dumps as YAML or JSON)."""
    doc = plat.model_dump()
    doc["memory"]["levels"] = [level.doc() for level in plat.memory.levels]
    unroll = doc["datapath"].get("unroll")
    if unroll:
        doc["datapath"]["unroll"] = dict(unroll)
        doc["datapath"].pop("macs_per_cycle")  # the unroll's product
    else:
        doc["datapath"].pop("unroll", None)
    return _plain(doc)


def _plain(value: Any) -> Any:
    """Tuples as lists, mappings as dicts with string keys, numbers and strings as they are."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Session:
    """One app's state: its `app` key (APPS), network (a zoo name or a model file), batch,
    objective, platform and `selections` (the app's other controls, plain values)."""

    app: str
    network: str
    batch: int
    objective: str
    platform: platforms.Platform
    selections: dict[str, Any] = field(default_factory=dict)

    def doc(self) -> dict[str, Any]:
        return {"workbench": KIND, "version": VERSION, "app": self.app,
                "network": self.network, "batch": self.batch, "objective": self.objective,
                "selections": _plain(self.selections),
                "platform": platform_doc(self.platform)}


def session_text(session: Session) -> str:
    """The session file's text (YAML, keys in a fixed order)."""
    return yaml.safe_dump(session.doc(), sort_keys=False, allow_unicode=True, width=100)


def save_session(session: Session, path: str | Path) -> Path:
    """Write the session file (its folder must exist); returns the path."""
    path = Path(path)
    try:
        path.write_text(session_text(session), encoding="utf-8")
    except OSError as exc:
        raise WorkbenchError(f"session file {str(path)!r}: cannot write "
                             f"({exc.strerror or exc})") from None
    return path


def _fail(origin: str, key: str, rule: str) -> FileFormatError:
    return FileFormatError(f"{origin}: {key}: {rule}")


def load_session(path: str | Path, app: str) -> Session:
    """Read a session file saved by `app`; every problem is one FileFormatError line naming the
    file, the key and the rule (a platform's fields as `platform.memory.levels[1]...`)."""
    origin = f"session file {str(path)!r}"
    doc = read_yaml(Path(path), "session")
    if not isinstance(doc, dict) or doc.get("workbench") != KIND:
        raise FileFormatError(f"{origin}: not a workbench session (a session file starts "
                              f"with 'workbench: session')")
    unknown = sorted(map(str, set(doc) - set(KEYS)))
    if unknown:
        raise _fail(origin, unknown[0], "unknown key; known: " + ", ".join(KEYS))
    if doc.get("version") != VERSION:
        raise _fail(origin, "version", f"must be {VERSION}, got {doc.get('version')!r}")
    if doc.get("app") != app:
        other = APPS.get(str(doc.get("app")), f"an unknown app {doc.get('app')!r}")
        raise _fail(origin, "app", f"this session is of {other}, not of {APPS[app]}")
    network, batch, objective = doc.get("network"), doc.get("batch"), doc.get("objective")
    if not isinstance(network, str) or not network.strip():
        raise _fail(origin, "network", f"must be a zoo name or a model file, got {network!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 1 << 16:
        raise _fail(origin, "batch", f"must be a whole number in 1..65,536, got {batch!r}")
    if objective not in OBJECTIVES:
        raise _fail(origin, "objective", f"must be one of {', '.join(OBJECTIVES)}, "
                                         f"got {objective!r}")
    selections = doc.get("selections") or {}
    if not isinstance(selections, dict):
        raise _fail(origin, "selections", f"must be a mapping, got {selections!r}")
    if not isinstance(doc.get("platform"), dict):
        raise _fail(origin, "platform", "must be the platform's parts, as a platform file "
                                        f"writes them, got {doc.get('platform')!r}"[:200])
    plat = platforms.files.build(doc["platform"], origin, {(): ("platform",)})
    return Session(app, network, batch, objective, plat, selections)


def check_choice(origin: str, key: str, value: Any, choices: Iterable[Any]) -> Any:
    """`value` when it is one of `choices`; else one line naming the selection and the rule."""
    allowed = list(choices)
    if value not in allowed:
        shown = ", ".join(map(str, allowed[:8])) + (", ..." if len(allowed) > 8 else "")
        raise _fail(origin, f"selections.{key}", f"must be one of {shown}, got {value!r}")
    return value


def check_sizes_kb(origin: str, key: str, value: Any) -> tuple[float, float]:
    """A (smallest, largest) pair of positive sizes in KB."""
    if not (isinstance(value, list) and len(value) == 2
            and all(not isinstance(v, bool) and isinstance(v, int | float) and finite(v)
                    and v > 0 for v in value)):
        raise _fail(origin, f"selections.{key}", f"must be two sizes in KB [smallest, "
                                                 f"largest], got {value!r}")
    return float(value[0]), float(value[1])
