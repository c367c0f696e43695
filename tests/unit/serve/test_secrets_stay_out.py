"""Nothing secret in what a run leaves behind: every task of every role and playbook that hands the API key to a
module either keeps its whole result out of logs (no_log) or gives it to a parameter its module declares no_log
(Ansible then removes the value from everything the module returns). Generated from the task files themselves, so a
new task that carries the key is checked without anyone listing it."""

import json
import os
import re
import sys

import pytest
import yaml

from tests.conftest import ROOT, TASK_FILES, tasks

# The variables that hold the API key (or the TLS key), or a result that holds it.
SECRETS = re.compile(r"\b(serve_api_key_value|serve_api_key|day2_key|serve__api_key_read|serve_tls_key)\b")
CONTROL = {"name", "when", "register", "tags", "loop", "loop_control", "delegate_to", "run_once", "changed_when",
           "failed_when", "check_mode", "become", "notify", "listen", "no_log", "ignore_errors", "until", "retries",
           "delay", "timeout", "block", "rescue", "always", "environment", "any_errors_fatal", "args"}


def no_log_params(module):
    """The parameters a collection module declares no_log (read from its argument spec in the source)."""
    path = ROOT / "plugins" / "modules" / (module.rsplit(".", 1)[-1] + ".py")
    if not path.exists():
        return set()
    return set(re.findall(r'"(\w+)": \{[^}]*"no_log": True', path.read_text()))


# The roles' own variables that are whole module arguments (serve__probe_args): a task that passes one as its
# arguments is scanned parameter by parameter, as if it wrote them out.
ROLE_ARGS = {name: value for path in sorted((ROOT / "roles").glob("*/vars/main.yml"))
             for name, value in (yaml.safe_load(path.read_text()) or {}).items() if isinstance(value, dict)}


def expanded(args):
    """A step's arguments: a mapping as written, or the role variable its template names, else the template."""
    if isinstance(args, dict):
        return args
    named = [ROLE_ARGS[n] for n in re.findall(r"\{\{\s*(\w+)", str(args)) if n in ROLE_ARGS]
    return named[0] if named else {"(args)": args}


def carriers(task):
    """[(module, parameter, text)] of the task's arguments (node_steps: each step's) that mention a secret."""
    out = []
    for key, value in task.items():
        if key in CONTROL or key == "vars":
            continue
        if "node_steps" in key and isinstance(value, dict) and isinstance(value.get("steps"), list):
            for step in value["steps"]:
                if not isinstance(step, dict):  # a templated step list: the whole module counts
                    out += [(key, "(steps)", str(step))] if SECRETS.search(str(step)) else []
                    continue
                # templated arguments: a role variable's parameters, else the whole step counts
                for param, text in expanded(step.get("args") or {}).items():
                    if SECRETS.search(str(text)):
                        out.append((step["module"], param, str(text)))
        elif isinstance(value, dict):
            out += [(key, param, str(text)) for param, text in value.items() if SECRETS.search(str(text))]
        elif SECRETS.search(str(value)):
            out.append((key, "(free form)", str(value)))
    # Task vars are templated into its arguments: a secret there counts for the module as a whole.
    if any(SECRETS.search(str(v)) for v in (task.get("vars") or {}).values()):
        out.append((next((k for k in task if k not in CONTROL and k != "vars"), "?"), "(vars)", "vars"))
    return out


CASES = []
for path in TASK_FILES:
    for task in tasks(yaml.safe_load(path.read_text())):
        for module, param, _ in carriers(task):
            CASES.append(pytest.param(task, module, param, id="%s:%s:%s" % (path.relative_to(ROOT), task.get(
                "name", "?")[:40], param)))


def test_the_scan_finds_the_tasks_that_carry_the_key():
    # the smoke request, readiness after a start, of a group kept running and of a restore, status, the key file and
    # its engine config
    assert len(CASES) >= 7


@pytest.mark.parametrize("task, module, param", CASES)
def test_every_task_that_carries_the_key_keeps_it_out_of_logs(task, module, param):
    if task.get("no_log") is True:
        return
    if module in ("ansible.builtin.set_fact", "set_fact", "ansible.builtin.assert", "assert"):
        pytest.fail("%s puts the key into a fact or message without no_log" % task.get("name"))
    assert param in no_log_params(module), (
        "%s hands the API key to %s's %s, which is not no_log: its value reaches job_events and -vvv output. Fix: "
        "no_log: true on the task, or give it to a no_log parameter" % (task.get("name"), module, param))


def test_the_smoke_request_keeps_its_findings_in_view_and_the_key_on_the_node():
    """One step, no no_log: its findings are the doctor's rows; the task after it prints only its message. A
    generated key is read on the node from the key file; only the recipe's own key travels, as serve_smoke's no_log
    api_key."""
    task, answer = yaml.safe_load((ROOT / "roles" / "serve" / "tasks" / "smoke.yml").read_text())
    (step,) = task["dgxspark.ds41f.node_steps"]["steps"]
    assert step["module"] == "serve_smoke" and "no_log" not in task
    assert answer["ansible.builtin.debug"] == {"msg": "{{ %s.msg }}" % task["register"]}
    assert "serve__api_key_file" in step["args"]["api_key_file"] and "api_key" in no_log_params("serve_smoke")
    assert "api_key_file" not in no_log_params("serve_smoke")  # a path, shown; the key stays in the file


def smoke_run(tmp_path, monkeypatch, log, status=200):
    """roles/serve/tasks/smoke.yml as it is, run by ansible-runner at -vvv on localhost against a loopback server
    that answers as vLLM behind the proxy does (its route table at /openapi.json, a GET without the key refused),
    with the head's log from a docker on PATH that prints ``log``. (result, the Authorization headers the server's
    completions saw, every file the run left, the key)."""
    import http.server
    import json
    import threading

    from ds41f import runs

    key = "ds41f-test-key-7c1e9b2f0a4d"
    seen = []

    class Api(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # the proxy: nothing but a completion with the key gets through
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            seen.append(self.headers.get("Authorization"))
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"model": "ds41f-tiny", "choices": [{"message": {"content": "42"},
                                                                    "finish_reason": "length"}],
                               "usage": {"prompt_tokens": 9, "completion_tokens": 4}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Engine(http.server.BaseHTTPRequestHandler):  # the engine on loopback: its route table
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = json.dumps({"paths": {"/v1/chat/completions": {"post": {}}, "/invocations": {"post": {}}}})
            self.send_response(200 if self.path == "/openapi.json" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    engine = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    for each in (server, engine):
        threading.Thread(target=each.serve_forever, daemon=True).start()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "head.log").write_text(log)
    (bin_dir / "docker").write_text("#!/bin/sh\n[ \"$1\" = logs ] && cat %s\n" % (tmp_path / "head.log"))
    (bin_dir / "docker").chmod(0o755)
    (tmp_path / "api-key.env").write_text("VLLM_API_KEY=%s\n" % key)
    playbook = tmp_path / "smoke.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "environment": {
        "PATH": "%s:%s" % (bin_dir, os.environ["PATH"])}, "vars": {
        "serve_container_name": "spark-ds41f", "serve__release": "lab-r1", "serve_api_key": "",
        "serve_api_key_required": True, "serve__api_key_file": str(tmp_path / "api-key.env"),
        "serve_boot_markers": {"lab-r1": {"required": ["Starting vLLM server on http"],
                                          "forbidden": ["Traceback \\(most recent call last\\)"]}},
        "serve_spec": {"port": server.server_port, "served_names": ["ds41f-tiny"]},
        "serve_engine_port": engine.server_port,
        "serve_smoke_prompt": "What is 19 + 23?", "serve_smoke_max_tokens": 4},
        "tasks": [{"ansible.builtin.import_tasks": str(ROOT / "roles" / "serve" / "tasks" / "smoke.yml")}]}]))
    monkeypatch.setattr(runs, "RUNS", tmp_path / "runs")
    facts = tmp_path / "facts"
    try:
        result = runs.run_playbook("smoke", [str(playbook), "-i", "localhost,", "-c", "local", "-vvv"], {
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(facts), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable}, quiet=True)
    finally:
        for each in (server, engine):
            each.shutdown()
            each.server_close()
    files = [p for p in list((tmp_path / "runs").rglob("*")) + list(facts.rglob("*")) if p.is_file()]
    return result, seen, files, key


def test_a_smoke_request_at_vvv_through_the_runner_leaves_the_key_nowhere(tmp_path, monkeypatch):
    """Every file of the run folder (job_events, stdout, command) and the fact cache is searched for the key, and
    the server saw it."""
    result, seen, files, key = smoke_run(tmp_path, monkeypatch, "INFO Starting vLLM server on http://0.0.0.0\n")
    assert result.rc == 0, (result.artifacts / "stdout").read_text()
    assert seen == ["Bearer " + key]  # the request did carry it
    assert "smoke: 4 tokens from ds41f-tiny (length)" in (result.artifacts / "stdout").read_text()
    # the table's two routes and the three every engine serves outside it, each refused without the key
    assert "5 routes of the engine's table refused without the key" in (result.artifacts / "stdout").read_text()
    assert len(files) > 10 and any("job_events" in str(p) for p in files)
    assert [str(p) for p in files if key in p.read_text(errors="replace")] == []


def test_a_missing_marker_a_forbidden_line_and_a_refused_request_are_each_a_finding(tmp_path, monkeypatch):
    log = "Traceback (most recent call last):\n  api_key='%s'\n" % "x"
    result, _, files, key = smoke_run(tmp_path, monkeypatch, log, status=401)
    assert result.rc != 0
    events = [json.loads(p.read_text()) for p in files if p.suffix == ".json" and "job_events" in str(p)]
    failed = [e["event_data"]["res"] for e in events if e.get("event") == "runner_on_failed"]
    (res,) = failed
    settings = [f["setting"] for f in res["findings"]]
    assert settings == ["release lab-r1 boot log: required line", "release lab-r1 boot log: forbidden line",
                        "smoke request (POST /v1/chat/completions, thinking off)"]
    assert all(f["fix"] and f["expected"] != f["found"] for f in res["findings"])
    assert "HTTP 401" in res["findings"][2]["found"]
    assert [str(p) for p in files if key in p.read_text(errors="replace")] == []
