"""The lab: a real local cluster of podman containers wired like the site file says.

Each node boots systemd and runs its own dockerd; ConnectX-7 cables are veth pairs renamed inside the
nodes to the CX7 netdev names; a switched shape gets a Linux bridge in its own network namespace as the
switch. The management network is an internal podman network (no NAT), reached from the controller
over SSH. Nothing outside the lab's own containers, networks and namespaces is changed.
"""
