"""`ds41f hostkeys`: pin every node's SSH host keys in the known_hosts beside the site file, at first contact.

Every connection the collection makes checks the node's host key against that file (ansible.cfg's
StrictHostKeyChecking=yes, the inventory plugin's UserKnownHostsFile), so a site records its nodes' keys once,
before its first run: `ds41f hostkeys -i inventories/<site>` asks each node for its keys (ssh-keyscan), records
those of the nodes not pinned yet, and prints their fingerprints to compare with each node's console
(`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`). A node whose key differs from the pinned one is never
overwritten: it is named, with both fingerprints, until `--accept NODE` after checking it. `--check` writes nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ds41f import paths

SCAN_TIMEOUT_S = 5  # per node: ssh-keyscan's -T
CONSOLE = "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"


def model():
    paths.import_collection()
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import known_hosts

    return known_hosts


def site_of(args):
    """The site file: -i's (a file or the folder holding one), or the lab's inventory."""
    from ds41f.lab import cluster

    if args.inventory:
        if len(args.inventory) != 1:
            raise SystemExit("ds41f hostkeys: give one site (-i once).")
        return cluster.find_site(args.inventory[0])
    lab = cluster.Lab(args.lab or "lab")
    return cluster.find_site(lab.inventory)


def scan(addresses, port):
    """{host token: {key type: key}} as the nodes answer now (ssh-keyscan, unauthenticated: hence the fingerprints
    to compare on each node's console)."""
    kh = model()
    proc = subprocess.run(["ssh-keyscan", "-T", str(SCAN_TIMEOUT_S), "-p", str(port), *addresses],
                          capture_output=True, text=True, timeout=SCAN_TIMEOUT_S * len(addresses) + 30)
    found = {}
    for e in kh.parse(proc.stdout):
        found.setdefault(e["hosts"], {})[e["type"]] = e["key"]
    return found


def judge(pinned, seen):
    """'new' (nothing pinned), 'same' (a pinned key type answers with its pinned key), 'changed' (a pinned type
    answers with another key, or none of the pinned types answers), 'silent' (no key came)."""
    if not seen:
        return "silent"
    if not pinned:
        return "new"
    common = set(pinned) & set(seen)
    if not common or any(pinned[t] != seen[t] for t in common):
        return "changed"
    return "same"


def fingerprints(keys):
    kh = model()
    return ", ".join("%s %s" % (t, kh.fingerprint(k)) for t, k in sorted(keys.items()))


def plan(text, nodes, seen, accept=()):
    """(new known_hosts text, [(node, verdict, line)], ok) for nodes [(name, token)] and what they answered."""
    kh = model()
    report, ok, add = [], True, []
    for name, token in nodes:
        pinned, now = kh.keys_of(text, token), seen.get(token) or {}
        verdict = judge(pinned, now)
        if verdict == "changed" and name in accept:
            verdict = "accepted"
        if verdict == "silent":
            ok = False
            line = "no key: %s did not answer ssh-keyscan within %d s" % (token, SCAN_TIMEOUT_S)
        elif verdict == "same":
            line = "pinned, unchanged (%s)" % fingerprints({t: pinned[t] for t in set(pinned) & set(now)})
        elif verdict == "changed":
            ok = False
            line = ("CHANGED: pinned %s; it now answers %s. Not recorded: check on the node's console (%s); if it "
                    "matches, --accept %s" % (fingerprints(pinned), fingerprints(now), CONSOLE, name))
        else:
            text = kh.without(text, token)
            add += [kh.entry(token, t, k, name) for t, k in sorted(now.items())]
            line = "%s: %s" % ("recorded" if verdict == "new" else "accepted, replacing %s" % fingerprints(pinned),
                               fingerprints(now))
        report.append((name, verdict, line))
    return text + "".join(line + "\n" for line in add), report, ok


def run(args):
    from ds41f.lab import cluster

    kh = model()
    try:
        site = site_of(args)
        _, raw, cluster_model = cluster.load(site)
    except cluster.podman.LabError as exc:
        print("ds41f hostkeys: %s" % exc, file=sys.stderr)
        return 2
    port = int(((raw.get("vars") or {}).get("ansible_port")) or 22)
    wanted = set(filter(None, (args.limit or "").split(",")))
    accept = set(filter(None, (args.accept or "").split(",")))
    names = [n.name for n in cluster_model.nodes]
    unknown = sorted((wanted | accept) - set(names))
    if unknown:
        print("ds41f hostkeys: %s %s not in %s (nodes: %s)" % (", ".join(unknown), "is" if len(unknown) == 1 else
                                                               "are", site, ", ".join(names)), file=sys.stderr)
        return 2
    chosen = [n for n in cluster_model.nodes if not wanted or n.name in wanted]
    pinned_file = Path(site).resolve().parent / kh.FILE_NAME
    text = pinned_file.read_text() if pinned_file.exists() else ""
    seen = scan([n.address for n in chosen], port)
    new_text, report, ok = plan(text, [(n.name, kh.host_token(n.address, port)) for n in chosen], seen, accept)
    width = max(len(name) for name, _, _ in report)
    for name, _, line in report:
        print("%-*s  %s" % (width, name, line))
    wrote = new_text != text and not args.check
    if wrote:
        pinned_file.write_text(new_text)
        pinned_file.chmod(0o644)
    recorded = [name for name, verdict, _ in report if verdict in ("new", "accepted")]
    if recorded:
        print("%s %s. Before the first run, compare each fingerprint above with the node's own, read on its console "
              "(or BMC): %s" % ("recorded in" if wrote else "--check: would record in", pinned_file, CONSOLE))
    if args.check and recorded:
        ok = False
    print("ds41f hostkeys: %s" % ("all pinned" if ok else "not all pinned (see above)"))
    return 0 if ok else 1


def add_parser(sub, where):
    p = sub.add_parser("hostkeys", help="pin the nodes' SSH host keys (the known_hosts beside the site file): record "
                                        "them at first contact, print fingerprints to check, refuse a changed key",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where(p)
    p.add_argument("--limit", help="only these nodes (comma-separated names)")
    p.add_argument("--accept", help="replace the pinned keys of these nodes (comma-separated) with the keys they "
                                    "answer now: only after checking the fingerprints on their consoles")
    p.add_argument("--check", action="store_true", help="compare only: write nothing, exit 1 unless every node "
                                                        "answers with its pinned key")
    return p
