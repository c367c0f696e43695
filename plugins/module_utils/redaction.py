# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Secrets out of what leaves a node: environment values, key files, and engine logs.

A container's environment holds the API key (VLLM_API_KEY from the key file) and may hold other credentials (a
``serve_env`` HF_TOKEN): a variable whose name has one of SECRET_WORDS (split on "_") keeps its name and loses its
value in anything a module returns, since results land in job events, logs and fact caches. A log line can hold a
key itself: SGLang 0.5.23 logs its whole server_args at start ("server_args={... 'api_key': '<key>' ...}"), the key
from its --config file included.

An engine log is redacted on its node (``engine_log_lines``, the ``engine_log`` module) with every secret the
node knows for it: the secret-named values of the container's environment, the values of the recipe's key files
(the head's ``api-key.env``, SGLang's ``api-key.yaml``) and any api_key assignment. Stdlib only: `ds41f logs
--follow` runs this very file on the node (``python3 -c``, ``main``), so a followed log is redacted before it
leaves the node too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

SECRET_WORDS = frozenset(("KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS", "CREDENTIAL"))
REDACTED = "(redacted)"
_KEY_ASSIGNMENT = re.compile(r"""(api[_-]?key['"]?\s*[:=]\s*['"]?)([^'"\s,;}]+)""", re.IGNORECASE)
# A key file line: NAME=value (an env file) or name: value (YAML); a value this short is no secret worth hiding
# and would blank every matching word of the log.
_FILE_LINE = re.compile(r"""^\s*[A-Za-z0-9_.-]+\s*[=:]\s*['"]?([^'"\s]+)['"]?\s*$""")
MIN_SECRET = 6


def is_secret(name):
    return any(word in SECRET_WORDS for word in str(name).upper().split("_"))


def redact_env(items, keep=()):
    """``KEY=VALUE`` items (docker's Config.Env) with the value of every secret-named variable not in ``keep``
    replaced by REDACTED; ``keep`` names variables whose value the caller already holds (the rendered spec's)."""
    out = []
    for item in items or []:
        name, sep, _ = str(item).partition("=")
        out.append("%s=%s" % (name, REDACTED) if sep and is_secret(name) and name not in keep else item)
    return out


def redact_text(text, values=()):
    """``text`` with every one of ``values`` (known secrets) and the value of any api_key assignment redacted."""
    for value in sorted(filter(None, values), key=len, reverse=True):  # a longer secret before one inside it
        text = text.replace(value, REDACTED)
    return _KEY_ASSIGNMENT.sub(lambda m: m.group(1) + REDACTED, text)


def file_secrets(paths):
    """The values of the key files (each line NAME=value or name: value) that can be read here."""
    values = set()
    for path in paths:
        try:
            with open(path) as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:
            found = _FILE_LINE.match(line)
            if found and not line.lstrip().startswith("#") and len(found.group(1)) >= MIN_SECRET:
                values.add(found.group(1))
    return values


def container_secrets(run, container):
    """The values of the container's secret-named environment variables (docker inspect). ``run``: argv ->
    (rc, stdout, stderr), as AnsibleModule.run_command."""
    rc, out, _ = run(["docker", "container", "inspect", "--format", "{{json .Config.Env}}", container])
    try:
        env = json.loads(out) if rc == 0 else []
    except ValueError:
        return set()
    values = set()
    for item in env or []:
        name, sep, value = str(item).partition("=")
        if sep and is_secret(name) and len(value) >= MIN_SECRET:
            values.add(value)
    return values


def known_secrets(run, container, key_files):
    return container_secrets(run, container) | file_secrets(key_files)


def engine_log_lines(run, container, lines, key_files=()):
    """(rc, [log lines]) of ``docker logs --tail lines container`` (stdout and stderr), every known secret redacted."""
    rc, out, err = run(["sh", "-c", 'docker logs --tail "$1" "$2" 2>&1', "sh", str(lines), container])
    values = known_secrets(run, container, key_files)
    return rc, [redact_text(line, values) for line in ((out or "") + (err or "")).splitlines()]


def _run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def main(argv):
    """CONTAINER LINES [KEY_FILE...]: follow the container's log from its last LINES lines, redacted, until the
    log or the caller (ssh's hangup) ends it."""
    container, lines, key_files = argv[0], argv[1], argv[2:]
    values = known_secrets(_run, container, key_files)
    proc = subprocess.Popen(["docker", "logs", "--follow", "--tail", str(lines), container], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    for raw in proc.stdout:
        sys.stdout.write(redact_text(raw.decode("utf-8", "replace"), values))
        sys.stdout.flush()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
