# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: package_purged
short_description: Debian packages that must not be on a node, purged
version_added: 0.2.0
description:
  - Reads each package's state with C(dpkg-query); a package that is installed, or removed with its
    configuration files left, is purged with C(apt-get purge).
  - One drift entry per package found, naming its state, so the doctor shows what is there and the fix.
  - A package dpkg does not know is as wanted; so is a node without dpkg (nothing to purge there).
options:
  names:
    description: The packages.
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reads the package states only.
  diff_mode:
    support: full
    description: Each package's state before and after.
  idempotent:
    support: full
    description: A package that is not there is left alone.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: DGX OS's package that turns nvidia-drm modeset off is purged
  dgxspark.ds41f.package_purged:
    names: [nvidia-disable-drm-modeset]
"""

RETURN = r"""
purged:
  description: The packages purged (or that would be, in check mode).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan

# dpkg's two-letter state: i = installed, c = only configuration files left; both leave something to purge.
LEFT = {"i": "installed", "c": "removed, configuration files left"}


def state(module, dpkg_query, name):
    """What dpkg holds of ``name``: a LEFT description, or None when nothing of it is there."""
    rc, out, _ = module.run_command([dpkg_query, "-W", "-f=${db:Status-Abbrev}", name])
    status = out.strip()
    if rc != 0 or len(status) < 2:
        return None  # dpkg does not know it
    return LEFT.get(status[1])


MODULE_SPEC = dict(argument_spec={"names": {"type": "list", "elements": "str", "required": True}},
                   supports_check_mode=True)


def run(module):
    plan = Plan(module)
    purged = []
    dpkg_query = module.get_bin_path("dpkg-query")
    for name in module.params["names"] if dpkg_query else []:
        found = state(module, dpkg_query, name)
        if found:
            purged.append(name)
            plan.change("package %s" % name, "purged", found, "apt-get purge -y %s" % name,
                        lambda name=name: module.run_command(["apt-get", "purge", "-y", name], check_rc=True,
                                                             environ_update={"DEBIAN_FRONTEND": "noninteractive"}))
    module.exit_json(**plan.result(purged=purged))


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
