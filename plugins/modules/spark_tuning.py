# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: spark_tuning
short_description: DGX Spark host settings - CPU governor, NVMe coalescing, nvidia-drm, Docker NVIDIA runtime
version_added: 0.1.0
description:
  - CPU governor C(performance) on every CPU now, and the DGX OS service that sets it at boot enabled.
  - NVMe interrupt coalescing off (feature 8 of each controller reads 0), through DGX OS's own script.
  - Reads C(nvidia_drm) C(modeset) and C(fbdev); when either is not C(Y) the node needs a reboot (the role
    writes the modprobe options and the initramfs) and RV(reboot_required) says so.
  - Checks that Docker has the C(nvidia) runtime and fails, with the fix, when it has not.
  - Every item needs a DGX Spark on bare metal. Elsewhere (a lab node) nothing is read or written and each
    item is reported in RV(skipped) with the reason; the lab never pretends to be a Spark.
options:
  governor:
    description: The CPU frequency governor every CPU should use.
    type: str
    default: performance
  governor_service:
    description: The DGX OS unit that sets the governor at boot.
    type: str
    default: nv-cpu-governor.service
  nvme_coalescing_script:
    description: DGX OS's script that turns NVMe interrupt coalescing on or off.
    type: path
    default: /usr/bin/nvidia-nvme-interrupt-coalescing.sh
  docker_runtime:
    description: The Docker runtime the serving containers use.
    type: str
    default: nvidia
attributes:
  check_mode:
    support: full
    description: Reads sysfs, C(nvme get-feature) and C(docker info); changes nothing in check mode.
  diff_mode:
    support: full
    description: Each governor and coalescing value before and after.
  idempotent:
    support: full
    description: A second run finds the governor and coalescing as wanted.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Spark host settings
  dgxspark.ds41f.spark_tuning:
  register: tuning
"""

RETURN = r"""
reboot_required:
  description: nvidia-drm is not yet loaded with modeset=Y and fbdev=Y.
  returned: always
  type: bool
skipped:
  description: Items not done here, each with the reason.
  returned: always
  type: list
  elements: str
  sample: ["cpu governor skipped: not a DGX Spark (a podman container)"]
readings:
  description: What was read (governors, coalescing per controller, nvidia-drm parameters, Docker runtimes).
  returned: always
  type: dict
skipped_checks:
  description: The same items as C({check, reason}), for the doctor's "not checked" list.
  returned: when skipped
  type: list
  elements: dict
"""

import glob
import json
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import docker_daemon
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host

ITEMS = ("cpu governor", "NVMe interrupt coalescing", "nvidia-drm modeset/fbdev", "Docker NVIDIA runtime")


def governors(host):
    out = {}
    for path in sorted(glob.glob(host.path("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))):
        cpu = path.split("/")[-3]
        with open(path) as handle:
            out[cpu] = handle.read().strip()
    return out


def coalescing(host):
    """{controller: feature-8 value} from `nvme get-feature`; None when nvme-cli is missing."""
    values = {}
    for dev in sorted(glob.glob(host.path("/dev/nvme[0-9]*"))):
        name = dev.rsplit("/", 1)[1]
        if not re.fullmatch(r"nvme\d+", name):
            continue
        rc, out, err = host.run(["nvme", "get-feature", "/dev/" + name, "-f", "8"])
        if rc == 127:
            return None
        values[name] = feature_value(out)
    return values


def feature_value(text):
    """The value of `nvme get-feature -f N` (hex, with or without 0x, as nvme-cli versions print it)."""
    match = re.search(r"[Cc]urrent value:\s*(?:0x)?([0-9a-fA-F]+)", text or "")
    return int(match.group(1), 16) if match else None


MODULE_SPEC = dict(
    argument_spec={
        "governor": {"type": "str", "default": "performance"},
        "governor_service": {"type": "str", "default": "nv-cpu-governor.service"},
        "nvme_coalescing_script": {"type": "path", "default": "/usr/bin/nvidia-nvme-interrupt-coalescing.sh"},
        "docker_runtime": {"type": "str", "default": "nvidia"},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    host = module_host(module)
    plan = Plan(module)
    reason = "not applied: container" if platform.container(host) else None
    try:
        platform.require_spark(host, "-")
    except Unavailable as why:
        reason = str(why)[2:]  # "skipped: not a DGX Spark (...)"
    if reason:
        # skipped_checks too: Ansible shows callbacks a skipped task without its "skipped" list.
        module.exit_json(changed=False, actions=[], drift=[], reboot_required=False, readings={},
                         skipped=["%s %s" % (item, reason) for item in ITEMS],
                         skipped_checks=[{"check": item, "reason": reason.replace("skipped: ", "", 1)}
                                         for item in ITEMS])

    readings = {}
    govs = governors(host)
    readings["governors"] = govs
    for cpu, value in govs.items():
        if value != p["governor"]:
            def set_governor(cpu=cpu):
                with open("/sys/devices/system/cpu/%s/cpufreq/scaling_governor" % cpu, "w") as handle:
                    handle.write(p["governor"])
            plan.change("%s governor" % cpu, p["governor"], value, "echo %s > %s scaling_governor" % (
                p["governor"], cpu), set_governor)
    rc, out, _ = host.run(["systemctl", "is-enabled", p["governor_service"]])
    if out.strip() not in ("enabled", "static"):
        if rc == 127 or "not-found" in out or not out.strip():
            module.fail_json(msg="%s is missing. Fix: install DGX OS's linux-tools package for the running kernel "
                                 "(the governor service needs it)." % p["governor_service"])
        plan.change(p["governor_service"], "enabled", out.strip(), "systemctl enable %s" % p["governor_service"],
                    lambda: module.run_command(["systemctl", "enable", p["governor_service"]], check_rc=True))

    values = coalescing(host)
    readings["nvme_coalescing"] = values
    if values is None:
        module.fail_json(msg="nvme-cli is missing, so NVMe coalescing cannot be read. Fix: apt-get install nvme-cli.")
    if any(v for v in values.values()):
        plan.change("NVMe interrupt coalescing", "0 on every controller", json.dumps(values),
                    "%s disable" % p["nvme_coalescing_script"],
                    lambda: module.run_command([p["nvme_coalescing_script"], "disable"], check_rc=True))

    drm = {name: (host.read("/sys/module/nvidia_drm/parameters/" + name) or "").strip() or None
           for name in ("modeset", "fbdev")}
    readings["nvidia_drm"] = drm

    why = docker_daemon.stopped(docker_daemon.unit_state(host.run))
    if why:  # its unit's row is the cause (the unit policy above); a look would start it
        module.exit_json(**plan.result(reboot_required=any(v != "Y" for v in drm.values()), skipped=[],
                                       skipped_checks=[{"check": "Docker NVIDIA runtime", "reason": "docker " + why}],
                                       readings=readings))
    rc, out, err = host.run(["docker", "info", "--format", "{{json .Runtimes}}"])
    runtimes = json.loads(out) if rc == 0 and out.strip().startswith("{") else {}
    readings["docker_runtimes"] = sorted(runtimes)
    if p["docker_runtime"] not in runtimes:
        module.fail_json(msg="Docker has no %s runtime (runtimes: %s). Fix: nvidia-ctk runtime configure "
                             "--runtime=docker && systemctl restart docker." % (
                                 p["docker_runtime"], ", ".join(sorted(runtimes)) or (err or "docker not answering")))
    module.exit_json(**plan.result(reboot_required=any(v != "Y" for v in drm.values()), skipped=[],
                                   readings=readings))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
