"""`ds41f render`'s wrapped command reads back as the one-line command; `ds41f logs` prefixes and ssh lines."""

import shlex

import pytest

from ds41f import runs
from ds41f.day2 import logs, render

# What ansible.cfg gives every connection: keepalives, the host key check against the pinned known_hosts only, and
# a connection timeout (the one place they are set).
SSH_OPTIONS = ["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-o", "StrictHostKeyChecking=yes", "-o",
               "GlobalKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10"]

ONE_LINE = ("docker run -d --name spark-ds41f --network host --env 'A=x y' --volume /m:/models:ro "
            "--label 'ds41f.shape=tp3 ctx2048' localhost/ds41f-lab-engine:r1 serve /models --served-model-name a b "
            "--speculative-config '{\"method\":\"dspark\"}' --headless")


def test_the_wrapped_command_is_the_same_words_one_flag_a_line():
    text = render.wrapped(ONE_LINE, "localhost/ds41f-lab-engine:r1")
    assert shlex.split(text.replace("\\\n", " ")) == shlex.split(ONE_LINE)
    assert text.splitlines() == [
        "docker run \\", "    -d \\", "    --name spark-ds41f \\", "    --network host \\", "    --env 'A=x y' \\",
        "    --volume /m:/models:ro \\", "    --label 'ds41f.shape=tp3 ctx2048' \\",
        "    localhost/ds41f-lab-engine:r1 \\", "    serve /models \\", "    --served-model-name a b \\",
        "    --speculative-config '{\"method\":\"dspark\"}' \\", "    --headless"]


def test_log_lines_carry_their_node():
    assert logs.prefixed("dgx1", ["INFO a", "b"], 5) == ["dgx1  | INFO a", "dgx1  | b"]


@pytest.mark.parametrize("ssh, start", [
    ({"host": "172.30.120.12", "user": "root", "port": "", "key": "/lab/id_ed25519",
      "args": "-o UserKnownHostsFile=/lab/inventory/known_hosts -o StrictHostKeyChecking=no"},
     ["ssh", "-tt", "-o", "BatchMode=yes", *SSH_OPTIONS, "-i", "/lab/id_ed25519", "-o",
      "UserKnownHostsFile=/lab/inventory/known_hosts", "-o", "StrictHostKeyChecking=no", "root@172.30.120.12"]),
    ({"host": "192.168.1.12", "user": "", "port": 2222, "key": "", "args": ""},
     ["ssh", "-tt", "-o", "BatchMode=yes", *SSH_OPTIONS, "-p", "2222", "192.168.1.12"]),
])
def test_follow_reaches_each_node_as_the_inventory_says_checking_its_host_key_first(ssh, start):
    argv = logs.follow_argv({"container": "spark-ds41f", "ssh": ssh, "key_files": ["/etc/ds41f/serve/api-key.env"]},
                            20)
    assert argv[:-1] == start
    # ssh keeps the first value of an option: the project's strict check comes before anything the site adds
    assert argv.index("StrictHostKeyChecking=yes") < len(start) - 2
    remote = shlex.split(argv[-1])
    assert remote[:2] == ["python3", "-c"] and remote[3:] == ["spark-ds41f", "20", "/etc/ds41f/serve/api-key.env"]
    assert "def main(argv)" in remote[2] and "docker" in remote[2]  # the redaction program itself, run on the node


def test_follow_takes_ansible_cfgs_ssh_budget_and_host_key_check():
    assert runs.ssh_options() == SSH_OPTIONS


@pytest.mark.parametrize("command, seconds", sorted(runs.TASK_TIMEOUT_S.items()))
def test_every_read_only_command_limits_each_task(command, seconds):
    assert runs.budget_env(command) == {"ANSIBLE_TASK_TIMEOUT": str(seconds)}
    assert 0 < seconds <= 120  # the doctor must name a silent node well inside its 90 s of a bad day


def test_a_converging_run_has_no_task_limit_only_keepalives():
    assert runs.budget_env("site") == {} and runs.budget_env("serve") == {}
