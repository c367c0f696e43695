"""The CX7 netplan file rendered from the topology, and the other owners of CX7 netdevs found and cut out."""

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import netplan


def test_every_path_gets_its_own_static_24_at_the_fabric_mtu_and_nothing_else(triangle):
    text = netplan.render(triangle.links("dgx1"), 9000, "networkd")
    eth = yaml.safe_load(text)["network"]["ethernets"]
    assert sorted(eth) == ["enP2p1s0f0np0", "enP2p1s0f1np1", "enp1s0f0np0", "enp1s0f1np1"]
    assert eth["enp1s0f0np0"] == {"addresses": ["10.12.1.1/24"], "mtu": 9000, "dhcp4": False, "dhcp6": False,
                                  "accept-ra": False, "link-local": [], "optional": True}
    assert eth["enP2p1s0f0np0"]["addresses"] == ["10.12.2.1/24"]  # the twin path: its own /24
    assert eth["enp1s0f1np1"]["addresses"] == ["10.13.1.1/24"]
    assert yaml.safe_load(text)["network"]["renderer"] == "networkd"


def test_the_same_links_give_the_same_bytes_whatever_their_order(triangle):
    links = triangle.links("dgx2")
    assert netplan.render(links, 9000, "networkd") == netplan.render(list(reversed(links)), 9000, "networkd")


def test_networkmanager_profiles_are_named_after_the_cable(triangle):
    eth = yaml.safe_load(netplan.render(triangle.links("dgx1"), 9000, "NetworkManager"))["network"]["ethernets"]
    assert eth["enp1s0f0np0"]["networkmanager"] == {"name": "cx7 dgx2 path 1"}
    assert netplan.nm_connection_name(triangle.links("dgx1")[0]) == "cx7 dgx2 path 1"


def test_switch_paths_are_named_after_the_switch(switched):
    eth = yaml.safe_load(netplan.render(switched.links("dgx3"), 9000, "NetworkManager"))["network"]["ethernets"]
    assert eth["enp1s0f0np0"]["networkmanager"]["name"] == "cx7 switch path 1"
    assert eth["enp1s0f0np0"]["addresses"] == ["10.100.1.3/24"]


def test_transit_routes_sit_under_their_netdev(ring):
    routes = [{"netdev": "enp1s0f0np0", "to": "10.23.1.0/24", "via": "10.12.1.2"}]
    eth = yaml.safe_load(netplan.render(ring.links("dgx1"), 9000, "networkd", routes))["network"]["ethernets"]
    assert eth["enp1s0f0np0"]["routes"] == [{"to": "10.23.1.0/24", "via": "10.12.1.2"}]
    assert "routes" not in eth["enP2p1s0f0np0"]


def test_an_unknown_renderer_is_refused(triangle):
    try:
        netplan.render(triangle.links("dgx1"), 9000, "ifupdown")
    except ValueError as exc:
        assert "NetworkManager, networkd" in str(exc)
    else:
        raise AssertionError("ifupdown was accepted")


# A cloud-init style file that also configures a CX7 port, and NetworkManager's own netplan file for a
# profile edited with nmcli (Ubuntu keeps NM profiles as /etc/netplan/90-NM-<uuid>.yaml).
CLOUD_INIT = """network:
  version: 2
  ethernets:
    enP7s7:
      dhcp4: true
    enp1s0f1np1:
      dhcp4: true
"""
NM_FILE = """network:
  version: 2
  ethernets:
    NM-6f1c0b2e:
      renderer: NetworkManager
      match:
        name: enp1s0f0np0
      addresses: [192.168.100.10/24]
"""


def test_stray_cx7_stanzas_are_found_by_key_or_by_match_name():
    assert netplan.strays(CLOUD_INIT) == ["enp1s0f1np1"]
    assert netplan.strays(NM_FILE) == ["NM-6f1c0b2e"]
    assert netplan.strays("network:\n  version: 2\n  ethernets:\n    enP7s7: {dhcp4: true}\n") == []
    assert netplan.strays("") == []


def test_cutting_keeps_the_rest_of_a_file_and_drops_a_file_left_empty():
    rest = yaml.safe_load(netplan.without(CLOUD_INIT, ["enp1s0f1np1"]))
    assert rest == {"network": {"version": 2, "ethernets": {"enP7s7": {"dhcp4": True}}}}
    assert netplan.without(NM_FILE, ["NM-6f1c0b2e"]) is None


def test_networkmanager_keyfiles_name_their_netdev():
    profile = "[connection]\nid=cx7 a\ntype=ethernet\ninterface-name=enP2p1s0f1np1\n\n[ipv4]\nmethod=manual\n"
    assert netplan.nm_interface(profile) == "enP2p1s0f1np1"
    assert netplan.nm_interface("[connection]\nid=wifi\ntype=wifi\n") is None
    assert netplan.nm_interface("not a keyfile") is None


def test_each_cx7_netdev_answers_arp_only_for_its_own_address(switched):
    text = netplan.arp_sysctl(link["netdev"] for link in switched.links("dgx1"))
    settings = [line for line in text.splitlines() if not line.startswith("#")]
    assert settings == ["net.ipv4.conf.enP2p1s0f0np0.arp_ignore = 1", "net.ipv4.conf.enP2p1s0f0np0.arp_announce = 2",
                        "net.ipv4.conf.enp1s0f0np0.arp_ignore = 1", "net.ipv4.conf.enp1s0f0np0.arp_announce = 2"]


def test_a_link_networkd_is_still_setting_up_is_waited_for():
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import links

    # networkctl list --no-legend on a lab node right after a reconfigure (systemd 252)
    listing = """  1 lo            loopback carrier     pending
  2 eth0          ether    routable    pending
  3 docker0       bridge   no-carrier  unmanaged
  5 enP2p1s0f0np0 ether    routable    configuring
  6 enp1s0f1np1   ether    routable    configured
  7 enP2p1s0f1np1 ether    no-carrier  configuring
  8 enp1s0f0np0   ether    routable    failed
"""
    cx7 = ["enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1", "enp1s0f0np0"]
    assert links.networkd_setting_up(listing, cx7) == ["enP2p1s0f0np0", "enP2p1s0f1np1"]
    assert links.networkd_setting_up(listing.replace("configuring", "configured"), cx7) == []
    assert links.networkd_setting_up("", cx7) == []
