"""A generated stand-in checkpoint for the model stage's lab and bench: random shards, config, index.

    python tests/checkpoint.py OUT [--shards 8] [--shard-mib 32] [--seed 41]

Writes OUT/model-0000K-of-0000N.safetensors (valid safetensors files, one uint8 tensor of random bytes
each), OUT/config.json and OUT/model.safetensors.index.json. The same arguments always give the same
bytes, so a manifest made from one run matches another. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
from pathlib import Path

MIB = 1 << 20


def shard_bytes(index, size, seed):
    """One safetensors file: header length, JSON header, then ``size`` random bytes of tensor data."""
    name = "model.layers.%d.weight" % index
    header = json.dumps({"__metadata__": {"format": "pt"},
                         name: {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}}).encode()
    header += b" " * (-len(header) % 8)
    rng = random.Random("%d/%d" % (seed, index))
    return name, struct.pack("<Q", len(header)) + header + rng.randbytes(size)


def write(out, shards=8, shard_mib=32, seed=41):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    weight_map, total = {}, 0
    for k in range(1, shards + 1):
        fname = "model-%05d-of-%05d.safetensors" % (k, shards)
        tensor, data = shard_bytes(k, shard_mib * MIB, seed)
        (out / fname).write_bytes(data)
        weight_map[tensor] = fname
        total += shard_mib * MIB
    (out / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2, sort_keys=True) + "\n")
    (out / "config.json").write_text(json.dumps({
        "architectures": ["DeepseekV4ForCausalLM"], "model_type": "ds41f-lab-stand-in",
        "num_hidden_layers": shards, "note": "random bytes made by tests/checkpoint.py; not a model"},
        indent=2, sort_keys=True) + "\n")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--shard-mib", type=int, default=32)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args(argv)
    print(write(args.out, args.shards, args.shard_mib, args.seed))


if __name__ == "__main__":
    main()
