# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's live checks: every node's live readings (dgxspark.ds41f.live_state) against the model and recipe.

Each function returns findings - ``{node, stage, setting, expected, found, fix, severity[, path]}`` - for
the drift table. A finding names the cause, not its echoes: a path whose MTU is wrong on one end is one
finding on that end, not also a failed ping from each side.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.alignment import mismatches
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import gpu

ALIGNED_NODE_FACTS = ("kernel", "page_size", "driver", "uvm_srcversion", "secure_boot", "governor")
ALIGNMENT_STAGES = {"image_id": "image", "manifest_digest": "model"}


def finding(node, stage, setting, expected, found, fix, severity="error", path=None):
    out = {"node": node, "stage": stage, "setting": setting, "expected": expected, "found": found, "fix": fix,
           "severity": severity}
    if path:
        out["path"] = path
    return out


# -- fabric ----------------------------------------------------------------------------------------


def _path_end(node, netdev, address, link, mtu, cidr):
    """The first thing wrong with one end of a path, or None."""
    if link is None or not link.get("present"):
        return finding(node, "fabric", "%s link" % netdev, "present", "missing",
                       "check the cable at %s %s, then: ip link show %s" % (node, netdev, netdev), path=cidr)
    if not link.get("carrier") or link.get("operstate") not in ("up", "unknown"):
        return finding(node, "fabric", "%s carrier" % netdev, "up",
                       "%s, carrier %s" % (link.get("operstate"), "on" if link.get("carrier") else "off"),
                       "reseat the cable at %s %s; then: ip link set dev %s up" % (node, netdev, netdev), path=cidr)
    if link.get("mtu") != mtu:
        return finding(node, "fabric", "%s mtu" % netdev, mtu, link.get("mtu"),
                       "ip link set dev %s mtu %d now, then ds41f run fabric to keep it" % (netdev, mtu), path=cidr)
    wanted = "%s/%s" % (address, cidr.split("/")[1])
    if wanted not in link.get("addresses", []):
        return finding(node, "fabric", "%s address" % netdev, wanted, ", ".join(link.get("addresses", [])) or None,
                       "ds41f run fabric", path=cidr)
    return None


def fabric(cables, links_by_node, pings_by_node, mtu):
    """One row per path that is not right (``cables``: spark_cables; ``links_by_node``: {node: {netdev: state}})."""
    out = []
    for row in cables:
        ends = [(row["a"], row["a_netdev"])]
        if row["b"] != "switch":
            ends.append((row["b"], row["b_netdev"]))
        causes = [_path_end(node, netdev, row["addresses"][node], links_by_node.get(node, {}).get(netdev), mtu,
                            row["cidr"]) for node, netdev in ends]
        causes = [c for c in causes if c]
        if causes:
            out.extend(causes)
            continue
        for node, netdev in ends:  # both ends look right: judge the path by its pings
            others = {a for n, a in row["addresses"].items() if n != node}
            failed = sorted(p["address"] for p in pings_by_node.get(node, [])
                            if p["netdev"] == netdev and p["address"] in others and not p["ok"])
            if failed:
                out.append(finding(node, "fabric", "%s reachability" % netdev,
                                   "%d-byte pings answered" % mtu, "no answer from %s" % ", ".join(failed),
                                   "ping -M do -s %d -I %s %s; check the peer's link and MTU" % (
                                       mtu - 28, netdev, failed[0]), path=row["cidr"]))
    return out


# -- the serving container -------------------------------------------------------------------------


def _env_dict(items):
    out = {}
    for item in items or []:
        key, _, value = item.partition("=")
        out[key] = value
    return out


def _mode(options):
    return "ro" if "ro" in options.split(",") else "rw"


def _bind(item):
    """'src:dst[:options]' as 'src:dst:ro|rw' (what docker inspect tells of a bind mount)."""
    parts = str(item).split(":")
    return "%s:%s:%s" % (parts[0], parts[1], _mode(parts[2] if len(parts) > 2 else "rw"))


def container(node, spec, state, fix, env_files=None, ignore_env=()):
    """The running container against its rendered launch spec: image, entrypoint, command, each env var, mounts.

    Only a container that exists is compared (a missing one is the serve stage's to report and start). Its
    environment is expected to be the image's, then the spec's env files', then the spec's own; variables in
    ``ignore_env`` (secrets from files, such as the API key) are never compared or shown.
    """
    if not spec or not state:
        return []
    out = []
    if not state.get("running"):
        out.append(finding(node, "serve", "container %s" % spec["name"], "running", "stopped", fix))
    if spec.get("image") and spec["image"] != state.get("image"):
        out.append(finding(node, "serve", "container image", spec["image"], state.get("image"), fix))
    entrypoint = list(spec.get("entrypoint") or []) or list(state.get("image_entrypoint") or [])
    if entrypoint[:1] != list(state.get("entrypoint") or [])[:1]:
        out.append(finding(node, "serve", "container entrypoint", " ".join(entrypoint),
                           " ".join(state.get("entrypoint") or []), fix))
    command = list(spec.get("entrypoint") or [])[1:] + list(spec.get("command") or [])
    if command != list(state.get("command") or []):
        out.append(finding(node, "serve", "container command", " ".join(command),
                           " ".join(state.get("command") or []), fix))
    expected = _env_dict(state.get("image_env"))
    for path in spec.get("env_files") or []:
        expected.update((env_files or {}).get(path) or {})
    expected.update({k: str(v) for k, v in (spec.get("env") or {}).items()})
    found = _env_dict(state.get("env"))
    for key in sorted((set(expected) | set(found)) - set(ignore_env)):
        if expected.get(key) != found.get(key):
            out.append(finding(node, "serve", "container env %s" % key, expected.get(key), found.get(key), fix))
    mounts = sorted(_bind(m) for m in spec.get("mounts") or [])
    if mounts != sorted(state.get("mounts") or []):
        out.append(finding(node, "serve", "container mounts", ", ".join(mounts),
                           ", ".join(state.get("mounts") or []), fix))
    return out


# -- memory, GPU, alignment --------------------------------------------------------------------------


def memory(node, mem, serving, startup_gib, steady_gib, margin_gib=1.0):
    """MemAvailable against the guard that applies now: steady while serving, startup before."""
    guard, phase = (steady_gib, "steady") if serving else (startup_gib, "startup")
    available = mem.get("available_gib")
    if available is None:
        return []
    fix = ("free memory on %s (stop what else runs there), or lower the KV pool; the %s guard kills the engine "
           "below %.1f GiB" % (node, phase, guard))
    if available < guard:
        return [finding(node, "serve", "memory headroom (%s guard)" % phase, "> %.1f GiB available" % guard,
                        "%.2f GiB" % available, fix)]
    if available < guard + margin_gib:
        return [finding(node, "serve", "memory headroom (%s guard)" % phase, "> %.1f GiB available" % (
            guard + margin_gib), "%.2f GiB" % available, fix, severity="warn")]
    return []


def gpu_latch(node, gpus, serving):
    return [dict(f, node=node, stage="verify") for f in gpu.latch_findings(gpus or [], serving)]


def alignment(readings, keys):
    """Cross-node differences as errors on 'all'; each reading's stage owns the fix."""
    present = [k for k in keys if any(r.get(k) is not None for r in readings.values())]
    out = []
    for m in mismatches(readings, present):
        stage = ALIGNMENT_STAGES.get(m["setting"], "site_config")
        out.append(finding("all", stage, m["setting"], "the same on every node", m["found"], m["fix"]))
    return out


def evaluate(hosts, cables, mtu, startup_gib, steady_gib, serve_fix, ignore_env=()):
    """Every finding for the cluster. ``hosts``: {node: {"live": live_state's live, "node": ds41f_node}}."""
    out = []
    links = {n: h["live"].get("links", {}) for n, h in hosts.items()}
    pings = {n: h["live"].get("pings", []) for n, h in hosts.items()}
    out.extend(fabric(cables, links, pings, mtu))
    for node, h in sorted(hosts.items()):
        live = h["live"]
        state = live.get("container")
        serving = bool(state and state.get("running"))
        out.extend(container(node, live.get("launch_spec"), state, serve_fix, live.get("env_files"), ignore_env))
        out.extend(memory(node, live.get("memory", {}), serving, startup_gib, steady_gib))
        out.extend(gpu_latch(node, live.get("gpus"), serving))
    readings = {}
    for node, h in hosts.items():
        r = {k: (h.get("node") or {}).get(k) for k in ALIGNED_NODE_FACTS}
        r.update({k: h["live"].get(k) for k in ALIGNMENT_STAGES})
        readings[node] = r
    out.extend(alignment(readings, ALIGNED_NODE_FACTS + tuple(ALIGNMENT_STAGES)))
    return out
