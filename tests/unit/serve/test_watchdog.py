"""The serving watchdog's decisions (roles/serve/files/ds41f-watchdog.py): a stall counted, the group restarted
once after enough stalled looks, never during a prefill that still moves, and the circuit breaker's refusal within
its window; then one real restart through its commands and the loopback engine of test_engine_progress."""

import importlib.util
import json
import sys

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import engine_progress, textfile
from tests.conftest import ROOT
from tests.unit.serve.test_engine_progress import Engine, engine  # noqa: F401  (the loopback engine fixture)

DEFAULTS = dict(yaml.safe_load((ROOT / "roles" / "serve" / "defaults" / "main.yml").read_text()),
                **yaml.safe_load((ROOT / "group_vars" / "all" / "serve.yml").read_text()))
CONFIG = {"stalls": DEFAULTS["serve_watchdog_stalls"], "window_s": DEFAULTS["serve_watchdog_window_s"]}
STALLED = {"state": "stalled", "ok": False, "seen": "1 request(s) running, no prompt or generated token in 20 s"}
MOVING = {"state": "moving", "ok": True, "seen": "0 prompt, 0 generated and 8192 scheduled token(s) in 20 s"}


@pytest.fixture(scope="module")
def watchdog():
    # Installed, the progress judge sits beside the program under this name (tasks/watchdog.yml).
    sys.modules["ds41f_engine_progress"] = engine_progress
    sys.modules["ds41f_textfile"] = textfile
    spec = importlib.util.spec_from_file_location("ds41f_watchdog", ROOT / "roles" / "serve" / "files" /
                                                  "ds41f-watchdog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_defaults_are_on_and_need_more_than_one_stalled_look():
    assert DEFAULTS["serve_watchdog"] is True and CONFIG["stalls"] >= 2 and CONFIG["window_s"] >= 600


def test_stalled_looks_in_a_row_restart_the_group_and_one_good_look_resets_the_count(watchdog):
    state = {}
    actions = [watchdog.decide(state, v, t, CONFIG) for t, v in enumerate([STALLED, MOVING] + [STALLED] * 2)]
    assert actions == ["watch", "ok", "watch", "restart"] if CONFIG["stalls"] == 2 else actions[-1] == "restart"
    assert state["verdict"] == "stalled" and state["seen"] == STALLED["seen"]


def test_a_prefill_that_moves_for_longer_than_any_window_never_restarts(watchdog):
    state = {}
    assert {watchdog.decide(state, MOVING, t * 30.0, CONFIG) for t in range(200)} == {"ok"}


def test_a_second_stall_inside_the_window_trips_the_breaker_and_says_why(watchdog):
    state = {"last_restart": 1000.0, "restarts": 1}
    actions = [watchdog.decide(state, STALLED, 1000.0 + 60 * i, CONFIG) for i in range(1, 1 + CONFIG["stalls"])]
    assert actions[-1] == "breaker" and state["breaker"] == "open"
    assert "stalled again" in state["reason"] and "serve_replace" in state["reason"]
    later = {"last_restart": 1000.0}
    after = [watchdog.decide(later, STALLED, 1000.0 + CONFIG["window_s"] + i, CONFIG) for i in range(CONFIG["stalls"])]
    assert after[-1] == "restart"  # outside the window: one more restart


def test_a_restart_runs_its_commands_in_order_then_waits_for_a_first_token(watchdog, engine, tmp_path):  # noqa: F811
    engine.RequestHandlerClass = type("Answering", (Engine,), {})
    order = tmp_path / "order"
    config = {"api_url": "http://127.0.0.1:%d" % engine.server_port, "model": "ds41f-tiny", "first_token_s": 5,
              "ready_timeout_s": 30, "restart": [["sh", "-c", "echo worker >> %s" % order],
                                                 ["sh", "-c", "echo head >> %s" % order]]}
    ran, ok, what = watchdog.restart(config, "k")
    assert ran and ok and what.startswith("ready again, first token in ")
    assert order.read_text().split() == ["worker", "head"]
    failing = dict(config, restart=[["sh", "-c", "exit 3"], ["sh", "-c", "echo head >> %s" % order]])
    ran, ok, what = watchdog.restart(failing, "k")
    assert not ran and not ok and "exit 3" in what
    assert order.read_text().split() == ["worker", "head"]  # the head was not touched


def closed_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_restart_that_could_not_run_is_a_failure_not_a_restart_and_the_next_stalls_try_again(watchdog, tmp_path):
    # A worker's restart as the serve stage writes it (tasks/watchdog.yml), by the real ssh, to a loopback port where
    # nothing listens: it cannot run, as when the head's key or a host key is not what the worker expects.
    config = dict(CONFIG, ready_timeout_s=5, restart=[[
        "ssh", "-i", str(tmp_path / "id_ed25519"), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o",
        "ConnectTimeout=5", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=%s" % (tmp_path / "known"),
        "-o", "GlobalKnownHostsFile=/dev/null", "-p", str(closed_port()), "root@127.0.0.1", "docker", "restart",
        "spark-ds41f"], ["sh", "-c", "echo head >> %s" % (tmp_path / "order")]])
    state = {"breaker": "closed", "restarts": 0, "last_restart": None}
    looks = [watchdog.decide(state, STALLED, 100.0 + i, config) for i in range(CONFIG["stalls"])]
    assert looks[-1] == "restart"
    ran, ok, what = watchdog.restart(config, "k")
    watchdog.after_restart(state, 110.0, ran, ok, what)
    assert what.startswith("root@127.0.0.1 docker restart spark-ds41f: exit 255: ") and "ssh: connect to host" in what
    assert not ran and what.endswith("Connection refused") and not (tmp_path / "order").exists()
    assert state["restarts"] == 0 and state["last_restart"] is None and state["failed_restarts"] == 1
    assert state["last_failed_restart"] == 110.0 and state["last_failure"] == what and state["stalls"] == 0
    # not counted: the next stalls restart again instead of opening the breaker
    again = [watchdog.decide(state, STALLED, 120.0 + i, config) for i in range(CONFIG["stalls"])]
    assert again[-1] == "restart" and state["breaker"] == "closed"
    # a restart that ran counts, and the breaker's window starts from it
    watchdog.after_restart(state, 130.0, True, True, "ready again")
    assert state["restarts"] == 1 and state["last_restart"] == 130.0 and state["failed_restarts"] == 1
    after = [watchdog.decide(state, STALLED, 140.0 + i, config) for i in range(CONFIG["stalls"])]
    assert after[-1] == "breaker"


def test_the_state_file_is_json_a_reader_can_load(watchdog, tmp_path):
    path = tmp_path / "run" / "watchdog.json"
    watchdog.write_state(str(path), {"breaker": "open", "reason": "why"})
    assert json.loads(path.read_text()) == {"breaker": "open", "reason": "why"}


def test_the_state_goes_to_node_exporters_textfile_folder_and_parses(watchdog, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    state = {"breaker": "open", "restarts": 1, "last_restart": 1764750000.0, "verdict": "stalled",
             "checked_at": 1764750100.0, "reason": 'stalled "again"'}
    watchdog.write_state(str(tmp_path / "watchdog.json"), state, str(tmp_path / "textfile"))
    families = {f.name: f for f in text_string_to_metric_families((tmp_path / "textfile" / "ds41f_watchdog.prom")
                                                                  .read_text())}
    assert families["ds41f_watchdog_breaker_open"].samples[0].value == 1
    assert families["ds41f_watchdog_restarts"].type == "counter"  # the parser drops a counter's _total
    assert families["ds41f_watchdog_failed_restarts"].samples[0].value == 0
    assert {s.labels["verdict"]: s.value for s in families["ds41f_watchdog_verdict"].samples}["stalled"] == 1
    assert not list((tmp_path / "textfile").glob("*.tmp"))


def test_a_prefill_longer_than_the_window_moving_only_the_step_counter_never_restarts(watchdog, engine):  # noqa: F811
    """The watchdog's own look, against a loopback engine that never sends a first token (a long prefill) while the
    recorded /metrics' engine-step counter grows at every read and no prompt or generated token is counted: over
    twice the breaker's window, every look is progress. Frozen counters then restart the group. (The lab's tiny
    CPU model finishes its longest prefill in milliseconds, so molecule/verify-doctor cannot stage this.)"""
    from tests.unit.serve.test_engine_progress import with_values

    base = engine_progress.parse(with_values())["scheduled"]

    class Prefill(Engine):
        hung, reads = True, 0

        def do_GET(self):
            type(self).reads += 1
            self.metrics = with_values(running=1, scheduled=base + 8192 * type(self).reads)
            super().do_GET()

    engine.RequestHandlerClass = Prefill
    url = "http://127.0.0.1:%d" % engine.server_port
    state, window = {}, CONFIG["window_s"]
    looks = []
    for i in range(8):  # a look every quarter window: two windows long
        verdict = watchdog.progress.probe(watchdog.open_url, url, "k", "ds41f-tiny", 0.3)
        looks.append((watchdog.decide(state, verdict, i * window / 4.0, CONFIG), verdict))
    assert {action for action, _ in looks} == {"ok"}, looks
    assert all(v["state"] == "moving" and "0 prompt, 0 generated" in v["seen"] for _, v in looks), looks
    engine.RequestHandlerClass = type("Hung", (Engine,), {"hung": True, "metrics": with_values(running=1)})
    after = [watchdog.decide(state, watchdog.progress.probe(watchdog.open_url, url, "k", "ds41f-tiny", 0.3),
                             2.0 * window + i, CONFIG) for i in range(CONFIG["stalls"])]
    assert after[-1] == "restart", after


def test_a_restart_is_recorded_beside_the_release_records_and_read_as_none_of_them(tmp_path):
    tasks = yaml.safe_load((ROOT / "roles" / "serve" / "tasks" / "watchdog.yml").read_text())
    config = tasks[0]["vars"]["serve__watchdog_config"]
    assert config["records"] == "{{ serve_release_dir }}/watchdog-restarts.jsonl"
    spec = importlib.util.spec_from_file_location("serve_release", ROOT / "plugins" / "modules" / "serve_release.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "20261203T120000Z-lab-r1.json").write_text('{"release": "lab-r1"}')
    (tmp_path / "watchdog-restarts.jsonl").write_text('{"ok": true}\n')
    assert [r["release"] for r in module.load(str(tmp_path))] == ["lab-r1"]
