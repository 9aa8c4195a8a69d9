"""The `workbench` command line: tables by default, --json for scripts, one-line errors."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence

import pandas as pd

from workbench import layers, platforms, resources, spelling
from workbench.cli.args import add_network, memory_budget, positive_int
from workbench.cli.tables import WIDTH, print_table, print_text
from workbench.errors import WorkbenchError
from workbench.numbers import fmt_bytes, fmt_count, fmt_gops, fmt_si, fmt_value


def _emit(args: argparse.Namespace, table: pd.DataFrame, title: str = "",
          extra: dict | None = None, shown: pd.DataFrame | None = None,
          drop_first: tuple[str, ...] = ("title",)) -> None:
    """`table` as JSON rows (with `extra`), or `shown` (default: `table` in human units) as
    text under `title`, fitted to the terminal (`drop_first`: the columns to leave out
    first)."""
    if args.json:
        doc = {"rows": json.loads(table.to_json(orient="records")), **(extra or {})}
        print(json.dumps(doc, indent=1))
        return
    from workbench.viz.units import readable

    if title:
        print_text(title)
    print_table(readable(table) if shown is None else shown, args, drop_first)


def _loaded(names: list[str], load: Callable[[str], object],
            what: str) -> Iterator[tuple[str, object]]:
    """(name, loaded) for each name; one that fails (a bad file in a WORKBENCH_DATA folder)
    is skipped with a warning line naming it, and the rest load."""
    for name in names:
        try:
            yield name, load(name)
        except (WorkbenchError, OSError) as exc:
            warnings.warn(f"{what} {name!r} skipped: {exc}", stacklevel=2)


def cmd_networks(args: argparse.Namespace) -> None:
    rows, sizes = [], []
    for name, net in _loaded(layers.list_networks(), layers.load_network, "network"):
        sizes.append((net.macs, net.params))
        rows.append({"network": name, "title": net.title, "layers": len(net),
                     "tiled": len(net.tiled_layers()), "macs_M": round(net.macs / 1e6, 2),
                     "params_M": round(net.params / 1e6, 3)})
    shown = pd.DataFrame([{"network": r["network"], "title": r["title"],
                           "layers": fmt_count(r["layers"]), "tiled": fmt_count(r["tiled"]),
                           "MACs": fmt_si(macs), "params": fmt_si(params)}
                          for r, (macs, params) in zip(rows, sizes, strict=True)])
    _emit(args, pd.DataFrame(rows), shown=shown)


def cmd_show(args: argparse.Namespace) -> None:
    net = layers.load_network(args.network, batch=args.batch, input_shape=args.input_shape)
    table = net.summary(elem_bytes=args.elem_bytes)
    about = " ".join(part for part in (net.title, f"[{net.source}]" if net.source else "")
                     if part)
    title = (f"{net.name}:{' ' + about if about else ''}  batch {net.batch}, "
             f"{fmt_si(net.macs, 'MACs')}, {fmt_si(net.params, 'params')} "
             f"(footprints at {args.elem_bytes} B/element)")
    shown = None
    if not args.json:
        from workbench.viz.units import network_table

        shown = network_table(net, args.elem_bytes)
    _emit(args, table, title, {"network": net.name, "batch": net.batch, "macs": net.macs,
                               "params": net.params}, shown,
          drop_first=("biases", "groups", "function"))


def cmd_platforms(args: argparse.Namespace) -> None:
    rows, shown = [], []
    for name, p in _loaded(platforms.list_platforms(), platforms.load_platform, "platform"):
        rows.append({"platform": name, "clock_MHz": p.clock_mhz, "MAC/cycle": p.macs_per_cycle,
                     "bus_elem/cycle": p.bus_elems_per_cycle, "elem_B": p.elem_bytes,
                     "dma_setup": p.dma_setup_cycles, "memory_kb": p.local_mem_bytes / 1024,
                     "lanes": p.simd_lanes, "acc_bits": p.acc_bits, "cores": p.cores,
                     "peak_GOps": round(p.peak_gops, 1), "title": p.title})
        shown.append({"platform": name, "clock": f"{fmt_value(p.clock_mhz)} MHz",
                      "MAC/cycle": fmt_value(p.macs_per_cycle),
                      "bus elem/cycle": fmt_value(p.bus_elems_per_cycle),
                      "elem": fmt_bytes(p.elem_bytes), "DMA setup": fmt_value(p.dma_setup_cycles),
                      "local memory": fmt_bytes(p.local_mem_bytes),
                      "lanes": fmt_value(p.simd_lanes), "acc bits": fmt_value(p.acc_bits),
                      "cores": fmt_value(p.cores), "peak": fmt_gops(p.peak_gops),
                      "title": p.title})
    _emit(args, pd.DataFrame(rows), shown=pd.DataFrame(shown))


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), like the workbench's own errors;
    `--help` still prints the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="workbench", description=__doc__)
    # --json before or after the command: the command's flag must not reset the global one
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    budget_help = ("memory budget, e.g. 2GB: inputs estimated to need more are refused "
                   f"before work starts (default: ${resources.ENV}, else "
                   f"{resources.BUDGET_FRACTION:.0%} of this machine's memory)"
                   ).replace("%", "%%")  # argparse formats help with %
    parser.add_argument("--max-memory", type=memory_budget, default=None, metavar="SIZE",
                        help=budget_help)
    wide_help = f"every column of the tables (default: at most {WIDTH} characters wide)"
    parser.add_argument("--wide", action="store_true", help=wide_help)
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="one JSON document on stdout")
    common.add_argument("--strict", action="store_true", default=argparse.SUPPRESS,
                        help="an ONNX operator the workbench does not know is an error")
    common.add_argument("--max-memory", type=memory_budget, default=argparse.SUPPRESS,
                        metavar="SIZE", help=budget_help)
    common.add_argument("--wide", action="store_true", default=argparse.SUPPRESS, help=wide_help)

    p = sub.add_parser("networks", parents=[common], help="list the zoo networks")
    p.set_defaults(func=cmd_networks)
    p = sub.add_parser("show", parents=[common], help="per-layer table of a network")
    add_network(p)
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--elem-bytes", type=positive_int, default=2,
                   help="bytes per element for footprints")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("platforms", parents=[common], help="list the platform presets")
    p.set_defaults(func=cmd_platforms)
    for register in _extra_commands():
        register(sub, common)
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction,
                                       argparse.ArgumentParser], None]]:
    from workbench.cli import batch, emit, explore, hierarchy, quant, simd

    return [explore.register, quant.register, simd.register, batch.register, hierarchy.register,
            emit.register]


def _terminate(command_pid: int, signum: int, frame: object) -> None:
    """SIGTERM ends a command like Ctrl-C: its cleanup runs (a sweep stops its workers and
    releases its directory), and what it committed stays. A forked worker (which inherits
    this handler) dies quietly as SIGTERM would have it: a pool stopping its workers must
    not print their tracebacks."""
    if os.getpid() != command_pid:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def _warnings_as_lines(args: argparse.Namespace) -> Iterator[None]:
    """Warnings as one `workbench CMD: warning: ...` line each on stderr; with --strict an
    unknown ONNX operator is an error."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"workbench {args.command}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        if getattr(args, "strict", False):
            from workbench.layers.onnx_import import UnknownOperatorWarning
            warnings.simplefilter("error", UnknownOperatorWarning)
        yield


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.max_memory is not None:  # workers and kernels this command starts inherit it
        os.environ[resources.ENV] = str(args.max_memory)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, functools.partial(_terminate, os.getpid()))
    try:
        with _warnings_as_lines(args):
            for old, new in getattr(args, "renamed_options", ()):
                spelling.notice(old, new)
            args.func(args)
        sys.stdout.flush()
    except WorkbenchError as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if threading.current_thread() is threading.main_thread():  # one line, whatever comes
            for s in (signal.SIGINT, signal.SIGTERM):
                signal.signal(s, signal.SIG_IGN)
        print(f"workbench {args.command}: interrupted; what was committed is kept",
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # `workbench show vgg16 | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # an output path in a missing or read-only folder, a full disk
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"workbench {args.command}: error: cannot write or read{where}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0

