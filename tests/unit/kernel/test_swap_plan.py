"""Swap for both page sizes: fstab edits and the page size a real mkswap header was made for."""

import subprocess

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import swap_plan

# Ubuntu's installer writes the swap file line with tabs and "sw" options.
FSTAB = "UUID=abc\t/\text4\tdefaults\t0\t1\n/swap.img\tnone\tswap\tsw\t0\t0\n"


def test_the_original_becomes_noauto_and_the_64k_file_is_added_noauto():
    planned = swap_plan.plan_fstab(FSTAB, "/swap.img", "/swap-64k.img")
    lines = planned.splitlines()
    assert lines[0] == "UUID=abc\t/\text4\tdefaults\t0\t1"  # untouched
    assert lines[1] == "/swap.img\tnone\tswap\tsw,noauto\t0\t0"
    assert lines[2] == "/swap-64k.img\tnone\tswap\tnoauto\t0\t0"
    assert swap_plan.plan_fstab(planned, "/swap.img", "/swap-64k.img") == planned  # idempotent


def test_revert_restores_the_original_line_from_the_backup_and_drops_the_64k_line():
    planned = swap_plan.plan_fstab(FSTAB, "/swap.img", "/swap-64k.img")
    assert swap_plan.revert_fstab(planned, FSTAB, "/swap.img", "/swap-64k.img") == FSTAB


def test_a_line_without_options_gets_defaults_plus_noauto():
    planned = swap_plan.plan_fstab("/swap.img none swap\n", "/swap.img", "/s64")
    assert planned.splitlines()[0] == "/swap.img\tnone\tswap\tdefaults,noauto\t0\t0"


def test_active_swaps_are_read_from_proc_swaps():
    proc = ("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
            "/swap.img                               file\t\t8388604\t\t0\t\t-2\n")
    assert swap_plan.active_swaps(proc) == ["/swap.img"]
    assert swap_plan.active_swaps("Filename\tType\tSize\tUsed\tPriority\n") == []


@pytest.mark.parametrize("page", [4096, 65536])
def test_the_header_of_a_real_mkswap_tells_its_page_size(tmp_path, page):
    # mkswap on a temporary file (never swapon): the header is what the 64k kernel checks.
    area = tmp_path / "swap"
    area.write_bytes(b"\0" * (page * 16))
    subprocess.run(["mkswap", "--pagesize", str(page), str(area)], check=True, capture_output=True)
    assert swap_plan.header_page_size(area.read_bytes()[:65536]) == page


def test_a_file_without_a_swap_header_has_no_page_size():
    assert swap_plan.header_page_size(b"\0" * 65536) is None
