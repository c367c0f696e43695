# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: engine_log
short_description: The engine container's last log lines, every secret the node knows redacted
version_added: 0.3.0
description:
  - Reads C(docker logs --tail) of the container (its stdout and stderr, in order) and returns the lines with
    every secret redacted before they leave the node, for every engine.
  - The secrets are read on the node, never passed in. They are the values of the container's secret-named
    environment variables (C(VLLM_API_KEY), a C(serve_env) C(HF_TOKEN)), the values in O(key_files), and any
    C(api_key) assignment (SGLang logs its key with its server_args at start).
  - "`ds41f logs --follow` runs the same redaction on the node (C(plugins/module_utils/redaction.py))."
options:
  container:
    description: The engine container.
    type: str
    required: true
  lines:
    description: The last lines to read.
    type: int
    default: 50
  key_files:
    description: Files whose values are secrets (the head's C(api-key.env), SGLang's C(api-key.yaml)); one
      that cannot be read is left out.
    type: list
    elements: path
    default: []
extends_documentation_fragment: [dgxspark.ds41f.read_only]
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The engine's log on every rank
  dgxspark.ds41f.node_steps:
    steps:
      - module: engine_log
        args:
          container: spark-ds41f
          lines: 50
          key_files: [/etc/ds41f/serve/api-key.env]
"""

RETURN = r"""
docker_rc:
  description: docker's exit status (not 0 when there is no such container, or Docker does not answer); the
    module itself does not fail then.
  returned: always
  type: int
lines:
  description: The log lines, redacted (docker's error when C(docker_rc) is not 0).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dgxspark.ds41f.plugins.module_utils import redaction

MODULE_SPEC = dict(argument_spec={"container": {"type": "str", "required": True},
                                  "lines": {"type": "int", "default": 50},
                                  "key_files": {"type": "list", "elements": "path", "default": [], "no_log": False}},
                   supports_check_mode=True)


def run(module):
    rc, lines = redaction.engine_log_lines(module.run_command, module.params["container"], module.params["lines"],
                                           module.params["key_files"])
    # Not "rc": Ansible fails a result whose rc is not 0, and a rank without a container is a reading, not a failure.
    module.exit_json(changed=False, docker_rc=rc, lines=lines)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
