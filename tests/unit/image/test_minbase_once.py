"""ds41f.lab.minbase.ensure, the lab's base tarball: make test builds the lab engine (which needs it) while a
scenario's preparation may ask for it too; the tarball is built once, and the second caller gets that one."""

import subprocess
import threading
import time

from ds41f.lab import minbase


def test_two_callers_at_once_build_the_tarball_once_and_both_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(minbase, "FOLDER", tmp_path)
    monkeypatch.setattr(minbase, "TARBALL", tmp_path / "bookworm.tar")
    builds = []

    def mmdebstrap(argv, **_):  # what the real one does, slowly: writes its output file at the end
        builds.append(argv)
        time.sleep(0.5)
        with open(argv[-1], "wb") as out:
            out.write(b"rootfs")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(minbase.subprocess, "run", mmdebstrap)
    results = []
    callers = [threading.Thread(target=lambda: results.append(minbase.ensure(log=lambda _: None))) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    assert len(builds) == 1
    assert len(results) == 2 and results[0] == results[1] == (tmp_path / "bookworm.tar", minbase.sha256(
        tmp_path / "bookworm.tar"))
    assert not (tmp_path / "bookworm.tar.partial").exists()
