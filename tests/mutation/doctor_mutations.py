#!/usr/bin/env python
"""The doctor's mutation test: on a converged lab, change every object the stages declare they manage (doctor.json
``managed``) and check that the doctor names it.

For each object, one change at a time (and, with --sets, random sets of five at once):
  - the doctor exits 1 with exactly one row naming the object on its node, and no other row (a setting a stage
    writes into a merged folder, kind ``setting``, is changed by a foreign file dropped where it wins: the row
    must name that file);
  - that row has a fix, and the fix (its ``ds41f run`` command, else the row's stage) repairs it;
  - the doctor changed nothing on any node (every managed object reads the same before and after it);
  - after the fix the doctor is clean and every object reads as before the change.
A change only the deep doctor sees (a checkpoint file's bytes under a kept size and mtime: DEEP) is looked for by
``ds41f doctor --deep``; every other trial's doctor is the quick one. The clean doctor after a fix is the next
trial's doctor run, which must show no row but those naming the next trial's objects (one doctor run per trial;
--no-pipeline runs one more after each repair), and after the last trial a doctor run of its own. Coverage is
printed per stage: objects the doctor named over objects changed.

  tests/mutation/doctor_mutations.py --lab molecule-verify-doctor --report docs/mutation   # every change
  tests/mutation/doctor_mutations.py --lab LAB --each-object --sets 3                       # each object once
  tests/mutation/doctor_mutations.py --lab LAB --sample 3 --sets 1 --stages fabric,serve     # a random sample
  tests/mutation/doctor_mutations.py --lab LAB --sample 1 --clean-report DIR/doctor.json    # CI's (verify-doctor)
  tests/mutation/doctor_mutations.py --lab LAB --kinds link --changes 'add a route,add an address'  # some changes
  tests/mutation/doctor_mutations.py --lab molecule-model-fanout --kinds 'checkpoint file' --sample 3 \
      --skip-tags host_baseline,kernel,memory_saver,fabric,firewall,site_config,image,serve,verify  # the model lab

It changes only the lab's own nodes (podman exec into ds41f-LAB-NODE), and runs ds41f from the project folder.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))  # the collection's own syntax for each folder's files
from ansible_collections.dgxspark.ds41f.plugins.module_utils.config_layers import render  # noqa: E402

MARK = "# ds41f mutation"
OTHER_IMAGE = "ds41f-mutation:other"  # the image a moved tag names
WRONG_MAC = "02:00:00:00:00:01"  # a locally administered MAC no lab node has

KEPT_STAT = "bytes changed under kept size and mtime"
# One byte in the middle of the file (argv[1]) inverted in place, then its atime and mtime put back to the
# nanosecond: size, mtime and inode are those the node's verification record vouches for.
FLIP_KEEPING_STAT = ("import os, sys; p = sys.argv[1]; s = os.stat(p); f = open(p, 'r+b'); f.seek(s.st_size // 2); "
                     "b = f.read(1)[0] ^ 0xFF; f.seek(s.st_size // 2); f.write(bytes([b])); f.close(); "
                     "os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))")
# Changes only the deep doctor sees (ds41f doctor --deep, which scrubs every checkpoint first): a trial with one of
# them runs the doctor with --deep, every other trial without (it is quick, and reads no checkpoint in full).
DEEP = {("checkpoint file", KEPT_STAT)}

# kind -> [(mutation, applies(obj) -> bool, shell command(obj) -> str[, what the row must name(obj) -> {kind, name}])]:
# without the fourth, the row names the object changed; with it, the object the change made on the object's node (a
# stray route on a link is named as that route).
MUTATIONS = {
    "file": [
        ("delete", lambda o: o.get("state") != "absent", lambda o: "rm -f %s" % q(o["name"])),
        ("edit one line", lambda o: o.get("state") != "absent",
         lambda o: "sed -i '1s/^/%s /' %s" % (MARK, q(o["name"]))),
        ("mode", lambda o: o.get("state") != "absent" and "mode" in o,
         lambda o: "chmod %s %s" % (other_mode(o["mode"]), q(o["name"]))),
        ("owner", lambda o: o.get("state") != "absent" and "owner" in o, lambda o: "chown nobody %s" % q(o["name"])),
        ("create", lambda o: o.get("state") == "absent", lambda o: "echo %s > %s" % (q(MARK), q(o["name"]))),
    ],
    "directory": [
        ("mode", lambda o: True, lambda o: "chmod %s %s" % (other_mode(o["mode"]), q(o["name"]))),
        ("owner", lambda o: True, lambda o: "chown nobody %s" % q(o["name"])),
    ],
    "unit": [
        ("stop", lambda o: (o.get("policy") == "enable" and o.get("runs", True)) or o.get("policy") == "running",
         lambda o: "systemctl stop %s" % q(o["name"])),
        ("disable", lambda o: o.get("policy") == "enable", lambda o: "systemctl disable %s" % q(o["name"])),
        ("mask", lambda o: o.get("policy") == "enable", lambda o: "systemctl mask %s" % q(o["name"])),
        ("unmask and enable", lambda o: o.get("policy") in ("mask", "disable"),
         lambda o: "systemctl unmask %s; systemctl enable %s" % (q(o["name"]), q(o["name"]))),
    ],
    # A setting of a stage's file in a folder its reader merges (sysctl.d, sshd_config.d, modprobe.d, limits.d, a
    # unit's drop-ins): a foreign file where it wins (after the stage's file, before it for sshd) sets another value.
    "setting": [
        ("foreign file", lambda o: other_value(o["value"]) is not None,
         lambda o: "mkdir -p %s && printf %%s %s > %s" % (q(o["folder"]), q(render(o["layout"], o["key"], other_value(
             o["value"]))), q(foreign_file(o)))),
    ],
    "sysctl": [
        ("value", lambda o: other_sysctl(o["value"]) is not None,
         lambda o: "sysctl -qw %s=%s" % (q(o["name"]), q(other_sysctl(o["value"])))),
    ],
    "link": [
        ("down", lambda o: True, lambda o: "ip link set dev %s down" % q(o["name"])),
        ("mtu", lambda o: True, lambda o: "ip link set dev %s mtu %d" % (q(o["name"]), 1500 if o["mtu"] != 1500
                                                                          else 9000)),
        ("address", lambda o: True, lambda o: "ip address del %s dev %s" % (q(o["address"]), q(o["name"]))),
        # What the site does not derive, on the link (fabric_strays): a route that sends the first peer's address to
        # a gateway nobody has, a second address in the path's subnet, and the peer's address on a MAC that is not
        # the peer's (both break the path both ways; the far end's failed pings fold into the stray's one row).
        ("add a route", lambda o: bool(o.get("peers")),
         lambda o: "ip route add %s via %s dev %s onlink" % (o["peers"][0], spare(o, -2), q(o["name"])),
         lambda o: {"kind": "route", "name": "%s via %s dev %s" % (o["peers"][0], spare(o, -2), o["name"])}),
        ("add an address", lambda o: True,
         lambda o: "ip address add %s/%d dev %s" % (spare(o, -3), prefix(o), q(o["name"])),
         lambda o: {"kind": "address", "name": "%s/%d dev %s" % (spare(o, -3), prefix(o), o["name"])}),
        ("a permanent neighbour with a wrong MAC", lambda o: bool(o.get("peers")),
         lambda o: "ip neigh replace %s dev %s lladdr %s nud permanent" % (o["peers"][0], q(o["name"]), WRONG_MAC),
         lambda o: {"kind": "neighbour", "name": "%s dev %s" % (o["peers"][0], o["name"])}),
    ],
    # The tag moved to an empty image of its own (imported, then its own name dropped), or removed (the image is
    # kept while a container runs it; where none does, it goes with its last tag and must be shipped again).
    "image": [
        ("remove the tag", lambda o: True, lambda o: "docker rmi -f %s >/dev/null" % q(o["name"])),
        ("move the tag", lambda o: True,
         lambda o: "tar cf - -T /dev/null | docker import - %s >/dev/null && docker tag %s %s && docker rmi %s "
                   ">/dev/null" % (OTHER_IMAGE, OTHER_IMAGE, q(o["name"]), OTHER_IMAGE)),
    ],
    "container": [
        ("stop", lambda o: True, lambda o: "docker stop --time 10 %s >/dev/null" % q(o["name"])),
        ("remove", lambda o: True, lambda o: "docker rm -f %s >/dev/null" % q(o["name"])),
        # changed in place: its labels still say it runs its spec
        ("update its restart policy", lambda o: True, lambda o: "docker update --restart=always %s >/dev/null"
         % q(o["name"])),
        ("update its cpu shares", lambda o: True, lambda o: "docker update --cpu-shares=512 %s >/dev/null"
         % q(o["name"])),
    ],
    # The firewall's table (inet ds41f): a rule deleted (the one that admits the cluster's nodes), a port opened by
    # hand, the whole table deleted.
    "nft_table": [
        ("delete a rule", lambda o: True,
         lambda o: "nft delete rule %s input handle $(nft -a list chain %s input | awk '/own nodes/ {print $NF; "
                   "exit}')" % (o["name"], o["name"])),
        ("open a port by hand", lambda o: True, lambda o: "nft insert rule %s input tcp dport 9 accept" % o["name"]),
        ("delete the table", lambda o: True, lambda o: "nft delete table %s" % o["name"]),
    ],
    # The head watchdog's key pair (watchdog_key): a new pair is as good as the old, so it reads as present, its mode
    # and whether its halves match.
    "key pair": [
        ("delete", lambda o: True, lambda o: "rm -f %s %s.pub" % (q(o["name"]), q(o["name"]))),
        ("mode", lambda o: True, lambda o: "chmod 0644 %s" % q(o["name"])),
        ("another public half", lambda o: True, lambda o: "sed -i '1s/^/%s /' %s.pub" % (MARK, q(o["name"]))),
    ],
    # A file of the model stage's checkpoint (model_fetch declares each with its size): its bytes changed in place
    # with size, mtime and inode kept (what the stage's quick check trusts; only the scrub of ds41f doctor --deep
    # reads it: see DEEP), cut to half its size, deleted.
    "checkpoint file": [
        (KEPT_STAT, lambda o: o.get("size", 0) > 0,
         lambda o: "python3 -c %s %s" % (q(FLIP_KEEPING_STAT), q(o["name"]))),
        ("truncated", lambda o: o.get("size", 0) > 0, lambda o: "truncate -s %d %s" % (o["size"] // 2, q(o["name"]))),
        ("deleted", lambda o: True, lambda o: "rm -f %s" % q(o["name"])),
    ],
    # One marked line of a file others share (root's authorized_keys): only that line is changed, never the file.
    "authorized_key": [
        ("remove the entry", lambda o: o.get("state") != "absent",
         lambda o: "sed -i '/ %s$/d' %s" % (o["marker"], q(o["name"]))),
        ("widen the entry", lambda o: o.get("state") != "absent",
         lambda o: "sed -i '/ %s$/s/^restrict,//' %s" % (o["marker"], q(o["name"]))),
    ],
}

# Docker is read only while its unit runs: a look at the socket of a stopped one starts it (docker.socket).
DOCKER_UP = "if systemctl is-active -q docker.service; then "
# kind -> a shell snippet printing the object's state on one line ($N: its name)
READ = {
    "file": 'if [ -e "$N" ]; then echo "$(stat -c "%a %U:%G" "$N") $(sha256sum < "$N" | cut -c1-16)"; '
            'else echo absent; fi',
    "directory": 'stat -c "%a %U:%G" "$N" 2>/dev/null || echo absent',
    "unit": 'echo "$(systemctl is-enabled "$N" 2>/dev/null) $(systemctl is-active "$N" 2>/dev/null)"',
    "sysctl": 'sysctl -n "$N" 2>/dev/null | tr -s "\\t " " "',
    "link": 'ip -o addr show dev "$N" 2>/dev/null | awk \'{print $4}\' | sort | tr "\\n" " "; '
            'ip -o link show dev "$N" 2>/dev/null | grep -o "mtu [0-9]*\\|state [A-Z]*" | tr "\\n" " "; '
            'ip route show table all dev "$N" 2>/dev/null | sort | tr "\\n" " "; '
            'ip neigh show dev "$N" nud permanent 2>/dev/null | tr "\\n" " "',
    "image": DOCKER_UP + 'docker image inspect -f "{{.Id}}" "$N" 2>/dev/null || echo absent; else echo docker down; fi',
    # Its state and spec, not its ID: the fix starts the whole group anew, every rank a new container of one spec.
    "container": DOCKER_UP + 'docker inspect -f \'{{.State.Status}} {{index .Config.Labels "ds41f.spec"}} '
                 '{{.HostConfig.RestartPolicy.Name}} {{.HostConfig.CpuShares}}\' "$N" 2>/dev/null || echo absent; '
                 'else echo docker down; fi',
    "nft_table": '(nft -s list table $N 2>/dev/null || echo absent) | sha256sum | cut -c1-16',
    # The line less its key, which follows the head's pair.
    "authorized_key": 'grep " ds41f-watchdog$" "$N" 2>/dev/null '
                      '| sed -E "s/ [a-z0-9-]+ [A-Za-z0-9+\\/=]+ ds41f/ KEY ds41f/" | sha256sum | cut -c1-16',
    "key pair": 'if [ -e "$N" ]; then a=$(cat "$N" | ssh-keygen -y -f /dev/stdin 2>/dev/null | cut -d" " -f1,2); '
                'b=$(cut -d" " -f1,2 "$N.pub" 2>/dev/null); echo "$(stat -c "%a %U:%G" "$N") '
                '$([ -n "$a" ] && [ "$a" = "$b" ] && echo pair || echo mismatch)"; else echo absent; fi',
    # Its bytes and size, not its mtime: the stage keeps the manifest's sha256 and size, and its fix lands a new file.
    "checkpoint file": 'if [ -e "$N" ]; then echo "$(sha256sum < "$N" | cut -c1-16) $(stat -c %s "$N")"; '
                       'else echo absent; fi',
    # What every file of the folder sets ($F), comments and [Section] heads left out: a line turned off reads as
    # before it was added.
    "setting": 'cat "$F"/*.conf 2>/dev/null | grep -Ev "^[[:space:]]*([#;]|\\[.*\\][[:space:]]*$|$)" | sort | sha256sum'
               ' | cut -c1-16',
}


def q(text):
    return shlex.quote(str(text))


def other_mode(mode):
    return "0666" if mode != "0666" else "0600"


def spare(o, index):
    """An address of a link's subnet that no node of the site holds (index from the end: -2 is the last host)."""
    return str(ipaddress.ip_interface(o["address"]).network[index])


def prefix(o):
    return ipaddress.ip_interface(o["address"]).network.prefixlen


def other_sysctl(value):
    parts = str(value).split()
    if not parts or not parts[0].lstrip("-").isdigit():
        return None
    first = int(parts[0])
    return " ".join([str(0 if first else 1) if first in (0, 1) else str(first + 1)] + parts[1:])


def other_value(value):
    """Another value of the same form: 0 and 1 swapped, else the first number in it one more (-900 -899, 64:30:128
    65:30:128, 128M 129M, 30s 31s), unlimited 1024; None for a value without a number (a word, a path)."""
    text = str(value)
    if text.lower() in ("unlimited", "infinity"):
        return "1024"
    if text in ("0", "1"):
        return "1" if text == "0" else "0"
    found = re.search(r"(?<![\w.-])-?\d+", text)  # a number of its own, not the 41 of a name (ds41f)
    if not found:
        return None
    return text[:found.start()] + str(int(found.group()) + 1) + text[found.end():]


def foreign_file(obj):
    """Where a file nobody declared wins over the stage's in its folder: first for sshd, last for the others."""
    name = "00-foreign-mutation.conf" if obj["order"] == "first" else "zz-foreign-mutation.conf"
    return "%s/%s" % (obj["folder"], name)


def key(obj):
    return "%s %s %s %s" % (obj["node"], obj["stage"], obj["kind"], obj["name"])


class Lab:
    def __init__(self, name, skip_tags, workdir):
        self.name, self.skip_tags, self.workdir = name, skip_tags, Path(workdir)
        self.doctors = 0
        self.clean_unchecked = set()  # (node, check) the clean doctor run does not check: not the change's doing

    def container(self, node):
        return "ds41f-%s-%s" % (self.name, node)

    def sh(self, node, script, timeout=60):
        proc = subprocess.run(["podman", "exec", self.container(node), "sh", "-c", script], text=True,
                              capture_output=True, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr

    def doctor_argv(self, report, deep=False):
        argv = ["ds41f", "doctor", "--lab", self.name, "--report-dir", str(report)]
        if self.skip_tags:
            argv += ["--skip-tags", self.skip_tags]
        return argv + (["--deep"] if deep else [])

    def doctor(self, deep=False):
        """(rc, doctor.json) of one ds41f doctor run on the lab (``deep``: ds41f doctor --deep)."""
        self.doctors += 1
        report = self.workdir / ("doctor-%03d" % self.doctors)
        argv = self.doctor_argv(report, deep)
        proc = subprocess.run(argv, cwd=ROOT, text=True, capture_output=True, timeout=600)
        (report / "output.txt").parent.mkdir(parents=True, exist_ok=True)
        (report / "output.txt").write_text(proc.stdout + proc.stderr)
        try:
            data = json.loads((report / "doctor.json").read_text())
        except (OSError, ValueError):
            data = {"rows": [], "managed": [], "error": (proc.stdout + proc.stderr)[-2000:]}
        return proc.returncode, data

    def run(self, stage, extra=()):
        argv = ["ds41f", "run", stage, "--lab", self.name, *extra]
        if self.skip_tags and stage == "site":
            argv += ["--", "--skip-tags", self.skip_tags]
        proc = subprocess.run(argv, cwd=ROOT, text=True, capture_output=True, timeout=1200)
        return proc.returncode, (proc.stdout + proc.stderr)[-3000:]

    def snapshot(self, objects):
        """key -> the object's state as its node reads it, every node read in one call."""
        out = {}
        nodes = sorted({o["node"] for o in objects})
        for node in nodes:
            mine = [o for o in objects if o["node"] == node]
            rc, stdout, stderr = self.sh(node, read_script(mine))
            lines = stdout.split("\n")
            for i, o in enumerate(mine):
                out[key(o)] = lines[i].strip() if rc == 0 and i < len(lines) else "unread: %s" % stderr.strip()
        return out


def read_script(objects):
    """One shell script that prints each object's state (READ of its kind) on a line of its own, in order."""
    return "; ".join('N=%s; F=%s; printf "%%s\\n" "$(%s)"' % (q(o["name"]), q(o.get("folder", "")), READ[o["kind"]])
                     for o in objects)


def named(o, mutation):
    """The object the doctor's row must name for this change of ``o``: the object the change made on o's node, when
    the mutation says (a stray route on a link), the foreign file for a setting, else o itself."""
    if len(mutation) > 3:
        return dict(mutation[3](o), node=o["node"])
    if o["kind"] == "setting":
        return dict(o, kind="file", name=foreign_file(o))
    return o


def names(row, obj):
    """The row names the object whole, on its node: /etc/ds41f is not named by a row on /etc/ds41f/model.json (a set
    may change both), nor kernel.panic by one on kernel.panic_on_oops. A fabric path's row, on its first end, names
    what it found at the far end as "<node> <netdev>: ..." (a set may change both ends of one cable)."""
    if row.get("object"):  # a row that carries its object is compared by it, not by its words; a fabric path that is
        # down is one row on its first end that lists both ends' links as data (a set may change both ends of one cable)
        return any((o.get("node") or row["node"], o["kind"], o["name"]) == (obj["node"], obj["kind"], obj["name"])
                   for o in [row["object"]] + list(row.get("ends") or []))
    text = " ".join(str(row.get(k) or "") for k in ("setting", "found"))

    def whole(name):
        return re.search(r"(?<![\w/])%s(?![\w/])" % re.escape(name), text) is not None

    if row.get("node") == obj["node"]:
        return whole(obj["name"])
    return bool(row.get("path")) and whole("%s %s:" % (obj["node"], obj["name"]))


def generic(row):
    """A row that names no cause: a check that failed without one, a change without its drift, no difference."""
    return ("named no cause" in str(row.get("setting")) or row.get("found") == "would change (see --diff)"
            or row.get("expected") == row.get("found"))


# The command a fix names, anywhere in its text, with the -e consents it gives (serve_replace for a dead rank).
FIX_RUN = re.compile(r"ds41f run (\w+)((?: -e '[^']*')*)")
# A fix that is one command on one node: a container's setting put back in place (`docker update ... on dgx2`).
FIX_ON_NODE = re.compile(r"^(docker update [^;]+) on (\S+)$")
ON_NODE = "(on the node)"


def repair_stage(row, stage):
    """(stage, its extra arguments, how it was chosen): the ``ds41f run`` command the row's fix names, else the
    row's stage."""
    fix = (row or {}).get("fix") or ""
    found = FIX_RUN.search(fix)
    on_node = FIX_ON_NODE.match(fix)
    if on_node:
        return ON_NODE, (on_node.group(2), on_node.group(1)), "its fix (%s)" % fix
    if found:
        return found.group(1), tuple(shlex.split(found.group(2))), "its fix (%s)" % found.group(0)
    return stage, (), "the row's stage (fix: %s)" % (fix[:60] or "none")


def trial(lab, objects, clean, chosen, pending=()):
    """Apply the chosen (object, mutation) pairs, run the doctor, repair; one result per pair.

    ``pending``: the results of the trial before, whose "the doctor is clean after" this trial's doctor judges (the
    pipelined sweep): its run must show no row but the ones naming this trial's objects. Without it (and for the
    last trial) a doctor run after the repair judges it. Returns (results, still pending)."""
    results = [{"object": o, "mutation": m[0], "command": m[2](o), "checks": {}, "names": named(o, m)}
               for o, m in chosen]
    for res in results:
        o = res["object"]
        _, _, err = lab.sh(o["node"], res["command"])
        res["applied"] = lab.snapshot([o])[key(o)] != clean[key(o)]
        if not res["applied"]:
            res["note"] = "the change did not take (%s)" % (err.strip()[:120] or "state unchanged")
    applied = [r for r in results if r["applied"]]
    if not applied:
        return results, list(pending)
    mutated = lab.snapshot(objects)
    started = time.monotonic()
    rc, doc = lab.doctor(deep=any((r["object"]["kind"], r["mutation"]) in DEEP for r in applied))
    seconds = time.monotonic() - started
    after = lab.snapshot(objects)
    rows = doc.get("rows") or []
    others = [r for r in rows if not any(names(r, res["names"]) for res in applied)]
    settle(pending, others)
    for res in applied:
        mine = [r for r in rows if names(r, res["names"])]
        res.update(rows=mine, other_rows=others, doctor_s=round(seconds, 1))
        stage, extra, how = repair_stage(mine[0] if mine else None, res["object"]["stage"])
        res["repair"] = {"stage": stage, "extra": extra, "how": how}
        res["checks"] = {
            "doctor exits 1": rc == 1,
            "exactly one row names it": len(mine) == 1,
            "no other row": not others,
            "the row has a fix": bool(mine) and all(r.get("fix") for r in mine),
            "no generic row": not any(generic(r) for r in rows),
            "the doctor changed no node": after == mutated,
        }
    repairs = dict.fromkeys((r["repair"]["stage"], r["repair"]["extra"]) for r in applied)  # each once
    for stage, extra in sorted(repairs, key=lambda repair: stage_rank(repair[0])):  # in site.yml's order
        if stage == ON_NODE:
            lab_rc, out, err = lab.sh(*extra)
            tail = (out + err)[-3000:]
        else:
            lab_rc, tail = lab.run(stage, extra)
        for res in applied:
            if (res["repair"]["stage"], res["repair"]["extra"]) == (stage, extra):
                res["repair"].update(rc=lab_rc, tail=tail if lab_rc else "")
    follow_up(lab, doc, applied)
    repaired = lab.snapshot(objects)
    for res in applied:
        o = res["object"]
        res["checks"]["the fix repairs it"] = repaired[key(o)] == clean[key(o)] and res["repair"]["rc"] == 0
        if o["kind"] == "setting":  # the foreign file, its line turned off by the fix, is the test's own: it goes
            lab.sh(o["node"], "rm -f %s" % q(foreign_file(o)))
    if repaired != clean or others:  # leave the lab converged for the next trial
        lab.run("site")
    return results, applied


def object_names(text):
    """The words of a text that name an object (a unit, a path, a container, an image): those with - . / or :."""
    return {w.strip("(),;") for w in str(text).split() if any(c in w for c in "-./:")}


def follow_up(lab, doc, applied):
    """What the change hid, looked at once it is fixed. A check the doctor listed as not checked because of the
    change (a rank's container while its node's Docker was down) is made by the next doctor run: a row it then
    shows about that object on that node is a consequence the first run could not see (the rank stopped with
    Docker), and its own fix is run too, recorded as the trial's follow-up. Other rows are left for the clean
    check to fail."""
    hidden = [(u["node"], object_names(u["check"])) for u in doc.get("not_checked") or []
              if (u["node"], u["check"]) not in lab.clean_unchecked]
    if not hidden:
        return
    _, after = lab.doctor()
    seen = [r for r in after.get("rows") or []
            if any(r.get("node") == node and names & object_names(r.get("setting")) for node, names in hidden)]
    fixes = dict.fromkeys(repair_stage(r, r["stage"])[:2] for r in seen)
    ran = [dict(stage=stage, extra=extra, rc=lab.run(stage, extra)[0])
           for stage, extra in sorted(fixes, key=lambda fix: stage_rank(fix[0]))]
    for res in applied:
        res["follow_up"] = {"rows": ["%s %s: %s" % (r["node"], r["setting"], r["found"]) for r in seen], "ran": ran}


def stage_rank(stage):
    """Where site.yml runs the stage (its tag): a set's fixes are run in that order, as a sysadmin runs them (the
    image before the serve stage that starts it). A stage site.yml does not name comes last."""
    order = [tag for play in yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
             for tag in play.get("tags") or []]
    return order.index(stage) if stage in order else len(order)


def settle(pending, others):
    """Judge the trial before by this doctor run: clean after its fix unless a row names something else."""
    for res in pending:
        res["checks"]["the doctor is clean after"] = not others
        if others:
            res["rows_after"] = others


def closing_doctor(lab, pending):
    """The last trial's clean check (and every trial's, unpipelined): a doctor run after its repair."""
    if pending:
        rc, doc = lab.doctor()
        rows = doc.get("rows") or []
        settle(pending, rows if rc != 0 or rows else [])
        if rc != 0:
            lab.run("site")


def plan_trials(objects, sample, sets, rng, each_object=False, changes=None):
    """Single changes (every change of every object, or with ``each_object`` one per object, its kind's changes in
    turn), optionally ``sample`` of them at random, then ``sets`` random sets of five objects changed at once.
    ``changes``: only the changes of these names."""

    def applicable(o):
        return [m for m in MUTATIONS.get(o["kind"], []) if m[1](o) and (not changes or m[0] in changes)]

    if each_object:
        turn, singles = {}, []
        for o in objects:
            options = applicable(o)
            if options:
                i = turn[o["kind"]] = turn.get(o["kind"], -1) + 1
                singles.append((o, options[i % len(options)]))
    else:
        singles = [(o, m) for o in objects for m in applicable(o)]
    if sample:
        singles = rng.sample(singles, min(sample, len(singles)))
    groups = []
    for _ in range(sets):
        picked = rng.sample(objects, min(5, len(objects)))
        group = []
        for o in picked:
            options = applicable(o)
            if options:
                group.append((o, rng.choice(options)))
        groups.append(group)
    return [[s] for s in singles] + groups


def coverage(results, objects):
    per_stage = {}
    for o in objects:
        per_stage.setdefault(o["stage"], {"objects": set(), "mutated": set(), "named": set(), "passed": 0,
                                          "trials": 0})["objects"].add(key(o))
    for r in results:
        s = per_stage[r["object"]["stage"]]
        if r.get("applied"):
            s["trials"] += 1
            s["mutated"].add(key(r["object"]))
            if r["checks"].get("exactly one row names it"):
                s["named"].add(key(r["object"]))
            if all(r["checks"].values()):
                s["passed"] += 1
    return per_stage


def markdown(results, objects, per_stage, meta):
    lines = ["# The doctor's mutation test", "",
             "`%s` on %s, %s (%d objects declared by the stages, %d trials, %.0f min)." % (
                 meta["command"], meta["lab"], meta["date"], len(objects), len(results), meta["minutes"]), "",
             "| stage | objects declared | objects changed | named by exactly one row | trials passing every check |",
             "|---|---|---|---|---|"]
    for stage, s in sorted(per_stage.items()):
        lines.append("| %s | %d | %d | %d of %d (%.0f%%) | %d of %d |" % (
            stage, len(s["objects"]), len(s["mutated"]), len(s["named"]), len(s["mutated"]),
            100.0 * len(s["named"]) / max(1, len(s["mutated"])), s["passed"], s["trials"]))
    lines += ["", "## Trials that failed a check", ""]
    failed = [r for r in results if r.get("applied") and not all(r["checks"].values())]
    for r in failed:
        o = r["object"]
        bad = [k for k, v in r["checks"].items() if not v]
        seen = "; ".join("%s: %s" % (x.get("setting"), x.get("found")) for x in r.get("rows") or []) or "no row"
        lines.append("- %s %s `%s` (%s, %s): failed %s. Rows naming it: %s." % (
            o["node"], o["kind"], o["name"], o["stage"], r["mutation"], ", ".join(bad), seen[:300]))
    if not failed:
        lines.append("None.")
    followed = [r for r in results if r.get("follow_up", {}).get("rows")]
    if followed:
        lines += ["", "## Trials whose fix was followed by the fix of a row the change had hidden", ""]
        lines += ["- %s %s `%s` (%s): then %s; ran %s" % (
            r["object"]["node"], r["object"]["kind"], r["object"]["name"], r["mutation"],
            "; ".join(r["follow_up"]["rows"])[:300],
            ", ".join("ds41f run %s%s (rc %s)" % (f["stage"], "".join(" " + a for a in f["extra"]), f["rc"])
                      for f in r["follow_up"]["ran"])) for r in followed]
    skipped = [r for r in results if not r.get("applied")]
    if skipped:
        lines += ["", "## Changes that did not take (not counted)", ""]
        lines += ["- %s %s `%s` (%s): %s" % (r["object"]["node"], r["object"]["kind"], r["object"]["name"],
                                              r["mutation"], r.get("note")) for r in skipped]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lab", required=True, help="the converged lab (as ds41f --lab takes it)")
    ap.add_argument("--skip-tags", default="model,image", help="stages the lab does not run (default: %(default)s)")
    ap.add_argument("--sample", type=int, default=0, help="this many single changes at random (0: every one)")
    ap.add_argument("--sets", type=int, default=0, help="random sets of five changes at once")
    ap.add_argument("--each-object", action="store_true",
                    help="one change per object (its kind's changes in turn) instead of every change of every object")
    ap.add_argument("--stages", help="only the objects of these stages (comma-separated)")
    ap.add_argument("--kinds", help="only the objects of these kinds (comma-separated: %s)" % ", ".join(READ))
    ap.add_argument("--objects", help="only these objects (comma-separated NODE:NAME, as dgx2:docker.service)")
    ap.add_argument("--changes", help="only these changes (comma-separated, as 'add a route,add an address')")
    ap.add_argument("--no-pipeline", action="store_true",
                    help="run a doctor after each repair instead of judging it by the next trial's doctor run")
    ap.add_argument("--seed", type=int, default=None, help="the random seed (printed; default: from the clock)")
    ap.add_argument("--report", help="write REPORT.json and REPORT.md")
    ap.add_argument("--clean-report", help="the doctor.json of a clean doctor run on this lab just before, whose "
                                           "managed objects to change (saves the first doctor run)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="ds41f-mutation-"))
    lab = Lab(args.lab, args.skip_tags, workdir)
    print("mutation test on %s, seed %d, reports in %s" % (args.lab, seed, workdir), flush=True)
    if args.clean_report:
        doc = json.loads(Path(args.clean_report).read_text())
        rc = 1 if doc.get("rows") else 0
    else:
        rc, doc = lab.doctor()
    objects = [o for o in doc.get("managed") or [] if o.get("kind") in READ]
    if args.stages:
        objects = [o for o in objects if o["stage"] in args.stages.split(",")]
    if args.kinds:
        objects = [o for o in objects if o["kind"] in args.kinds.split(",")]
    if args.objects:
        objects = [o for o in objects if "%s:%s" % (o["node"], o["name"]) in args.objects.split(",")]
    if rc != 0 or not objects:
        print("the doctor is not clean before any change (rc %d, %d rows, %d objects): converge the lab first"
              % (rc, len(doc.get("rows") or []), len(objects)), file=sys.stderr)
        return 2
    lab.clean_unchecked = {(u["node"], u["check"]) for u in doc.get("not_checked") or []}
    clean = lab.snapshot(objects)
    unread = [k for k, v in clean.items() if v.startswith("unread")]
    trials = plan_trials(objects, args.sample, args.sets, rng, args.each_object,
                         args.changes.split(",") if args.changes else None)
    print("%d objects declared on %d nodes; %d trials" % (len(objects), len({o["node"] for o in objects}),
                                                          len(trials)), flush=True)
    results, pending = [], []
    for i, chosen in enumerate(trials, 1):
        before = pending
        done, pending = trial(lab, objects, clean, chosen, pending)
        if args.no_pipeline:
            closing_doctor(lab, pending)
            pending = []
        for r in before:
            if r["checks"].get("the doctor is clean after") is False:
                print("[%d/%d] after the fix of %s %s the doctor was not clean: %s" % (
                    i - 1, len(trials), r["object"]["node"], r["object"]["name"],
                    "; ".join(str(x.get("setting")) for x in r.get("rows_after") or [])[:300]), flush=True)
        results.extend(done)
        for r in done:
            bad = [k for k, v in r["checks"].items() if not v]
            print("[%d/%d] %s %s %s (%s): %s" % (
                i, len(trials), r["object"]["node"], r["object"]["kind"], r["object"]["name"], r["mutation"],
                ("ok" if not bad else "FAILED " + ", ".join(bad)) if r.get("applied") else "did not take"),
                flush=True)
    closing_doctor(lab, pending)
    per_stage = coverage(results, objects)
    meta = {"lab": args.lab, "seed": seed, "date": time.strftime("%Y-%m-%d"),
            "minutes": (time.monotonic() - started) / 60, "unread": unread,
            "command": "tests/mutation/doctor_mutations.py " + shlex.join(argv if argv is not None else sys.argv[1:])}
    for stage, s in sorted(per_stage.items()):
        print("%-14s %3d of %3d changed objects named by exactly one row; %d of %d trials pass every check" % (
            stage, len(s["named"]), len(s["mutated"]), s["passed"], s["trials"]))
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report + ".json").write_text(json.dumps({"meta": meta, "results": results}, indent=1,
                                                          default=sorted))
        Path(args.report + ".md").write_text(markdown(results, objects, per_stage, meta))
    failed = [r for r in results if r.get("applied") and not all(r["checks"].values())]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
