# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The collective check around the probe (``collective_probe.py``): what each rank runs, and one verdict.

``rendezvous(spec)`` reads the master address and port from the rank's rendered engine command (vLLM's
``--master-addr``/``--master-port``, SGLang's ``--dist-init-addr``), so the check meets where the engine
will. ``docker_argv(spec, ...)`` is the probe's container: the engine's image, network, IPC, devices, GPUs,
env files (the fabric stage's NCCL env), env and mounts from the launch spec, with the image's Python as
entrypoint. ``verdict(results)`` merges every rank's result into one message that names the rank and the
cause, and the per-rank join time and bandwidth table.

Pure Python: the module, the filter and the unit tests share it.
"""

from __future__ import annotations

BACKENDS = ("nccl", "gloo")
SUFFIX = "-collective"  # the probe container's name: the engine's name plus this
RESULT_MARK = "DS41F-COLLECTIVE "
LABEL = "ds41f.collective"


class CollectiveError(ValueError):
    pass


def _flag(command, name):
    for i, arg in enumerate(command):
        if arg == name and i + 1 < len(command):
            return command[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def rendezvous(spec, master_addr="", master_port=0):
    """(address, port) the engine's group meets at, from the spec's command (vLLM) or the setting the image's boot
    reads (SGLang's DIST_INIT_ADDR); the overrides win when set."""
    command = [str(a) for a in spec.get("command") or []]
    addr, port = _flag(command, "--master-addr"), _flag(command, "--master-port")
    dist_init = _flag(command, "--dist-init-addr") or (spec.get("env") or {}).get("DIST_INIT_ADDR")
    if dist_init and not addr:
        addr, _, port = dist_init.rpartition(":")
    addr = master_addr or addr
    port = int(master_port or port or 0)
    if not addr or not port:
        raise CollectiveError("the launch spec of rank %s renders no rendezvous (--master-addr/--master-port, "
                              "--dist-init-addr or DIST_INIT_ADDR). Fix: set master_addr and master_port."
                              % spec.get("rank"))
    if not 0 < port < 65536:
        raise CollectiveError("master_port: %d is not a TCP port. Fix: use 1 to 65535." % port)
    return addr, port


def backend_for(spec, backend):
    """``auto``: NCCL where the engine gets GPUs, Gloo where it runs on CPU."""
    if backend == "auto":
        return "nccl" if spec.get("gpus") else "gloo"
    return backend


def config(spec, nodes, node, backend, release, image_id, master_addr, master_port, timeout_s, size_mib,
           iterations, check_elements=65536):
    """The probe's settings (DS41F_COLLECTIVE) for one rank."""
    if backend not in BACKENDS:
        raise CollectiveError("backend: %r is not one of %s. Fix: nccl on a DGX Spark, gloo in the lab."
                              % (backend, ", ".join(BACKENDS)))
    rank = int(spec["rank"])
    if not 0 <= rank < len(nodes) or nodes[rank] != node:
        raise CollectiveError("nodes: %s is rank %d, but nodes[%d] is %s. Fix: list the node names in rank order "
                              "(spark_nodes sorted by rank)." % (node, rank, rank, nodes[rank] if rank < len(nodes)
                                                                  else "missing"))
    if timeout_s < 5:
        raise CollectiveError("timeout_s: %d is too short for a group to form. Fix: 5 or more." % timeout_s)
    if size_mib <= 0 or iterations <= 0:
        raise CollectiveError("size_mib and iterations must be positive. Fix: e.g. 64 and 5.")
    addr, port = rendezvous(spec, master_addr, master_port)
    return {"rank": rank, "world_size": len(nodes), "nodes": list(nodes), "node": node, "backend": backend,
            "master_addr": addr, "master_port": port, "timeout_s": int(timeout_s), "release": release,
            "image_id": image_id, "size_bytes": int(size_mib * (1 << 20)), "iterations": int(iterations),
            "check_elements": int(check_elements)}


def container_name(spec):
    return spec["name"] + SUFFIX


def docker_argv(spec, image, settings, source, python="python3", socket_ifname="", env=None):
    """``docker run`` argv of the probe: the engine's container as the spec has it, running ``source``."""
    import json

    argv = ["docker", "run", "--rm", "--name", container_name(spec), "--network", "host", "--ipc", "host",
            "--label", "%s=%s" % (LABEL, spec["rank"])]
    if spec.get("gpus"):
        argv += ["--gpus", spec["gpus"]]
    for device in spec.get("devices") or []:
        argv += ["--device", device]
    for bind in spec.get("device_binds") or []:
        argv += ["--mount", "type=bind,source=%s,target=%s" % (bind["source"], bind["target"])]
    for rule in spec.get("device_cgroup_rules") or []:
        argv += ["--device-cgroup-rule", rule]
    for cap in spec.get("cap_add") or []:
        argv += ["--cap-add", cap]
    for opt in spec.get("security_opt") or []:
        argv += ["--security-opt", opt]
    for limit in spec.get("ulimits") or []:
        argv += ["--ulimit", limit]
    if spec.get("cpuset"):
        argv += ["--cpuset-cpus", spec["cpuset"]]
    for env_file in spec.get("env_files") or []:
        argv += ["--env-file", env_file]
    # --env wins over --env-file: the spec's env as the engine gets it, then the check's own settings.
    merged = dict(spec.get("env") or {})
    merged.update({str(k): str(v) for k, v in (env or {}).items()})
    if socket_ifname:
        merged["GLOO_SOCKET_IFNAME" if settings["backend"] == "gloo" else "NCCL_SOCKET_IFNAME"] = socket_ifname
    merged["DS41F_COLLECTIVE"] = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    for key, value in sorted(merged.items()):
        argv += ["--env", "%s=%s" % (key, value)]
    for mount in spec.get("mounts") or []:
        argv += ["--volume", mount]
    return argv + ["--entrypoint", python, image, "-c", source]


def parse_output(stdout):
    """The probe's result dict from its output (the last marked line), or None."""
    import json

    for line in reversed((stdout or "").splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                return json.loads(line[len(RESULT_MARK):])
            except ValueError:
                return None
    return None


def verdict(results):
    """One verdict over every rank's ``collective`` result (a list, any order; missing entries tolerated).

    ``ok`` only when every rank is ok. ``message`` names the rank and cause: the causes in rank order, each
    once (rank 0's view of who did not join and each rank's own reason often say the same in two ways)."""
    rows = sorted([r for r in results if isinstance(r, dict) and "rank" in r], key=lambda r: r["rank"])
    causes = []
    for row in rows:
        cause = row.get("cause")
        if not row.get("ok") and cause and cause not in causes:
            causes.append(cause)
    ok = bool(rows) and not causes and all(r.get("ok") for r in rows)
    table = [{"rank": r["rank"], "node": r.get("node", ""), "ok": bool(r.get("ok")), "import_s": r.get("import_s"),
              "join_s": r.get("join_s"),
              "group_s": r.get("group_s"), "busbw_mbs": r.get("busbw_mbs"), "algbw_mbs": r.get("algbw_mbs")}
             for r in rows]
    if ok:
        slowest = max(rows, key=lambda r: r.get("join_s") or 0)
        low = min(rows, key=lambda r: r.get("busbw_mbs") or 0)
        met = sorted({r["rendezvous"] for r in rows if r.get("rendezvous")})
        message = ("collective check ok: %d ranks%s; all-reduce and all-gather bit-exact; slowest join rank %d (%s) "
                   "%.1f s; lowest bus bandwidth rank %d (%s) %.1f MB/s" % (
                       len(rows), " met at " + ", ".join(met) if met else "", slowest["rank"],
                       slowest.get("node", ""), slowest.get("join_s") or 0,
                       low["rank"], low.get("node", ""), low.get("busbw_mbs") or 0))
    else:
        message = "collective check failed: " + ("; ".join(causes) or "no rank returned a result")
    failing = sorted({rank for r in rows for rank in (r.get("ranks") or []) if not r.get("ok")})
    return {"ok": ok, "message": message, "causes": causes, "ranks": table, "failing_ranks": failing,
            "lines": table_text(table).splitlines()}


def table_text(ranks):
    """The per-rank table as text (bench/collective and the stage's output)."""
    lines = ["%-4s %-8s %-4s %8s %8s %12s" % ("rank", "node", "ok", "join s", "group s", "busbw MB/s")]
    for r in ranks:
        lines.append("%-4s %-8s %-4s %8s %8s %12s" % (
            r["rank"], r["node"], "yes" if r["ok"] else "no", _num(r.get("join_s")), _num(r.get("group_s")),
            _num(r.get("busbw_mbs"))))
    return "\n".join(lines)


def _num(value):
    return "-" if value is None else "%.2f" % value if isinstance(value, float) and value < 100 else str(value)
