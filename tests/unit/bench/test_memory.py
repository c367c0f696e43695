"""Per-node MemAvailable: this machine read directly, a cluster's nodes over SSH with its inventory's settings."""

import asyncio
from pathlib import Path

from ds41f.bench import memory


def test_mem_available_from_meminfo():
    assert memory.mem_available_gib("MemTotal: 100 kB\nMemAvailable:    3145728 kB\n") == 3.0
    assert memory.mem_available_gib(Path("/proc/meminfo").read_text()) > 0


def test_a_node_within_a_gib_of_the_guard_trips_the_monitor():
    async def scenario(guard):
        mon = memory.Monitor({memory.LOCAL: None}, guard, interval=0.05, log=lambda m: None)
        mon.start()
        await asyncio.sleep(0.2)
        await mon.stop()
        return mon

    calm = asyncio.run(asyncio.wait_for(scenario(0.0), 30))
    assert calm.tripped is None and len(calm.series) >= 2
    summary = calm.summary()["nodes"][memory.LOCAL]
    assert summary["samples"] == len(calm.series) and summary["headroom_gib"] == summary["min_available_gib"]
    tight = asyncio.run(asyncio.wait_for(scenario(10 ** 6), 30))  # a guard above any machine's memory
    assert tight.tripped.startswith("memory: local has")


def test_cluster_nodes_come_from_the_inventory_without_connecting():
    hosts = memory.inventory_hosts("inventories/ring4")  # ansible-inventory renders the site file; nothing connects
    assert sorted(hosts) == ["dgx1", "dgx2", "dgx3", "dgx4"]
    argv = memory.ssh_argv(hosts["dgx3"], "dgx3")
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and argv[-3:] == ["ubuntu@192.168.1.13", "cat", "/proc/meminfo"]
    # the node's host key must be the one pinned beside the site file, as for every ansible connection
    pinned = str((Path("inventories/ring4") / "known_hosts").resolve())
    assert argv[argv.index("StrictHostKeyChecking=yes") - 1] == "-o"
    assert argv[argv.index("UserKnownHostsFile=%s" % pinned) - 1] == "-o"
    lab_like = memory.ssh_argv({"ansible_host": "h", "ansible_port": 2222, "ansible_ssh_private_key_file": "k"}, "x")
    assert lab_like[-7:] == ["-p", "2222", "-i", "k", "h", "cat", "/proc/meminfo"]
