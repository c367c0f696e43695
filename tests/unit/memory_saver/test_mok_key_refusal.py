"""mok_key stops the memory saver when Secure Boot would refuse the module: decided from recorded mokutil output
(tests/fixtures/mok), as the module reads it on a node."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import mok
from ansible_collections.dgxspark.ds41f.plugins.modules.mok_key import console_steps
from tests.conftest import FIXTURES

CERT = "/root/.local/share/dgx-spark-memory-saver/keys/MOK.der"


def decide(sb_state, test_key):
    secure_boot = mok.parse_sb_state((FIXTURES / "mok" / sb_state).read_text())
    return console_steps(secure_boot, mok.parse_test_key((FIXTURES / "mok" / test_key).read_text()), CERT, "dgx3")


def test_an_unenrolled_key_under_secure_boot_fails_naming_every_console_step():
    steps, problem = decide("sb-state-enabled.txt", "test-key-not-enrolled.txt")
    assert problem.startswith("Secure Boot is on and %s is not-enrolled." % CERT)
    assert steps[0] == "on dgx3: sudo mokutil --import %s (choose a one-time password)" % CERT
    assert "Enroll MOK" in steps[1] and "mokutil --test-key %s" % CERT in steps[2]
    assert all(step in problem for step in steps)


def test_a_pending_key_skips_the_import_it_already_had():
    steps, problem = decide("sb-state-enabled.txt", "test-key-pending.txt")
    assert "is pending" in problem
    assert not any("mokutil --import" in step for step in steps) and len(steps) == 3


@pytest.mark.parametrize("sb_state, test_key", [("sb-state-enabled.txt", "test-key-enrolled.txt"),
                                                ("sb-state-disabled.txt", "test-key-not-enrolled.txt")])
def test_an_enrolled_key_or_secure_boot_off_lets_the_stage_go_on(sb_state, test_key):
    assert decide(sb_state, test_key) == ([], None)


def test_no_efi_to_read_lets_the_stage_go_on():
    assert console_steps(None, "unknown", CERT, "dgx3") == ([], None)
