# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The doctor's live checks: every node's live readings (dgxspark.ds41f.live_state) against the model and recipe.

Each function returns findings - ``{node, stage, setting, expected, found, fix, severity[, path]}`` - for
the drift table, with the ``object`` they are about and, for a consequence, its ``cause`` as data (a fabric path's
findings also their ``aspect``, see ``converge``). A finding names the cause, not its echoes: a path whose MTU is
wrong on one end is one finding on that end, not also a failed ping from each side.
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils import launch
from ansible_collections.dgxspark.ds41f.plugins.module_utils.alignment import mismatches
from ansible_collections.dgxspark.ds41f.plugins.module_utils.conformance import ARGS_ENV
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import obj
from ansible_collections.dgxspark.ds41f.plugins.module_utils.drift import ACROSS_NODES, spread_echo
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import gpu
from ansible_collections.dgxspark.ds41f.plugins.module_utils.memory_saver_state import PACKING

ALIGNED_NODE_FACTS = ("kernel", "page_size", "driver", "uvm_srcversion", "secure_boot", "governor")
ALIGNMENT_STAGES = {"image_id": "image", "manifest_digest": "model"}


def finding(node, stage, setting, expected, found, fix, severity="error", path=None):
    out = {"node": node, "stage": stage, "setting": setting, "expected": expected, "found": found, "fix": fix,
           "severity": severity}
    if path:
        out["path"] = path
    return out


# -- fabric ----------------------------------------------------------------------------------------


def _link_finding(node, netdev, aspect, expected, found, fix, cidr):
    """A finding about one end of a path, its object the link and the part that differs as data (``converge``)."""
    return dict(finding(node, "fabric", "%s %s" % (netdev, aspect), expected, found, fix, path=cidr),
                object=obj("link", netdev), aspect=aspect)


def _path_end(node, netdev, address, link, mtu, cidr):
    """The first thing wrong with one end of a path, or None."""
    if link is None or not link.get("present"):
        return _link_finding(node, netdev, "link", "present", "missing",
                             "check the cable at %s %s, then: ip link show %s" % (node, netdev, netdev), cidr)
    if not link.get("carrier") or link.get("operstate") not in ("up", "unknown"):
        return _link_finding(node, netdev, "carrier", "up",
                             "%s, carrier %s" % (link.get("operstate"), "on" if link.get("carrier") else "off"),
                             "reseat the cable at %s %s; then: ip link set dev %s up" % (node, netdev, netdev), cidr)
    if link.get("mtu") != mtu:
        return _link_finding(node, netdev, "mtu", mtu, link.get("mtu"),
                             "ip link set dev %s mtu %d now, then ds41f run fabric to keep it" % (netdev, mtu), cidr)
    wanted = "%s/%s" % (address, cidr.split("/")[1])
    if wanted not in link.get("addresses", []):
        return _link_finding(node, netdev, "address", wanted, ", ".join(link.get("addresses", [])) or None,
                             "ds41f run fabric", cidr)
    return None


def fabric(cables, links_by_node, pings_by_node, mtu):
    """One row per path that is not right (``cables``: spark_cables; ``links_by_node``: {node: {netdev: state}}).
    A node without a reading (silent, unreachable) is not judged: its end of a path is unknown, not missing, and
    so is whether the path carries pings; the node's own row says why."""
    out = []
    for row in cables:
        ends = [(row["a"], row["a_netdev"])]
        if row["b"] != "switch":
            ends.append((row["b"], row["b_netdev"]))
        read = [(node, netdev) for node, netdev in ends if node in links_by_node]
        causes = [_path_end(node, netdev, row["addresses"][node], links_by_node[node].get(netdev), mtu,
                            row["cidr"]) for node, netdev in read]
        causes = [c for c in causes if c]
        if causes or len(read) < len(ends):
            out.extend(causes)
            continue
        for node, netdev in ends:  # both ends look right: judge the path by its pings
            others = {a for n, a in row["addresses"].items() if n != node}
            failed = sorted(p["address"] for p in pings_by_node.get(node, [])
                            if p["netdev"] == netdev and p["address"] in others and not p["ok"])
            if failed:
                found = finding(node, "fabric", "%s reachability" % netdev,
                                "%d-byte pings answered" % mtu, "no answer from %s" % ", ".join(failed),
                                "ping -M do -s %d -I %s %s; check the peer's link and MTU" % (
                                    mtu - 28, netdev, failed[0]), path=row["cidr"])
                found["aspect"] = "reachability"  # a consequence: of the far end's link, where there is one
                far = [end for end in ends if end != (node, netdev)]
                if len(far) == 1:
                    found["cause"] = obj("link", far[0][1], far[0][0])
                out.append(found)
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


def _flags(argv):
    """An engine's argv as (the words before its first flag, {flag: [its words, per use]}); --x=v is --x v."""
    leading, flags, current = [], {}, None
    for word in argv:
        if word.startswith("--") or (word[:1] == "-" and word[1:2].isalpha()):
            name, sep, value = word.partition("=")
            current = [value] if sep else []
            flags.setdefault(name, []).append(current)
        elif current is None:
            leading.append(word)
        else:
            current.append(word)
    return leading, flags


def _uses(uses):
    return None if uses is None else "; ".join(" ".join(words) or "(set)" for words in uses)


def command_rows(expected, found):
    """(setting, expected, found) per flag whose value differs, is missing or is extra: a whole engine command is
    too long to read in the table, where both sides would start alike (the flag comes first in the setting, which
    the table clips at its end). Only an order or a spelling (--x=v) that differs shows the whole commands."""
    if expected == found:
        return []
    (lead_a, flags_a), (lead_b, flags_b) = _flags(expected), _flags(found)
    rows = []
    if lead_a != lead_b:
        rows.append(("arguments before the flags (container command)", " ".join(lead_a), " ".join(lead_b)))
    for name in sorted(set(flags_a) | set(flags_b)):
        if flags_a.get(name) != flags_b.get(name):
            rows.append(("%s (container command)" % name, _uses(flags_a.get(name)), _uses(flags_b.get(name))))
    return rows or [("flag order or spelling (container command)", " ".join(expected), " ".join(found))]


def env_files_from_recipe(hosts, path, rendered):
    """Each node's reading of ``path`` replaced by what the recipe renders for it (``rendered``: node -> vars):
    a container is judged against the recipe, never against a node's copy that may itself have drifted."""
    for node, h in hosts.items():
        if node in rendered:
            h["live"]["env_files"] = dict(h["live"].get("env_files") or {}, **{path: rendered[node]})
    return hosts


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
        return out  # a stopped rank is the serving group's row (serving_group); its settings are not the cause
    if spec.get("image") and spec["image"] != state.get("image"):
        out.append(finding(node, "serve", "container image", spec["image"], state.get("image"), fix))
    entrypoint = list(spec.get("entrypoint") or []) or list(state.get("image_entrypoint") or [])
    if entrypoint[:1] != list(state.get("entrypoint") or [])[:1]:
        out.append(finding(node, "serve", "container entrypoint", " ".join(entrypoint),
                           " ".join(state.get("entrypoint") or []), fix))
    command = list(spec.get("entrypoint") or [])[1:] + list(spec.get("command") or [])
    out.extend(finding(node, "serve", setting, expected, found, fix)
               for setting, expected, found in command_rows(command, list(state.get("command") or [])))
    expected = _env_dict(state.get("image_env"))
    for path in spec.get("env_files") or []:
        expected.update((env_files or {}).get(path) or {})
    expected.update({k: str(v) for k, v in (spec.get("env") or {}).items()})
    found = _env_dict(state.get("env"))
    for key in sorted((set(expected) | set(found)) - set(ignore_env)):
        if expected.get(key) == found.get(key):
            continue
        if key in ARGS_ENV and key in expected and key in found:  # engine arguments: one row per flag, as a command's
            out.extend(finding(node, "serve", setting.replace("(container command)", "(container env %s)" % key),
                               want, got, fix)
                       for setting, want, got in command_rows(expected[key].split(), found[key].split()))
        else:
            out.append(finding(node, "serve", "container env %s" % key, expected.get(key), found.get(key), fix))
    mounts = sorted(_bind(m) for m in spec.get("mounts") or [])
    if mounts != sorted(state.get("mounts") or []):
        out.append(finding(node, "serve", "container mounts", ", ".join(mounts),
                           ", ".join(state.get("mounts") or []), fix))
    found_config = state.get("host_config")
    if found_config is not None:  # its settings as Docker holds them now: a `docker update` shows here
        for key, wanted in sorted(launch.host_config(spec).items()):
            if found_config.get(key) != wanted:
                back = launch.update_command(spec["name"], key, wanted)  # put back in place, no restart
                out.append(finding(node, "serve", "container %s" % key, _shown(wanted), _shown(found_config.get(key)),
                                   "%s on %s" % (back, node) if back else fix))
    for row in out:
        row["object"] = {"kind": "container", "name": spec["name"]}
    return out


def _shown(value):
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def strangers(node, found, container):
    """A container no stage declared, one row each: on a Spark it holds unified memory the guards count on."""
    out = []
    for item in found or []:
        held = " holding %s" % item["memory"] if item.get("memory") else ""
        row = finding(node, "serve", "container %s (no stage runs it)" % item["name"], "only %s" % container,
                      "%s, %s%s" % (item["state"], item["image"], held),
                      "docker rm -f %s on %s, once you know nobody needs it (it counts against the memory guards "
                      "of %s)" % (item["name"], node, container), "error" if item["state"] == "running" else "warn")
        row["object"] = {"kind": "container", "name": item["name"]}
        out.append(row)
    return out


# -- the serving group ------------------------------------------------------------------------------

def group_fix(container_name):
    return ("restart the whole tensor-parallel group - disruptive: every rank's engine stops and the API is down "
            "until the group is ready again: ds41f run serve -e '{\"serve_replace\": true}' (it starts the "
            "missing rank and replaces the others; docker logs %s on the rank says why it stopped)" % container_name)


def _rank_state(state):
    if state is None:
        return "absent"
    if state.get("running"):
        return "running"
    logs = " | ".join(state.get("logs") or []) or "no log lines"
    return "%s (exit code %s%s); last log: %s" % (state.get("status") or "stopped", state.get("exit_code"),
                                                  ", OOM-killed" if state.get("oom_killed") else "", logs)


def serving_group(hosts, head, guard_unit, served_names):
    """The serving group's health, per rank: the engine container running, exited (exit code, last log lines)
    or absent; the memory guard active; the head's API answering. A cluster where no rank has an engine is not
    serving (nothing to judge): it returns no finding and says so in ``unchecked``.

    Returns (findings, unchecked): ``unchecked`` as ``{node, check, reason}``."""
    findings, unchecked = [], []
    states = {n: h["live"].get("container") for n, h in hosts.items()}
    specs = {n: h["live"].get("launch_spec") or {} for n, h in hosts.items()}
    if not any(states.values()):
        for n in sorted(hosts):
            unchecked.append({"node": n, "check": "serving group", "reason": "no rank has an engine container "
                              "(not serving: ds41f run serve starts the group)"})
        return findings, unchecked
    for n in sorted(hosts):
        name = specs[n].get("name") or "the engine"
        state = _rank_state(states[n])
        # A rank not read (its Docker down) is unknown, not absent: live_state lists it as not checked.
        if state != "running" and not hosts[n]["live"].get("container_unread"):
            findings.append(finding(n, "serve", "container %s (rank of the tensor-parallel group)" % name,
                                    "running", state, group_fix(name)))
        guard = hosts[n]["live"].get("guard")
        if guard_unit and guard is not None and guard.get("active") != "active":
            findings.append(finding(n, "serve", "unit %s (memory guard)" % guard_unit, "active",
                                    "%s (%s, result %s)" % (guard.get("active"), guard.get("sub"),
                                                            guard.get("result")),
                                    "systemctl start %s on %s (the engine runs unguarded until then; ds41f run serve "
                                    "re-arms it too)" % (guard_unit, n)))
    api = (hosts.get(head) or {}).get("live", {}).get("api")
    if api:
        findings.extend(api_findings(head, api, served_names, specs[head].get("name") or "the engine"))
    findings.extend(watchdog_findings(head, (hosts.get(head) or {}).get("live", {}).get("watchdog")))
    return findings, unchecked


def restart_could_not_run(state):
    """The watchdog's last restart attempt could not run (a restart command failed), no restart ran since, and its
    last look found the group still not serving (a group that serves again, mended by hand, is no longer a problem;
    the attempt stays in its count, its records and its journal)."""
    return (bool(state.get("last_failed_restart")) and state["last_failed_restart"] > (state.get("last_restart") or 0)
            and state.get("verdict") not in ("answering", "moving"))


WATCHDOG_ACCESS_FIX = ("the head's watchdog restarts each worker over ssh with its own key, checked against the "
                       "site's pinned host keys: ds41f doctor names a missing key entry or known_hosts, and ds41f "
                       "run serve puts them back")


def watchdog_findings(node, state):
    """The serving watchdog's state file: a tripped circuit breaker, a restart that could not run, or a restart that
    did not bring the group back, is a row; a watchdog that restarted the group once and it answers again is not."""
    if not state:
        return []
    out = []
    if restart_could_not_run(state):
        out.append(finding(node, "serve", "serving watchdog (restart could not run)", "every rank restarted",
                           state.get("last_failure") or "a restart command failed", WATCHDOG_ACCESS_FIX))
    if state.get("breaker") == "open":
        out.append(finding(node, "serve", "serving watchdog (circuit breaker)", "closed",
                           "open: %s" % (state.get("reason") or "no reason recorded"),
                           "read docker logs on every rank; then %s. The breaker closes when the stage starts the "
                           "group again" % group_fix("the engine container")))
    elif state.get("last_restart") and state.get("last_restart_ok") is False:
        out.append(finding(node, "serve", "serving watchdog (last restart)", "the group ready again",
                           state.get("last_restart_result") or "failed", group_fix("the engine container")))
    return out


def api_findings(node, api, served_names, container_name):
    """An engine whose container runs but whose API does not answer, or lists other models."""
    out = []
    fix = ("the engine runs but does not serve: docker logs %s on %s says why; if it stays so, %s" % (
        container_name, node, group_fix(container_name)))
    if not api["health"]["ok"]:
        out.append(finding(node, "serve", "API %s/health" % api["url"], "200 OK", api["health"]["error"] or "no answer",
                           fix))
    progress = api.get("progress")
    if progress and not progress.get("ok"):  # /health answers, no token comes: a hung collective or kernel
        out.append(finding(node, "serve", "engine progress (%s)" % api["url"],
                           "a first token in time, or prompt or generated tokens moving", progress.get("seen"),
                           "the group is stalled (a hung collective or kernel; only a stop and start of every rank "
                           "recovers it): %s" % group_fix(container_name)))
    missing = [m for m in served_names if m not in api.get("models") or []]
    if api.get("models_error") or missing:
        out.append(finding(node, "serve", "API %s/v1/models" % api["url"], "lists %s" % ", ".join(served_names),
                           api.get("models_error") or "lists %s" % (", ".join(api.get("models") or []) or "nothing"),
                           fix))
    return out


# -- settings a real Spark drifts on -----------------------------------------------------------------


def nvidia_drm(node, params):
    """nvidia-drm's module parameters (/sys/module/nvidia_drm/parameters): modeset and fbdev must be Y (a DGX OS
    package sets modeset=0, which breaks the display console and the driver's own memory reporting)."""
    if params is None:
        return []
    out = []
    for key in ("modeset", "fbdev"):
        if key in params and params[key] != "Y":
            out.append(finding(node, "host_baseline", "nvidia-drm %s (/sys/module/nvidia_drm/parameters/%s)" % (
                key, key), "Y", params[key], "ds41f run host_baseline (it purges the package that sets "
                "modeset=0 and writes the modprobe option), then reboot %s" % node))
    return out


def memory_saver(node, assessment, readings, want):
    """Memory-saver states that need a hand on a real Spark, as rows: the 64 KiB kernel installed but not running
    yet (a boot pending), the module installed but not loaded, loaded from an older build, or loaded with packing
    off. ``assessment``: memory_saver_state.assess's result; ``readings`` and ``want`` as it takes them."""
    state = assessment["state"]
    loaded = readings.get("uvm_loaded") or {}
    if state == "installed" and readings.get("kernel_installed") and readings.get("running") != want["kernel"]:
        return [finding(node, "kernel", "running kernel", want["kernel"], "%s (the 64 KiB kernel is installed and "
                        "waits for a boot)" % readings.get("running"),
                        "reboot %s into %s (drain it first: the engine on it stops)" % (node, want["kernel"]))]
    if state == "installed":
        return [finding(node, "memory_saver", "nvidia_uvm module (memory saver %s)" % want["version"], "loaded",
                        "installed, not loaded", "ds41f run memory_saver (it loads nvidia_uvm), or reboot %s" % node)]
    if state == "wrong-srcversion":
        return [finding(node, "memory_saver", "nvidia_uvm srcversion (loaded)", "the memory saver's build",
                        loaded.get("srcversion"), "ds41f run memory_saver to reload nvidia_uvm, or reboot %s when "
                        "the GPU is in use" % node)]
    if state == "packing-off":
        return [finding(node, "memory_saver", "nvidia_uvm parameter %s" % PACKING, "Y",
                        (loaded.get("parameters") or {}).get(PACKING),
                        "reload nvidia_uvm with %s=Y (ds41f run memory_saver when the GPU is idle), or reboot %s" % (
                            PACKING, node))]
    return []


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
    found = []
    for key in present:  # a node that has no reading of an image or checkpoint key is left out of its comparison
        found.extend(mismatches({n: r for n, r in readings.items() if key in r or key not in ALIGNMENT_STAGES},
                                [key]))
    out = []
    for m in found:
        stage = ALIGNMENT_STAGES.get(m["setting"], "site_config")
        row = finding("all", stage, m["setting"], ACROSS_NODES, m["found"], m["fix"])
        echo_of = spread_echo(stage)  # an image or checkpoint: the rows naming the node whose copy is wrong explain it
        if echo_of:
            row["echo_of"] = echo_of
        out.append(row)
    return out


def evaluate(hosts, cables, mtu, startup_gib, steady_gib, serve_fix, ignore_env=(), head=None, guard_unit="",
             served_names=(), unchecked=None):
    """Every finding for the cluster. ``hosts``: {node: {"live": live_state's live, "node": ds41f_node}}.
    ``unchecked``, a list, receives the checks that could not be made, as ``{node, check, reason}``."""
    out = []
    group, not_made = serving_group(hosts, head, guard_unit, served_names)
    out.extend(group)
    if unchecked is not None:
        unchecked.extend(not_made)
    links = {n: h["live"].get("links", {}) for n, h in hosts.items()}
    pings = {n: h["live"].get("pings", []) for n, h in hosts.items()}
    out.extend(fabric(cables, links, pings, mtu))
    for node, h in sorted(hosts.items()):
        live = h["live"]
        out.extend(nvidia_drm(node, live.get("nvidia_drm")))
        state = live.get("container")
        serving = bool(state and state.get("running"))
        # The serve stage keeps a container whose labels match its spec, so the fix removes it first.
        name = (live.get("launch_spec") or {}).get("name") or "the engine container"
        fix = "docker rm -f %s on %s (its rank stops: disruptive), then %s" % (name, node, serve_fix)
        out.extend(container(node, live.get("launch_spec"), state, fix, live.get("env_files"), ignore_env))
        out.extend(strangers(node, live.get("strangers"), name))
        out.extend(memory(node, live.get("memory", {}), serving, startup_gib, steady_gib))
        out.extend(gpu_latch(node, live.get("gpus"), serving))
    readings = {}
    for node, h in hosts.items():
        r = {k: (h.get("node") or {}).get(k) for k in ALIGNED_NODE_FACTS}
        # An image or checkpoint not read (its Docker down, the folder gone) is unknown, not different: its own
        # stage's row names it.
        r.update({k: h["live"][k] for k in ALIGNMENT_STAGES if h["live"].get(k) is not None})
        readings[node] = r
    out.extend(alignment(readings, ALIGNED_NODE_FACTS + tuple(ALIGNMENT_STAGES)))
    return out
