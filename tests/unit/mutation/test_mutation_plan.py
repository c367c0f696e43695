"""The mutation test's own parts that need no lab: which changes apply to which declared object, how a row is
matched to the object it names, which fix repairs it, and how trials are drawn."""

import random

from tests.mutation import doctor_mutations as dm

FILE = {"node": "dgx2", "stage": "host_baseline", "kind": "file", "name": "/etc/sysctl.d/90-ds41f.conf",
        "mode": "0644", "owner": "root", "group": "root"}
UNIT = {"node": "dgx1", "stage": "serve", "kind": "unit", "name": "ds41f-memguard.service", "policy": "enable",
        "runs": True}
LINK = {"node": "dgx3", "stage": "fabric", "kind": "link", "name": "enp1s0f0np0", "mtu": 9000,
        "address": "10.23.0.2/24"}
SYSCTL = {"node": "dgx4", "stage": "host_baseline", "kind": "sysctl", "name": "net.core.somaxconn", "value": "4096"}
IMAGE = {"node": "dgx2", "stage": "image", "kind": "image", "name": "ds41f-lab:lab-1"}
CONTAINER = {"node": "dgx4", "stage": "serve", "kind": "container", "name": "spark-ds41f"}
CHECKPOINT = {"node": "dgx2", "stage": "model", "kind": "checkpoint file", "size": 33554568,
              "name": "/var/lib/ds41f/models/ds41f/model-00003-of-00008.safetensors"}


def applicable(obj):
    return [m[0] for m in dm.MUTATIONS[obj["kind"]] if m[1](obj)]


def test_each_kind_gets_the_changes_that_make_sense_for_it():
    assert applicable(FILE) == ["delete", "edit one line", "mode", "owner"]
    assert applicable(dict(FILE, state="absent")) == ["create"]
    assert applicable(UNIT) == ["stop", "disable", "mask"]
    assert applicable(dict(UNIT, runs=False)) == ["disable", "mask"]  # a unit whose condition is false never runs
    assert applicable(dict(UNIT, policy="mask")) == ["unmask and enable"]
    assert applicable(dict(UNIT, policy="running")) == ["stop"]  # started by its stage, not at boot (the guard)
    assert applicable(LINK) == ["down", "mtu", "address", "add an address"]
    assert applicable(dict(LINK, peers=["10.23.0.3"])) == [
        "down", "mtu", "address", "add a route", "add an address", "a permanent neighbour with a wrong MAC"]
    assert applicable(SYSCTL) == ["value"]
    assert applicable(dict(SYSCTL, value="bbr")) == []  # no other value known for a word
    assert applicable(IMAGE) == ["remove the tag", "move the tag"]
    assert applicable(CONTAINER) == ["stop", "remove", "update its restart policy", "update its cpu shares"]
    assert applicable(CHECKPOINT) == ["bytes changed under kept size and mtime", "truncated", "deleted"]
    assert applicable(dict(CHECKPOINT, size=0)) == ["deleted"]  # an empty file has no byte to change or cut
    assert applicable({"kind": "nft_table", "name": "inet ds41f"}) == ["delete a rule", "open a port by hand",
                                                                      "delete the table"]


def test_every_change_is_a_shell_command_on_the_object_and_differs_from_the_wanted_state():
    commands = {m[0]: m[2](FILE) for m in dm.MUTATIONS["file"]}
    assert commands["mode"] == "chmod 0666 /etc/sysctl.d/90-ds41f.conf"
    assert dm.other_mode("0666") == "0600"
    assert [m[2](LINK) for m in dm.MUTATIONS["link"] if m[1](LINK)][1] == "ip link set dev enp1s0f0np0 mtu 1500"
    assert dm.other_sysctl("1") == "0" and dm.other_sysctl("0") == "1" and dm.other_sysctl("4096") == "4097"
    assert dm.other_sysctl("4096 87380 6291456") == "4097 87380 6291456"
    moved = dict((m[0], m[2](IMAGE)) for m in dm.MUTATIONS["image"])["move the tag"]
    assert "docker tag %s ds41f-lab:lab-1" % dm.OTHER_IMAGE in moved and moved.startswith("tar cf - -T /dev/null")


def test_a_row_names_an_object_only_on_its_node_by_setting_or_found():
    row = {"node": "dgx3", "setting": "dgx3 enp1s0f0np0 mtu", "found": "1500", "fix": "ds41f run fabric"}
    assert dm.names(row, LINK)
    assert not dm.names(dict(row, node="dgx2"), LINK)
    assert not dm.names(row, dict(LINK, name="enp1s0f1np1"))
    folder = {"node": "dgx1", "kind": "directory", "name": "/etc/ds41f"}
    assert dm.names({"node": "dgx1", "setting": "/etc/ds41f attributes", "found": "folder 0666"}, folder)
    assert not dm.names({"node": "dgx1", "setting": "/etc/ds41f/model.json", "found": "absent"}, folder)
    assert not dm.names({"node": "dgx4", "setting": "kernel.panic_on_oops", "found": "0"},
                        dict(SYSCTL, name="kernel.panic"))
    assert dm.names({"node": "dgx4", "setting": "sysctl net.core.somaxconn", "found": "1024"}, SYSCTL)
    assert dm.names({"node": "dgx1", "setting": "lldpd.service", "found": "inactive"}, dict(UNIT, name="lldpd"))
    assert not dm.names({"node": "dgx1", "setting": "/etc/systemd/system/ds41f-memguard.service", "found": "x"}, UNIT)
    # One cable's two ends in one set (seed 4201): dgx3's link down, dgx2's address removed. The path's row is on
    # dgx3 and says what dgx2's end shows; a row that is no path's does not name another node's objects.
    path_row = {"node": "dgx3", "path": "10.23.1.0/24",
                "setting": "enp1s0f1np1 link (cable dgx2 enp1s0f0np0 - dgx3 enp1s0f1np1)",
                "found": "dgx2 enp1s0f0np0: address (absent); carrier down; dgx3 enp1s0f1np1: link down"}
    assert dm.names(path_row, dict(LINK, node="dgx2", name="enp1s0f0np0"))
    assert dm.names(path_row, dict(LINK, name="enp1s0f1np1"))
    # The same row as the fold makes it now: its object the first end, both ends as data
    ends = [{"node": "dgx2", "kind": "link", "name": "enp1s0f0np0"}, {"node": "dgx3", "kind": "link",
                                                                        "name": "enp1s0f1np1"}]
    by_data = dict(path_row, object={"node": "dgx3", "kind": "link", "name": "enp1s0f1np1"}, ends=ends)
    assert dm.names(by_data, dict(LINK, node="dgx2", name="enp1s0f0np0"))
    assert dm.names(by_data, dict(LINK, name="enp1s0f1np1"))
    assert not dm.names(by_data, dict(LINK, node="dgx4", name="enp1s0f0np0"))
    assert not dm.names(path_row, dict(LINK, node="dgx2", name="enp1s0f1np1"))
    assert not dm.names(dict(path_row, path=None), dict(LINK, node="dgx2", name="enp1s0f0np0"))


def test_a_row_that_carries_its_object_names_it_by_the_object_alone():
    """Compared as data: the row's words do not matter, its object must be the one changed (node, kind, name)."""
    table = {"node": "dgx2", "kind": "nft_table", "name": "inet ds41f", "stage": "firewall"}
    row = {"node": "dgx2", "setting": "anything at all", "found": "x",
           "object": {"node": "dgx2", "kind": "nft_table", "name": "inet ds41f"}}
    assert dm.names(row, table)
    assert not dm.names(row, dict(table, node="dgx3"))
    assert not dm.names(dict(row, setting="inet ds41f rules", object=dict(row["object"], kind="file")), table)


def test_a_stray_on_a_link_is_made_on_the_link_and_named_by_the_object_it_made():
    """The fabric's whole kind, generated from each link the stage declares: a route to the first peer through a
    gateway nobody holds, a spare address of the path's subnet, the peer's address on a MAC no node has. The row
    must name what was made (its object, on the link's node), in the fabric's own words (fabric_strays)."""
    from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_strays
    link = dict(LINK, address="10.23.1.3/24", peers=["10.23.1.2"])
    made = {m[0]: (m[2](link), dm.named(link, m)) for m in dm.MUTATIONS["link"] if len(m) > 3}
    assert made == {
        "add a route": ("ip route add 10.23.1.2 via 10.23.1.254 dev enp1s0f0np0 onlink",
                        {"node": "dgx3", "kind": "route", "name": "10.23.1.2 via 10.23.1.254 dev enp1s0f0np0"}),
        "add an address": ("ip address add 10.23.1.253/24 dev enp1s0f0np0",
                           {"node": "dgx3", "kind": "address", "name": "10.23.1.253/24 dev enp1s0f0np0"}),
        "a permanent neighbour with a wrong MAC": (
            "ip neigh replace 10.23.1.2 dev enp1s0f0np0 lladdr 02:00:00:00:00:01 nud permanent",
            {"node": "dgx3", "kind": "neighbour", "name": "10.23.1.2 dev enp1s0f0np0"})}
    # The names are the ones the judge gives what ip then shows (ip -j output as iproute2 6.1 prints it).
    site = fabric_strays.Site([{"netdev": "enp1s0f0np0", "address": "10.23.1.3", "prefix": 24}])
    shown = fabric_strays.routes(site, [{"dst": "10.23.1.2", "gateway": "10.23.1.254", "dev": "enp1s0f0np0",
                                         "flags": ["onlink"]}])
    shown += fabric_strays.addresses(site, [{"ifname": "enp1s0f0np0", "addr_info": [
        {"family": "inet", "local": "10.23.1.3", "prefixlen": 24},
        {"family": "inet", "local": "10.23.1.253", "prefixlen": 24}]}])
    shown += fabric_strays.neighbours(site, [{"dst": "10.23.1.2", "dev": "enp1s0f0np0", "lladdr": dm.WRONG_MAC,
                                              "state": ["PERMANENT"]}], [])
    assert [{"node": "dgx3", "kind": s["kind"], "name": s["name"]} for s in shown] == [
        named for _, named in made.values()]
    row = {"node": "dgx3", "setting": "dgx3 route ...", "found": "present", "object": made["add a route"][1]}
    assert dm.names(row, made["add a route"][1]) and not dm.names(row, link)


def test_the_fix_of_a_row_is_its_ds41f_run_command_else_its_stage():
    assert dm.repair_stage({"fix": "ds41f run fabric"}, "serve")[0] == "fabric"
    assert dm.repair_stage({"fix": "systemctl start ds41f-memguard.service on dgx1"}, "serve")[0] == "serve"
    assert dm.repair_stage(None, "host_baseline")[0] == "host_baseline"
    # A dead rank's fix names its command inside its sentence, with the consent the group's restart needs.
    group = {"fix": "restart the whole tensor-parallel group - disruptive: ...: ds41f run serve -e "
                    "'{\"serve_replace\": true}' (it starts the missing rank and replaces the others; ...)"}
    assert dm.repair_stage(group, "serve")[:2] == ("serve", ("-e", '{"serve_replace": true}'))
    assert dm.repair_stage({"fix": "ds41f run fabric"}, "serve")[1] == ()
    # a container's setting put back in place: one command on its node
    assert dm.repair_stage({"fix": "docker update --restart=no spark-ds41f on dgx2"}, "serve")[:2] == (
        dm.ON_NODE, ("dgx2", "docker update --restart=no spark-ds41f"))
    assert dm.stage_rank("image") < dm.stage_rank("serve") < dm.stage_rank("no such stage")
    assert dm.stage_rank("host_baseline") == 0


def test_trials_every_change_once_a_sample_or_sets_of_five_distinct_objects():
    objects = [FILE, UNIT, LINK, SYSCTL, dict(FILE, node="dgx1"), dict(LINK, node="dgx4")]
    every = dm.plan_trials(objects, 0, 0, random.Random(1))
    assert len(every) == 4 + 3 + 4 + 1 + 4 + 4 and all(len(t) == 1 for t in every)
    assert len(dm.plan_trials(objects, 3, 0, random.Random(1))) == 3
    (group,) = dm.plan_trials(objects, 3, 1, random.Random(1))[3:]
    assert len(group) == 5 and len({dm.key(o) for o, _ in group}) == 5
    named = dm.plan_trials(objects, 0, 1, random.Random(1), changes=["add an address", "stop"])
    assert [(o["kind"], m[0]) for (o, m), in named[:-1]] == [("unit", "stop"), ("link", "add an address"),
                                                              ("link", "add an address")]
    assert {m[0] for o, m in named[-1]} <= {"add an address", "stop"}


def test_a_generic_row_is_one_that_names_no_cause():
    assert dm.generic({"setting": "Serve preflight (a check that named no cause)", "found": "x", "expected": "y"})
    assert dm.generic({"setting": "/etc/x (task)", "expected": "as the stage sets it",
                       "found": "would change (see --diff)"})
    assert dm.generic({"setting": "x", "expected": "1", "found": "1"})
    assert not dm.generic({"setting": "dgx2 enp1s0f1np1 mtu", "expected": "9000", "found": "1500"})


def test_a_clean_report_given_is_read_instead_of_a_first_doctor_run(tmp_path, monkeypatch):
    report = tmp_path / "doctor.json"
    report.write_text('{"rows": [{"node": "dgx1"}], "managed": [%s]}' % __import__("json").dumps(FILE))
    monkeypatch.setattr(dm.Lab, "doctor", lambda self: (_ for _ in ()).throw(AssertionError("a doctor ran")))
    assert dm.main(["--lab", "none", "--clean-report", str(report)]) == 2  # not clean: refused before any change


def test_each_object_once_its_kind_s_changes_in_turn():
    objects = [FILE, dict(FILE, name="/etc/b"), dict(FILE, name="/etc/c"), UNIT, dict(UNIT, node="dgx2"), LINK]
    trials = dm.plan_trials(objects, 0, 0, random.Random(1), each_object=True)
    assert [(o["name"], m[0]) for (o, m), in trials] == [
        (FILE["name"], "delete"), ("/etc/b", "edit one line"), ("/etc/c", "mode"), (UNIT["name"], "stop"),
        (UNIT["name"], "disable"), (LINK["name"], "down")]


class FakeLab:
    """Objects as strings on their nodes; the doctor names every object that differs, the stage restores all but
    the ``stuck`` ones (a fix that does not repair)."""

    def __init__(self, objects, stuck=()):
        self.clean_unchecked = set()
        self.clean = {dm.key(o): "ok" for o in objects}
        self.state, self.stuck, self.doctors, self.sites = dict(self.clean), set(stuck), 0, 0
        self.by_name = {o["name"]: o for o in objects}
        self.deep = []  # each doctor run's --deep

    def sh(self, node, script, timeout=60):
        for name, o in self.by_name.items():
            if name in script and o["node"] == node:
                self.state[dm.key(o)] = "changed"
        return 0, "", ""

    def snapshot(self, objects):
        return {dm.key(o): self.state[dm.key(o)] for o in objects}

    def doctor(self, deep=False):
        self.doctors += 1
        self.deep.append(deep)
        rows = [{"node": o["node"], "setting": o["name"], "expected": "ok", "found": "changed",
                 "fix": "ds41f run %s" % o["stage"]} for o in self.by_name.values() if self.state[dm.key(o)] != "ok"]
        return (1 if rows else 0), {"rows": rows}

    def run(self, stage, extra=()):
        if stage == "site":
            self.sites += 1
            self.state = dict(self.clean)
        else:
            for k in self.state:
                if k.split()[1] == stage and k.split()[3] not in self.stuck:
                    self.state[k] = "ok"
        return 0, ""


def sweep(lab, objects, pipelined=True):
    results, pending = [], []
    for chosen in dm.plan_trials(objects, 0, 0, random.Random(1), each_object=True):
        done, pending = dm.trial(lab, objects, lab.clean, chosen, pending)
        if not pipelined:
            dm.closing_doctor(lab, pending)
            pending = []
        results.extend(done)
    dm.closing_doctor(lab, pending)
    return results


def test_the_next_trial_s_doctor_judges_the_fix_before_it_one_doctor_run_per_trial():
    objects = [FILE, UNIT, LINK]
    lab = FakeLab(objects)
    results = sweep(lab, objects)
    assert all(all(r["checks"].values()) for r in results) and len(results) == 3
    assert lab.doctors == 3 + 1 and lab.sites == 0  # one per trial and the last one's clean check
    unpipelined = FakeLab(objects)
    sweep(unpipelined, objects, pipelined=False)
    assert unpipelined.doctors == 3 * 2


def test_only_a_trial_with_a_change_only_the_deep_doctor_sees_runs_the_doctor_with_deep(tmp_path):
    """Bit rot under a kept stat is read by ds41f doctor --deep alone; the other changes of a checkpoint file, and
    every other kind's, keep the quick doctor."""
    assert {("checkpoint file", dm.KEPT_STAT)} == dm.DEEP
    objects = [FILE, CHECKPOINT, dict(CHECKPOINT, node="dgx3", name=CHECKPOINT["name"].replace("00003", "00004"))]
    lab = FakeLab(objects)
    kept_stat, truncated = (next(m for m in dm.MUTATIONS["checkpoint file"] if m[0] == name)
                            for name in (dm.KEPT_STAT, "truncated"))
    file_delete = dm.MUTATIONS["file"][0]
    pending = []
    for chosen in ([(FILE, file_delete)], [(CHECKPOINT, kept_stat)], [(objects[2], truncated)],
                   [(FILE, file_delete), (objects[2], kept_stat)]):
        done, pending = dm.trial(lab, objects, lab.clean, chosen, pending)
        assert all(all(r["checks"].values()) for r in done), done
    dm.closing_doctor(lab, pending)
    assert lab.deep == [False, True, False, True, False]  # the last: the closing clean check
    report = tmp_path / "doctor-001"
    real = dm.Lab("molecule-model-fanout", "verify", tmp_path)
    assert real.doctor_argv(report, deep=True) == ["ds41f", "doctor", "--lab", "molecule-model-fanout",
                                                   "--report-dir", str(report), "--skip-tags", "verify", "--deep"]
    assert "--deep" not in real.doctor_argv(report)


def test_a_fix_that_does_not_repair_fails_its_trial_and_the_next_sees_the_leftover_row():
    objects = [FILE, UNIT, LINK]
    lab = FakeLab(objects, stuck=[UNIT["name"]])
    file_, unit, link = sweep(lab, objects)
    assert all(file_["checks"].values())
    assert not unit["checks"]["the fix repairs it"] and lab.sites == 1  # the site run restores the lab
    assert unit["checks"]["the doctor is clean after"]  # after the site run: the next doctor shows only LINK
    assert all(link["checks"].values())


def test_a_row_left_after_the_repair_fails_the_clean_check_of_the_trial_before():
    pending = [{"checks": {}}]
    dm.settle(pending, [{"node": "dgx1", "setting": "/etc/x"}])
    assert pending[0]["checks"]["the doctor is clean after"] is False and pending[0]["rows_after"]


class DockerLab(FakeLab):
    """Docker stopped on dgx2: the doctor names its unit and cannot read the rank (not checked). Starting Docker
    (host_baseline) leaves the rank exited, which the next doctor run names; the serve stage restarts it."""

    def __init__(self):
        self.docker = dict(UNIT, node="dgx2", stage="host_baseline", name="docker.service")
        super().__init__([self.docker])
        self.rank = "running"

    def sh(self, node, script, timeout=60):
        self.rank = "exited"
        return super().sh(node, script, timeout)

    def doctor(self, deep=False):
        rc, doc = super().doctor(deep)
        if self.state[dm.key(self.docker)] != "ok":
            doc["not_checked"] = [{"node": "dgx2", "check": "serving container spark-ds41f", "reason": "docker"}]
        elif self.rank != "running":
            doc["rows"].append({"node": "dgx2", "stage": "serve", "setting": "container spark-ds41f",
                                "found": "exited", "fix": "... ds41f run serve -e '{\"serve_replace\": true}' ..."})
        return (1 if doc["rows"] else 0), doc

    def run(self, stage, extra=()):
        if stage == "serve" and extra == ("-e", '{"serve_replace": true}'):
            self.rank = "running"
        return super().run(stage, extra)


def test_a_row_the_change_hid_is_looked_at_after_its_fix_and_its_own_fix_run():
    lab = DockerLab()
    (result,) = sweep(lab, [lab.docker])
    assert all(result["checks"].values()), result["checks"]
    assert result["follow_up"]["rows"] == ["dgx2 container spark-ds41f: exited"]
    assert result["follow_up"]["ran"] == [{"stage": "serve", "extra": ("-e", '{"serve_replace": true}'), "rc": 0}]
    assert lab.rank == "running"


# A setting the host baseline writes into a merged folder, as sysctl_file and managed_files declare it.
SETTINGS = [
    {"node": "dgx2", "stage": "host_baseline", "kind": "setting", "name": "/etc/sysctl.d: kernel.panic",
     "folder": "/etc/sysctl.d", "order": "last", "layout": "sysctl", "key": "kernel.panic", "value": "30"},
    {"node": "dgx3", "stage": "host_baseline", "kind": "setting", "name": "/etc/ssh/sshd_config.d: MaxStartups",
     "folder": "/etc/ssh/sshd_config.d", "order": "first", "layout": "sshd", "key": "MaxStartups",
     "value": "64:30:128"},
    {"node": "dgx1", "stage": "host_baseline", "kind": "setting",
     "name": "/etc/systemd/system/ssh.service.d: [Service] MemoryMin", "folder": "/etc/systemd/system/ssh.service.d",
     "order": "last", "layout": "systemd", "key": "[Service] MemoryMin", "value": "128M"},
]


def test_a_setting_is_changed_by_a_foreign_file_where_it_wins_and_the_row_must_name_that_file():
    sysctl, sshd, unit = SETTINGS
    assert [dm.foreign_file(o) for o in SETTINGS] == [
        "/etc/sysctl.d/zz-foreign-mutation.conf", "/etc/ssh/sshd_config.d/00-foreign-mutation.conf",
        "/etc/systemd/system/ssh.service.d/zz-foreign-mutation.conf"]
    (change,) = dm.MUTATIONS["setting"]
    assert change[2](sysctl) == ("mkdir -p /etc/sysctl.d && printf %s 'kernel.panic = 31\n' > "
                                 "/etc/sysctl.d/zz-foreign-mutation.conf")
    assert "'MaxStartups 65:30:128\n'" in change[2](sshd) and "'[Service]\nMemoryMin=129M\n'" in change[2](unit)
    row = {"node": "dgx3", "setting": "MaxStartups (sshd)", "found": "65:30:128, in ...",
           "object": {"node": "dgx3", "kind": "file", "name": "/etc/ssh/sshd_config.d/00-foreign-mutation.conf"}}
    assert dm.names(row, dm.named(sshd, change)) and not dm.names(row, sshd)
    assert not dm.names(row, dm.named(dict(sshd, node="dgx2"), change))
    assert not change[1](dict(unit, value="/usr/local/libexec/ds41f-management-health"))  # no number to change


def test_another_value_keeps_the_form_of_the_value():
    assert [dm.other_value(v) for v in ("0", "1", "30", "-900", "64:30:128", "128M", "40s", "unlimited", "yes")] == [
        "1", "0", "31", "-899", "65:30:128", "129M", "41s", "1024", None]
