"""The serve role's NFS checkpoint share and SM clock cap files, rendered as the role renders them.

The lab cannot load kernel modules (nfsd), so no real NFS mount happens in this project's tests: these check the
rendered export, mount unit, service and timer (what the role writes on every node).
"""

import jinja2
import pytest

from .conftest import ROOT, cluster
from .sglang_recipe import sglang_values

TEMPLATES = ROOT / "roles" / "serve" / "templates"
MODEL_DIR = "/var/lib/ds41f/models/deepseek-ai--DeepSeek-V4.1-Flash/abc123"


def render(name, **variables):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    return env.get_template(name).render(ansible_managed="Ansible managed", **variables)


def lines(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@pytest.fixture
def site():
    c = cluster("tp4-switched")
    head = c.head.address
    return {"serve_model_dir": MODEL_DIR, "spark_head_address": head,
            "serve__share_clients": [n.address for n in c.nodes if n.address != head]}


def test_the_head_exports_the_checkpoint_read_only_to_every_other_rank(site):
    rows = lines(render("ds41f-checkpoint.exports.j2", **site))
    assert rows == ["%s 192.168.1.12(ro,no_subtree_check) 192.168.1.13(ro,no_subtree_check) "
                    "192.168.1.14(ro,no_subtree_check)" % MODEL_DIR]


def test_the_others_mount_the_head_copy_read_only_at_the_same_path(site):
    unit = lines(render("ds41f-checkpoint.mount.j2", **site))
    assert "What=192.168.1.11:%s" % MODEL_DIR in unit and "Where=%s" % MODEL_DIR in unit
    assert "Type=nfs" in unit and "Options=ro" in unit
    assert "After=network-online.target" in unit and "WantedBy=remote-fs.target" in unit


def test_the_clock_cap_service_and_timer_carry_the_seed_cap_and_the_site_interval():
    cap = sglang_values()["serve_sglang_clock_cap_lgc"]
    assert cap == "0,2200"
    service = lines(render("ds41f-clock-cap.service.j2", serve_clock_cap_lgc=cap))
    assert "ExecStart=/usr/bin/nvidia-smi -lgc 0,2200" in service and "Type=oneshot" in service
    timer = lines(render("ds41f-clock-cap.timer.j2", serve_clock_cap_interval="15min"))
    assert "OnUnitActiveSec=15min" in timer and "OnBootSec=0" in timer
    assert "Unit=ds41f-clock-cap.service" in timer and "WantedBy=timers.target" in timer


def test_the_seed_gives_no_interval_so_none_is_written():
    values = sglang_values()
    assert values["serve_clock_cap_interval"] == ""
    with pytest.raises(jinja2.UndefinedError):
        render("ds41f-clock-cap.timer.j2")


def test_the_ring_example_keeps_a_copy_per_node_as_the_seed_ring_profile_does():
    assert sglang_values()["serve_checkpoint_share"] is False
    assert sglang_values()["serve_sglang_checkpoint_share"] is True  # the switched profile's share
