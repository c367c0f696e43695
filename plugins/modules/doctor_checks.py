# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: doctor_checks
short_description: Compare every node's live state with the site and recipe (the doctor's live checks)
version_added: 0.1.0
description:
  - Runs on the controller over the readings M(dgxspark.ds41f.live_state) registered on every node, and
    returns C(findings) for the drift table, each with a severity (C(error) or C(warn)) and a fix command.
  - The fabric check table - per cable path, both ends' link presence, carrier, MTU and address, then pings
    at the fabric MTU - names the cause once (a wrong MTU on one end is one finding, not also two failed pings).
  - The serving container's command, every environment variable, mounts and image against the rendered launch
    spec; memory headroom against the startup guard (before serving) or the steady guard (while serving), a
    warning within 1 GiB of it; the GPU clock latch (an SM clock under 1000 MHz while serving).
  - The serving group's health, per rank - the engine container running, exited (exit code and last log
    lines) or absent, the memory guard active - and the head's API answering (C(/health), C(/v1/models)); a
    dead rank's fix restarts the whole group and says that it is disruptive.
  - nvidia-drm's modeset and fbdev parameters. (sshd's effective settings are read by the host baseline's audit,
    M(dgxspark.ds41f.sshd_effective).)
  - Cross-node alignment of kernel, page size, driver, memory-saver srcversion, Secure Boot, governor, image ID
    and checkpoint manifest, as errors.
  - Never fails because of a finding; the verdict is M(dgxspark.ds41f.doctor_report)'s.
options:
  live:
    description: The variable each node registered M(dgxspark.ds41f.live_state) into.
    type: str
    default: verify_live
  startup_gib:
    description: The startup memory guard (GiB of MemAvailable).
    type: float
    default: 5
  steady_gib:
    description: The steady memory guard (GiB of MemAvailable).
    type: float
    default: 3
  serve_fix:
    description: The command that puts the rendered launch spec back in place, printed as the fix of container drift.
    type: str
    default: "ds41f run serve -e '{\"serve_replace\": true}'"
  ignore_env:
    description: Container environment variables never compared or shown (secrets set from files).
    type: list
    elements: str
    default: [VLLM_API_KEY]
  guard_unit:
    description: The memory guard's unit; a rank whose guard is not active is a finding while the group serves.
    type: str
    default: ""
  served_names:
    description: The model names the head's C(/v1/models) must list.
    type: list
    elements: str
    default: []
  nccl_env_file:
    description:
      - The NCCL env file the engine containers get (C(serve_nccl_env_file)); empty for none.
      - A container's environment is compared with this file as the recipe renders it for the node (the fabric
        stage's C(fabric_nccl_env_*) and the node's HCAs, GID slot and management netdev), never with the node's
        copy, whose own drift is the fabric stage's row.
    type: str
    default: ""
  exposure:
    description:
      - C(ssh_port) and C(api_port). Given, every TCP port a node listens on beyond loopback (C(listeners) of its
        reading) is tried from the controller on the node's address, all at once with a 1.5 s timeout; a port
        that accepts and is neither SSH nor, on the head, the API is an error whose cause is the node's firewall
        table.
      - With C(tls_certificate) (the site's certificate on the controller, C(serve_tls_certificate) resolved) and
        C(proxy_dir) (C(serve_proxy_dir)), the API port of the head is also asked for a TLS handshake that the
        site's file alone verifies, and must present that very certificate; anything else is an error whose cause
        is the head's copy of the certificate. The site's certificate expired or not yet valid is an error, expiring
        within 30 days a warning.
    type: dict
  fail_on_error:
    description:
      - Fail, listing each error finding with its fix, when any finding is an error (the verify stage of a
        converging run). Off, the findings are returned for a report to judge (the doctor).
    type: bool
    default: false
extends_documentation_fragment: [dgxspark.ds41f.read_only]
attributes:
  check_mode:
    support: full
    description: Compares registered readings only; the same in check mode.
  action:
    support: full
    description: Runs as an action plugin on the controller.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Compare the live state with the site and recipe
  dgxspark.ds41f.doctor_checks:
    steady_gib: 3
  run_once: true
"""

RETURN = r"""
findings:
  description: One entry per thing that differs, for the drift table.
  returned: always
  type: list
  elements: dict
  sample: [{node: dgx2, stage: fabric, setting: enp1s0f1np1 mtu, expected: 9000, found: 1500, severity: error,
            fix: "ip link set dev enp1s0f1np1 mtu 9000 now, then ds41f run fabric to keep it", path: 10.12.1.0/24}]
checked:
  description: What the live checks read - the nodes and the fabric paths (CIDRs) with a reading at both ends;
    the picture colours only these.
  returned: always
  type: dict
  sample: {nodes: [dgx1, dgx2, dgx3], paths: [10.12.1.0/24]}
skipped_checks:
  description: Checks not made, each C({node, check, reason}) (a node without a reading, a cluster not serving).
  returned: always
  type: list
  elements: dict
"""
