"""Bad input never reaches a host: a table of wrong site files, recipes and module arguments.

Every case must be refused with the field's name in the message, before any connection. Most run in-process
(the validation's pure function, or a module's main() up to its argument checks) with sockets and programs
recorded; a smaller set runs the real `ansible-playbook playbooks/validate.yml`, in parallel, with an ssh that
records its call and fails. The sites use documentation addresses (192.0.2.0/24, 198.51.100.0/24) only.
"""

import concurrent.futures
import copy
import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.testing import patch_module_args

from ansible_collections.dgxspark.ds41f.plugins.action.managed_files import file_problems
from ansible_collections.dgxspark.ds41f.plugins.module_utils import args as checks
from ansible_collections.dgxspark.ds41f.plugins.module_utils import lockfile, validation
from tests.conftest import ROOT

from .conftest import SPECS, collection_recipe, good_site, host_values, ssh_stub


def node(i, **values):
    def change(site):
        site["nodes"][i].update(values)
    return change


def ranks(site, *numbers):
    for item, rank in zip(site["nodes"], numbers, strict=True):
        item["rank"] = rank


def top(**values):
    def change(site):
        for key, value in values.items():
            if value is KeyError:
                site.pop(key)
            else:
                site[key] = value
    return change


# (id, change to the good site, field the message must name)
SITE_CASES = [
    ("name with a trailing newline", node(0, name="dgx1\n"), "nodes[0].name"),
    ("names differ only in case", node(1, name="DGX1"), "nodes[1].name"),
    ("names differ only in case, later node", node(3, name="Dgx3"), "nodes[3].name"),
    ("names read alike, 1 and l", node(1, name="dgxl"), "nodes[1].name"),
    ("names read alike, rn and m", lambda s: (s["nodes"][0].update(name="spark-m"),
                                              s["nodes"][2].update(name="spark-rn")), "nodes[2].name"),
    ("name with an underscore", node(0, name="dgx_1"), "nodes[0].name"),
    ("name starting with a dash", node(2, name="-dgx3"), "nodes[2].name"),
    ("name of 64 characters", node(0, name="d" * 64), "nodes[0].name"),
    ("empty name", node(0, name=""), "nodes[0].name"),
    ("name as a number", node(0, name=5), "nodes[0].name"),
    ("name with a space", node(1, name="dgx 2"), "nodes[1].name"),
    ("ssh_user with a trailing newline", top(ssh_user="ubuntu\n"), "ssh_user"),
    ("ssh_user in capitals", top(ssh_user="Ubuntu"), "ssh_user"),
    ("ssh_user as a number", top(ssh_user=1000), "ssh_user"),
    ("ssh_user of 33 characters", top(ssh_user="u" * 33), "ssh_user"),
    ("management_interface with a newline", top(management_interface="eth0\n"), "management_interface"),
    ("node management_interface too long", node(0, management_interface="enP7s7-much-too-long"),
     "nodes[0].management_interface"),
    ("address is the broadcast of management_network", node(0, address="192.0.2.255"), "nodes[0].address"),
    ("address is the network of management_network", node(1, address="192.0.2.0"), "nodes[1].address"),
    ("loopback address", node(0, address="127.0.0.1"), "nodes[0].address"),
    ("link-local address", node(2, address="169.254.10.3"), "nodes[2].address"),
    ("multicast address", node(0, address="224.0.0.5"), "nodes[0].address"),
    ("unspecified address", node(0, address="0.0.0.0"), "nodes[0].address"),
    ("limited broadcast address", node(3, address="255.255.255.255"), "nodes[3].address"),
    ("reserved address", node(0, address="240.0.0.1"), "nodes[0].address"),
    ("IPv6 address", node(0, address="2001:db8::1"), "nodes[0].address"),
    ("octet above 255", node(0, address="192.0.2.300"), "nodes[0].address"),
    ("address with a trailing newline", node(0, address="192.0.2.11\n"), "nodes[0].address"),
    ("address with a leading zero", node(0, address="192.0.2.011"), "nodes[0].address"),
    ("address as a number", node(0, address=3221225995), "nodes[0].address"),
    ("two nodes on one address", node(1, address="192.0.2.11"), "nodes[1].address"),
    ("address outside management_network", node(0, address="198.51.100.11"), "nodes[0].address"),
    ("broadcast of a small management_network", lambda s: (
        s.update(management_network="198.51.100.8/29"),
        [n.update(address="198.51.100.%d" % (9 + i)) for i, n in enumerate(s["nodes"][:3])],
        s["nodes"][3].update(address="198.51.100.15")), "nodes[3].address"),
    ("plugin misspelt", top(plugin="dgxspark.ds41f.spark_topolgy"), "plugin"),
    ("unknown shape", top(shape="tp5-ring"), "shape"),
    ("no shape", top(shape=KeyError), "shape"),
    ("three nodes on a four-node ring", lambda s: s["nodes"].pop(), "nodes"),
    ("mtu below 1280", top(mtu=100), "mtu"),
    ("mtu quoted", top(mtu="9000"), "mtu"),
    ("mtu as a boolean", top(mtu=True), "mtu"),
    ("gid_index above 255", top(gid_index=256), "gid_index"),
    ("gid_index as a word", top(gid_index="three"), "gid_index"),
    ("context below 4096", top(context=1000), "context"),
    ("context above the shape", top(context=2 ** 21), "context"),
    ("management_network with host bits", top(management_network="192.0.2.1/24"), "management_network"),
    ("fabric_pool without a prefix", top(fabric_pool="10.60.0.0"), "fabric_pool"),
    ("fabric_pool smaller than a /24", top(fabric_pool="10.60.0.0/25"), "fabric_pool"),
    ("unknown site key", top(sshuser="ubuntu"), "sshuser"),
    ("unknown node key", node(0, addr="192.0.2.11"), "nodes[0].addr"),
    ("two nodes on one rank", lambda s: ranks(s, 0, 1, 1, 3), "nodes[2].rank"),
    ("rank out of range", lambda s: ranks(s, 0, 1, 2, 9), "nodes[3].rank"),
    ("switch_ports on a ring", top(switch_ports=[0]), "switch_ports"),
    ("vars key not a variable name", top(vars={"bad-name": 1}), "vars.bad-name"),
    ("vars not a mapping", top(vars=["serve_port"]), "vars"),
    # Address collisions with the networks the nodes already run (plugins/module_utils/node_networks.py).
    ("fabric_pool is Docker's default bridge", top(fabric_pool="172.17.0.0/16"), "fabric_pool"),
    ("fabric_pool inside Docker's default bridge", top(fabric_pool="172.17.8.0/22"), "fabric_pool"),
    ("fabric_pool around Docker's default bridge", top(fabric_pool="172.16.0.0/12"), "fabric_pool"),
    ("fabric_pool inside Podman's default network", top(fabric_pool="10.88.0.0/16"), "fabric_pool"),
    ("fabric_pool inside Tailscale's CGNAT range", top(fabric_pool="100.100.0.0/16"), "fabric_pool"),
    ("management_network on Docker's default bridge", lambda s: (
        s.update(management_network="172.17.5.0/24"),
        [n.update(address="172.17.5.%d" % (11 + i)) for i, n in enumerate(s["nodes"])]), "management_network"),
    ("management_network inside Tailscale's CGNAT range", lambda s: (
        s.update(management_network="100.64.1.0/24"),
        [n.update(address="100.64.1.%d" % (11 + i)) for i, n in enumerate(s["nodes"])]), "management_network"),
    ("node address in Podman's network, no management_network", lambda s: (
        s.pop("management_network"), s["nodes"][2].update(address="10.88.0.13")), "nodes[2].address"),
]

# (id, recipe variables to set, field the message must name). Each runs from the site's vars:, from the
# inventory's group_vars and from -e in turn.
RECIPE_CASES = [
    ("API port 0", {"serve_port": 0}, "serve_port"),
    ("API port above 65535", {"serve_port": 70000}, "serve_port"),
    ("API port negative", {"serve_port": -1}, "serve_port"),
    ("API port quoted", {"serve_port": "8000"}, "serve_port"),
    ("API port as a boolean", {"serve_port": True}, "serve_port"),
    ("rendezvous port 0", {"serve_master_port": 0}, "serve_master_port"),
    ("rendezvous port 65536", {"serve_master_port": 65536}, "serve_master_port"),
    ("collective backend mpi", {"serve_collective_backend": "mpi"}, "serve_collective_backend"),
    ("collective timeout 2 s", {"serve_collective_timeout_s": 2}, "serve_collective_timeout_s"),
    ("collective size 0 MiB", {"serve_collective_size_mib": 0}, "serve_collective_size_mib"),
    ("collective port 70000", {"serve_collective_master_port": 70000}, "serve_collective_master_port"),
    ("API port equals the rendezvous port", {"serve_port": 9999}, "serve_master_port"),
    ("model share on the API port", {"model_share_port": 8000}, "model_share_port"),
    ("image share on the model share's port", {"image_share_port": 47110}, "image_share_port"),
    ("health ssh_port on the API port", {"host_baseline_health": {"interval": "1min", "timeout": 10,
                                                                  "ssh_port": 8000, "ssh_unit": "ssh.service"}},
     "host_baseline_health.ssh_port"),
    ("health ssh_port 0", {"host_baseline_health": {"interval": "1min", "timeout": 10, "ssh_port": 0,
                                                    "ssh_unit": "ssh.service"}}, "host_baseline_health.ssh_port"),
    ("model share port above 65535", {"model_share_port": 70000}, "model_share_port"),
    ("negative startup guard", {"serve_guard_startup_gib": -5}, "serve_guard_startup_gib"),
    ("negative steady guard", {"serve_guard_steady_gib": -1}, "serve_guard_steady_gib"),
    ("zero steady guard", {"serve_guard_steady_gib": 0}, "serve_guard_steady_gib"),
    ("startup guard not above steady", {"serve_guard_startup_gib": 3}, "serve_guard_startup_gib"),
    ("negative per-shape guards", {"serve_guard_shapes": {"tp4-ring": {"startup_gib": -1, "steady_gib": -2}}},
     "serve_guard_shapes.tp4-ring.startup_gib"),
    ("zero guard sample interval", {"serve_guard_startup_interval_s": 0}, "serve_guard_startup_interval_s"),
    ("zero shards", {"model_shards": 0}, "model_shards"),
    ("negative model size", {"model_size_gib": -1}, "model_size_gib"),
    ("zero hash workers", {"model_hash_workers": 0}, "model_hash_workers"),
    ("zero fan-out width", {"model_fanout_width": 0}, "model_fanout_width"),
    ("zero swap", {"kernel_swap_size_mib": 0}, "kernel_swap_size_mib"),
    ("zero ready timeout", {"serve_ready_timeout_s": 0}, "serve_ready_timeout_s"),
    ("zero pings", {"fabric_check_count": 0}, "fabric_check_count"),
    ("negative context", {"serve_max_model_len": -1}, "serve_max_model_len"),
    ("context above the shape", {"serve_max_model_len": 2 ** 21}, "serve_max_model_len"),
    ("negative KV pool", {"serve_kv_cache_bytes": -1}, "serve_kv_cache_bytes"),
    ("link speed 0", {"fabric_link_speed_mbps": 0}, "fabric_link_speed_mbps"),
    # The image's ENTRYPOINT is vllm serve: arguments that say it again run `vllm serve serve ...` and exit.
    ("serve_args repeat the entrypoint", {"serve_args": ["serve", "--dtype", "bfloat16"]}, "serve_args[0]"),
    ("serve_args repeat the entrypoint's program", {"serve_args": ["--dtype", "bfloat16", "vllm"]}, "serve_args[2]"),
    ("no entrypoint stated", {"serve_image_entrypoint": []}, "serve_image_entrypoint"),
    ("--tensor-parallel-size in serve_args", {"serve_args": ["--dtype", "bfloat16", "--tensor-parallel-size", "2"]},
     "serve_args[2]"),
    ("-tp= in serve_args", {"serve_args": ["-tp=2"]}, "serve_args[0]"),
    ("--port in serve_args", {"serve_args": ["--port", "8001"]}, "serve_args[0]"),
    ("--max-model-len= in serve_args", {"serve_args": ["--max-model-len=4096"]}, "serve_args[0]"),
    ("--headless in serve_args", {"serve_args": ["--headless"]}, "serve_args[0]"),
    ("memory fraction above 1", {"serve_args": ["--gpu-memory-utilization", "1.5"]}, "serve_args[0]"),
    ("memory fraction 0", {"serve_args": ["--gpu-memory-utilization=0"]}, "serve_args[0]"),
    ("memory fraction a word", {"serve_args": ["--gpu-memory-utilization", "most"]}, "serve_args[0]"),
    ("block size 0", {"serve_args": ["--block-size", "0"]}, "serve_args[0]"),
    ("serve_args element a number", {"serve_args": ["--block-size", 256]}, "serve_args[1]"),
    ("model_revision a branch", {"model_revision": "main"}, "model_revision"),
    ("model_revision a tag", {"model_revision": "v1.0"}, "model_revision"),
    ("model_revision with a newline", {"model_revision": "1bae0e10\n"}, "model_revision"),
    ("model_revision in capitals", {"model_revision": "1BAE0E10"}, "model_revision"),
    ("model_revision too short", {"model_revision": "1bae0e"}, "model_revision"),
    ("model_revision of 41 digits", {"model_revision": "a" * 41}, "model_revision"),
    ("memory-saver ref a tag", {"memory_saver_source_ref": "v0.4.1"}, "memory_saver_source_ref"),
    ("memory-saver ref short", {"memory_saver_source_ref": "1bae0e10"}, "memory_saver_source_ref"),
    ("no served names", {"serve_served_names": []}, "serve_served_names"),
    ("an empty served name", {"serve_served_names": [""]}, "serve_served_names[0]"),
    ("empty release", {"ds41f_release": ""}, "ds41f_release"),
    ("release with a space", {"ds41f_release": "spark ds41f"}, "ds41f_release"),
    ("empty image", {"serve_image": ""}, "serve_image"),
    ("negative shm size", {"serve_shm_size": "-1g"}, "serve_shm_size"),
    ("zero memory limit", {"serve_memory": "0"}, "serve_memory"),
    ("quoted boolean", {"kernel_reboot_ok": "false"}, "kernel_reboot_ok"),
    ("sysctl value True", {"host_baseline_sysctl_recovery": {"kernel.panic": 30, "kernel.panic_on_oops": True}},
     "host_baseline_sysctl_recovery.kernel.panic_on_oops"),
    ("sysctl revert value False", {"host_baseline_sysctl_revert": {"kernel.panic": False}},
     "host_baseline_sysctl_revert.kernel.panic"),
    # Unknown variables: a collection prefix that no role declares (plugins/module_utils/known_vars.py).
    ("serve_argz, one letter off", {"serve_argz": ["--dtype", "bfloat16"]}, "serve_argz"),
    ("serve_memmory, a doubled letter", {"serve_memmory": "96g"}, "serve_memmory"),
    ("fabric_mtu, a site setting as a variable", {"fabric_mtu": 9000}, "fabric_mtu"),
    ("model_revison, a dropped letter", {"model_revison": "1bae0e10"}, "model_revison"),
    ("kernel_reboot, cut short", {"kernel_reboot": True}, "kernel_reboot"),
    ("ds41f_relase, the shared prefix", {"ds41f_relase": "r2"}, "ds41f_relase"),
    ("host_baseline_governer", {"host_baseline_governer": "ondemand"}, "host_baseline_governer"),
    ("verify_report, cut short", {"verify_report": True}, "verify_report"),
    ("site variables not a list", {"ds41f_site_variables": "serve_mine"}, "ds41f_site_variables"),
    # Environment syntax in every environment the recipe renders (plugins/module_utils/env_check.py).
    ("serve_env key with a dash", {"serve_env": {"MY-FLAG": "1"}}, "serve_env.MY-FLAG"),
    ("serve_env key starting with a digit", {"serve_env": {"1FLAG": "1"}}, "serve_env.1FLAG"),
    ("serve_env key with a space", {"serve_env": {"A B": "1"}}, "serve_env.A B"),
    ("serve_env value with a newline", {"serve_env": {"OMP_NUM_THREADS": "8\nX=1"}}, "serve_env.OMP_NUM_THREADS"),
    ("serve_env value with a NUL byte", {"serve_env": {"OMP_NUM_THREADS": "8\0"}}, "serve_env.OMP_NUM_THREADS"),
    ("serve_env value a list", {"serve_env": {"OMP_NUM_THREADS": [8]}}, "serve_env.OMP_NUM_THREADS"),
    ("fabric env value with a newline", {"fabric_nccl_env_common": {"NCCL_DEBUG": "WARN\nNCCL_NET=Socket"}},
     "fabric_nccl_env_common.NCCL_DEBUG"),
    ("fabric env key with a dot", {"fabric_nccl_env_ring": {"NCCL.ALGO": "Ring"}}, "fabric_nccl_env_ring.NCCL.ALGO"),
    ("shape launch env value with a carriage return",
     {"serve_shape_launch": {"tp4-ring": {"env": {"SPARK_X": "1\r"}}}}, "serve_shape_launch.tp4-ring.env.SPARK_X"),
    ("NCCL_IB_HCA through the shape launch env", {"serve_shape_launch": {"tp4-ring": {"env": {"NCCL_IB_HCA": "x"}}}},
     "serve_shape_launch.tp4-ring.env.NCCL_IB_HCA"),
    ("VLLM_HOST_IP through the model's serve env", {"model_serve_env": {"VLLM_HOST_IP": "192.0.2.11"}},
     "model_serve_env.VLLM_HOST_IP"),
    ("SPARKNET_ROCE_HCA through the collective env", {"serve_collective_env": {"SPARKNET_ROCE_HCA": "x"}},
     "serve_collective_env.SPARKNET_ROCE_HCA"),
    ("NCCL_SOCKET_IFNAME through the SGLang profile", {"serve_sglang_env": {"NCCL_SOCKET_IFNAME": "eth0"}},
     "serve_sglang_env.NCCL_SOCKET_IFNAME"),
    ("B12X_ROCE_HCA through serve_env", {"serve_env": {"B12X_ROCE_HCA": "rocep1s0f0"}}, "serve_env.B12X_ROCE_HCA"),
    # Sizes carry a unit (Size: in the specs, plugins/module_utils/recipe_forms.py).
    ("memory limit a bare number", {"serve_memory": "112"}, "serve_memory"),
    ("memory limit an unquoted number", {"serve_memory": 120259084288}, "serve_memory"),
    ("shm size a bare number", {"serve_shm_size": "16"}, "serve_shm_size"),
    ("memory limit in gigabits", {"serve_memory": "112gb"}, "serve_memory"),
    ("memory limit with a space", {"serve_memory": "112 g"}, "serve_memory"),
    ("protected service memory_min a bare number",
     {"host_baseline_protected_services": [{"name": "ssh.service", "memory_min": "128", "oom_score_adjust": -900}]},
     "host_baseline_protected_services[0].memory_min"),
    ("protected service memory_min in Docker's lower case",
     {"host_baseline_protected_services": [{"name": "ssh.service", "memory_min": "128m", "oom_score_adjust": -900}]},
     "host_baseline_protected_services[0].memory_min"),
    # Names that reach URLs, paths and labels (Name. in the specs).
    ("served name with a space", {"serve_served_names": ["deepseek v4"]}, "serve_served_names[0]"),
    ("served name with a slash", {"serve_served_names": ["ok-name", "deepseek-ai/v4"]}, "serve_served_names[1]"),
    ("served name with a question mark", {"serve_served_names": ["v4?x=1"]}, "serve_served_names[0]"),
    ("release named ..", {"ds41f_release": ".."}, "ds41f_release"),
    ("release named .", {"ds41f_release": "."}, "ds41f_release"),
    ("release climbing out of its folder", {"ds41f_release": "../etc"}, "ds41f_release"),
    ("boot markers of a release named ..", {"serve_boot_markers": {"..": {"required": ["x"]}}},
     "serve_boot_markers['..']"),
    # What the model and serve stages refused only when they ran, after the stages before them had changed nodes.
    ("model source node not in the site", {"model_source_node": "dgx9"}, "model_source_node"),
    ("model source controller without its folder", {"model_source": "controller", "model_controller_dir": ""},
     "model_controller_dir"),
    ("a release without boot-log markers", {"ds41f_release": "spark-ds41f-9999"}, "serve_boot_markers"),
    # The checkpoint scrub's period and budget: spans systemd reads, a period its hourly timer can keep, a budget
    # shorter than the period (each against the other's default too).
    ("scrub period not a time span", {"model_scrub_period": "1 fortnight"}, "model_scrub_period"),
    ("scrub period infinity", {"model_scrub_period": "infinity"}, "model_scrub_period"),
    ("scrub period zero", {"model_scrub_period": "0"}, "model_scrub_period"),
    ("scrub period under the timer's hourly look", {"model_scrub_period": "30min"}, "model_scrub_period"),
    ("scrub budget not a time span", {"model_scrub_timeout": "six hours"}, "model_scrub_timeout"),
    ("scrub budget as long as the default period", {"model_scrub_timeout": "1w"}, "model_scrub_timeout"),
    ("scrub period shorter than the default budget", {"model_scrub_period": "5h"}, "model_scrub_timeout"),
    ("scrub metrics folder outside its roots", {"model_textfile_dir": "/etc/node-exporter"}, "model_textfile_dir"),
    ("patched flags of a release with a slash", {"serve_patched_flags": {"r/1": []}}, "serve_patched_flags['r/1']"),
    ("container name with a space", {"serve_container_name": "spark ds41f"}, "serve_container_name"),
    ("SGLang release with a newline", {"serve_sglang_release": "sglang\n"}, "serve_sglang_release"),
    # Address collisions the recipe states: the daemon's own bip and address pools.
    ("Docker bip over the default fabric", {"host_baseline_docker_bip": "10.12.0.1/16"}, "fabric_pool"),
    ("Docker address pool over the management network", {"host_baseline_docker_address_pools": ["192.0.0.0/16"]},
     "management_network"),
    ("Docker bip without its prefix", {"host_baseline_docker_bip": "172.26.0.1"}, "host_baseline_docker_bip"),
    ("Docker address pool a word", {"host_baseline_docker_address_pools": ["default"]},
     "host_baseline_docker_address_pools[0]"),
]
SOURCES = ("site vars:", "group_vars", "-e")


def in_process(site, overrides=None, source="group_vars"):
    site = copy.deepcopy(site)
    extra = None
    if source == "site vars:" and overrides:
        site["vars"] = dict(overrides)
        overrides = None
    elif source == "-e":
        extra, overrides = overrides, None
    try:
        values = host_values(site, overrides, extra)
    except Exception:  # the site itself is refused: check() says so with its problems
        values = {}
    hosts = [n["name"] for n in site.get("nodes") or [] if isinstance(n, dict) and isinstance(n.get("name"), str)]
    return validation.check(site, hosts, values, SPECS, collection_recipe(), extra)


def test_the_good_site_and_recipe_pass(no_contact):
    cluster, problems = in_process(good_site())
    assert problems == [] and cluster.shape.name == "tp4-ring"
    assert no_contact == []


@pytest.mark.parametrize("change, field", [c[1:] for c in SITE_CASES], ids=[c[0] for c in SITE_CASES])
def test_a_bad_site_is_refused_naming_the_field(change, field, no_contact):
    site = good_site()
    change(site)
    cluster, problems = in_process(site)
    assert cluster is None or problems
    assert any(p.field == field for p in problems), [str(p) for p in problems]
    assert all(p.fix for p in problems)
    assert no_contact == []


@pytest.mark.parametrize("values, field, source", [c[1:] + (SOURCES[i % 3],) for i, c in enumerate(RECIPE_CASES)],
                         ids=["%s (%s)" % (c[0], SOURCES[i % 3]) for i, c in enumerate(RECIPE_CASES)])
def test_a_bad_recipe_is_refused_naming_the_field(values, field, source, no_contact):
    _, problems = in_process(good_site(), values, source)
    assert any(p.field == field for p in problems), [str(p) for p in problems]
    assert no_contact == []


def test_a_pin_names_where_its_value_is_written(no_contact):
    _, problems = in_process(good_site(), {"model_revision": "main"}, "site vars:")
    assert "the site file's vars:" in str(problems[0])
    _, problems = in_process(good_site(), {"model_revision": "main"}, "-e")
    assert "-e (extra vars)" in str(problems[0])
    recipe = collection_recipe()
    assert recipe["memory_saver_source_ref"][1] == ""  # unset in the recipe: the memory-saver stage asks for it
    assert no_contact == []


# -- module arguments -------------------------------------------------------------------------------------------

LINK = {"netdev": "enp1s0f0np0", "hca": "rocep1s0f0", "port": 0, "pcie": 1, "address": "10.12.1.1", "prefix": 24,
        "peer_address": "192.0.2.99", "peers": [{"name": "dgx2", "address": "192.0.2.99", "netdev": "enp1s0f1np1"}]}


def link(**changes):
    out = dict(LINK, **changes)
    return {k: v for k, v in out.items() if v is not KeyError}


FC = {"links": [LINK], "mtu": 9000, "gid_index": 3, "speed_mbps": 200000, "node": "dgx3"}

# (id, module, arguments, text the message must hold, PATH without the system binaries)
MODULE_CASES = [
    ("managed_files mode 0755 unquoted", "managed_files", {"files": [{"path": "/x/y", "content": "", "mode": 493}]},
     "files[0].mode", False),
    ("managed_files mode 0644 unquoted", "managed_files", {"files": [{"path": "/x/y", "content": "", "mode": 420}]},
     "files[0].mode", False),
    ("managed_files mode not octal", "managed_files", {"files": [{"path": "/x/y", "content": "", "mode": "0999"}]},
     "files[0].mode", False),
    ("managed_files mode a word", "managed_files", {"files": [{"path": "/x/y", "content": "", "mode": "rwx"}]},
     "files[0].mode", False),
    ("managed_files without path", "managed_files", {"files": [{"content": ""}]}, "files[0].path", False),
    ("managed_files directory_mode unquoted", "managed_files",
     {"files": [{"path": "/x/y", "content": ""}], "directory_mode": 493}, "directory_mode", False),
    ("managed_files path a number", "managed_files", {"files": [{"path": 5, "content": ""}]}, "files[0].path", False),
    ("fabric_links link without prefix", "fabric_links", {"links": [link(prefix=KeyError)], "mtu": 9000,
                                                          "node": "dgx3"}, "links[0].prefix", False),
    ("fabric_links prefix quoted", "fabric_links", {"links": [link(prefix="24")], "mtu": 9000, "node": "dgx3"},
     "links[0].prefix", False),
    ("fabric_links route without via", "fabric_links", {"links": [LINK], "mtu": 9000, "node": "dgx3",
                                                        "routes": [{"to": "10.13.1.0/24", "netdev": "x"}]},
     "routes[0].via", False),
    ("fabric_links mtu below 1280", "fabric_links", {"links": [LINK], "mtu": 100, "node": "dgx3"}, "mtu", False),
    ("fabric_links link without address", "fabric_links", {"links": [link(address=KeyError)], "mtu": 9000,
                                                           "node": "dgx3"}, "links[0].address", False),
    ("fabric_check gid_index a word", "fabric_check", dict(FC, gid_index="three"), "gid_index", False),
    ("fabric_check gid_index 300", "fabric_check", dict(FC, gid_index=300), "gid_index", False),
    ("fabric_check link without peers", "fabric_check", dict(FC, links=[link(peers=KeyError)]), "links[0].peers",
     False),
    ("fabric_check zero pings", "fabric_check", dict(FC, count=0), "count", False),
    ("fabric_check without ping", "fabric_check", FC, "ping not found on dgx3: install iputils-ping", True),
    ("live_state without ping", "live_state", {"links": [LINK]}, "ping not found on ", True),
    ("live_state link without netdev", "live_state", {"links": [link(netdev=KeyError)]}, "links[0].netdev", False),
    ("sysctl_file boolean True", "sysctl_file", {"path": "/x/60.conf", "settings": {"kernel.panic_on_oops": True}},
     "settings.kernel.panic_on_oops", False),
    ("sysctl_file boolean in revert", "sysctl_file", {"path": "/x/60.conf", "settings": {"kernel.panic": 30},
                                                      "revert": {"kernel.panic": False}}, "revert.kernel.panic", False),
    ("sysctl_file empty value", "sysctl_file", {"path": "/x/60.conf", "settings": {"kernel.panic": " "}},
     "settings.kernel.panic", False),
    ("netplan_cx7 link without netdev", "netplan_cx7", {"links": [{"address": "10.12.1.1"}], "mtu": 9000},
     "links[0].netdev", False),
    ("fabric_preflight link without port", "fabric_preflight", {"links": [link(port=KeyError)],
                                                                "management_interface": "eth0", "node": "dgx3"},
     "links[0].port", False),
]


def run_module(name, args, monkeypatch, capsys):
    """main() of one module with ``args``; (its JSON result, commands it ran)."""
    module = importlib.import_module("ansible_collections.dgxspark.ds41f.plugins.modules." + name)
    ran = []
    monkeypatch.setattr(AnsibleModule, "run_command", lambda self, argv, *a, **k: ran.append(argv) or (1, "", "x"))
    capsys.readouterr()
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out), ran


@pytest.mark.parametrize("name, args, text, no_binaries", [c[1:] for c in MODULE_CASES],
                         ids=[c[0] for c in MODULE_CASES])
def test_a_bad_module_argument_is_refused_naming_the_field(name, args, text, no_binaries, tmp_path, monkeypatch,
                                                           capsys, no_contact):
    if no_binaries:
        monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no ping, no ip
    result, ran = run_module(name, args, monkeypatch, capsys)
    assert result.get("failed") and text in result["msg"], result
    assert "Fix:" in result["msg"] or "install" in result["msg"]
    assert "Traceback" not in json.dumps(result)
    assert ran == [] and no_contact == []


def test_managed_files_refuses_a_folder_and_an_unknown_owner_on_the_node(tmp_path, monkeypatch, capsys, no_contact):
    result, _ = run_module("managed_files", {"files": [{"path": str(tmp_path), "content": "x"}]}, monkeypatch, capsys)
    assert result["failed"] and "files[0].path: %s is a folder" % tmp_path in result["msg"]
    target = tmp_path / "f.conf"
    result, _ = run_module("managed_files", {"files": [{"path": str(target), "content": "x",
                                                        "owner": "no-such-user-ds41f"}]}, monkeypatch, capsys)
    assert result["failed"] and "files[0].owner" in result["msg"] and not target.exists()
    result, _ = run_module("managed_files", {"files": [{"path": str(target), "content": "x",
                                                        "group": "no-such-group-ds41f"}]}, monkeypatch, capsys)
    assert result["failed"] and "files[0].group" in result["msg"]
    assert no_contact == []


@pytest.mark.parametrize("files, field", [
    ([{"path": "/etc/x", "content": "", "mode": 493}], "files[0].mode"),
    ([{"path": "/etc/x", "template": "t.j2", "mode": 420}], "files[0].mode"),
    ([{"path": "etc/x", "content": ""}], "files[0].path"),
    ([{"path": "/etc/x"}], "files[0]"),
    ([{"path": "/etc/x", "content": "", "mdoe": "0644"}], "files[0].mdoe"),
    ([{"path": "/etc/x", "content": "", "owner": 0}], "files[0].owner"),
], ids=["0755 unquoted", "0644 unquoted", "relative path", "no content", "misspelt key", "owner a number"])
def test_the_managed_files_action_refuses_on_the_controller(files, field):
    problem = file_problems(files, absent=False)
    assert problem and problem.startswith(field) and "Fix:" in problem


# (id, action plugin, its arguments, field the message must name): what each action's validate_argument_spec
# (built from its module's DOCUMENTATION) refuses before the action does anything.
ACTION_CASES = [
    ("alignment without keys", "alignment", {"fact": "ds41f_node"}, "keys"),
    ("alignment with an unknown option", "alignment", {"keys": ["a"], "fcat": "x"}, "fcat"),
    ("doctor_checks guard a word", "doctor_checks", {"startup_gib": "lots"}, "startup_gib"),
    ("doctor_report unknown option", "doctor_report", {"report": "/tmp/x"}, "report"),
    ("serve_preflight master_port a word", "serve_preflight", {"release": "r", "image": "i", "master_port": "high"},
     "master_port"),
    ("serve_preflight without release", "serve_preflight", {"image": "i", "master_port": 9999}, "release"),
    ("image_lock without file", "image_lock", {}, "file"),
    ("managed_files state gone", "managed_files", {"files": [], "state": "gone"}, "state"),
    ("validate hosts a mapping", "validate", {"hosts": {"dgx1": 1}}, "hosts"),
]


@pytest.mark.parametrize("name, args, field", [c[1:] for c in ACTION_CASES], ids=[c[0] for c in ACTION_CASES])
def test_an_action_plugin_refuses_bad_arguments_naming_the_field(name, args, field, no_contact):
    module = importlib.import_module("ansible_collections.dgxspark.ds41f.plugins.modules." + name)
    result = ArgumentSpecValidator(checks.doc_spec(module.DOCUMENTATION, yaml.safe_load)).validate(args)
    assert result.errors and field in str(result.errors[0]), result.errors
    assert no_contact == []


HEX40, HEX64 = "a" * 40, "b" * 64
LOCK = {"format": 1, "release": "r1", "image": "spark-ds41f:r1", "base": {"ref": "docker.io/vllm/x@sha256:" + HEX64},
        "dockerfile": "Dockerfile", "sources": {"vllm": {"url": "https://example.org/vllm.git", "commit": HEX40,
                                                         "patches": 0, "tree": HEX40}}, "smoke": ["true"]}
# (id, change to a good image lock, field the message must name): the image stage's controller-side lock check.
LOCK_CASES = [
    ("base by tag, not digest", lambda lock: lock["base"].update(ref="docker.io/vllm/x:latest"), "base.ref"),
    ("base digest with a trailing newline", lambda lock: lock["base"].update(ref=lock["base"]["ref"] + "\n"),
     "base.ref"),
    ("base digest cut short", lambda lock: lock["base"].update(ref="docker.io/vllm/x@sha256:" + HEX64[:12]),
     "base.ref"),
    ("short source commit", lambda lock: lock["sources"]["vllm"].update(commit="19f2c20e"), "sources.vllm.commit"),
    ("source tree with a trailing newline", lambda lock: lock["sources"]["vllm"].update(tree=HEX40 + "\n"),
     "sources.vllm.tree"),
]


@pytest.mark.parametrize("change, field", [c[1:] for c in LOCK_CASES], ids=[c[0] for c in LOCK_CASES])
def test_an_image_lock_pin_must_be_full(change, field, tmp_path, no_contact):
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    assert lockfile.load(copy.deepcopy(LOCK), str(tmp_path))["release"] == "r1"
    lock = copy.deepcopy(LOCK)
    change(lock)
    with pytest.raises(lockfile.LockError) as caught:
        lockfile.load(lock, str(tmp_path))
    assert any(p.startswith(field + ":") and "Fix:" in p for p in caught.value.problems), caught.value.problems
    assert no_contact == []


def test_good_module_arguments_pass_their_checks():
    assert file_problems([{"path": "/etc/x", "content": "", "mode": "0644"}], absent=False) is None


def test_the_table_holds_over_two_hundred_bad_inputs():
    tables = (SITE_CASES, RECIPE_CASES, MODULE_CASES, ACTION_CASES, LOCK_CASES, E2E_CASES)
    assert sum(map(len, tables)) + 6 >= 230  # 6: the managed_files action's own table


# -- end to end: the real validation play, ssh stubbed ----------------------------------------------------------

# (id, site change, recipe values, where they go, field)
E2E_CASES = [
    ("names differ only in case", node(1, name="DGX1"), None, None, "nodes[1].name"),
    ("name with a trailing newline", node(0, name="dgx1\n"), None, None, "nodes[0].name"),
    ("ssh_user with a trailing newline", top(ssh_user="ubuntu\n"), None, None, "ssh_user"),
    ("broadcast address", node(0, address="192.0.2.255"), None, None, "nodes[0].address"),
    ("loopback address", node(0, address="127.0.0.1"), None, None, "nodes[0].address"),
    ("multicast address", node(2, address="224.0.0.9"), None, None, "nodes[2].address"),
    ("unknown shape", top(shape="tp5-ring"), None, None, "shape"),
    ("plugin misspelt", top(plugin="dgxspark.ds41f.spark_topolgy"), None, None, "plugin"),
    ("port out of range in vars:", None, {"serve_port": 70000}, "site vars:", "serve_port"),
    ("API port equals rendezvous port in group_vars", None, {"serve_port": 9999}, "group_vars", "serve_master_port"),
    ("negative guard from -e", None, {"serve_guard_steady_gib": -1}, "-e", "serve_guard_steady_gib"),
    ("--tensor-parallel-size in vars:", None, {"serve_args": ["--tensor-parallel-size", "2"]}, "site vars:",
     "serve_args[0]"),
    ("--tensor-parallel-size from -e", None, {"serve_args": ["--tensor-parallel-size=2"]}, "-e", "serve_args[0]"),
    ("memory fraction above 1 in group_vars", None, {"serve_args": ["--gpu-memory-utilization", "1.2"]},
     "group_vars", "serve_args[0]"),
    ("model_revision main in vars:", None, {"model_revision": "main"}, "site vars:", "model_revision"),
    ("model_revision main from -e", None, {"model_revision": "main"}, "-e", "model_revision"),
    ("no served names in group_vars", None, {"serve_served_names": []}, "group_vars", "serve_served_names"),
    ("memory-saver ref a tag from -e", None, {"memory_saver_source_ref": "v0.4.1"}, "-e", "memory_saver_source_ref"),
    ("share port on the API port in vars:", None, {"model_share_port": 8000}, "site vars:", "model_share_port"),
    ("quoted boolean in group_vars", None, {"kernel_reboot_ok": "false"}, "group_vars", "kernel_reboot_ok"),
    ("serve_argz in vars:", None, {"serve_argz": ["--dtype", "bfloat16"]}, "site vars:", "serve_argz"),
    ("model_revison in group_vars", None, {"model_revison": "1bae0e10"}, "group_vars", "model_revison"),
    ("kernel_reboot_okay from -e", None, {"kernel_reboot_okay": True}, "-e", "kernel_reboot_okay"),
    ("serve_env value with a newline in vars:", None, {"serve_env": {"OMP_NUM_THREADS": "8\nX=1"}}, "site vars:",
     "serve_env.OMP_NUM_THREADS"),
    ("NCCL_IB_HCA in the shape launch env from -e", None,
     {"serve_shape_launch": {"tp4-ring": {"env": {"NCCL_IB_HCA": "x"}}}}, "-e",
     "serve_shape_launch.tp4-ring.env.NCCL_IB_HCA"),
    ("memory limit a bare number in group_vars", None, {"serve_memory": "112"}, "group_vars", "serve_memory"),
    ("shm size a bare number from -e", None, {"serve_shm_size": "16"}, "-e", "serve_shm_size"),
    ("served name with a space in vars:", None, {"serve_served_names": ["deepseek v4"]}, "site vars:",
     "serve_served_names[0]"),
    ("release named .. from -e", None, {"ds41f_release": ".."}, "-e", "ds41f_release"),
    ("fabric_pool on Docker's bridge", top(fabric_pool="172.17.0.0/16"), None, None, "fabric_pool"),
    ("fabric_pool in Podman's network", top(fabric_pool="10.88.0.0/16"), None, None, "fabric_pool"),
    ("fabric_pool in Tailscale's range", top(fabric_pool="100.64.0.0/16"), None, None, "fabric_pool"),
    # Values checked against where they land (plugins/module_utils/forms/), one of each class.
    ("a node name that only looks like another", node(1, name="dgxl"), None, None, "nodes[1].name"),
    ("sshd weakened in vars:", None, {"host_baseline_sshd": {"LoginGraceTime": 30, "PasswordAuthentication": "yes"}},
     "site vars:", "host_baseline_sshd.PasswordAuthentication"),
    ("ssh masked from -e", None, {"host_baseline_masked_units": ["ssh.service"]}, "-e",
     "host_baseline_masked_units[0]"),
    ("a time span of infinity in group_vars", None, {"host_baseline_plymouth_timeout": "infinity"}, "group_vars",
     "host_baseline_plymouth_timeout"),
    ("a managed file at a system file in vars:", None, {"serve_guard_config": "/etc/passwd"}, "site vars:",
     "serve_guard_config"),
    ("the model folder at / from -e", None, {"model_dir": "/"}, "-e", "model_dir"),
    ("a misspelt vLLM flag in group_vars", None, {"serve_args": ["--max-model-lenn", "4096"]}, "group_vars",
     "serve_args[0]"),
    ("bad JSON of a vLLM flag in vars:", None, {"serve_args": ["--limit-mm-per-prompt", "{image: 67}"]}, "site vars:",
     "serve_args[0]"),
    ("a line added to a modprobe option from -e", None,
     {"host_baseline_nvidia_drm_options": "modeset=1\ninstall nvidia-drm /bin/sh -c id"}, "-e",
     "host_baseline_nvidia_drm_options"),
    ("an all-digit API key in vars:", None, {"serve_api_key": 987654321}, "site vars:", "serve_api_key"),
]
NO_CFG = "site does not parse, without the repo's ansible.cfg"
BIN = os.path.dirname(sys.executable)


def playbook(case_dir, ssh, site, recipe=None, where=None, cfg=None):
    """One ansible-playbook validate.yml run; (rc, output)."""
    case_dir.mkdir()
    if recipe and where == "site vars:":
        site = dict(site, vars=recipe)
    path = case_dir / "site.spark.yml"
    path.write_text(yaml.safe_dump(site))
    if recipe and where == "group_vars":
        (case_dir / "group_vars").mkdir()
        (case_dir / "group_vars" / "spark_cluster.yml").write_text(yaml.safe_dump(recipe))
    extra = ["-e", json.dumps(recipe)] if recipe and where == "-e" else []
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg or ROOT / "ansible.cfg"), ANSIBLE_SSH_EXECUTABLE=str(ssh),
               ANSIBLE_LOCAL_TEMP=str(case_dir / "tmp"), ANSIBLE_CACHE_PLUGIN_CONNECTION=str(case_dir / "facts"),
               ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(path), "playbooks/validate.yml", *extra],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """Every end-to-end case, two at a time: {id: (rc, output)}, and the ssh stub's record."""
    root = tmp_path_factory.mktemp("e2e")
    ssh, record = ssh_stub(root)
    cfg = root / "bare.cfg"  # no unparsed_is_failed, no vars plugin: only where the collection is
    cfg.write_text("[defaults]\ncollections_path = %s\n" % (ROOT / "collections"))
    jobs = {"good site": (good_site(), None, None, None)}
    for cid, change, recipe, where, _ in E2E_CASES:
        site = good_site()
        if change:
            change(site)
        jobs[cid] = (site, recipe, where, None)
    broken = good_site()
    broken["nodes"].pop()
    jobs[NO_CFG] = (broken, None, None, cfg)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {cid: pool.submit(playbook, root / ("case%02d" % i), ssh, *job) for i, (cid, job) in
                   enumerate(jobs.items())}
        results = {cid: f.result() for cid, f in futures.items()}
    return results, record


def test_the_good_site_validates_end_to_end(e2e):
    results, record = e2e
    rc, out = results["good site"]
    assert rc == 0, out[-3000:]
    assert "site tp4-ring: 4 nodes" in out and "launch spec of every rank rendered" in out
    assert record.read_text() == ""


@pytest.mark.parametrize("field", [c[4] for c in E2E_CASES], ids=[c[0] for c in E2E_CASES])
def test_a_bad_input_stops_the_validation_play(field, e2e, request):
    results, record = e2e
    rc, out = results[request.node.callspec.id]
    assert rc != 0, out[-3000:]
    assert field + ":" in out, out[-3000:]
    assert record.read_text() == ""  # the ssh stub was never called


def test_a_typo_names_the_closest_declared_variable_end_to_end(e2e):
    results, record = e2e
    _, out = results["serve_argz in vars:"]
    assert "serve_argz is not a variable of this collection; did you mean serve_args? It is set in the site file's " \
        "vars:" in out, out[-3000:]
    _, out = results["kernel_reboot_okay from -e"]
    assert "did you mean kernel_reboot_ok?" in out and "ds41f_site_variables" in out, out[-3000:]
    _, out = results["fabric_pool on Docker's bridge"]
    assert "172.17.0.0/16 overlaps Docker's default bridge docker0, 172.17.0.0/16" in out, out[-3000:]
    assert record.read_text() == ""


def test_a_value_checked_against_where_it_lands_names_the_destination_end_to_end(e2e):
    results, record = e2e
    _, out = results["sshd weakened in vars:"]
    assert "lets passwords in" in out and "host_baseline_sshd_accepted_keywords" in out, out[-3000:]
    assert "It lands in /etc/ssh/sshd_config.d/01-ds41f-recovery.conf" in out, out[-3000:]
    _, out = results["a time span of infinity in group_vars"]
    assert "It lands in /etc/systemd/system/plymouth-quit-wait.service.d/95-ds41f-recovery.conf" in out
    _, out = results["ssh masked from -e"]
    assert "only a console reaches the node" in out and "Fix: remove ssh.service" in out, out[-3000:]
    _, out = results["a misspelt vLLM flag in group_vars"]
    assert "did you mean --max-model-len?" in out, out[-3000:]
    _, out = results["an all-digit API key in vars:"]
    assert "a secret, not shown" in out and "987654321" not in out, out[-3000:]
    _, out = results["good site"]
    assert "serve_args checked against the flag table of vLLM 0.32.0" in out
    assert record.read_text() == ""


def test_without_the_repos_ansible_cfg_an_unparsed_site_still_fails(e2e):
    results, record = e2e
    rc, out = results[NO_CFG]
    assert rc != 0, out[-3000:]
    assert "inventory: no host is in spark_cluster" in out and "nodes: tp4-ring needs exactly 4 nodes" in out
    assert record.read_text() == ""
