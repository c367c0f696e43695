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
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers
"""

EXAMPLES = r"""
- name: Read the node's live state
  dgxspark.ds41f.live_state:
    links: "{{ spark_links }}"
    mtu: "{{ spark_mtu }}"
  register: verify_live
"""

RETURN = r"""
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
import subprocess

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import gpu
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host


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
    """Don't-fragment pings at the fabric MTU per peer and path, all at once: reachable when any of three is
    answered (up to 2.4 s). A frame lost to a first ARP or a busy switch is not a broken cable; loss is the
    fabric stage's own check."""
    jobs = []
    for link in links:
        peers = link.get("peers") or ([{"address": link["peer_address"]}] if link.get("peer_address") else [])
        for peer in peers:
            argv = ["ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "2", "-M", "do", "-s", str(mtu - 28),
                    "-I", link["netdev"], peer["address"]]
            jobs.append(({"netdev": link["netdev"], "address": peer["address"], "peer": peer.get("name")},
                         subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    return [dict(job, ok=proc.wait() == 0) for job, proc in jobs]


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


def container_state(module, name):
    info = docker_inspect(module, "container", name)
    if info is None:
        return None
    config, state = info.get("Config") or {}, info.get("State") or {}
    image = docker_inspect(module, "image", info.get("Image", "")) or {}
    return {
        "name": name,
        "running": bool(state.get("Running")),
        "image": config.get("Image"),
        "image_id": info.get("Image"),
        "entrypoint": config.get("Entrypoint") or [],
        "command": config.get("Cmd") or [],
        "env": config.get("Env") or [],
        "image_env": (image.get("Config") or {}).get("Env") or [],
        "image_entrypoint": (image.get("Config") or {}).get("Entrypoint") or [],
        "mounts": sorted("%s:%s:%s" % (m.get("Source"), m.get("Destination"), "rw" if m.get("RW") else "ro")
                         for m in info.get("Mounts") or [] if m.get("Type") == "bind"),
    }


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


def main():
    module = AnsibleModule(argument_spec={
        "links": {"type": "list", "elements": "dict", "default": []},
        "mtu": {"type": "int", "default": 9000},
        "ping": {"type": "bool", "default": True},
        "launch_spec": {"type": "dict"},
        "model_info": {"type": "path"},
    }, supports_check_mode=True)
    p = module.params
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
    live["container"] = container_state(module, spec["name"]) if spec else None
    live["env_files"] = {path: env_file(path) for path in (spec or {}).get("env_files") or []}
    image = docker_inspect(module, "image", spec["image"]) if spec and spec.get("image") else None
    live["image_id"] = image.get("Id") if image else None
    info = read(p["model_info"]) if p["model_info"] else None
    try:
        live["manifest_digest"] = json.loads(info).get("manifest_digest") if info else None
    except ValueError:
        live["manifest_digest"] = "unreadable %s" % p["model_info"]
    module.exit_json(changed=False, live=live, skipped_checks=skipped)


if __name__ == "__main__":
    main()
