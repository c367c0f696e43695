"""Tile and block sweep for the qualification kernels on the GPU at hand; prints one line per variant.

    PYTHONPATH=kernels python3 kernels/bench/sweep.py [--out sweep.json]

Numbers, not a test: it is how catalog.TILES and programs.STREAM_BLOCK were chosen (docs/kernels.md).
Each variant is checked against a reference before it is timed, so a wrong variant shows as wrong.
Hopper shapes only (8192^3 GEMMs, 1 GiB stream buffers): it was run on an H200.
"""

import argparse
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor

import tilelang
import torch

from ds41f_kernels import catalog, measure, programs

GEMM = (8192, 8192, 8192)
FLOPS = 2 * GEMM[0] * GEMM[1] * GEMM[2]
STREAM_N = 1 << 28
T = catalog.Tile
BF16_TILES = [T(128, 256, 64, 3, 256, 10), T(128, 256, 64, 3, 256, 10, "FullRow"),
              T(128, 256, 64, 4, 256, 10, "FullRow"), T(128, 256, 128, 2, 256, 10, "FullRow"),
              T(192, 256, 64, 3, 384, 10), T(192, 256, 64, 3, 384, 16),
              T(256, 128, 64, 3, 256, 10, "FullRow"), T(128, 256, 64, 3, 256, 16, "FullRow")]
FP8_TILES = [T(128, 256, 128, 4, 256, 16), T(128, 256, 128, 3, 256, 10, "FullRow"),
             T(128, 256, 128, 4, 256, 16, "FullRow"), T(192, 256, 128, 3, 384, 10), T(192, 256, 128, 3, 384, 16)]
STREAM_BLOCKS = [(4096, 256), (8192, 256), (8192, 512), (16384, 512), (16384, 1024)]
NO_WARP_SPECIALIZATION = {tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}
ROLE_BASED = {tilelang.PassConfigKey.TL_ENABLE_AUTO_WARP_SPECIALIZATION: "role_based"}


def variants():
    """(label, format, program, pass configs) for every variant."""
    out = [("bf16 %s" % (t,), "bf16", programs.gemm(*GEMM, "bfloat16", "bfloat16", t), None) for t in BF16_TILES]
    out.append(("bf16 %s no-ws" % (BF16_TILES[0],), "bf16",
                programs.gemm(*GEMM, "bfloat16", "bfloat16", BF16_TILES[0]), NO_WARP_SPECIALIZATION))
    out.append(("bf16 %s role-based" % (BF16_TILES[1],), "bf16",
                programs.gemm(*GEMM, "bfloat16", "bfloat16", BF16_TILES[1]), ROLE_BASED))
    out += [("fp8 %s" % (t,), "fp8", programs.gemm(*GEMM, "float8_e4m3", "bfloat16", t), None) for t in FP8_TILES]
    for block, threads in STREAM_BLOCKS:
        out.append(("copy block=%d threads=%d" % (block, threads), "copy",
                    programs.copy(STREAM_N, block=block, threads=threads), None))
        out.append(("triad block=%d threads=%d" % (block, threads), "triad",
                    programs.triad(STREAM_N, block=block, threads=threads), None))
    return out


class Data:
    """Inputs, references and torch's timings, shared by every variant."""

    def __init__(self):
        torch.backends.cuda.matmul.allow_tf32 = False
        self.gemm = {}
        for fmt, dtype in (("bf16", torch.bfloat16), ("fp8", torch.float8_e4m3fn)):
            a = torch.randn(GEMM[0], GEMM[2], device="cuda").to(dtype)
            b = torch.randn(GEMM[1], GEMM[2], device="cuda").to(dtype)
            c = torch.empty(GEMM[0], GEMM[1], device="cuda", dtype=torch.bfloat16)
            self.gemm[fmt] = (a, b, c, a.float() @ b.float().t())
        self.x, self.y, self.z = (torch.randn(STREAM_N, device="cuda") for _ in range(3))
        self.torch_seconds = self.time_torch()

    def time_torch(self):
        one = torch.ones((), device="cuda")
        bf16, fp8 = self.gemm["bf16"], self.gemm["fp8"]
        return measure.compare({
            "bf16": lambda: torch.matmul(bf16[0], bf16[1].t()),
            "bf16 out=": lambda: torch.matmul(bf16[0], bf16[1].t(), out=bf16[2]),
            "fp8": lambda: torch._scaled_mm(fp8[0], fp8[1].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
            "copy": lambda: self.y.copy_(self.x),
            "triad": lambda: torch.add(self.x, self.z, alpha=3.0, out=self.y),
        })

    def call(self, fmt, jit):
        """A call of the variant and its reference result."""
        if fmt in self.gemm:
            a, b, c, ref = self.gemm[fmt]
            return (lambda: jit(a, b, c)), c, ref
        if fmt == "copy":
            return (lambda: jit(self.x, self.y)), self.y, self.x
        return (lambda: jit(self.y, self.x, self.z, 3.0)), self.y, torch.add(self.x, self.z, alpha=3.0)

    def rate(self, fmt, seconds):
        """TFLOP/s for a GEMM, GB/s (bytes read plus written) for copy and triad."""
        if fmt.split()[0] in self.gemm:
            return FLOPS / seconds / 1e12
        return (8 if fmt == "copy" else 12) * STREAM_N / seconds / 1e9


def measure_variant(data, label, fmt, jit):
    call, out, ref = data.call(fmt, jit)
    out.fill_(math.nan)
    call()
    error = measure.rel_error(out, ref)
    seconds = measure.compare({"k": call})["k"]
    return {"variant": label, "rate": round(data.rate(fmt, seconds), 1),
            "vs_torch": round(data.torch_seconds[fmt] / seconds, 4), "rel_error": error}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    target = {"kind": "cuda", "arch": "sm_%d%da" % (props.major, props.minor)}
    todo = variants()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # nvcc is a subprocess: threads overlap
        futures = [pool.submit(tilelang.compile, func, target=target, pass_configs=configs)
                   for _, _, func, configs in todo]
    data = Data()
    print("torch: " + ", ".join("%s %.1f" % (fmt, data.rate(fmt, s)) for fmt, s in data.torch_seconds.items()))
    results = []
    for (label, fmt, _, _), future in zip(todo, futures, strict=True):
        try:
            row = measure_variant(data, label, fmt, future.result())
        except Exception as err:  # a variant that does not build or run is a result too
            row = {"variant": label, "error": str(err)[-300:]}
        results.append(row)
        print(json.dumps(row))
    # torch again, after minutes of load: the first numbers were taken on a cool GPU
    again = data.time_torch()
    print("torch at the end: " + ", ".join("%s %.1f" % (fmt, data.rate(fmt, s)) for fmt, s in again.items()))
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"device": props.name, "torch": torch.__version__, "tilelang": tilelang.__version__,
                       "torch_seconds": data.torch_seconds, "torch_seconds_at_end": again,
                       "results": results}, handle, indent=1)


if __name__ == "__main__":
    main()
