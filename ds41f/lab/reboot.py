"""What stands in for a reboot of a lab node: restart its container, then put its cables back.

A lab node is a container whose PID 1 is systemd, so `ansible.builtin.reboot` inside it would stop the
container for good. Instead the controller restarts it (`podman restart`: systemd gets SIGRTMIN+3 and
shuts down cleanly, then boots again, keeping the node's disk and address). A restarted container has
a new network namespace, so its veth cables are gone on both ends; `Lab.wire` puts back the missing ones.
No kernel boots: the host's kernel keeps running, which is why the kernel stage's health gate says what
it could not check in a container.

    python -m ds41f.lab.reboot LAB NODE
"""

from __future__ import annotations

import argparse
import sys
import time

from ds41f.lab import cluster, podman


def reboot(lab_name, node, stop_timeout=20):
    lab = cluster.Lab(lab_name)
    _, _, model = cluster.load(lab.inventory)
    if node not in [n.name for n in model.nodes]:
        raise podman.LabError("lab %s has no node %s" % (lab_name, node))
    start = time.monotonic()
    podman.run("restart", "-t", str(stop_timeout), lab.container(node))
    lab.wait_systemd(model, restart_degraded=False)  # the other nodes are not restarted behind the rollout's back
    wired = lab.wire(model)
    lab.wait_ssh(model)
    return wired, time.monotonic() - start


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ds41f.lab.reboot", description=__doc__.split("\n\n")[0])
    parser.add_argument("lab")
    parser.add_argument("node")
    args = parser.parse_args(argv)
    try:
        wired, seconds = reboot(args.lab, args.node)
    except podman.LabError as exc:
        print("lab reboot: %s" % exc, file=sys.stderr)
        return 2
    print("lab %s: %s restarted in %.1f s, %d cable paths in place" % (args.lab, args.node, seconds, wired))
    return 0


if __name__ == "__main__":
    sys.exit(main())
