# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_smoke
short_description: The head's boot log against its release's markers, and one chat completion
version_added: 0.3.0
description:
  - Reads the engine container's log (C(docker logs)) and checks it against the release's boot-log markers - every
    C(required) line present, no C(forbidden) line, no kernel family that fell back
    (C(fallback) with C(kernel_families)).
  - Sends one chat completion with thinking off (C(POST <api_url>/v1/chat/completions)) and requires HTTP 200 with
    a choice and at least one completion token.
  - Both are checked every time; each failure is one finding (setting, expected, found, fix), and the module fails
    when there is any.
  - The log never leaves the node (SGLang logs its API key with its arguments); a forbidden line is quoted with
    any key in it redacted. A generated key is read from O(api_key_file) on the node, never passed as an argument.
options:
  container:
    description: The engine container whose log is read.
    type: str
    required: true
  release:
    description: The release being served, named in the findings.
    type: str
    required: true
  markers:
    description:
      - The release's markers, C(serve_boot_markers[release]) - C(required) and C(forbidden) (lists of regular
        expressions), optionally C(fallback) (a regular expression) with C(kernel_families) (name to regular
        expression).
    type: dict
    required: true
  api_url:
    description: The head's API base (C(http://127.0.0.1:8000)).
    type: str
    required: true
  api_key:
    description: The recipe's API key (C(serve_api_key)); without it the key is read from O(api_key_file).
    type: str
  api_key_file:
    description: The API key file on the node (C(VLLM_API_KEY=<key>)); empty or absent means no key.
    type: path
    default: ""
  model:
    description: The served name the request asks for.
    type: str
    required: true
  prompt:
    description: The request's one user message.
    type: str
    required: true
  max_tokens:
    description: The completion's token limit.
    type: int
    default: 16
  timeout:
    description: Seconds the request may take.
    type: int
    default: 300
  engine_url:
    description:
      - The engine's own address on loopback (C(http://127.0.0.1:18000)). Given, every path of its route table
        (C(/openapi.json), plus the paths engines serve outside it, such as C(/metrics)) is asked with a GET
        without the key through O(api_url), and each but C(/health) must answer 401 or 403. A GET changes nothing
        even where a route got through (a POST-only route answers 405).
    type: str
extends_documentation_fragment: [dgxspark.ds41f.read_only]
attributes:
  check_mode:
    support: full
    description: Reads the log and sends the request in check mode too; neither changes the node.
author:
  - ds41f maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Boot-log markers and the smoke request
  dgxspark.ds41f.serve_smoke:
    container: spark-ds41f
    release: spark-ds41f-1030
    markers: "{{ serve_boot_markers['spark-ds41f-1030'] }}"
    api_url: http://127.0.0.1:8000
    api_key_file: /etc/ds41f/serve/api-key.env
    model: deepseek-v4.1-flash
    prompt: Say hello.
"""

RETURN = r"""
findings:
  description: One per failed check - C(setting), C(expected), C(found), C(fix), C(severity); empty when both pass.
  returned: always
  type: list
  elements: dict
keyless_routes:
  description: How many routes were asked without the key (0 without O(engine_url)).
  returned: always
  type: int
tokens:
  description: The completion tokens of the smoke request's answer (0 without one).
  returned: always
  type: int
model:
  description: The model that answered.
  returned: when the request was answered
  type: str
finish_reason:
  description: Why the completion ended.
  returned: when the request was answered
  type: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.dgxspark.ds41f.plugins.module_utils import boot_markers, engine_state, proxy


def marker_findings(p, log):
    logs = "docker logs %s" % p["container"]
    fix = ("read the head's log (%s) and the image's build; if the build words a marker differently, set the line "
           "it prints in serve_boot_markers.%s (never drop the check)." % (logs, p["release"]))
    setting = "release %s boot log" % p["release"]
    markers = p["markers"]
    out = [dict(setting="%s: required line" % setting, expected=m, found="missing", fix=fix)
           for m in boot_markers.missing(log, markers.get("required"))]
    out += [dict(setting="%s: forbidden line" % setting, expected="absent", found=engine_state.redact_text(hit),
                 fix=fix) for hit in boot_markers.found(log, markers.get("forbidden"))]
    out += [dict(setting="%s: kernel fallback" % setting, expected="no fallback", found=hit,
                 fix="a kernel family that fell back is a failed start: " + fix)
            for hit in boot_markers.fallbacks(log, markers.get("fallback"), markers.get("kernel_families"))]
    return out


def status_of(url, timeout):
    """The HTTP status of a GET without the key (0 when nothing answered)."""
    try:
        return open_url(url, method="GET", timeout=timeout, validate_certs=False).getcode()
    except Exception as exc:  # HTTPError carries its code; anything else answered nothing
        return getattr(exc, "code", None) or 0


def keyless_findings(p):
    """Every route of the engine's own table (GET <engine_url>/openapi.json), asked without the key through the API:
    each but /health must be refused."""
    try:
        table = json.loads(open_url(p["engine_url"].rstrip("/") + "/openapi.json", timeout=p["timeout"]).read())
    except Exception as exc:
        return [dict(setting="the engine's route table (GET %s/openapi.json)" % p["engine_url"],
                     expected="read", found=str(exc)[:200], object={"kind": "route", "name": "/openapi.json"},
                     fix="read the head's log (docker logs %s)" % p["container"])], 0
    paths = proxy.routes(table)
    out = []
    for path in paths:
        found = proxy.keyless_verdict(path, status_of(p["api_url"].rstrip("/") + path, 10))
        if found:
            out.append(dict(setting="GET %s without the key" % path, expected="HTTP 401", found=found,
                            object={"kind": "route", "name": path},
                            fix="ds41f run serve (the proxy asks for the key on every route but /health)"))
    return out, len(paths)


def smoke(p, key):
    """(answer or None, the failure in words)."""
    body = {"model": p["model"], "messages": [{"role": "user", "content": p["prompt"]}],
            "max_tokens": p["max_tokens"], "temperature": 0, "chat_template_kwargs": {"thinking": False}}
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    try:
        resp = open_url(p["api_url"].rstrip("/") + "/v1/chat/completions", method="POST", data=json.dumps(body),
                        headers=headers, timeout=p["timeout"], validate_certs=False)
        answer = json.loads(resp.read())
    except Exception as exc:  # refused, timed out, HTTP 401/500 (HTTPError carries its code), not JSON
        code = getattr(exc, "code", None)
        return None, ("HTTP %s: %s" % (code, exc) if code else str(exc))[:300]
    tokens = ((answer.get("usage") or {}).get("completion_tokens") or 0) if isinstance(answer, dict) else 0
    if not (isinstance(answer, dict) and answer.get("choices") and tokens > 0):
        return None, "HTTP 200 without a completion: %s" % json.dumps(answer)[:300]
    return answer, ""


MODULE_SPEC = dict(argument_spec={
    "container": {"type": "str", "required": True},
    "release": {"type": "str", "required": True},
    "markers": {"type": "dict", "required": True},
    "api_url": {"type": "str", "required": True},
    "api_key": {"type": "str", "no_log": True},
    "api_key_file": {"type": "path", "default": ""},
    "model": {"type": "str", "required": True},
    "prompt": {"type": "str", "required": True},
    "max_tokens": {"type": "int", "default": 16, "no_log": False},  # a length, not a secret
    "timeout": {"type": "int", "default": 300},
    "engine_url": {"type": "str"},
}, supports_check_mode=True)


def run(module):
    p = module.params
    rc, out, err = module.run_command(["docker", "logs", p["container"]])
    if rc != 0:
        findings = [dict(setting="release %s boot log" % p["release"], expected="docker logs %s" % p["container"],
                         found="unreadable: %s" % (err.strip().splitlines() or ["rc %d" % rc])[-1][:200],
                         fix="docker ps -a on the head; ds41f run serve starts the group")]
    else:
        findings = marker_findings(p, out + "\n" + err)
    answer, failure = smoke(p, p["api_key"] or engine_state.api_key(p["api_key_file"]))
    if answer is None:
        findings.append(dict(
            setting="smoke request (POST /v1/chat/completions, thinking off)",
            expected="HTTP 200 with at least one completion token", found=failure,
            fix="read the head's log (docker logs %s); a ready API that answers no completion is a failed engine: "
                "ds41f run serve -e '{\"serve_replace\": true}' starts it again" % p["container"]))
    keyless, asked = keyless_findings(p) if p["engine_url"] else ([], 0)
    findings += keyless
    for f in findings:
        f["severity"] = "error"
    result = dict(changed=False, findings=findings, keyless_routes=asked,
                  tokens=((answer or {}).get("usage") or {}).get("completion_tokens") or 0)
    if answer is not None:
        result.update(model=answer.get("model"), finish_reason=answer["choices"][0].get("finish_reason"))
    if findings:
        module.fail_json(msg="; ".join("%s: %s" % (f["setting"], f["found"]) for f in findings)[:1000], **result)
    module.exit_json(msg="release %s boot log: every required line, no forbidden line or fallback; smoke: %d "
                         "tokens from %s (%s); %s" % (
                             p["release"], result["tokens"], result["model"], result["finish_reason"],
                             "%d routes of the engine's table refused without the key" % asked if asked
                             else "no key asked for"), **result)


def main():
    run(AnsibleModule(**MODULE_SPEC))


if __name__ == "__main__":
    main()
