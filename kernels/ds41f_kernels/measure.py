"""Timing and the bit-repeat census on a CUDA device (torch events; nothing here runs without a GPU)."""

from __future__ import annotations

import math
import statistics

import torch

TARGET_SECONDS = 0.03  # each timed loop runs about this long, far past launch overhead and timer resolution


def seconds_per_call(fn, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0 / calls


def loop_length(fn):
    """How many calls make one timed loop of about TARGET_SECONDS (after three warm-up calls)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    one = seconds_per_call(fn, 1)
    return max(3, min(1000, int(TARGET_SECONDS / max(one, 1e-7))))


def compare(fns, rounds=7):
    """Median seconds per call of each function, timed in alternating rounds so drift hits all alike."""
    calls = {name: loop_length(fn) for name, fn in fns.items()}
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(seconds_per_call(fn, calls[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def rel_error(out, ref):
    """||out - ref|| / ||ref|| in float64; NaN (never passing) when anything is not finite."""
    out64, ref64 = out.double(), ref.double()
    if not torch.isfinite(out64).all():
        return math.nan
    return float(torch.linalg.vector_norm(out64 - ref64) / torch.linalg.vector_norm(ref64))


def _event():
    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


def census(run, out, repeats):
    """How many of ``repeats`` runs gave bits different from the first run's, with the inputs unchanged.

    The count stays on the GPU until the end, so the loop never waits for the host.
    """
    run()
    torch.cuda.synchronize()
    reference = out.clone()
    mismatches = torch.zeros((), dtype=torch.int64, device=out.device)
    for _ in range(repeats):
        run()
        mismatches += torch.ne(out, reference).any()
    return int(mismatches.item())


def census_beside(run, out, repeats, neighbour, neighbour_calls):
    """The census with ``neighbour`` (a bandwidth-heavy kernel) launched ``neighbour_calls`` times per repeat
    on a second stream. Returns (mismatches, share): ``share`` is the part of the kernel's own time during
    which the neighbour's stream was running too, from events around both (1.0: always side by side).
    """
    run()
    torch.cuda.synchronize()
    reference = out.clone()
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    side.wait_stream(main)
    mismatches = torch.zeros((), dtype=torch.int64, device=out.device)
    origin = _event()
    kernel_spans, neighbour_spans = [], []
    for _ in range(repeats):
        with torch.cuda.stream(side):
            begin = _event()
            for _ in range(neighbour_calls):
                neighbour()
            neighbour_spans.append((begin, _event()))
        begin = _event()
        run()
        kernel_spans.append((begin, _event()))
        mismatches += torch.ne(out, reference).any()
    main.wait_stream(side)
    torch.cuda.synchronize()
    return int(mismatches.item()), overlap_share(_times(origin, kernel_spans), _times(origin, neighbour_spans))


def _times(origin, spans):
    return [(origin.elapsed_time(begin), origin.elapsed_time(end)) for begin, end in spans]


def overlap_share(kernel_spans, neighbour_spans):
    """The part of the summed kernel spans covered by neighbour spans (both lists of (start, end), sorted)."""
    covered, total, j = 0.0, 0.0, 0
    for start, end in kernel_spans:
        total += end - start
        while j < len(neighbour_spans) and neighbour_spans[j][1] <= start:
            j += 1
        k = j
        while k < len(neighbour_spans) and neighbour_spans[k][0] < end:
            covered += max(0.0, min(end, neighbour_spans[k][1]) - max(start, neighbour_spans[k][0]))
            k += 1
    return round(covered / total, 3) if total > 0 else 0.0
