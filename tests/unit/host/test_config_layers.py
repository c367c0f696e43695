"""config_layers: the order in which each reader reads a merged folder, and which entry wins, checked against the
readers' own computation where one can be asked offline (systemd-analyze with --root: cat-config lists the files
systemd-sysctl and systemd read, verify loads a unit with its drop-ins and prints the values that win) and
against the files of a real Debian 12 lab node (tests/fixtures/config_layers/SOURCE.md)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import config_layers as layers
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES

NODE = FIXTURES / "config_layers" / "labnode-debian12"


def analyze(*args, root):
    """systemd-analyze --root=ROOT ARGS (debug output: verify then prints the unit it loaded)."""
    binary = shutil.which("systemd-analyze")
    assert binary, "systemd-analyze (package systemd) is what these tests compare with: apt-get install systemd"
    done = subprocess.run([binary, "--root=%s" % root, *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, SYSTEMD_LOG_LEVEL="debug", SYSTEMD_PAGER="", PAGER="cat"))
    return done.stdout + done.stderr


def write(root, path, text):
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text)


def cat_config_files(output, root=""):
    """The files cat-config printed, in its order, as paths on the node (its "# /path" headers)."""
    return [line[2 + len(str(root)):] for line in output.splitlines()
            if line.startswith("# %s/" % root) and " " not in line[2:]]


def random_tree(root, rng, folders, names):
    """Files of a few names spread over the folders: the same name in several (the first folder's wins), a link to
    /dev/null (masks the name), an empty file, a hidden one and one that is not *.conf (both never read)."""
    made = []
    for name in names:
        for folder in rng.sample(folders, rng.randint(1, len(folders))):
            kind = rng.choice(["file", "file", "file", "null", "empty"])
            path = "%s/%s" % (folder, name)
            if kind == "null":
                (root / folder.lstrip("/")).mkdir(parents=True, exist_ok=True)
                os.symlink("/dev/null", root / path.lstrip("/"))
            else:
                write(root, path, "" if kind == "empty" else "a.b = %s\n" % folder)
            made.append(path)
    write(root, "%s/.hidden.conf" % folders[0], "a.b = hidden\n")
    write(root, "%s/notes.txt" % folders[0], "a.b = txt\n")
    return made


@pytest.mark.parametrize("seed", range(6))
def test_the_sysctl_files_and_their_order_are_systemd_sysctls(tmp_path, seed):
    rng = random.Random(seed)
    folders = [d + "sysctl.d" for d in layers.CONF_DIRS]
    random_tree(tmp_path, rng, folders, ["10-a.conf", "50-b.conf", "95-ds41f-recovery.conf", "99-z.conf"])
    layout = layers.layout_for("/etc/sysctl.d/95-ds41f-recovery.conf")
    listed = cat_config_files(analyze("cat-config", "sysctl.d", root=tmp_path), tmp_path)
    assert layout.files(Host(str(tmp_path))) == listed


@pytest.mark.parametrize("seed", range(3))
def test_systemds_own_settings_are_system_conf_then_its_drop_ins(tmp_path, seed):
    rng = random.Random(seed)
    write(tmp_path, "/etc/systemd/system.conf", "[Manager]\n#RuntimeWatchdogSec=off\n")
    folders = [d + "systemd/system.conf.d" for d in layers.CONF_DIRS]
    random_tree(tmp_path, rng, folders, ["10-a.conf", "95-ds41f-watchdog.conf", "zz.conf"])
    layout = layers.layout_for("/etc/systemd/system.conf.d/95-ds41f-watchdog.conf")
    assert layout.files(Host(str(tmp_path))) == cat_config_files(
        analyze("cat-config", "systemd/system.conf", root=tmp_path), tmp_path)


UNIT_FILE = "[Unit]\nDescription=test\n[Service]\nExecStart=/bin/true\nOOMScoreAdjust=1\n"


@pytest.mark.parametrize("seed", range(8))
def test_a_units_drop_ins_and_the_values_that_win_are_what_systemd_loads(tmp_path, seed):
    """Drop-ins of the unit's name, its dashed prefix and its type, in every unit folder, same names and masks
    among them: the list systemd-analyze verify loads, and the OOMScoreAdjust, MemoryMin and TimeoutStartSec
    it computes, are the merge's."""
    rng = random.Random(seed)
    unit = "ds41f-test-unit.service"
    write(tmp_path, "/usr/lib/systemd/system/%s" % unit, UNIT_FILE)
    # verify's offline manager reads no runtime folders of a running systemd (control, transient, generators):
    # their place in the order is systemd-analyze unit-paths' on a running node.
    folders = [p + "/" + d for p in layers.UNIT_PATHS if not p.startswith(("/run/systemd/system.", "/run/systemd/tr",
                                                                          "/run/systemd/gen", "/etc/systemd/system.c"))
               for d in (unit + ".d", "ds41f-test-.service.d", "ds41f-.service.d", "service.d")]
    values = {"OOMScoreAdjust": ["-900", "-100", "5", "0"], "MemoryMin": ["128M", "134217728", "1G", "0"],
              "TimeoutStartSec": ["40s", "1min 30s", "90", "5min"]}
    for name in rng.sample(["10-a.conf", "50-b.conf", "95-ds41f-protect.conf", "zz.conf"], 3):
        for folder in rng.sample(folders, rng.randint(1, 4)):
            key = rng.choice(list(values))
            write(tmp_path, "%s/%s" % (folder, name), "[Service]\n%s=%s\n" % (key, rng.choice(values[key])))
    out = analyze("verify", unit, root=tmp_path)
    loaded = [line.split("DropIn Path: ")[1][len(str(tmp_path)):] for line in out.splitlines()
              if "DropIn Path: " in line]
    layout = layers.Unit("/etc/systemd/system/%s.d/95-ds41f-protect.conf" % unit, unit)
    host = Host(str(tmp_path))
    entries = layout.entries(host, [])
    assert layout.files(host) == ["/usr/lib/systemd/system/%s" % unit] + loaded
    dumped = dict(line.strip().partition(": ")[::2] for line in out.splitlines() if line.startswith("\t\t"))
    for key in values:
        winner = [e.value for e in entries if e.key == "[Service] %s" % key]
        if winner:
            assert layout.same("[Service] %s" % key, winner[-1], systemd_value(key, dumped[key])), (key, winner)


def systemd_value(key, dumped):
    """A value as verify's dump prints it, in the unit file's syntax (MemoryMin in bytes, times with spaces)."""
    return dumped.replace(" ", "") if key.endswith("Sec") and "min" in dumped else dumped


def test_sysctl_names_write_proc_paths_by_their_first_separator():
    assert layers.Sysctl.key("kernel.panic") == layers.Sysctl.key("kernel/panic") == "kernel/panic"
    assert layers.Sysctl.key("net.ipv4.conf.enp3s0/200.forwarding") == "net/ipv4/conf/enp3s0.200/forwarding"
    assert layers.Sysctl.key("net/ipv4/conf/enp3s0.200/forwarding") == "net/ipv4/conf/enp3s0.200/forwarding"


def test_a_later_sysctl_wins_a_glob_never_beats_an_explicit_key_and_dash_lines_count(tmp_path):
    host = Host(str(tmp_path))
    write(tmp_path, "/usr/lib/sysctl.d/99-vendor.conf", "kernel.* = 9\n-kernel/panic = 7\n")
    write(tmp_path, "/etc/sysctl.d/10-early.conf", "kernel.panic = 5\n")
    layout = layers.layout_for("/etc/sysctl.d/95-ds41f-recovery.conf")
    [(mine, theirs)] = layers.overrides(host, layout, "kernel.panic = 30\n")
    assert (mine.value, theirs.path, theirs.line, theirs.value) == ("30", "/usr/lib/sysctl.d/99-vendor.conf", 2, "7")


def test_a_file_that_gives_the_stages_value_last_leaves_the_earlier_foreign_ones_out(tmp_path):
    """Only what changes the outcome: 97 sets another value, 98 the stage's again, 99 another: 99 alone is a row."""
    host = Host(str(tmp_path))
    for name, value in (("97-a", 1), ("98-b", 30), ("99-c", 2)):
        write(tmp_path, "/etc/sysctl.d/%s.conf" % name, "kernel.panic = %s\n" % value)
    layout = layers.layout_for("/etc/sysctl.d/95-ds41f-recovery.conf")
    assert [t.path for _, t in layers.overrides(host, layout, "kernel.panic = 30\n")] == ["/etc/sysctl.d/99-c.conf"]
    write(tmp_path, "/etc/sysctl.d/98-b.conf", "kernel.panic = 3\n")  # now each of the three would take effect in turn
    assert [t.path for _, t in layers.overrides(host, layout, "kernel.panic = 30\n")] == [
        "/etc/sysctl.d/97-a.conf", "/etc/sysctl.d/98-b.conf", "/etc/sysctl.d/99-c.conf"]


def test_etc_sysctl_conf_counts_where_debian_links_it_and_is_named_as_itself(tmp_path):
    host = Host(str(tmp_path))
    write(tmp_path, "/etc/sysctl.conf", "#kernel.panic = 0\nkernel.panic = 0\n")
    (tmp_path / "etc" / "sysctl.d").mkdir()
    os.symlink("../sysctl.conf", tmp_path / "etc" / "sysctl.d" / "99-sysctl.conf")
    layout = layers.layout_for("/etc/sysctl.d/95-ds41f-recovery.conf")
    [(_, theirs)] = layers.overrides(host, layout, "kernel.panic = 30\n")
    assert (theirs.path, theirs.line, layers.resolve(host, theirs.path)) == (
        "/etc/sysctl.d/99-sysctl.conf", 2, "/etc/sysctl.conf")


def test_modprobe_options_are_per_parameter_with_dashes_and_underscores_alike(tmp_path):
    host = Host(str(tmp_path))
    write(tmp_path, "/lib/modprobe.d/nvidia-graphics-drivers-kms.conf", "options nvidia_drm modeset=0 foo=1\n")
    write(tmp_path, "/etc/modprobe.d/10-early.conf", "options nvidia-drm fbdev=0\n")
    layout = layers.layout_for("/etc/modprobe.d/95-ds41f-nvidia-drm.conf")
    found = layers.overrides(host, layout, "options nvidia-drm modeset=1 fbdev=1\n")
    assert [(m.name, t.path, t.value) for m, t in found] == [
        ("nvidia_drm modeset", "/lib/modprobe.d/nvidia-graphics-drivers-kms.conf", "0")]
    # Turned off, the line keeps its other parameters: modprobe.d has no comment after a value.
    text = (tmp_path / "lib/modprobe.d/nvidia-graphics-drivers-kms.conf").read_text() + "# the end\n"
    assert layers.turned_off(layout, text, [t for _, t in found], lambda e: "off").splitlines() == [
        "# off", "#options nvidia_drm modeset=0 foo=1", "options nvidia_drm foo=1", "# the end"]


def test_a_users_own_limits_line_beats_group_and_star_lines_and_no_limits_undoes_them(tmp_path):
    host = Host(str(tmp_path))
    write(tmp_path, "/etc/security/limits.conf", "root hard memlock 8\n")  # read first: the stage's wins over it
    write(tmp_path, "/etc/security/limits.d/99-site.conf", "* soft memlock 64\n@root hard memlock 64\n"
                                                           ":0 - memlock 32\n")
    layout = layers.layout_for("/etc/security/limits.d/95-ds41f-memlock.conf")
    own = "root soft memlock unlimited\nroot hard memlock unlimited\n"
    assert [(m.name, t.line, t.value) for m, t in layers.overrides(host, layout, own)] == [
        ("root soft memlock", 3, "32"), ("root hard memlock", 3, "32")]  # the uid range is root's own line
    write(tmp_path, "/etc/security/limits.d/99-site.conf", "root -\n")
    assert {t.value for _, t in layers.overrides(host, layout, own)} == {layers.NO_LIMITS}
    write(tmp_path, "/etc/security/limits.d/99-site.conf", "root soft memlock infinity\n")
    assert layers.overrides(host, layout, own) == []


SSHD_MAIN = (NODE / "etc/ssh/sshd_config").read_text()


def test_sshd_keeps_the_first_value_reads_includes_where_they_stand_and_skips_match_blocks(tmp_path):
    host = Host(str(tmp_path))
    write(tmp_path, "/etc/ssh/sshd_config", SSHD_MAIN + "LoginGraceTime 99\nMatch User backup\n  MaxStartups 1\n")
    write(tmp_path, "/etc/ssh/sshd_config.d/00-site.conf", "logingracetime=2m\nMaxStartups 64:30:128\n")
    layout = layers.layout_for("/etc/ssh/sshd_config.d/01-ds41f-recovery.conf")
    own = "LoginGraceTime 30\nMaxStartups 64:30:128\nPerSourceMaxStartups 32\n"
    assert [(m.name, t.path, t.value) for m, t in layers.overrides(host, layout, own)] == [
        ("LoginGraceTime", "/etc/ssh/sshd_config.d/00-site.conf", "2m")]
    write(tmp_path, "/etc/ssh/sshd_config.d/00-site.conf", "LoginGraceTime 30s\n")  # sshd -T shows 30: the same
    assert layers.overrides(host, layout, own) == []
    assert layout.read_by_sshd(layers.Overlay(host, {layout.path: own}))
    write(tmp_path, "/etc/ssh/sshd_config", "LoginGraceTime 99\n")  # no Include: the stage's file is not read
    assert not layout.read_by_sshd(layers.Overlay(host, {layout.path: own}))


def test_the_lab_nodes_real_files_are_read_in_the_order_the_node_printed(tmp_path):
    """A Debian 12 lab node's own sysctl.d, sshd_config and system.conf, as its systemd-analyze cat-config listed
    them (recorded on the node); sshd reads the baseline's drop-in through Debian's Include."""
    host = Host(str(NODE))
    recorded = (FIXTURES / "config_layers" / "cat-config-sysctl.d.txt").read_text()
    assert layers.layout_for("/etc/sysctl.d/95-ds41f-recovery.conf").files(host) == cat_config_files(recorded)
    sshd = layers.layout_for("/etc/ssh/sshd_config.d/01-ds41f-recovery.conf")
    assert sshd.read_by_sshd(host)
    assert [e.name for e in sshd.entries(host, []) if e.path == sshd.path] == [
        "LoginGraceTime", "MaxStartups", "PerSourceMaxStartups"]


def test_every_folder_the_host_baseline_writes_into_has_its_reader():
    """Each of the stage's own files in a merged folder is read by the reader of that folder (the stage's file
    list, roles/host_baseline/vars/main.yml, is generated in test_foreign_files)."""
    cases = {"/etc/sysctl.d/95-ds41f-recovery.conf": layers.Sysctl, "/etc/modprobe.d/x.conf": layers.Modprobe,
             "/etc/security/limits.d/x.conf": layers.Limits, "/etc/ssh/sshd_config.d/x.conf": layers.Sshd,
             "/etc/systemd/system.conf.d/x.conf": layers.Manager,
             "/etc/systemd/system/ssh.service.d/x.conf": layers.Unit,
             "/etc/systemd/system/ds41f-management-health.timer": layers.Unit}
    for path, kind in cases.items():
        assert isinstance(layers.layout_for(path), kind), path
    assert layers.layout_for("/etc/default/grub.d/95-ds41f-console.cfg") is None
    assert layers.layout_for("/usr/local/libexec/ds41f-management-health") is None
    assert layers.Unit("/etc/systemd/system/ds41f-management-health.timer",
                       "ds41f-management-health.timer").dropin_names() == [
        "ds41f-management-health.timer.d", "ds41f-management-.timer.d", "ds41f-.timer.d", "timer.d"]


def test_on_the_converged_lab_node_every_setting_of_the_stage_is_the_one_that_counts():
    """The same node's files after `ds41f run host_baseline`: no other file overrides any of the stage's settings,
    and sshd computed the stage's values (its recorded sshd -T)."""
    host = Host(str(NODE))
    own = [p for p in (str(f)[len(str(NODE)):] for f in NODE.rglob("*ds41f*")) if layers.layout_for(p)]
    assert len(own) == 8
    for path in own:
        layout = layers.layout_for(path)
        assert layers.overrides(host, layout, host.read(path)) == [], path
        ours = {e.key: e.value for e in layout.own(host.read(path))}
        if layout.order == "last":
            found = {e.key: e.value for e in layout.entries(host, layout.own(host.read(path))) if e.key in ours}
            assert found == ours, path
    sshd_t = (FIXTURES / "config_layers" / "sshd-T.txt").read_text()
    assert {"logingracetime 30", "maxstartups 64:30:128", "persourcemaxstartups 32"} <= set(sshd_t.splitlines())
