# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: kernel_packages
short_description: Install exact package versions behind an apt simulation that must remove nothing
version_added: 0.1.0
description:
  - Reads which of O(packages) (C(name=version)) are installed at their version. For the others it first
    runs C(apt-get --simulate --no-remove --no-install-recommends install) and stops, naming apt's reason,
    when the transaction would remove a package (or cannot be resolved); only then installs the same
    transaction, with needrestart in list mode (no service restarts).
  - Needs a DGX Spark; elsewhere (a lab node) it reports why it skipped and changes nothing.
options:
  packages:
    description: Packages as C(name=version).
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: Runs the simulation (read-only) and reports what would be installed.
  diff_mode:
    support: full
    description: Each package's installed version before and after.
  idempotent:
    support: full
    description: Packages already at their version are left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The 64 KiB kernel
  dgxspark.ds41f.kernel_packages:
    packages:
      - linux-image-7.0.0-1019-nvidia-64k=7.0.0-1019.19~24.04.2
      - linux-modules-7.0.0-1019-nvidia-64k=7.0.0-1019.19~24.04.2
"""

RETURN = r"""
simulation:
  description: What apt would install (name, version) and remove, and its error if any.
  returned: when something is missing
  type: dict
skipped_reason:
  description: Why nothing was done (not a DGX Spark).
  returned: when skipped
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import kernel_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Unavailable, module_host

APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "NEEDRESTART_MODE": "l"}
APT_FLAGS = ["--no-remove", "--no-install-recommends"]


def installed(module, names):
    rc, out, _ = module.run_command(["dpkg-query", "-W", "-f", "${Package}=${Version}=${db:Status-Status}\\n",
                                     *names])
    found = {}
    for line in out.splitlines():
        name, version, status = (line.split("=") + ["", ""])[:3]
        if status == "installed":
            found[name] = version
    return found


MODULE_SPEC = dict(argument_spec={"packages": {"type": "list", "elements": "str", "required": True}},
                   supports_check_mode=True)


def run(module):
    wanted = {}
    for spec in module.params["packages"]:
        name, sep, version = spec.partition("=")
        if not sep or not version:
            module.fail_json(msg="packages: %r has no version. Fix: write it as name=version." % spec)
        wanted[name] = version
    try:
        platform.require_spark(module_host(module), "kernel packages")
    except Unavailable as why:
        module.exit_json(changed=False, actions=[], drift=[], skipped_reason=str(why))

    have = installed(module, sorted(wanted))
    missing = ["%s=%s" % (n, v) for n, v in wanted.items() if have.get(n) != v]
    plan = Plan(module)
    if not missing:
        module.exit_json(**plan.result())
    rc, out, err = module.run_command(["apt-get", "--simulate", *APT_FLAGS, "install", *missing],
                                      environ_update=APT_ENV)
    simulation = kernel_plan.parse_apt_simulate(rc, out + err)
    if simulation["error"] or simulation["removals"]:
        module.fail_json(msg="apt refuses the kernel packages: %s. Nothing was installed. Fix: resolve it by hand "
                             "(apt-get --simulate install %s shows the transaction)." % (
                                 simulation["error"] or "it would remove " + ", ".join(simulation["removals"]),
                                 " ".join(missing)), simulation=simulation)
    for spec in missing:
        name = spec.split("=", 1)[0]
        plan.change(name, wanted[name], have.get(name), "apt-get install %s" % spec)
    if not module.check_mode:
        module.run_command(["apt-get", "-y", *APT_FLAGS, "install", *missing], environ_update=APT_ENV,
                           check_rc=True)
    module.exit_json(**plan.result(simulation=simulation))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
