"""Which kernels a device kind runs, at which shapes and tile sizes, and how to lower or compile them.

The shapes come from the device kind's entry in thresholds.yml (data); the tile sizes are per architecture
because they are bound by the chip's shared memory (227 KiB per block on Hopper, 99 KiB on the SM12x
family, CUDA programming guide). Nothing here needs a GPU: ``lower`` turns every kernel into CUDA source.
"""

from __future__ import annotations

from dataclasses import dataclass

# Largest dynamic shared memory one block may opt into, in bytes, per architecture family.
SHARED_MEMORY_LIMIT = {"sm_90a": 232448, "sm_121a": 101376}

TORCH_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn"}
GEMM_NAMES = {"bfloat16": "gemm_bf16", "float8_e4m3": "gemm_fp8"}


@dataclass(frozen=True)
class Tile:
    block_m: int
    block_n: int
    block_k: int
    stages: int
    threads: int
    swizzle: int  # rasterisation panel width (0: off), for L2 reuse of the B panels
    policy: str = "Square"  # how warps split the tile: TileLang's GemmWarpPolicy (Square, FullRow, FullCol)


# Hopper (wgmma): 128 x 256 tiles whose two consumer warpgroups each issue m64n256 MMAs (FullRow), with a TMA
# pipeline three (bf16) or four (fp8) stages deep; the best of kernels/bench/sweep.py on an H200.
# Every other architecture (mma.sync), the GB10's SM121 first: tiles that fit its 99 KiB of shared memory,
# chosen by that arithmetic, not tuned on a GB10.
TILES = {
    "wgmma": {
        "bfloat16": Tile(128, 256, 64, 3, 256, 16, "FullRow"),
        "float8_e4m3": Tile(128, 256, 128, 4, 256, 16, "FullRow"),
        "decode": Tile(16, 128, 128, 3, 128, 0),
    },
    "mma": {
        "bfloat16": Tile(128, 128, 64, 2, 256, 10),
        "float8_e4m3": Tile(128, 128, 128, 2, 256, 10),
        "decode": Tile(16, 128, 128, 2, 128, 0),
    },
}


def tiles_for(arch):
    return TILES["wgmma"] if arch.startswith("sm_90") else TILES["mma"]


@dataclass(frozen=True)
class Kernel:
    """One kernel of the qualification: ``family`` is 'stream' (copy, triad) or 'gemm'."""

    name: str
    family: str
    shape: tuple
    dtype: str
    tile: Tile | None = None

    def program(self):
        from ds41f_kernels import programs

        if self.name == "copy":
            return programs.copy(self.shape[0], self.dtype)
        if self.name == "triad":
            return programs.triad(self.shape[0], self.dtype)
        m, n, k = self.shape
        return programs.gemm(m, n, k, self.dtype, "bfloat16", self.tile)

    def flops(self):
        m, n, k = self.shape
        return 2 * m * n * k


def kernels_for(kind, arch):
    """The kernels one device kind runs: copy, triad, a GEMM per format of the kind, and a decode-shaped GEMM.

    ``kind`` is a device kind's entry of thresholds.yml (its ``sizes`` and ``gemm_formats``).
    """
    sizes = kind["sizes"]
    elements = sizes["stream_mib"] * 1024 * 1024 // 4  # float32
    out = [Kernel("copy", "stream", (elements,), "float32"), Kernel("triad", "stream", (elements,), "float32")]
    tiles = tiles_for(arch)
    for fmt in kind["gemm_formats"]:
        out.append(Kernel(GEMM_NAMES[fmt], "gemm", tuple(sizes["gemm"]), fmt, tiles[fmt]))
    out.append(Kernel("gemm_bf16_decode", "gemm", tuple(sizes["decode_gemm"]), "bfloat16", tiles["decode"]))
    return out


def cuda_target(arch):
    """A TVM CUDA target for one architecture; the dict form, because the string form rejects sm_121a."""
    from tilelang import tvm

    return tvm.target.Target({"kind": "cuda", "arch": arch})


def lower(kernel, arch):
    """Lower one kernel to CUDA C for ``arch`` without a GPU: (source, dynamic shared memory bytes, threads)."""
    import tilelang

    target = cuda_target(arch)
    with target:
        artifact = tilelang.lower(kernel.program(), target=target)
    smem = threads = 0
    for func in artifact.device_mod.functions.values():
        attrs = func.attrs or {}
        smem = max(smem, int(attrs.get("dyn_shared_memory_buf", 0)))
        extent = attrs.get("thread_extent", {})
        threads = max(threads, int(extent.get("threadIdx.x", 0)) if extent else 0)
    return artifact.kernel_source, smem, threads


def tensor_core(source):
    """The tensor-core instruction family a kernel's CUDA source uses: 'wgmma', 'mma.sync' or None."""
    if "wgmma" in source:
        return "wgmma"
    return "mma.sync" if "mma_sync" in source else None


def compile_kernel(kernel, arch):
    """Compile one kernel for ``arch`` through TileLang's JIT (nvcc; the result lands in TILELANG_CACHE_DIR)."""
    import tilelang

    return tilelang.compile(kernel.program(), target={"kind": "cuda", "arch": arch})
