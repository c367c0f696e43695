# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: memory_saver
short_description: The memory saver's DKMS lifecycle for one kernel and driver, from registration to a verified load
version_added: 0.1.0
description:
  - Reads the node (DKMS registrations, the UVM module on disk and loaded, the driver, Secure Boot and the
    signing key's enrollment, package holds) and takes it through the state machine of
    C(plugins/module_utils/memory_saver_state.py) - copy the source to /usr/src, C(dkms add), C(build),
    C(install) for O(kernel) only, C(depmod), the initramfs, then a load (or reload, when no process uses
    UVM) and the verification - page size, packing parameter Y, loaded srcversion equal to the one on disk,
    the module's signer.
  - Holds O(hold) while it is installed, so apt refuses to upgrade the NVIDIA packages it is built against.
  - O(state=absent) removes every registered version (C(dkms remove --all)), refreshes depmod and the initramfs,
    checks that the packaged UVM module is back (reinstalling its package when it is not) and releases the holds.
  - Never writes the packing parameter to a modprobe file (the stock module rejects it).
  - Blocked states (another driver, another registered version, Secure Boot on without the key enrolled) fail
    with the reason and the fix. Off a DGX Spark it reports why it skipped and changes nothing.
options:
  package:
    description: The DKMS package name.
    type: str
    default: dgx-spark-memory-saver
  version:
    description: The DKMS package version (the memory saver release).
    type: str
    required: true
  kernel:
    description: The one kernel release it is built for.
    type: str
    required: true
  driver:
    description: The NVIDIA driver version it is pinned to.
    type: str
    required: true
  source:
    description: A checkout of the release; its files are copied to /usr/src/PACKAGE-VERSION for DKMS.
    type: path
  certificate:
    description: The certificate DKMS signs with (mokutil --test-key reads it).
    type: path
  hold:
    description: Packages held while it is installed.
    type: list
    elements: str
    default: []
  stock_package:
    description: The package that ships the stock UVM module for O(kernel) (reinstalled if removal did not restore it).
    type: str
  state:
    description: present or absent.
    type: str
    choices: [present, absent]
    default: present
attributes:
  check_mode:
    support: full
    description: Reads and decides; runs no dkms, depmod, modprobe or apt command in check mode.
  diff_mode:
    support: full
    description: The state before and the state each action leads to.
  idempotent:
    support: full
    description: A loaded, verified module with holds in place needs no action.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Memory saver on the 64 KiB kernel
  dgxspark.ds41f.memory_saver:
    version: 0.4.1
    kernel: 7.0.0-1019-nvidia-64k
    driver: 580.178.04
    source: /usr/local/src/dgx-spark-memory-saver
    certificate: /root/.local/share/dgx-spark-memory-saver/keys/MOK.der
    hold: [nvidia-kernel-source-580-open]
"""

RETURN = r"""
state:
  description: The state after the run (not-installed ... loaded, or a blocked or unavailable state).
  returned: always
  type: str
ok:
  description: Nothing is left to do on this node.
  returned: always
  type: bool
reboot_required:
  description: UVM is in use, so only a reboot loads the module on disk.
  returned: always
  type: bool
notes:
  description: What the last reading showed (the signer, why it waits for a boot, why it skipped).
  returned: always
  type: list
  elements: str
skipped_checks:
  description: Off a DGX Spark, the memory saver as not checked, with the reason.
  returned: when nothing was read
  type: list
  elements: dict
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import live_checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import memory_saver_state as machine
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dkms, kmod, mok, platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host

SOURCE_SKIP = shutil.ignore_patterns(".git", ".work", "results", "*.pyc", "__pycache__")


def read(module, host, want):
    p = module.params
    try:
        platform.require_spark(host, "memory saver")
        reason = "memory saver not applied: container" if platform.container(host) else None
    except Unavailable as why:
        reason = str(why)
    if reason:
        return {"spark": False, "reason": reason}
    rc, status, err = host.run(["dkms", "status"])
    if rc == 127:
        module.fail_json(msg="dkms is not installed. Fix: run the memory_saver stage's package step (dkms, gcc-13).")
    rc, driver_disk, _ = host.run(["modinfo", "-k", want["kernel"], "-F", "version", "nvidia"])
    _, held, _ = host.run(["apt-mark", "showhold"])
    key = "unknown"
    rc_sb, sb, sb_err = host.run(["mokutil", "--sb-state"])
    if p["certificate"] and os.path.isfile(p["certificate"]):
        _, out, err = host.run(["mokutil", "--test-key", p["certificate"]])
        key = mok.parse_test_key(out + err)
    refcnt = (host.read("/sys/module/nvidia_uvm/refcnt") or "0").strip()
    return {
        "spark": True,
        "kernel_installed": host.exists("/lib/modules/%s/modules.dep" % want["kernel"]),
        "running": platform.kernel_release(host),
        "page_size": platform.page_size(host),
        "driver_disk": driver_disk.strip() if rc == 0 else None,
        "driver_loaded": platform.driver_version(host),
        "dkms": dkms.parse_status(status),
        "source": host.exists("/usr/src/%s-%s/dkms.conf" % (want["package"], want["version"])),
        "uvm_disk": kmod.on_disk(host, want["kernel"], "nvidia_uvm"),
        "uvm_loaded": kmod.loaded(host, "nvidia_uvm"),
        "uvm_in_use": refcnt not in ("", "0"),
        "secure_boot": mok.parse_sb_state(sb + sb_err) if rc_sb != 127 else None,
        "key": key,
        "held": held.split(),
    }


def commands(module, want, action, rows):
    """The command lines of one state-machine action."""
    pkg, ver, kernel = want["package"], want["version"], want["kernel"]
    stock = module.params["stock_package"]
    if action == "reinstall-stock-uvm" and not stock:
        module.fail_json(msg="the stock UVM module was not restored and stock_package is not set. Fix: set "
                             "memory_saver_stock_package to the package that ships it.")
    table = {
        "dkms-add": [["dkms", "add", "-m", pkg, "-v", ver]],
        "dkms-build": [["dkms", "build", "-m", pkg, "-v", ver, "-k", kernel]],
        "dkms-install": [["dkms", "install", "-m", pkg, "-v", ver, "-k", kernel]],
        "depmod": [["depmod", kernel]],
        "initramfs": [["update-initramfs", "-u", "-k", kernel]],
        "load-uvm": [["modprobe", "nvidia_uvm"]],
        "reload-uvm": [["modprobe", "-r", "nvidia_uvm"], ["modprobe", "nvidia_uvm"]],
        "hold-packages": [["apt-mark", "hold", *want["hold"]]],
        "unhold-packages": [["apt-mark", "unhold", *want["hold"]]],
        "dkms-remove": [["dkms", "remove", "-m", pkg, "-v", v, "--all"]
                        for v in sorted({r["version"] for r in rows if r["module"] == pkg})],
        "reinstall-stock-uvm": [["apt-get", "-y", "--no-remove", "--reinstall", "install", stock]],
    }
    return table[action]


def copy_source(module, want):
    src = module.params["source"]
    if not src or not os.path.isfile(os.path.join(src, "dkms.conf")):
        module.fail_json(msg="source: %s holds no dkms.conf. Fix: point it at a checkout of the memory saver "
                             "release %s." % (src, want["version"]))
    shutil.copytree(src, "/usr/src/%s-%s" % (want["package"], want["version"]), ignore=SOURCE_SKIP)


MODULE_SPEC = dict(
    argument_spec={
        "package": {"type": "str", "default": "dgx-spark-memory-saver"},
        "version": {"type": "str", "required": True},
        "kernel": {"type": "str", "required": True},
        "driver": {"type": "str", "required": True},
        "source": {"type": "path"},
        "certificate": {"type": "path"},
        "hold": {"type": "list", "elements": "str", "default": []},
        "stock_package": {"type": "str"},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    },
    supports_check_mode=True,
)


def run(module):
    p = module.params
    want = {k: p[k] for k in ("package", "version", "kernel", "driver", "hold")}
    assess = machine.assess if p["state"] == "present" else machine.assess_removal
    host = module_host(module)
    plan = Plan(module)
    readings = read(module, host, want)
    result = assess(readings, want)
    before = result["state"]
    for action in result["actions"]:
        if action == "copy-source":
            plan.change("/usr/src/%s-%s" % (p["package"], p["version"]), "copied from %s" % p["source"], None,
                        "copy %s to /usr/src" % p["source"], lambda: copy_source(module, want))
            continue
        for argv in commands(module, want, action, readings.get("dkms") or []):
            plan.change("memory saver (%s)" % before, action, before, " ".join(argv),
                        lambda argv=argv: module.run_command(argv, check_rc=True))
    if plan.actions and not module.check_mode:
        result = assess(read(module, host, want), want)
    if result["blocked"]:
        module.fail_json(msg="memory saver %s: %s" % (result["state"], result["blocked"]), state=result["state"],
                         **plan.result())
    out = plan.result(state=result["state"], ok=result["ok"], reboot_required=result["reboot"], notes=result["notes"])
    if result["state"] == "unavailable":  # nothing read: the doctor lists it as not checked
        out["skipped_checks"] = [{"check": "memory saver", "reason": "; ".join(result["notes"])}]
    elif module.check_mode and p["state"] == "present":
        # The states that need a hand (a boot pending, not loaded, packing off) as rows naming the thing.
        named = live_checks.memory_saver(os.uname()[1], result, readings, want)
        out["drift"] = [{k: f[k] for k in ("setting", "expected", "found", "fix")} for f in named] or out["drift"]
    module.exit_json(**out)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
