# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: collective_check
short_description: Form one torch.distributed group of every rank in the engine's image and check it bit for bit
version_added: 0.1.0
description:
  - Runs one rank of the collective check in a short-lived container of the engine's image, with what the
    engine itself will get from its launch spec - network and IPC of the host, GPUs and devices, the fabric
    stage's NCCL env file, the recipe's env, the mounts - and the rendezvous (master address and port) read
    from the rank's rendered engine command.
  - Every rank of the cluster must run it at the same time (one task over all nodes, forks at least the node
    count); the group forms over a TCPStore on the head, then an all-reduce and an all-gather of known values
    are checked bit for bit and a timed all-reduce gives the bandwidth.
  - Fails closed with a deadline - a rank that does not join, a socket interface that is down, a master
    address that is not the head's, a rank that runs another release or image, and the first wrong element of
    a collective are each named with the rank and node.
  - Never fails the task on a bad group; it returns the rank's C(collective) result (and a C(drift) entry),
    and the filter C(dgxspark.ds41f.collective_verdict) merges every rank's into one message.
  - Removes its container before and after the run, so nothing it started is left behind.
options:
  spec:
    description: The rank's launch spec (the serve stage's C(serve_spec), filter C(dgxspark.ds41f.launch_spec)).
    type: dict
    required: true
  nodes:
    description: The node names in rank order; the rank of this node is C(spec.rank).
    type: list
    elements: str
    required: true
  node:
    description: This node's name.
    type: str
    required: true
  backend:
    description: C(nccl) on a DGX Spark (GPU 0 of the node), C(gloo) on CPU (the lab); C(auto) picks nccl when
      the spec asks for GPUs (C(spec.gpus)), else gloo.
    type: str
    choices: [auto, nccl, gloo]
    default: auto
  release:
    description: The release this rank runs; every rank must run the head's. Default the spec's C(ds41f.release) label.
    type: str
  image:
    description: The image to run; default the spec's image. Its ID is compared across ranks.
    type: str
  master_addr:
    description: Overrides the master address of the spec's command (empty - the spec's).
    type: str
    default: ""
  master_port:
    description: Overrides the master port of the spec's command (0 - the spec's).
    type: int
    default: 0
  socket_ifname:
    description:
      - Sets the backend's socket interface (C(GLOO_SOCKET_IFNAME) or C(NCCL_SOCKET_IFNAME)) over the env file's.
      - Empty keeps what the engine gets. The lab sets a fabric netdev, so that Gloo's data crosses the cables.
    type: str
    default: ""
  env:
    description: Extra environment for the check's container (the lab's C(PYTHONPATH) to its torch).
    type: dict
    default: {}
  python:
    description: The image's Python, as the container's entrypoint.
    type: str
    default: python3
  timeout_s:
    description: Seconds every rank has to join; each later phase gets as long again, and a rank still running
      after three times this reports what it knows and stops.
    type: int
    default: 180
  size_mib:
    description: Size of the timed all-reduce, in MiB.
    type: float
    default: 64
  iterations:
    description: Timed all-reduce repetitions.
    type: int
    default: 5
attributes:
  check_mode:
    support: full
    description: Runs in check mode too (the doctor's C(--collective)); it leaves nothing behind.
  diff_mode:
    support: none
    description: Changes nothing.
  idempotent:
    support: full
    description: A check; its container is removed before and after.
notes:
  - The master port must be free on the head, so run it before the engine starts (the serve stage does) or
    with another C(master_port) while an engine runs.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Every rank joins the group the engine will form
  dgxspark.ds41f.collective_check:
    spec: "{{ serve_spec }}"
    nodes: "{{ spark_nodes | sort(attribute='rank') | map(attribute='name') }}"
    node: "{{ inventory_hostname }}"
  register: collective

- name: One verdict
  ansible.builtin.fail:
    msg: "{{ verdict.message }}"
  vars:
    verdict: "{{ ansible_play_hosts_all | map('extract', hostvars, 'collective') | dgxspark.ds41f.collective_verdict }}"
  when: not verdict.ok
"""

RETURN = r"""
collective:
  description: This rank's result - rank, node, ok, cause and failing ranks when not ok, join_s, group_s,
    algbw_mbs and busbw_mbs, the all-reduce and all-gather verdicts, torch, socket_ifname, total_s, and the
    rendezvous (master address:port) the rank was given.
  returned: always
  type: dict
command:
  description: The probe's C(docker run) argv, with the program's source left out.
  returned: always
  type: list
  elements: str
drift:
  description: One entry (setting, expected, found, fix) when this rank's check failed.
  returned: always
  type: list
  elements: dict
"""

import inspect
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import collective, collective_probe

FIX = ("read the cause: bring the named rank's interface up, open the master port on the head, render the "
       "head's address as master address, or run one release on every rank; then run ds41f collective again.")


def image_id(module, image):
    rc, out, _ = module.run_command(["docker", "image", "inspect", "--format", "{{.Id}}", image])
    return out.strip() if rc == 0 else ""


def remove(module, name):
    module.run_command(["docker", "rm", "--force", name])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            spec=dict(type="dict", required=True),
            nodes=dict(type="list", elements="str", required=True),
            node=dict(type="str", required=True),
            backend=dict(type="str", choices=["auto"] + list(collective.BACKENDS), default="auto"),
            release=dict(type="str"),
            image=dict(type="str"),
            master_addr=dict(type="str", default=""),
            master_port=dict(type="int", default=0),
            socket_ifname=dict(type="str", default=""),
            env=dict(type="dict", default={}),
            python=dict(type="str", default="python3"),
            timeout_s=dict(type="int", default=180),
            size_mib=dict(type="float", default=64),
            iterations=dict(type="int", default=5),
        ),
        supports_check_mode=True,
    )
    p = module.params
    spec = p["spec"]
    image = p["image"] or spec.get("image", "")
    release = p["release"] or (spec.get("labels") or {}).get("ds41f.release", "")
    rank = spec.get("rank")
    found_id = image_id(module, image)
    try:
        backend = collective.backend_for(spec, p["backend"])
        settings = collective.config(spec, p["nodes"], p["node"], backend, release, found_id, p["master_addr"],
                                     p["master_port"], p["timeout_s"], p["size_mib"], p["iterations"])
    except (collective.CollectiveError, KeyError, TypeError) as e:
        module.fail_json(msg="collective_check: %s" % e)
    who = "rank %s (%s)" % (rank, p["node"])
    argv = collective.docker_argv(spec, image, settings, inspect.getsource(collective_probe), p["python"],
                                  p["socket_ifname"], p["env"])
    shown = argv[:-1] + ["<collective_probe.py>"]
    if not found_id:
        result = {"rank": rank, "node": p["node"], "ok": False, "ranks": [rank],
                  "cause": "%s: image %s is not on this node (the image stage loads it)" % (who, image)}
    else:
        name = collective.container_name(spec)
        remove(module, name)
        limit = 3 * p["timeout_s"] + 180  # the probe's own watchdog first; then torch's import on a loaded node
        started = time.monotonic()
        rc, out, err = module.run_command(["timeout", "--kill-after=10", str(limit)] + argv)
        remove(module, name)  # a killed client leaves its container running: nothing started stays
        result = collective.parse_output(out)
        if result is None:
            last = [line for line in (err or out).splitlines() if line.strip()][-1:] or ["no output"]
            result = {"rank": rank, "node": p["node"], "ok": False, "ranks": [rank],
                      "cause": "%s: the check program gave no result (exit %d after %.0f s): %s" % (
                          who, rc, time.monotonic() - started, last[0][:300])}
        result["release"], result["image_id"] = release, found_id
    result["rendezvous"] = "%s:%s" % (settings["master_addr"], settings["master_port"])
    drift = [] if result.get("ok") else [{"setting": "collective group", "expected": "every rank joins, bit-exact",
                                          "found": result.get("cause", "failed"), "fix": FIX}]
    module.exit_json(changed=False, collective=result, command=shown, drift=drift)


if __name__ == "__main__":
    main()
