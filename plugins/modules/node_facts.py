# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_facts
short_description: Read what kind of node this is (kernel, page size, driver, container or DGX Spark)
version_added: 0.1.0
description:
  - Reads the running kernel release, its base page size, whether the node is a DGX Spark or a lab
    container, the NVIDIA driver version, the loaded C(nvidia_uvm) srcversion, the Secure Boot state and
    the CPU governor, through the collection's thin hardware layer.
  - Returns them as the fact C(ds41f_node); the site stage compares them across nodes.
  - A reading that does not exist on this node (no driver in a lab container) is C(null), never invented.
options: {}
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the node
  dgxspark.ds41f.node_facts:
"""

RETURN = r"""
ansible_facts:
  description: Facts to add.
  returned: always
  type: dict
  contains:
    ds41f_node:
      description: The readings.
      type: dict
      sample: {kernel: 7.0.0-1019-nvidia-64k, page_size: 65536, container: null, dgx_spark: true,
               driver: 580.178.04, uvm_srcversion: 3F0C9A2B1D, secure_boot: true, governor: performance}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import platform
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import module_host

MODULE_SPEC = dict(argument_spec={}, supports_check_mode=True)


def run(module):
    module.exit_json(changed=False, ansible_facts={"ds41f_node": platform.summary(module_host(module))})


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
