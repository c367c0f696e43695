"""bench/converge's counters: the host-task callback through a real ansible-playbook run (debug and a skip on
localhost, nothing changed), and the wrapper that counts each ssh call before running the real ssh."""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys

from tests.conftest import ROOT

BIN = os.path.dirname(sys.executable)


def converge_module():
    loader = importlib.machinery.SourceFileLoader("bench_converge", str(ROOT / "bench" / "converge"))
    spec = importlib.util.spec_from_loader("bench_converge", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_callback_counts_ran_and_skipped_tasks_per_host(tmp_path):
    playbook = tmp_path / "p.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n"
                        "    - ansible.builtin.debug: {msg: one}\n"
                        "    - ansible.builtin.debug: {msg: two}\n"
                        "    - ansible.builtin.debug: {msg: never}\n      when: false\n")
    out, cfg = tmp_path / "tasks.json", tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nlocal_tmp = %s\n" % (tmp_path / "tmp"))
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "bench" / "converge_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="host_tasks", DS41F_BENCH_TASKS=str(out), ANSIBLE_CONFIG=str(cfg))
    done = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "a,b,", "-c", "local", str(playbook)],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(out.read_text()) == {"a": {"ran": 2, "skipped": 1}, "b": {"ran": 2, "skipped": 1}}


def test_each_ssh_call_is_one_line_and_still_runs_ssh(tmp_path):
    env = converge_module().counters(tmp_path)
    trips = tmp_path / "trips.log"
    trips.write_text("")
    for _ in range(2):
        done = subprocess.run([env["ANSIBLE_SSH_EXECUTABLE"], "-V"], env=dict(os.environ, DS41F_BENCH_TRIPS=str(trips)),
                              capture_output=True, text=True)
        assert done.returncode == 0 and "OpenSSH" in done.stderr
    assert len(trips.read_text().splitlines()) == 2


def test_repeated_runs_are_summed_up_as_the_median_of_each_figure():
    median = converge_module().median
    runs = [{"wall": 30.0, "cpu": 12.0}, {"wall": 20.0, "cpu": 14.0}, {"wall": 22.0, "cpu": 11.0}]
    assert median(runs) == {"wall": 22.0, "cpu": 12.0, "of": 3}  # each figure on its own, not one run's
    assert median(runs[:2]) == {"wall": 25.0, "cpu": 13.0, "of": 2}
    assert median(runs[:1]) == {"wall": 30.0, "cpu": 12.0, "of": 1}
