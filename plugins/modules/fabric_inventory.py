# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_inventory
short_description: Read a DGX Spark's ConnectX-7 firmware and rdma-core version for the cross-node comparison
version_added: 0.3.0
description:
  - Reads the firmware of every RDMA device (C(/sys/class/infiniband/<hca>/fw_ver)) and the installed C(rdma-core)
    package (C(dpkg-query)), and returns them as the fact C(ds41f_fabric_inventory). The fabric stage compares them
    across nodes (M(dgxspark.ds41f.alignment)) - a mixed fleet is the first thing to rule out when one rank is slow.
  - The NVIDIA driver is compared across nodes by the site_config stage (its alignment key C(driver)).
  - Needs a DGX Spark. Elsewhere (a lab node) nothing is read, the fact is null and each reading is listed in
    RV(skipped_checks) with the reason.
options: {}
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The fabric's firmware and rdma-core
  dgxspark.ds41f.fabric_inventory:
"""

RETURN = r"""
ansible_facts:
  description: Facts to add.
  returned: always
  type: dict
  contains:
    ds41f_fabric_inventory:
      description: cx7_firmware (the firmware versions of the node's RDMA devices) and rdma_core (the package
        version), or null where the node is not a DGX Spark.
      type: dict
      sample: {cx7_firmware: 28.45.4028, rdma_core: 50.0-2ubuntu0.2, hcas: {rocep1s0f0: 28.45.4028}}
skipped_checks:
  description: The readings not taken here, each C({check, reason}).
  returned: when the node is not a DGX Spark
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dpkg, platform, rdma
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

CHECKS = ("CX7 firmware", "rdma-core version")
PACKAGE = "rdma-core"


def inventory(host):
    """The readings the nodes must agree on: one firmware string for all of a node's HCAs (they share one adapter;
    two versions on one node are listed both), and the rdma-core version."""
    hcas = rdma.firmware(host)
    versions = sorted({v or "unreadable" for v in hcas.values()})
    return {"cx7_firmware": ", ".join(versions) or "no RDMA device",
            "rdma_core": dpkg.installed_version(host, PACKAGE) or "not installed", "hcas": hcas}


MODULE_SPEC = dict(argument_spec={}, supports_check_mode=True)


def run(module):
    host = module_host(module)
    reason = platform.not_spark(host)
    if reason:
        module.exit_json(changed=False, ansible_facts={"ds41f_fabric_inventory": None},
                         skipped_checks=[{"check": check, "reason": reason} for check in CHECKS])
    module.exit_json(changed=False, ansible_facts={"ds41f_fabric_inventory": inventory(host)})


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
