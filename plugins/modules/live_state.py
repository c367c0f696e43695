# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: live_state
short_description: Read one node's live state for the doctor (links, pings, memory, GPU clocks, serving container)
version_added: 0.1.0
description:
  - Reads, and never changes, what the doctor compares across nodes and against the recipe
    (M(dgxspark.ds41f.doctor_checks) does the comparing on the controller).
  - Also returns the fact C(ds41f_node) (what M(dgxspark.ds41f.node_facts) reads), so the stage reads a node once.
  - For every fabric path of the node - its netdev's presence, operstate, carrier, MTU and IPv4 addresses, and
    one don't-fragment ping at the fabric MTU to each peer over that netdev.
  - C(MemTotal) and C(MemAvailable); the GPUs' SM clocks through the hardware layer (skipped, with the reason,
    on a node that is not a DGX Spark); the serving container's command, environment, mounts and image as
    C(docker inspect) reports them, with the rendered launch spec it should match; an image's ID; the
    checkpoint manifest's digest from the model stage's record.
options:
  links:
    description: This node's fabric paths, as the inventory gives them (C(spark_links)).
    type: list
    elements: dict
    default: []
  mtu:
    description: The fabric MTU; pings carry a payload of MTU - 28 bytes with fragmentation forbidden.
    type: int
    default: 9000
  ping:
    description: Ping each peer over each path.
    type: bool
    default: true
  launch_spec:
    description:
      - This rank's launch spec as the serve stage renders it (the C(dgxspark.ds41f.launch_spec) filter).
      - Its C(name) is the container inspected, its C(image) the image whose ID is compared across nodes, and
        the variables of its C(env_files) are read here, as the container receives them.
    type: dict
  model_info:
    description: The model stage's record of the checkpoint (JSON with C(manifest_digest)), compared across nodes.
    type: path
  guard_unit:
    description: The memory guard's systemd unit, whose state is read (empty to read none).
    type: str
    default: ""
  api_url:
    description:
      - The head's API base (C(http://127.0.0.1:8000)); omit on workers. When the engine container runs, C(GET
        /health) and C(GET /v1/models) are asked once each, with a short timeout.
    type: str
  api_key_file:
    description:
      - The env file (C(VLLM_API_KEY=...)) holding the API's bearer token; never returned, and redacted from
        a stopped container's log lines (SGLang logs its server arguments, the key included).
      - When it holds no key and the API asks for one (HTTP 401), the API and progress checks are skipped with
        that reason; the file's own row (the serve stage's) is the cause.
    type: path
  progress_model:
    description:
      - A served name to judge the engine's progress by (the head, with O(api_url)) - one short streamed request
        with a first-token deadline of O(first_token_s), and the engine's C(/metrics) token counters read before
        and after it; omit to skip. A stall is requests in flight and no prompt or generated token in the window.
    type: str
  first_token_s:
    description: Seconds the progress probe waits for its first token.
    type: float
    default: 20
  watchdog_state_file:
    description: The serving watchdog's state file (the head), returned as C(watchdog); omit to read none.
    type: path
  listeners:
    description: Also list the TCP ports the node listens on beyond loopback (C(ss -Hltn)), returned as
      C(listeners), which the doctor tries from the controller.
    type: bool
    default: false
  declared_containers:
    description:
      - The containers the stages run on this node (the rank's, and the one a replace keeps aside). Given, every
        other container is returned as C(strangers), with its image, state and the memory a running one holds
        (C(docker stats)).
    type: list
    elements: str
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the node's live state
  dgxspark.ds41f.live_state:
    links: "{{ spark_links }}"
    mtu: "{{ spark_mtu }}"
  register: verify_live
"""

RETURN = r"""
ansible_facts:
  description: Facts to add.
  returned: always
  type: dict
  contains:
    ds41f_node:
      description: What kind of node this is, as M(dgxspark.ds41f.node_facts) returns it (read in this call).
      type: dict
      sample: {kernel: 6.18.44-fc-v669, page_size: 4096, container: podman, dgx_spark: false, driver: null}
live:
  description: The readings.
  returned: always
  type: dict
  sample:
    links: {enp1s0f0np0: {present: true, operstate: up, carrier: true, mtu: 9000, addresses: [10.12.1.1/24]}}
    pings: [{netdev: enp1s0f0np0, address: 10.12.1.2, ok: true}]
    memory: {total_gib: 121.69, available_gib: 98.4}
    gpus: null
    container: null
    guard: {active: active, sub: running, result: success, pid: 812}
    api: {url: "http://127.0.0.1:8000", health: {ok: true, error: ""}, models: [deepseek-v4.1-flash],
          models_error: ""}
    env_files: {}
    image_id: null
    manifest_digest: null
skipped_checks:
  description: Checks this node cannot take, each with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{check: GPU clock latch, reason: "GPU clock check skipped: not a DGX Spark (a podman container)"}]
"""

import json
import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import (
    docker_daemon,
    engine_progress,
    engine_state,
    exposure,
    launch,
)
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import gpu, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host
from ansible_collections.dgxspark.ds41f.plugins.module_utils.run_all import run_all


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def link_state(netdev):
    base = "/sys/class/net/%s" % netdev
    if not os.path.isdir(base):
        return {"present": False}
    mtu = read(base + "/mtu")
    return {"present": True, "operstate": read(base + "/operstate"), "carrier": read(base + "/carrier") == "1",
            "mtu": int(mtu) if mtu and mtu.isdigit() else None}


def addresses(module):
    """{netdev: [address/prefix, ...]} for every IPv4 address on the node."""
    rc, out, _ = module.run_command(["ip", "-j", "-4", "addr", "show"])
    if rc != 0:
        return {}
    found = {}
    for item in json.loads(out or "[]"):
        found[item.get("ifname")] = ["%s/%s" % (a["local"], a["prefixlen"]) for a in item.get("addr_info", [])]
    return found


def pings(links, mtu):
    """Don't-fragment pings at the fabric MTU per peer and path, all at once: reachable at the first answer: one try
    every 0.2 s until a reply comes or 2 s pass (-c 1 -w 2). A frame lost to a first ARP or a busy
    switch is not a broken cable; loss is the fabric stage's own check."""
    jobs, argvs = [], []
    for link in links:
        peers = link.get("peers") or ([{"address": link["peer_address"]}] if link.get("peer_address") else [])
        for peer in peers:
            argvs.append(["ping", "-n", "-q", "-c", "1", "-w", "2", "-i", "0.2", "-M", "do", "-s", str(mtu - 28),
                          "-I", link["netdev"], peer["address"]])
            jobs.append({"netdev": link["netdev"], "address": peer["address"], "peer": peer.get("name")})
    return [dict(job, ok=rc == 0) for job, (rc, _, _) in zip(jobs, run_all(argvs), strict=True)]


def memory():
    """MemTotal and MemAvailable in GiB; None for a line /proc/meminfo lacks (never a made-up 0)."""
    values = {}
    for line in (read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable"):
            values[key] = round(int(rest.split()[0]) / 1024.0 / 1024.0, 2)
    return {"total_gib": values.get("MemTotal"), "available_gib": values.get("MemAvailable")}


def docker_inspect(module, kind, name):
    if module.get_bin_path("docker") is None:
        return None
    rc, out, _ = module.run_command(["docker", kind, "inspect", name])
    if rc != 0:
        return None
    data = json.loads(out or "[]")
    return data[0] if data else None


def container_state(module, name, keep_env=(), secrets=()):
    """The container as the doctor compares it; secret-named env values (API key, tokens) are redacted, alike in
    the container's and the image's env, except ``keep_env`` (the spec's own variables, already on the controller).
    A stopped container's last log lines lose ``secrets`` (the head's key) and any api_key value they show."""
    info = docker_inspect(module, "container", name)
    if info is None:
        return None
    config, state = info.get("Config") or {}, info.get("State") or {}
    image = docker_inspect(module, "image", info.get("Image", "")) or {}
    logs = None
    if not state.get("Running"):  # why it stopped: the last lines it wrote
        rc, out, err = module.run_command(["docker", "logs", "--tail", "5", name])
        logs = [engine_state.redact_text(line, secrets) for line in (out + err).splitlines()
                if line.strip()][-5:] if rc == 0 else None
    return {
        "name": name,
        "running": bool(state.get("Running")),
        "status": state.get("Status"),
        "exit_code": state.get("ExitCode"),
        "oom_killed": bool(state.get("OOMKilled")),
        "logs": logs,
        "image": config.get("Image"),
        "image_id": info.get("Image"),
        "entrypoint": config.get("Entrypoint") or [],
        "command": config.get("Cmd") or [],
        "env": engine_state.redact_env(config.get("Env"), keep_env),
        "image_env": engine_state.redact_env((image.get("Config") or {}).get("Env"), keep_env),
        "image_entrypoint": (image.get("Config") or {}).get("Entrypoint") or [],
        "mounts": sorted("%s:%s:%s" % (m.get("Source"), m.get("Destination"), "rw" if m.get("RW") else "ro")
                         for m in info.get("Mounts") or [] if m.get("Type") == "bind"),
        "host_config": host_settings(info.get("HostConfig") or {}),
    }


def host_settings(host):
    """HostConfig as launch.host_config writes what a spec decides (restart policy, limits, devices, security)."""
    out = {key: host.get(key) if host.get(key) is not None else default
           for key, default in launch.UPDATABLE_DEFAULTS.items()}
    out.update(NetworkMode=host.get("NetworkMode"), IpcMode=host.get("IpcMode"),
               Privileged=bool(host.get("Privileged")),
               RestartPolicy=(host.get("RestartPolicy") or {}).get("Name") or "no",
               Memory=host.get("Memory") or 0, MemorySwap=host.get("MemorySwap") or 0,
               CpusetCpus=host.get("CpusetCpus") or "", ShmSize=host.get("ShmSize") or 0,
               CapAdd=sorted(host.get("CapAdd") or []), SecurityOpt=sorted(set(host.get("SecurityOpt") or [])),
               Ulimits=sorted("%s=%s:%s" % (u.get("Name"), u.get("Soft"), u.get("Hard"))
                              for u in host.get("Ulimits") or []),
               Devices=sorted("%s:%s:%s" % (d.get("PathOnHost"), d.get("PathInContainer"), d.get("CgroupPermissions"))
                              for d in host.get("Devices") or []),
               DeviceCgroupRules=sorted(host.get("DeviceCgroupRules") or []))
    return out


def strangers(module, declared):
    """Every container on the node that is not one of ``declared``: name, image, state and the memory it holds."""
    rc, out, _ = module.run_command(["docker", "ps", "-a", "--no-trunc", "--format", "{{json .}}"])
    found = []
    for line in out.splitlines() if rc == 0 else []:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if item.get("Names") not in declared:
            found.append({"name": item.get("Names"), "image": item.get("Image"), "state": item.get("State"),
                          "id": item.get("ID")})
    running = [s["id"] for s in found if s["state"] == "running"]
    if running:
        rc, out, _ = module.run_command(["docker", "stats", "--no-stream", "--no-trunc", "--format",
                                         "{{.ID}} {{.MemUsage}}"] + running)
        usage = dict(line.split(" ", 1) for line in out.splitlines() if " " in line) if rc == 0 else {}
        for s in found:
            s["memory"] = usage.get(s["id"], "").split(" / ")[0] or None
    return found


def api(url, key):
    """One look at the head's API: /health answers 200, /v1/models lists names."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    out = {"url": url, "health": {"ok": False, "error": ""}, "models": [], "models_error": ""}
    try:
        open_url(url.rstrip("/") + "/health", headers=headers, timeout=3, validate_certs=False).read()
        out["health"]["ok"] = True
    except Exception as exc:  # refused, timed out, 5xx: what the API says is the reading
        out["health"]["error"] = str(exc)
    try:
        data = json.loads(open_url(url.rstrip("/") + "/v1/models", headers=headers, timeout=3,
                                   validate_certs=False).read())
        out["models"] = [m.get("id") for m in data.get("data", [])]
    except Exception as exc:
        out["models_error"] = str(exc)
    return out


def redacted_file(values, keep_env):
    """An env file's variables with secret-named values redacted as container_state redacts the container's."""
    if values is None:
        return None
    return dict(item.split("=", 1) for item in engine_state.redact_env(["%s=%s" % kv for kv in values.items()],
                                                                       keep_env))


def watchdog_state(path):
    """The serving watchdog's state file, or None when it has written none (switched off, or not yet)."""
    try:
        return json.loads(read(path) or "null")
    except ValueError:
        return {"breaker": "unknown", "reason": "%s is not JSON" % path}


def env_file(path):
    """KEY=VALUE lines of a docker --env-file (comments and blank lines skipped), or None if unreadable."""
    text = read(path)
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value
    return out


MODULE_SPEC = dict(argument_spec={
    "links": {"type": "list", "elements": "dict", "default": []},
    "mtu": {"type": "int", "default": 9000},
    "ping": {"type": "bool", "default": True},
    "launch_spec": {"type": "dict"},
    "model_info": {"type": "path"},
    "guard_unit": {"type": "str", "default": ""},
    "api_url": {"type": "str"},
    "api_key_file": {"type": "path", "no_log": False},
    "progress_model": {"type": "str"},
    "first_token_s": {"type": "float", "default": 20, "no_log": False},  # a deadline, not a secret
    "watchdog_state_file": {"type": "path"},
    "listeners": {"type": "bool", "default": False},
    "declared_containers": {"type": "list", "elements": "str"},
}, supports_check_mode=True)


def run(module):
    p = module.params
    checks.fail_on(module, checks.elements(p["links"], "links", {"netdev": str}),
                   checks.int_range(p["mtu"], "mtu", 1280, 9216),
                   checks.binary("ping", socket.gethostname(), module.get_bin_path)
                   if p["ping"] and any(link.get("peer_address") for link in p["links"]) else None)
    skipped = []
    found = addresses(module)
    links = {}
    for link in p["links"]:
        state = link_state(link["netdev"])
        state["addresses"] = found.get(link["netdev"], [])
        links[link["netdev"]] = state
    live = {"links": links, "pings": pings(p["links"], p["mtu"]) if p["ping"] else [], "memory": memory()}

    try:
        live["gpus"] = gpu.clocks(module_host(module))
    except Unavailable as exc:
        live["gpus"] = None
        skipped.append({"check": "GPU clock latch", "reason": str(exc)})

    spec = p["launch_spec"]
    live["launch_spec"] = spec
    keep_env = sorted((spec or {}).get("env") or {})
    key = engine_state.api_key(p["api_key_file"])
    # A Docker that does not answer leaves the container unknown, not absent: its row (the host baseline's unit,
    # the serve stage's read) is the cause, and the group's check skips this rank.
    answering, seen = docker_daemon.answers(docker_daemon.unit_state(module_host(module).run), docker_daemon.SOCKET,
                                            5) if spec else (True, "")
    if not answering:  # a Docker stop stops its containers too (unless live-restore): look again once it answers
        live["container_unread"] = "docker does not answer on this node (%s); once it does, the doctor reads the " \
                                   "container again" % seen
        skipped.append({"check": "serving container %s" % spec["name"], "reason": live["container_unread"]})
    live["container"] = container_state(module, spec["name"], keep_env, [key]) if spec and answering else None
    live["strangers"] = strangers(module, p["declared_containers"]) if spec and answering \
        and p["declared_containers"] is not None else None
    live["env_files"] = {path: redacted_file(env_file(path), keep_env) for path in (spec or {}).get("env_files") or []}
    live["guard"] = engine_state.unit_state(module.run_command, p["guard_unit"]) if p["guard_unit"] else None
    live["api"] = None
    if p["api_url"]:
        if live["container"] and live["container"]["running"]:
            live["api"] = api(p["api_url"], key)
            if key is None and p["api_key_file"] and "401" in live["api"]["models_error"]:
                # The key file's own row (the serve stage's) is the cause; an API asked without it says nothing.
                skipped.append({"check": "head API (/v1/models) and engine progress", "reason": "the API wants a "
                                "key and %s holds none (that file's row names it)" % p["api_key_file"]})
                live["api"] = None
            if live["api"] and p["progress_model"] and live["api"]["health"]["ok"]:
                live["api"]["progress"] = engine_progress.probe(open_url, p["api_url"], key, p["progress_model"],
                                                                p["first_token_s"])
        else:
            skipped.append({"check": "head API (/health, /v1/models)",
                            "reason": live.get("container_unread") or "the engine container %s is not running" % (
                                spec or {}).get("name")})
    live["watchdog"] = watchdog_state(p["watchdog_state_file"]) if p["watchdog_state_file"] else None
    if p["listeners"]:  # what the doctor tries from the controller (module_utils/exposure.py)
        rc, out, _ = module.run_command(["ss", "-Hltn"])
        live["listeners"] = exposure.listeners(out) if rc == 0 else None
        if rc != 0:
            skipped.append({"check": "listening ports", "reason": "ss -Hltn failed (rc %d)" % rc})
    drm = "/sys/module/nvidia_drm/parameters"
    live["nvidia_drm"] = {k: read("%s/%s" % (drm, k)) for k in ("modeset", "fbdev") if read("%s/%s" % (drm, k))
                          is not None} if os.path.isdir(drm) else None
    if live["nvidia_drm"] is None:
        gpu_skip = [i["reason"] for i in skipped if i["check"] == "GPU clock latch"]
        skipped.append({"check": "nvidia-drm modeset", "reason": "nvidia_drm is not loaded%s" % (
            " (%s)" % gpu_skip[0].split(": ", 1)[-1] if gpu_skip else "")})
    image = docker_inspect(module, "image", spec["image"]) if spec and spec.get("image") and answering else None
    live["image_id"] = image.get("Id") if image else None
    info = read(p["model_info"]) if p["model_info"] else None
    try:
        live["manifest_digest"] = json.loads(info).get("manifest_digest") if info else None
    except ValueError:
        live["manifest_digest"] = "unreadable %s" % p["model_info"]
    # The node's kind and readings in the same call (the verify stage reads the node once).
    module.exit_json(changed=False, live=live, skipped_checks=skipped,
                     ansible_facts={"ds41f_node": platform.summary(module_host(module))})


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
