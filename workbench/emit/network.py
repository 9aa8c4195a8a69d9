"""A whole network as one C program: every conv/fc layer's emitted mapping (`c_layer`) run in
order, with the streamed layers between them (ReLU, ReLU6, clip, max and average pooling) on
the integer codes, as `quant.infer` runs them bit-true.

The program (`main.c`, `Makefile`, the layer files, the runtime) reads the weight and bias
codes (`weights/NAME.w.bin` int32, `NAME.b.bin` int64) and the first layer's input codes
(`input.bin`, int32, NCHW, in its input format), runs the images On at a time (the network's
batch), and writes the last layer's codes (`output.bin`, int32, N × outputs) and the count
lines of every layer (summed over the passes). A softmax at the end is left out (it keeps the
arg-max). Between layers an activation is requantized from the format it is in to the next
conv/fc layer's input format, as `quant.infer` does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.emit.c_layer import array_dims, c_name, layer_header, layer_source
from workbench.emit.mapping import LayerMapping
from workbench.emit.program import RUNTIME, makefile, runtime_text
from workbench.errors import WorkbenchError
from workbench.layers.network import Network
from workbench.quant.fixed import FixedFormat, to_fixed
from workbench.quant.infer import quantized_params

CODE_ACTS = ("relu", "relu6", "clip")


def _bounds(layer, fmt: FixedFormat) -> tuple[int | None, int | None]:
    """ReLU/ReLU6/clip bounds as codes of the activation's format (`quant.maps.activation`)."""
    alpha, beta = layer.parameters
    low, high = {"relu": (0.0, None), "relu6": (0.0, 6.0)}.get(layer.func, (alpha, beta))
    return tuple(None if v is None else int(to_fixed(v, fmt)) for v in (low, high))


def check_network(net: Network, mappings: list[LayerMapping]) -> None:
    """One-line refusal of a network the program cannot run."""
    if net.inputs is not None:
        raise WorkbenchError(f"network {net.name!r} is a layer graph; emit writes chains only")
    if not net.layers[0].tiled:
        raise WorkbenchError(f"network {net.name!r}: the first layer must be conv or fc")
    mapped = {m.layer.name for m in mappings}
    for i, layer in enumerate(net.layers):
        kind = layer.kind
        ok = (layer.tiled and layer.name in mapped) or (kind == "pool" and layer.mode in (
            "max", "avg")) or (kind == "activation" and layer.func in CODE_ACTS) or (
            kind == "softmax" and i == len(net.layers) - 1)
        if not ok:
            what = layer.func if kind == "activation" else kind
            raise WorkbenchError(f"layer {layer.name!r}: {what} is not emitted (conv/fc, "
                                 "ReLU, ReLU6, clip, max/avg pooling, a final softmax)")


def _requant(src: FixedFormat, dst: FixedFormat, n: int) -> list[str]:
    shift = src.fl - dst.fl
    if shift == 0 and src.bw <= dst.bw:
        return []
    return [f"        for (i = 0; i < {n}; i++)",
            f"            cur[i] = (int32_t)wb_requantize(cur[i], {shift}, {dst.bw});"]


def _pool(layer) -> list[str]:
    mode = layer.mode
    init = "INT32_MIN" if mode == "max" else "0"
    take = "v = q > v ? q : v;" if mode == "max" else "v += q;"
    if mode == "max":
        done = "nxt[o] = (int32_t)v;"
    else:
        d = layer.Kx * layer.Ky
        done = (f"nxt[o] = (int32_t)wb_saturate(v >= 0 ? (2 * v + {d}) / {2 * d} "
                f": -((-2 * v + {d}) / {2 * d}), bw);")
    return [
        f"        for (n = 0; n < {layer.On}; n++) for (c = 0; c < {layer.C}; c++)",
        f"        for (y = 0; y < {layer.Oy}; y++) for (x = 0; x < {layer.Ox}; x++) {{",
        f"            int64_t v = {init};",
        f"            long o = ((n * {layer.C} + c) * {layer.Oy} + y) * {layer.Ox} + x;",
        f"            for (ky = 0; ky < {layer.Ky}; ky++) for (kx = 0; kx < {layer.Kx}; kx++) {{",
        f"                long iy = y * {layer.Sy} - {layer.Py} + ky, "
        f"ix = x * {layer.Sx} - {layer.Px} + kx;",
        "                int64_t q;",
        f"                if (iy < 0 || iy >= {layer.Iy} || ix < 0 || ix >= {layer.Ix})",
        "                    continue;",
        f"                q = cur[((n * {layer.C} + c) * {layer.Iy} + iy) * {layer.Ix} + ix];",
        f"                {take}",
        "            }",
        f"            {done}",
        "        }",
        "        { int32_t *t = cur; cur = nxt; nxt = t; }"]


def _steps(net: Network, maps: dict[str, LayerMapping]) -> tuple[list[str], list[str], int]:
    """(declarations, the statements of one pass, the largest map in elements)."""
    decl, body, fmt, biggest = [], [], None, 0
    for layer in net.layers:
        name = c_name(layer.name)
        if layer.tiled:
            m = maps[layer.name]
            dims = array_dims(layer)
            size = {a: int(np.prod(d)) for a, d in dims.items()}
            biggest = max(biggest, *size.values())
            for a in ("in", "w", "out"):
                d = ", ".join(str(v) for v in dims[a])
                decl.append(f'static wb_array {name}_{a} = {{"{a}", 0, {int(a == "out")}, '
                            f"{{{d}}}, {{0}}, {{0}}}};")
            decl.append(f"static int64_t *{name}_bias;")
            body.append(f"        /* {layer.name}: {layer.kind} */")
            if fmt is not None:
                body += _requant(fmt, m.fmt.in_fmt, size["in"])
            body += [f"        {name}_in.data = cur;",
                     f"        {name}_out.data = wide;",
                     f"        {name}_run(&{name}_in, &{name}_w, {name}_bias, &{name}_out);",
                     f"        for (i = 0; i < {size['out']}; i++)",
                     "            cur[i] = (int32_t)wide[i];"]
            fmt = m.fmt.out_fmt
        elif layer.kind == "activation":
            low, high = _bounds(layer, fmt)
            body.append(f"        /* {layer.name}: {layer.func} on codes */")
            n = layer.C * layer.H * layer.W * layer.On
            if low is not None:
                body.append(f"        for (i = 0; i < {n}; i++) if (cur[i] < {low}) "
                            f"cur[i] = {low};")
            if high is not None:
                body.append(f"        for (i = 0; i < {n}; i++) if (cur[i] > {high}) "
                            f"cur[i] = {high};")
        elif layer.kind == "pool":
            biggest = max(biggest, layer.C * layer.Iy * layer.Ix * layer.On)
            body.append(f"        /* {layer.name}: {layer.mode} pool on codes */")
            body.append(f"        bw = {fmt.bw};")
            body += _pool(layer)
    return decl, body, biggest


def _main(net: Network, maps: dict[str, LayerMapping], decl: list[str], body: list[str],
          biggest: int) -> str:
    tiled = [layer for layer in net.layers if layer.tiled]
    first, last = tiled[0], net.layers[-1] if net.layers[-1].kind != "softmax" else \
        net.layers[-2]
    in_size = int(np.prod(array_dims(first)["in"]))
    out_each = int(np.prod(last.out_shape))
    loads, reports = [], []
    for layer in tiled:
        n = c_name(layer.name)
        size = int(np.prod(array_dims(layer)["w"]))
        loads += [f'    {n}_w.data = load(argv[1], "weights/{n}.w.bin", {size}u * 4);',
                  f'    {n}_bias = load(argv[1], "weights/{n}.b.bin", {layer.Oc}u * 8);']
        reports += [f'    wb_report(stdout, "{n}", &{n}_{a}, {maps[layer.name].cores});'
                    for a in ("in", "w", "out")]
    includes = "\n".join(f'#include "{c_name(layer.name)}.h"' for layer in tiled)
    on = first.On
    return f"""/* {net.name}: the emitted network, {on} image(s) a pass; usage: DIR IMAGES MODE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wb_config.h"
#include "wb_dma.h"
{includes}

int wb_physical;
{chr(10).join(decl)}

static void *load(const char *dir, const char *file, size_t bytes)
{{
    char path[4096];
    FILE *f;
    void *p = calloc(bytes ? bytes : 1, 1);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    f = fopen(path, "rb");
    if (!p || !f || fread(p, 1, bytes, f) != bytes) {{
        fprintf(stderr, "cannot read %s\\n", path);
        exit(2);
    }}
    fclose(f);
    return p;
}}

int main(int argc, char **argv)
{{
    char path[4096];
    long images, pass, i, n, c, y, x, ky, kx;
    int bw = 0;
    int32_t *input, *cur, *nxt, *result;
    int64_t *wide;
    FILE *f;
    if (argc != 4 || (strcmp(argv[3], "model") && strcmp(argv[3], "physical"))
        || (images = atol(argv[2])) <= 0 || images % {on}) {{
        fprintf(stderr, "usage: %s DIR IMAGES(a multiple of {on}) model|physical\\n", argv[0]);
        return 2;
    }}
    wb_physical = !strcmp(argv[3], "physical");
{chr(10).join(loads)}
    input = load(argv[1], "input.bin", (size_t)images * {in_size // on}u * 4);
    cur = malloc({biggest}u * 4);
    nxt = malloc({biggest}u * 4);
    wide = malloc({biggest}u * 8);
    result = malloc((size_t)images * {out_each}u * 4);
    if (!cur || !nxt || !wide || !result)
        return 3;
    for (pass = 0; pass < images / {on}; pass++) {{
        memcpy(cur, input + pass * {in_size}, {in_size}u * 4);
{chr(10).join(body)}
        memcpy(result + pass * {on * out_each}, cur, {on * out_each}u * 4);
    }}
    (void)n; (void)c; (void)y; (void)x; (void)ky; (void)kx; (void)bw;
    snprintf(path, sizeof path, "%s/output.bin", argv[1]);
    f = fopen(path, "wb");
    if (!f || fwrite(result, 4, (size_t)images * {out_each}u, f)
              != (size_t)images * {out_each}u) {{
        fprintf(stderr, "cannot write %s\\n", path);
        return 2;
    }}
    fclose(f);
{chr(10).join(reports)}
    return 0;
}}
"""


def write_network_program(net: Network, mappings: list[LayerMapping], params: dict | None,
                          out: Path) -> Path:
    """The network's program folder; with `params` (float weights and biases by layer) also
    their codes in each layer's formats under weights/."""
    check_network(net, mappings)
    maps = {m.layer.name: m for m in mappings}
    out = Path(out)
    (out / "weights").mkdir(parents=True, exist_ok=True)
    (out / RUNTIME).write_text(runtime_text())
    (out / "wb_config.h").write_text(f"#define WB_CORES {max(m.cores for m in mappings)}\n")
    sources = ["main.c"]
    for m in mappings:
        name = c_name(m.layer.name)
        (out / f"{name}.c").write_text(layer_source(m))
        (out / f"{name}.h").write_text(layer_header(m))
        sources.append(f"{name}.c")
        if params is not None:
            q_w, q_b = quantized_params(*params[m.layer.name], m.fmt)
            np.ascontiguousarray(q_w, dtype="<i4").tofile(out / "weights" / f"{name}.w.bin")
            np.ascontiguousarray(q_b, dtype="<i8").tofile(out / "weights" / f"{name}.b.bin")
    (out / "main.c").write_text(_main(net, maps, *_steps(net, maps)))
    (out / "Makefile").write_text(makefile(sources, "network"))
    return out


def network_sources(mappings: list[LayerMapping]) -> list[str]:
    return ["main.c", *(f"{c_name(m.layer.name)}.c" for m in mappings)]


def input_codes(images: np.ndarray, m: LayerMapping) -> np.ndarray:
    """NCHW float images as the first layer's input codes (`quant.fixed.to_fixed`)."""
    return to_fixed(images, m.fmt.in_fmt).astype("<i4")
