# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_probe
short_description: Wait until this rank is ready - container running, guard active, and on the head the API answering
version_added: 0.1.0
description:
  - Polls every O(interval) seconds, up to O(timeout), until the engine container runs, the memory guard
    unit is active and, when O(api_url) is given (the head), C(GET <api_url>/v1/models) answers with the
    served names.
  - Fails at once, naming the cause, when the container has exited or the guard is no longer active (a
    tripped guard, for example); fails with the last state seen when the time runs out.
  - In check mode it looks once and reports, without waiting.
options:
  container:
    description: The engine container's name.
    type: str
    required: true
  guard_unit:
    description: The memory guard's systemd unit; empty to not require one.
    type: str
    default: ds41f-memguard.service
  api_url:
    description: The head's API base (C(http://127.0.0.1:8000)); omit on workers.
    type: str
  api_key:
    description: Bearer token for the API.
    type: str
  api_key_file:
    description: The API key file on the node (C(VLLM_API_KEY=<key>)), read when O(api_key) is not given.
    type: path
    default: ""
  served_names:
    description: Names C(/v1/models) must list.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds to wait.
    type: int
    default: 3600
  interval:
    description: Seconds between looks.
    type: float
    default: 1.0
extends_documentation_fragment: [dgxspark.ds41f.read_only]
attributes:
  check_mode:
    support: full
    description: Looks once; never waits.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Wait for the head
  dgxspark.ds41f.serve_probe:
    container: spark-ds41f
    api_url: http://127.0.0.1:8000
    api_key_file: /etc/ds41f/serve/api-key.env
    served_names: [deepseek-v4.1-flash]
    timeout: 3600
"""

RETURN = r"""
ready:
  description: Whether the rank became ready.
  returned: always
  type: bool
waited_s:
  description: Seconds waited.
  returned: always
  type: float
looks:
  description: How many times it looked.
  returned: always
  type: int
container:
  description: The container's last state.
  returned: always
  type: dict
models:
  description: The served names C(/v1/models) listed (head only).
  returned: always
  type: list
  elements: str
managed:
  description:
    - The rank's container, the serve stage's managed object (C(kind) C(container) and its C(name)). The doctor
      lists it, and its mutation test (C(tests/mutation/)) stops and removes it.
  returned: always
  type: list
  elements: dict
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_state


def api_models(url, key):
    """(served names, error) of GET /v1/models."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    try:
        resp = open_url(url.rstrip("/") + "/v1/models", headers=headers, timeout=3, validate_certs=False)
        data = json.loads(resp.read())
        return [m.get("id") for m in data.get("data", [])], None
    except Exception as exc:  # connection refused while loading, 401, ...: keep polling
        return [], str(exc)


def look(module):
    """(verdict, details): verdict is 'ready', 'waiting' or 'failed'."""
    p = module.params
    found = engine_state.container(module.run_command, p["container"])
    details = {"container": found, "models": [], "reason": ""}
    if found is None:
        details["reason"] = "no container %s" % p["container"]
        return "failed", details
    if not found["running"]:
        details["reason"] = "container %s is %s (exit code %s%s)" % (
            p["container"], found["status"], found["exit_code"], ", OOM-killed" if found["oom_killed"] else "")
        return "failed", details
    if p["guard_unit"]:
        guard = engine_state.unit_state(module.run_command, p["guard_unit"])
        details["guard"] = guard
        if guard["active"] != "active":
            details["reason"] = "memory guard %s is %s (%s)" % (p["guard_unit"], guard["active"], guard.get("result"))
            return "failed", details
    if p["api_url"]:
        models, error = api_models(p["api_url"], p["api_key"] or engine_state.api_key(p["api_key_file"]))
        details["models"] = models
        missing = [n for n in p["served_names"] if n not in models]
        if error or missing:
            details["reason"] = error or "the API lists %s, not %s" % (models, ", ".join(missing))
            return "waiting", details
    return "ready", details


MODULE_SPEC = dict(argument_spec={
    "container": {"type": "str", "required": True},
    "guard_unit": {"type": "str", "default": "ds41f-memguard.service"},
    "api_url": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "api_key_file": {"type": "path", "default": ""},
    "served_names": {"type": "list", "elements": "str", "default": []},
    "timeout": {"type": "int", "default": 3600},
    "interval": {"type": "float", "default": 1.0},
}, supports_check_mode=True)


def run(module):
    p = module.params
    begin = time.monotonic()
    looks = 0
    while True:
        verdict, details = look(module)
        looks += 1
        waited = round(time.monotonic() - begin, 1)
        result = dict(changed=False, ready=verdict == "ready", waited_s=waited, looks=looks,
                      container=details["container"], models=details["models"],
                      managed=[{"kind": "container", "name": p["container"]}])
        if verdict == "ready" or module.check_mode:
            module.exit_json(msg=details["reason"] or "ready after %.0f s" % waited, **result)
        if verdict == "failed":
            module.fail_json(msg="not ready: %s (after %.0f s)" % (details["reason"], waited), **result)
        if waited >= p["timeout"]:
            module.fail_json(msg="not ready after %d s: %s" % (p["timeout"], details["reason"]), **result)
        time.sleep(p["interval"])


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
