"""One qualification of the GPU this process sees: compile, bandwidth, GEMMs, census, then the verdict.

The result is one JSON-ready document (verdict.SCHEMA); ``status`` is 'passed', 'failed', or 'skipped'
when there is no CUDA device to qualify.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ds41f_kernels import __version__, catalog, profiles, verdict

TRIAD_SCALAR = 3.0
# SM120-family block-scaled MMAs by format: (kind, scale vector size, scale type) as PTX names them.
BLOCK_SCALED = {"mxfp8": ("mxf8f6f4", 1, "ue8m0"), "mxfp4": ("mxf4nvf4", 2, "ue8m0")}
FLIP_WHAT = "injected: the lowest bit of the first output byte flipped after every second census run"


def versions():
    out = {"ds41f_kernels": __version__, "tilelang": None, "torch": None, "cuda": None}
    try:
        import torch

        out["torch"], out["cuda"] = torch.__version__, torch.version.cuda
        import tilelang

        out["tilelang"] = tilelang.__version__
    except ImportError:
        pass
    return out


def skipped(reason):
    return {"schema": verdict.SCHEMA, "status": "skipped", "reason": reason, "versions": versions()}


def run(kind=None, repeats=None, thresholds=None, inject_bitflip=None):
    """Qualify CUDA device 0; ``kind`` forces a device kind, ``repeats`` the census length.

    ``inject_bitflip`` names a kernel whose census repeats get one output bit flipped on every second run
    (see ``flipping``): it tests the refusal path on a healthy GPU, and the document says so.
    """
    import torch

    if not torch.cuda.is_available():
        return skipped("no CUDA device visible to torch %s (CUDA %s)" % (torch.__version__, torch.version.cuda))
    started = time.monotonic()
    props = torch.cuda.get_device_properties(0)
    capability = (props.major, props.minor)
    kind, entry = profiles.resolve(profiles.load(thresholds), props.name, capability, kind)
    arch = entry["arch"]
    doc = {
        "schema": verdict.SCHEMA, "status": None, "reason": None, "versions": versions(),
        "device": {"name": props.name, "capability": "%d.%d" % capability, "kind": kind, "arch": arch,
                   "multiprocessors": props.multi_processor_count,
                   "memory_gib": round(props.total_memory / 2**30, 1)},
        "thresholds": entry["thresholds"],
    }
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 reference products stay float32
    kernels = catalog.kernels_for(entry, arch)
    jits, doc["jit"] = warm_up(kernels, arch)
    loads = {k.name: Workload.make(k, jits[k.name]) for k in kernels}
    if inject_bitflip and inject_bitflip not in loads:
        raise ValueError("--inject-bitflip %s: no such kernel here (%s)" % (inject_bitflip, ", ".join(loads)))
    doc["bandwidth"] = bandwidth(loads["copy"], loads["triad"], entry.get("peak_memory_gbps"))
    doc["gemm"] = {name: gemm(load) for name, load in loads.items() if load.kernel.family == "gemm"}
    doc["block_scaled"] = block_scaled(arch, entry.get("block_scaled_formats", []))
    neighbour = Workload.make(loads["copy"].kernel, jits["copy"], seed=1)
    neighbour.seconds = loads["copy"].seconds
    if inject_bitflip:
        doc["injected_fault"] = {"kernel": inject_bitflip, "what": FLIP_WHAT}
    doc["census"] = census(loads, neighbour, repeats or entry["thresholds"]["census_repeats"], inject_bitflip)
    doc["seconds"] = round(time.monotonic() - started, 1)
    return verdict.finish(doc, entry)


def cache_entries():
    """The entries of TileLang's kernel cache, one folder per compiled kernel (TileLang 0.1.15's layout)."""
    from tilelang.cache.kernel_cache import KernelCache

    root = KernelCache._get_cache_root()  # the only place that layout is defined
    return set(os.listdir(root)) if os.path.isdir(root) else set()


def warm_up(kernels, arch):
    """Compile every kernel (or load it from TileLang's cache) before anything is measured.

    nvcc runs as a subprocess, so threads compile in parallel. New cache entries tell fresh compiles from
    cache hits: a warm cache reports ``compiled: 0``.
    """
    import tilelang

    before, started = cache_entries(), time.monotonic()
    with ThreadPoolExecutor(max_workers=min(len(kernels), os.cpu_count() or 1)) as pool:
        futures = {k.name: pool.submit(catalog.compile_kernel, k, arch) for k in kernels}
        jits = {name: future.result() for name, future in futures.items()}
    fresh = len(cache_entries() - before)
    return jits, {"cache_dir": tilelang.env.TILELANG_CACHE_DIR, "arch": arch, "kernels": len(kernels),
                  "compiled": fresh, "from_cache": len(kernels) - fresh,
                  "seconds": round(time.monotonic() - started, 1)}


@dataclass
class Workload:
    """One kernel with its inputs on the GPU: ``run`` writes ``out``; ``torch_run`` is torch's same operation;
    ``expected`` computes the reference result; ``seconds`` is filled in once it has been timed.
    torch's GEMMs allocate their output: ``out=`` with a transposed operand ran 8-12% slower on an H200."""

    kernel: catalog.Kernel
    run: Callable
    torch_run: Callable
    torch_name: str
    out: object
    expected: Callable
    seconds: float = 0.0

    @classmethod
    def make(cls, kernel, jit, seed=0):
        import torch

        torch.manual_seed(seed)
        if kernel.name == "copy":
            src = torch.randn(kernel.shape[0], device="cuda")
            dst, spare = torch.full_like(src, math.nan), torch.empty_like(src)
            return cls(kernel, lambda: jit(src, dst), lambda: spare.copy_(src), "Tensor.copy_", dst, lambda: src)
        if kernel.name == "triad":
            b, c = torch.randn(kernel.shape[0], device="cuda"), torch.randn(kernel.shape[0], device="cuda")
            a, spare = torch.full_like(b, math.nan), torch.empty_like(b)
            return cls(kernel, lambda: jit(a, b, c, TRIAD_SCALAR),
                       lambda: torch.add(b, c, alpha=TRIAD_SCALAR, out=spare), "torch.add(alpha=)", a,
                       lambda: torch.add(b, c, alpha=TRIAD_SCALAR))
        m, n, k = kernel.shape
        dtype = getattr(torch, catalog.TORCH_DTYPES[kernel.dtype])
        a = torch.randn(m, k, device="cuda").to(dtype)
        b = torch.randn(n, k, device="cuda").to(dtype)
        c = torch.full((m, n), math.nan, device="cuda", dtype=torch.bfloat16)
        if kernel.dtype == "float8_e4m3":
            one = torch.ones((), device="cuda")
            torch_run, torch_name = (lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                              out_dtype=torch.bfloat16)), "torch._scaled_mm"
        else:
            torch_run, torch_name = (lambda: torch.matmul(a, b.t())), "torch.matmul"
        return cls(kernel, lambda: jit(a, b, c), torch_run, torch_name, c, lambda: a.float() @ b.float().t())

    def accuracy(self):
        """Poison the output, run once, and compare with the reference (float64 norms)."""
        from ds41f_kernels import measure

        self.out.fill_(math.nan)
        self.run()
        return measure.rel_error(self.out, self.expected())


def bandwidth(copy, triad, peak_gbps):
    """Copy and triad bandwidth (bytes read plus bytes written) against torch's copy and the datasheet peak."""
    from ds41f_kernels import measure

    errors = {"copy": copy.accuracy(), "triad": triad.accuracy()}
    seconds = measure.compare({"copy": copy.run, "torch_copy": copy.torch_run,
                               "triad": triad.run, "torch_triad": triad.torch_run})
    copy.seconds, triad.seconds = seconds["copy"], seconds["triad"]
    n = copy.kernel.shape[0]
    moved = {"copy": 2 * 4 * n, "torch_copy": 2 * 4 * n, "triad": 3 * 4 * n, "torch_triad": 3 * 4 * n}
    gbps = {name: moved[name] / s / 1e9 for name, s in seconds.items()}

    def of_peak(value):
        return round(value / peak_gbps, 4) if peak_gbps else None

    return {
        "peak_gbps": peak_gbps,
        "copy": {"bytes": moved["copy"], "tilelang_gbps": round(gbps["copy"], 1),
                 "torch_gbps": round(gbps["torch_copy"], 1), "vs_torch": round(gbps["copy"] / gbps["torch_copy"], 4),
                 "of_peak": of_peak(gbps["copy"]), "rel_error": errors["copy"]},
        "triad": {"bytes": moved["triad"], "tilelang_gbps": round(gbps["triad"], 1),
                  "torch_gbps": round(gbps["torch_triad"], 1),
                  "vs_torch_copy": round(gbps["triad"] / gbps["torch_copy"], 4), "of_peak": of_peak(gbps["triad"]),
                  "rel_error": errors["triad"]},
    }


def gemm(load):
    """TFLOP/s of the TileLang GEMM and of torch's, and the error against a float32 product."""
    from ds41f_kernels import measure

    error = load.accuracy()
    try:  # torch may lack the operation on this device (an FP8 product on an older GPU): report, go on
        load.torch_run()
        torch_error, fns = None, {"tilelang": load.run, "torch": load.torch_run}
    except RuntimeError as err:
        torch_error, fns = str(err).splitlines()[0], {"tilelang": load.run}
    seconds = measure.compare(fns)
    load.seconds = seconds["tilelang"]
    flops = load.kernel.flops()
    out = {"shape": list(load.kernel.shape), "format": load.kernel.dtype, "torch_op": load.torch_name,
           "tilelang_tflops": round(flops / seconds["tilelang"] / 1e12, 1), "torch_tflops": None,
           "vs_torch": None, "rel_error": error}
    if torch_error:
        out["torch_error"] = torch_error
    else:
        out["torch_tflops"] = round(flops / seconds["torch"] / 1e12, 1)
        out["vs_torch"] = round(seconds["torch"] / seconds["tilelang"], 4)
    return out


def block_scaled(arch, formats):
    """Whether the installed TileLang can emit each SM120-family block-scaled MMA this device kind lists.

    TileLang keeps the MMAs it can emit in one table; asking it is the only statement of support there is.
    No block-scaled kernel is run yet: ds41f_kernels has none that was validated on an SM12x GPU.
    """
    out = {}
    for fmt in formats:
        if not arch.startswith("sm_12"):
            out[fmt] = {"supported": False, "measured": False, "reason": "%s has no block-scaled MMA" % arch}
            continue
        try:
            from tilelang.cuda.intrinsics.macro.mma_sm120_macro_generator import _get_block_scale_mma_config

            _get_block_scale_mma_config(*BLOCK_SCALED[fmt])
        except (ImportError, ValueError) as err:
            out[fmt] = {"supported": False, "measured": False, "reason": "TileLang: %s" % err}
            continue
        out[fmt] = {"supported": True, "measured": False,
                    "reason": "no %s kernel in ds41f_kernels yet (none validated on an SM12x GPU)" % fmt}
    return out


def flipping(run, out):
    """``run``, then on every second call the lowest bit of ``out``'s first byte flipped, on the GPU stream:
    what a GPU whose repeats give different bits looks like to the census, made on purpose."""
    import torch

    first = out.view(-1)[:1].view(torch.uint8)[:1]
    calls = itertools.count()

    def run_and_flip():
        run()
        if next(calls) % 2:
            first.bitwise_xor_(1)

    return run_and_flip


def census(loads, neighbour, repeats, inject_bitflip=None):
    """Bit-repeat census of every kernel: alone, then beside ``neighbour`` (a copy) on a second stream.

    The neighbour is launched often enough per repeat to stay busy while the kernel under test runs;
    ``co_resident_share`` is the part of the kernel's time the neighbour was running too.
    """
    from ds41f_kernels import measure

    alone, beside, share = {}, {}, {}
    for name, load in loads.items():
        run = flipping(load.run, load.out) if name == inject_bitflip else load.run
        alone[name] = measure.census(run, load.out, repeats)
        calls = max(1, math.ceil(load.seconds / neighbour.seconds))
        beside[name], share[name] = measure.census_beside(run, load.out, repeats, neighbour.run, calls)
    return {"repeats": repeats, "neighbour": "copy kernel on a second stream", "alone": alone,
            "co_resident": beside, "co_resident_share": share}
