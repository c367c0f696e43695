"""python -m ds41f_kernels qualify | warmup | lower

qualify  qualify the GPU: one JSON document with --json (exit 0 passed, 1 failed, 3 skipped, 4 error)
warmup   compile every kernel of a device kind into TileLang's cache (TILELANG_CACHE_DIR or --cache-dir),
         so an image can carry a warm cache; needs nvcc, and a GPU only when --kind is not given
lower    lower every kernel to CUDA source for sm_90a and sm_121a (or --arch); no GPU, no nvcc
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback

EXIT = {"passed": 0, "failed": 1, "skipped": 3, "error": 4}
LOWER_ARCHS = ["sm_90a", "sm_121a"]


@contextlib.contextmanager
def stdout_to_stderr():
    """Keep stdout for the one JSON document: TileLang's logger and the compilers write to fd 1 too."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def emit(doc):
    print(json.dumps(doc, indent=1, sort_keys=False))


def error_doc(err):
    from ds41f_kernels import qualify, verdict

    traceback.print_exc(file=sys.stderr)
    return {"schema": verdict.SCHEMA, "status": "error", "reason": "%s: %s" % (type(err).__name__, err),
            "versions": qualify.versions()}


def cmd_qualify(args):
    from ds41f_kernels import verdict

    with stdout_to_stderr():
        try:
            from ds41f_kernels import qualify

            doc = qualify.run(args.kind, args.repeats, args.thresholds, args.inject_bitflip)
        except Exception as err:  # the caller gets a document saying why, whatever broke
            doc = error_doc(err)
    if args.json:
        emit(doc)
    else:
        print(verdict.summary(doc))
    return EXIT[doc["status"]]


def kind_and_arch(args):
    from ds41f_kernels import profiles

    kinds = profiles.load(args.thresholds)
    if args.kind:
        kind, entry = args.kind, dict(kinds[args.kind])
    else:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device here: name the device kind with --kind (%s)" % ", ".join(kinds))
        props = torch.cuda.get_device_properties(0)
        kind, entry = profiles.resolve(kinds, props.name, (props.major, props.minor))
    entry["arch"] = args.arch or entry.get("arch")
    if not entry["arch"]:
        raise SystemExit("device kind %s has no fixed architecture: give --arch (e.g. sm_90a)" % kind)
    return kind, entry


def cmd_warmup(args):
    from ds41f_kernels import catalog, qualify

    kind, entry = kind_and_arch(args)
    with stdout_to_stderr():
        _, report = qualify.warm_up(catalog.kernels_for(entry, entry["arch"]), entry["arch"])
    emit(dict(report, kind=kind))
    return 0


def cmd_lower(args):
    from ds41f_kernels import catalog, profiles

    kinds = profiles.load(args.thresholds)
    names = [args.kind] if args.kind else [name for name, entry in kinds.items() if entry.get("arch")]
    rows = []
    with stdout_to_stderr():
        for kind in names:
            for arch in args.arch or LOWER_ARCHS:
                for kernel in catalog.kernels_for(kinds[kind], arch):
                    source, smem, threads = catalog.lower(kernel, arch)
                    if args.out:
                        os.makedirs(args.out, exist_ok=True)
                        with open(os.path.join(args.out, "%s-%s-%s.cu" % (kind, arch, kernel.name)), "w") as fh:
                            fh.write(source)
                    limit = catalog.SHARED_MEMORY_LIMIT.get(arch)
                    rows.append({"kind": kind, "arch": arch, "kernel": kernel.name, "threads": threads,
                                 "shared_memory_bytes": smem, "fits": limit is None or smem <= limit,
                                 "tensor_core": catalog.tensor_core(source), "source_chars": len(source)})
    emit(rows)
    return 0 if all(row["fits"] for row in rows) else 1


def parser():
    top = argparse.ArgumentParser(prog="python -m ds41f_kernels", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    qualify = sub.add_parser("qualify", help="qualify this node's GPU")
    qualify.add_argument("--json", action="store_true", help="print one JSON document instead of a summary")
    qualify.add_argument("--repeats", type=int, help="census repeats (a run shorter than the kind's fails)")
    qualify.add_argument("--inject-bitflip", metavar="KERNEL",
                         help="testing the refusal: flip one output bit of KERNEL on every second census run")
    qualify.set_defaults(func=cmd_qualify)
    warmup = sub.add_parser("warmup", help="compile every kernel into TileLang's cache")
    warmup.set_defaults(func=cmd_warmup)
    lower = sub.add_parser("lower", help="lower every kernel to CUDA source (no GPU needed)")
    lower.add_argument("--out", help="write each kernel's CUDA source into this folder")
    lower.set_defaults(func=cmd_lower)
    for command in (qualify, warmup, lower):
        command.add_argument("--kind", help="device kind from thresholds.yml (default: matched from the GPU)")
        command.add_argument("--thresholds", help="another thresholds file (default: the packaged one)")
    for command in (qualify, warmup):
        command.add_argument("--cache-dir", help="TileLang's JIT cache folder (sets TILELANG_CACHE_DIR)")
    for command in (warmup, lower):
        command.add_argument("--arch", action="append" if command is lower else "store",
                             help="target architecture, e.g. sm_90a or sm_121a")
    return top


def main(argv=None):
    top = parser()
    args = top.parse_args(argv)
    if args.kind:
        from ds41f_kernels import profiles

        known = profiles.load(args.thresholds)
        if args.kind not in known:
            top.error("unknown device kind %r (known: %s)" % (args.kind, ", ".join(known)))
    if getattr(args, "cache_dir", None):  # before TileLang is imported: its cache reads the variable once
        os.environ["TILELANG_CACHE_DIR"] = os.path.abspath(args.cache_dir)
    return args.func(args)
