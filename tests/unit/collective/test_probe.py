"""The probe itself: real torch.distributed groups (Gloo) of separate processes on loopback, with the lab
engine's torch (.lab/shared/engine/site), and its local checks against constructed sysfs folders."""

import contextlib
import inspect
import json
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import collective, collective_probe
from ds41f.lab import engine

SOURCE = inspect.getsource(collective_probe)


@pytest.fixture(scope="module")
def site():
    if not engine.SITE.joinpath("torch").is_dir():
        pytest.fail("the lab engine is not built. Fix: make engine (python -m ds41f.lab.engine build)")
    return str(engine.SITE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_group(site, world, start=None, timeout_s=20, per_rank=None, ifname="lo"):
    """Start ranks ``start`` (default all) of a ``world``-rank group; return their results by rank."""
    port = free_port()
    nodes = ["n%d" % r for r in range(world)]
    procs = {}
    for rank in (range(world) if start is None else start):
        cfg = {"rank": rank, "world_size": world, "nodes": nodes, "node": nodes[rank], "backend": "gloo",
               "master_addr": "127.0.0.1", "master_port": port, "timeout_s": timeout_s, "release": "r1",
               "image_id": "sha256:aa", "size_bytes": 1 << 20, "iterations": 2, "check_elements": 4096}
        env = dict(os.environ, PYTHONPATH=site, GLOO_SOCKET_IFNAME=ifname)
        cfg.update((per_rank or {}).get(rank, {}))
        env["GLOO_SOCKET_IFNAME"] = cfg.pop("ifname", ifname)
        env["DS41F_COLLECTIVE"] = json.dumps(cfg)
        procs[rank] = subprocess.Popen([sys.executable, "-c", SOURCE], env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    out = {}
    for rank, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=3 * timeout_s + 120)
        out[rank] = (proc.returncode, collective.parse_output(stdout), stderr)
    return out


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_a_group_forms_and_both_collectives_are_bit_exact(site):
    results = run_group(site, 3)
    for rc, result, stderr in results.values():
        assert rc == 0 and result and result["ok"], stderr[-2000:]
        assert result["all_reduce"] == "bit-exact (4096 float32)"
        assert result["all_gather"] == "bit-exact (4096 float32 per rank)"
        assert result["busbw_mbs"] > 0 and result["join_s"] >= 0 and result["bytes"] == 1 << 20
    assert collective.verdict([r[1] for r in results.values()])["ok"]


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_a_rank_of_another_release_is_named_by_every_rank(site):
    results = run_group(site, 2, per_rank={1: {"release": "r2", "image_id": "sha256:bb"}})
    for rc, result, _ in results.values():
        assert rc == 1 and result["cause"] == "rank 1 (n1) runs release r2, but rank 0 (n0) runs r1"


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_a_rank_that_never_joins_is_named_after_the_timeout(site):
    results = run_group(site, 3, start=[0, 1], timeout_s=6)
    for rc, result, _ in results.values():
        assert rc == 1 and result["cause"] == "rank 2 (n2) did not join the rendezvous 127.0.0.1:%d within 6 s" % (
            int(result["rendezvous"].split(":")[1].split()[0]))


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_a_worker_whose_socket_interface_is_missing_is_named_at_once(site):
    results = run_group(site, 2, timeout_s=60, per_rank={1: {"ifname": "nosuch0"}})
    for rc, result, _ in results.values():
        assert rc == 1 and result["cause"] == "rank 1 (n1): no interface nosuch0 on this node"
        assert result.get("join_s", 0) < 30  # told through the store, not found out at the deadline


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_a_worker_without_a_rendezvous_says_it_cannot_reach_it(site):
    results = run_group(site, 2, start=[1], timeout_s=5)
    rc, result, _ = results[1]
    assert rc == 1 and "rank 1 (n1): cannot reach the rendezvous 127.0.0.1:" in result["cause"]
    assert "connection refused" in result["cause"]


@pytest.mark.lab_engine
@pytest.mark.engine_python
def test_a_wrong_value_is_found_with_its_index(site):
    code = ("import torch, json\n"
            "from ansible_collections.dgxspark.ds41f.plugins.module_utils import collective_probe as p\n"
            "w = p.pattern(torch, 1, 64); g = w.clone(); g[17] += 1\n"
            "print(json.dumps([p.first_difference(torch, w, w), p.first_difference(torch, g, w)]))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([site] + sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    same, diff = json.loads(out)
    assert same is None and diff[0] == 17 and diff[1] == diff[2] + 1


def sysfs(tmp_path, name, flags, state):
    d = tmp_path / name
    d.mkdir()
    (d / "flags").write_text(flags + "\n")
    (d / "operstate").write_text(state + "\n")


def test_interface_checks_follow_nccls_syntax(tmp_path):
    sysfs(tmp_path, "enp1s0f0np0", "0x1002", "down")
    sysfs(tmp_path, "lo", "0x9", "unknown")
    assert collective_probe.interface_problem("=enp1s0f0np0", str(tmp_path)) == (
        "interface enp1s0f0np0 is down (operstate down)")
    assert collective_probe.interface_problem("=enp1s0f1np1", str(tmp_path)) == "no interface enp1s0f1np1 on this node"
    assert collective_probe.interface_problem("^docker", str(tmp_path)) is None
    assert collective_probe.interface_problem("lo", str(tmp_path)) is None  # up with an address: loopback's


def local_addresses():
    found = set()
    for _, name in socket.if_nameindex():
        with contextlib.suppress(OSError):
            found.add(collective_probe.ipv4_of(name))
    return found


def test_the_master_address_must_be_the_heads_own():
    assert collective_probe.master_problem("127.0.0.1") is None
    other = next(a for a in ("203.0.113.77", "198.51.100.77", "192.0.2.77") if a not in local_addresses())
    assert collective_probe.master_problem(other) == "the master address %s is not an address of this node" % other


def test_a_peer_that_cannot_be_reached_is_named_by_its_rank():
    cfg = {"nodes": ["dgx1", "dgx2", "dgx3"]}
    gloo = RuntimeError("Gloo connectFullMesh failed with [pair.cc:152] timed out connecting: SO_ERROR: Connection "
                        "timed out, remote=[10.12.1.1]:31670")
    assert collective_probe.explain(cfg, gloo, {"10.12.1.1": 0}).startswith(
        "connecting to rank 0 (dgx1) at 10.12.1.1 timed out (Gloo connectFullMesh failed")
    assert collective_probe.explain(cfg, gloo, {}).startswith("RuntimeError: Gloo connectFullMesh failed")
