"""`ds41f lab cable swap`: which veth ends move where, and the lab's record of its cabling (no podman needed)."""

import pytest

from ds41f import cli
from ds41f.lab import cables, podman


@pytest.fixture
def plugs(monkeypatch):
    """Record connects and disconnects instead of touching network namespaces."""
    calls = []
    monkeypatch.setattr(cables, "pid", lambda container: container)
    monkeypatch.setattr(cables, "_saved", lambda pid, netdev: {"mtu": 9000, "up": True, "addresses": []})
    monkeypatch.setattr(cables, "_restore", lambda pid, netdev, state: None)
    monkeypatch.setattr(cables, "disconnect", lambda c, n: calls.append(("unplug", c, n)))
    monkeypatch.setattr(cables, "connect", lambda a, na, b, nb: calls.append(("plug", a, na, b, nb)))
    return calls


def test_swapping_two_ports_moves_both_paths_and_is_recorded(tmp_path, triangle, plugs):
    far = cables.swap(lambda node: "c-" + node, tmp_path, triangle, ("dgx2", 0), ("dgx2", 1))
    assert far == (("dgx1", 0), ("dgx3", 1))
    assert ("plug", "c-dgx2", "enp1s0f0np0", "c-dgx1", "enp1s0f0np0") in plugs
    assert ("plug", "c-dgx2", "enP2p1s0f1np1", "c-dgx3", "enP2p1s0f1np1") in plugs
    assert sum(1 for call in plugs if call[0] == "unplug") == 4
    now = cables.wiring(tmp_path, triangle)
    assert now[("dgx2", 0)] == ("dgx1", 0) and now[("dgx3", 1)] == ("dgx2", 1)
    # the same swap again puts the plugs back where the site has them
    cables.swap(lambda node: "c-" + node, tmp_path, triangle, ("dgx2", 0), ("dgx2", 1))
    assert cables.wiring(tmp_path, triangle)[("dgx2", 0)] == ("dgx3", 1)


def test_the_two_ends_of_one_cable_cannot_be_swapped(tmp_path, triangle, plugs):
    with pytest.raises(podman.LabError, match="two ends of one cable"):
        cables.swap(str, tmp_path, triangle, ("dgx1", 0), ("dgx2", 1))
    assert plugs == []


def test_ports_are_written_node_colon_port(capsys):
    assert cli.parse_end("dgx2:1") == ("dgx2", 1)
    with pytest.raises(SystemExit) as stop:
        cli.parse_end("dgx2:2")
    assert stop.value.code == 2  # bad usage
    assert "'dgx2:2' is not NODE:PORT" in capsys.readouterr().err
