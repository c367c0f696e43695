"""The TileLang programs the qualification runs. Each builder returns a TileLang PrimFunc for fixed shapes.

Shapes are static (TileLang specialises every kernel to its shapes), so the JIT cache holds exactly the
kernels one device kind's sizes need; catalog.py decides which programs and shapes a device gets.
"""

# No `from __future__ import annotations` here: TileLang evaluates the tensor annotations against the
# builder's local names (shapes, dtypes), which string annotations would hide.
import tilelang.language as T

# 1024 threads each moving 16 elements (four 16-byte accesses in flight per thread); the best block of
# kernels/bench/sweep.py on an H200, within 2% of the others tried.
STREAM_BLOCK = 16384
STREAM_THREADS = 1024


def copy(n, dtype="float32", block=STREAM_BLOCK, threads=STREAM_THREADS):
    """dst = src over n elements: the memory-bandwidth kernel, also the co-resident 'noisy neighbour'."""

    @T.prim_func
    def stream_copy(src: T.Tensor((n,), dtype), dst: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                dst[bx * block + i] = src[bx * block + i]

    return stream_copy


def triad(n, dtype="float32", block=STREAM_BLOCK, threads=STREAM_THREADS):
    """a = b + scalar * c over n elements (STREAM's triad: two reads and one write per element)."""

    @T.prim_func
    def stream_triad(a: T.Tensor((n,), dtype), b: T.Tensor((n,), dtype), c: T.Tensor((n,), dtype),
                     scalar: T.float32):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                a[bx * block + i] = b[bx * block + i] + scalar * c[bx * block + i]

    return stream_triad


def gemm(m, n, k, in_dtype, out_dtype, tile):
    """C = A @ B.T with A (m, k) and B (n, k) row-major (a linear layer's weight layout), fp32 accumulation.

    ``tile`` is a catalog.Tile: block sizes, pipeline depth, threads and the rasterisation panel.
    """
    bm, bn, bk = tile.block_m, tile.block_n, tile.block_k

    @T.prim_func
    def gemm_tn(a: T.Tensor((m, k), in_dtype), b: T.Tensor((n, k), in_dtype), c: T.Tensor((m, n), out_dtype)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=tile.threads) as (bx, by):
            a_shared = T.alloc_shared((bm, bk), in_dtype)
            b_shared = T.alloc_shared((bn, bk), in_dtype)
            acc = T.alloc_fragment((bm, bn), "float32")
            T.use_swizzle(panel_size=tile.swizzle, enable=tile.swizzle > 0)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=tile.stages):
                T.copy(a[by * bm, ko * bk], a_shared)
                T.copy(b[bx * bn, ko * bk], b_shared)
                T.gemm(a_shared, b_shared, acc, transpose_B=True, policy=getattr(T.GemmWarpPolicy, tile.policy))
            T.copy(acc, c[by * bm, bx * bn])

    return gemm_tn
