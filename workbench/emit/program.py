"""Writing, compiling and running emitted programs.

A layer program is a folder: the runtime `wb_dma.h`, `wb_config.h` (the cores counted), the
layer's `NAME.c`/`NAME.h`, a `main.c` that reads the operand codes from raw little-endian
files (input and weights int32, bias int64), runs the layer in the mode given on its command
line ("model" or "physical") and writes the output codes (int64) and one count line per array
and core, and a Makefile. `build` compiles it with the system C compiler.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

import numpy as np

from workbench.emit.c_layer import C_FLAGS, array_dims, c_name, layer_header, layer_source
from workbench.emit.mapping import LayerMapping
from workbench.errors import WorkbenchError

RUNTIME = "wb_dma.h"
ARRAYS = ("in", "w", "out")


def runtime_text() -> str:
    """The DMA runtime header shipped in the package."""
    return resources.files("workbench.emit").joinpath(RUNTIME).read_text()


def compiler() -> str:
    """The system C compiler (`cc`), or a one-line refusal."""
    found = shutil.which("cc")
    if found is None:
        raise WorkbenchError("no C compiler: emit --run needs `cc` (gcc) on PATH")
    return found


def _main_c(m: LayerMapping) -> str:
    name = c_name(m.layer.name)
    dims = array_dims(m.layer)
    decl = []
    for array in ARRAYS:
        d = ", ".join(str(v) for v in dims[array])
        wide = int(array == "out")
        decl.append(f'    wb_array a_{array} = {{"{array}", 0, {wide}, {{{d}}}, {{0}}, {{0}}}};')
    sizes = {a: int(np.prod(dims[a])) for a in ARRAYS}
    return f"""/* {m.layer.name}: run the emitted layer on operand files; usage: MODE DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wb_config.h"
#include "wb_dma.h"
#include "{name}.h"

int wb_physical;

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
    FILE *f;
    int64_t *bias;
{chr(10).join(decl)}
    if (argc != 3 || (strcmp(argv[1], "model") && strcmp(argv[1], "physical"))) {{
        fprintf(stderr, "usage: %s model|physical DIR\\n", argv[0]);
        return 2;
    }}
    wb_physical = !strcmp(argv[1], "physical");
    a_in.data = load(argv[2], "in.bin", {sizes['in']}u * sizeof(int32_t));
    a_w.data = load(argv[2], "w.bin", {sizes['w']}u * sizeof(int32_t));
    bias = load(argv[2], "bias.bin", {m.layer.Oc}u * sizeof(int64_t));
    a_out.data = calloc({sizes['out']}u, sizeof(int64_t));
    {name}_run(&a_in, &a_w, bias, &a_out);
    snprintf(path, sizeof path, "%s/out.bin", argv[2]);
    f = fopen(path, "wb");
    if (!f || fwrite(a_out.data, sizeof(int64_t), {sizes['out']}u, f) != {sizes['out']}u) {{
        fprintf(stderr, "cannot write %s\\n", path);
        return 2;
    }}
    fclose(f);
    wb_report(stdout, "{name}", &a_in, {m.cores});
    wb_report(stdout, "{name}", &a_w, {m.cores});
    wb_report(stdout, "{name}", &a_out, {m.cores});
    free(a_in.data);
    free(a_w.data);
    free(bias);
    free(a_out.data);
    return 0;
}}
"""


def makefile(sources: list[str], program: str) -> str:
    flags = " ".join(C_FLAGS)
    return (f"CC ?= cc\nCFLAGS ?= {flags}\n\n{program}: {' '.join(sources)} *.h\n"
            f"\t$(CC) $(CFLAGS) -o $@ {' '.join(sources)}\n\nclean:\n\trm -f {program}\n")


def write_layer_program(m: LayerMapping, out: Path) -> Path:
    """The folder of a one-layer program (created if missing); returns it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = c_name(m.layer.name)
    (out / RUNTIME).write_text(runtime_text())
    (out / "wb_config.h").write_text(f"#define WB_CORES {m.cores}\n")
    (out / f"{name}.c").write_text(layer_source(m))
    (out / f"{name}.h").write_text(layer_header(m))
    (out / "main.c").write_text(_main_c(m))
    (out / "Makefile").write_text(makefile(["main.c", f"{name}.c"], "layer"))
    return out


def build(folder: Path, sources: list[str], program: str = "layer") -> str:
    """Compile `sources` in `folder` with `cc` and C_FLAGS; returns the compiler's warnings
    (empty when clean). A failed compile is a WorkbenchError with its first error line."""
    folder = Path(folder)
    done = subprocess.run([compiler(), *C_FLAGS, "-o", program, *sources], cwd=folder,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr)
        raise WorkbenchError(f"cc failed on {folder}: {first.strip()}")
    return done.stderr


def write_operands(folder: Path, q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray) -> None:
    """Operand codes as the program reads them."""
    folder = Path(folder)
    np.ascontiguousarray(q_in, dtype="<i4").tofile(folder / "in.bin")
    np.ascontiguousarray(q_w, dtype="<i4").tofile(folder / "w.bin")
    np.ascontiguousarray(q_b, dtype="<i8").tofile(folder / "bias.bin")


def parse_counts(text: str) -> dict[tuple[str, str, int], tuple[int, int]]:
    """{(layer, array, core): (elements, transfers)} from a program's count lines."""
    counts = {}
    for line in text.splitlines():
        word, *rest = line.split()
        if word == "count":
            layer, array, core, elements, transfers = rest
            counts[layer, array, int(core)] = (int(elements), int(transfers))
    return counts


def run_layer(folder: Path, mode: str, shape: tuple[int, ...],
              program: str = "layer") -> tuple[np.ndarray, dict[tuple[str, int], tuple[int, int]]]:
    """Run a built layer program in `mode`: its output codes (reshaped to `shape`) and its
    counts {(array, core): (elements, transfers)}, as the program measured them."""
    folder = Path(folder).resolve()
    done = subprocess.run([str(folder / program), mode, str(folder)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise WorkbenchError(f"emitted program failed ({done.returncode}): "
                             f"{done.stderr.strip()}")
    counts = {(array, core): v for (_, array, core), v in parse_counts(done.stdout).items()}
    out = np.fromfile(folder / "out.bin", dtype="<i8").reshape(shape)
    return out, counts
