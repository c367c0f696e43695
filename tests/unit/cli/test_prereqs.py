"""`make demo` / `make test` on a bare machine: the missing Debian packages are installed (root) or named with
the one command to run. PATH and dpkg are faked here; nothing on this machine is installed or removed."""

import pytest

from ds41f.lab import prereqs

ALL = ["podman", "runc", "mmdebstrap", "ip", "ping", "ssh", "ssh-keygen", "apt-get"]


def fake(present_commands, dpkg=()):
    return (lambda cmd: "/usr/bin/" + cmd if cmd in present_commands else None), (lambda pkg: pkg in dpkg)


class Apt:
    """Records apt-get calls; installing makes the packages' commands appear."""

    def __init__(self, present, dpkg, rc=0):
        self.present, self.dpkg, self.rc, self.calls = present, dpkg, rc, []

    def __call__(self, argv, env=None):
        self.calls.append(argv)
        if argv[1] == "install" and self.rc == 0:
            for pkg in argv[4:]:
                self.dpkg.add(pkg)
                self.present.update(prereqs.PACKAGES[pkg] or [])
        return type("Proc", (), {"returncode": self.rc})()


def test_a_machine_with_everything_needs_nothing():
    which, installed = fake(ALL, {"python3-venv"})
    assert prereqs.missing(which, installed) == []


def test_a_bare_machine_misses_every_package_in_order():
    which, installed = fake(["apt-get"])
    assert prereqs.missing(which, installed) == list(prereqs.PACKAGES)


def test_a_package_dpkg_lists_counts_even_off_path():
    which, installed = fake([c for c in ALL if c != "mmdebstrap"], {"python3-venv", "mmdebstrap"})
    assert prereqs.missing(which, installed) == []


def test_not_root_stops_at_once_with_the_one_command(capsys):
    which, installed = fake([c for c in ALL if c not in ("podman", "ssh-keygen")], {"python3-venv"})
    apt = Apt(set(), set())
    assert prereqs.main([], which, installed, apt, euid=lambda: 1000) == 2
    assert apt.calls == []
    assert capsys.readouterr().err.strip() == (
        "missing Debian packages: podman, openssh-client. Fix: sudo apt-get update && "
        "sudo apt-get install -y podman openssh-client")


def test_check_only_never_installs_even_as_root(capsys):
    which, installed = fake(["apt-get"])
    apt = Apt(set(), set())
    assert prereqs.main(["--check"], which, installed, apt, euid=lambda: 0) == 2
    assert apt.calls == []
    assert "Fix: apt-get update && apt-get install -y podman runc mmdebstrap" in capsys.readouterr().err


def test_root_installs_what_is_missing_and_checks_again(capsys):
    present, dpkg = {"apt-get", "ip", "ping"}, {"python3-venv"}
    apt = Apt(present, dpkg)
    which = lambda cmd: "/usr/bin/" + cmd if cmd in present else None  # noqa: E731
    assert prereqs.main([], which, lambda pkg: pkg in dpkg, apt, euid=lambda: 0) == 0
    assert apt.calls == [["apt-get", "update", "-qq"],
                         ["apt-get", "install", "-y", "-qq", "podman", "runc", "mmdebstrap", "openssh-client"]]
    assert "installing the missing Debian packages: podman runc mmdebstrap openssh-client" in capsys.readouterr().out


@pytest.mark.parametrize("rc", [100])
def test_a_failing_apt_stops_with_the_command_and_no_traceback(capsys, rc):
    present = {"apt-get"}
    apt = Apt(present, set(), rc=rc)
    which = lambda cmd: "/usr/bin/" + cmd if cmd in present else None  # noqa: E731
    assert prereqs.main([], which, lambda pkg: False, apt, euid=lambda: 0) == 2
    assert "apt-get update failed. Fix: run `apt-get update && apt-get install -y podman" in capsys.readouterr().err


def test_dpkg_query_reads_the_status_line():
    def run(argv, capture_output, text):
        assert argv[:2] == ["dpkg-query", "--show"]
        out = {"podman": "install ok installed", "runc": "deinstall ok config-files"}.get(argv[-1], "")
        return type("Proc", (), {"returncode": 0 if out else 1, "stdout": out})()

    assert prereqs.dpkg_installed("podman", run) and not prereqs.dpkg_installed("runc", run)
    assert not prereqs.dpkg_installed("nope", run)


def test_a_lab_command_whose_tool_is_missing_names_the_package_not_a_traceback(monkeypatch, capsys):
    from ds41f import cli
    from ds41f.lab import image_inputs

    def no_mmdebstrap():
        raise FileNotFoundError(2, "No such file or directory", "mmdebstrap")

    monkeypatch.setattr(image_inputs, "ensure", no_mmdebstrap)
    assert cli.main(["lab", "image-inputs"]) == 2
    assert capsys.readouterr().err.strip() == (
        "ds41f lab: mmdebstrap is not installed. Fix: apt-get install -y mmdebstrap (or make demo, which installs "
        "what is missing)")
