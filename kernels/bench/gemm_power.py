"""TileLang's GEMMs against torch's, timed two ways; prints one line per format and way.

    PYTHONPATH=kernels python3 kernels/bench/gemm_power.py

'sustained' is the qualification's own timing: rounds of about 30 ms each, TileLang and torch alternating
with no pause, so both run in the same (on an H200, power-capped) clock state. 'burst' pauses 1.5 s before
every 10-call loop so the GPU starts each one cool, at its boost clock, as a short benchmark would.
The two differ when a card's power cap lowers its clock under sustained load (docs/kernels.md).
"""

import statistics
import time

import torch

from ds41f_kernels import catalog, measure, profiles, qualify

ROUNDS = 9
PAUSE_SECONDS = 1.5
BURST_CALLS = 10


def burst(fns):
    samples = {name: [] for name in fns}
    for fn in fns.values():
        measure.loop_length(fn)  # warm-up calls
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            time.sleep(PAUSE_SECONDS)
            samples[name].append(measure.seconds_per_call(fn, BURST_CALLS))
    return {name: statistics.median(values) for name, values in samples.items()}


def main():
    props = torch.cuda.get_device_properties(0)
    kind, entry = profiles.resolve(profiles.load(), props.name, (props.major, props.minor))
    kernels = [k for k in catalog.kernels_for(entry, entry["arch"]) if k.name in ("gemm_bf16", "gemm_fp8")]
    jits, _ = qualify.warm_up(kernels, entry["arch"])
    for kernel in kernels:
        load = qualify.Workload.make(kernel, jits[kernel.name])
        fns = {"tilelang": load.run, "torch": load.torch_run}
        for way, timing in (("sustained", measure.compare), ("burst", burst)):
            seconds = timing(fns)
            tflops = {name: kernel.flops() / s / 1e12 for name, s in seconds.items()}
            print("%s %s %s: tilelang %.1f TFLOP/s, %s %.1f TFLOP/s, ratio %.4f" % (
                kind, kernel.name, way, tflops["tilelang"], load.torch_name, tflops["torch"],
                tflops["tilelang"] / tflops["torch"]))


if __name__ == "__main__":
    main()
