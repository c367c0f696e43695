"""validate.yml runs its checks once per run: site.yml and the doctor import it before every stage, and each stage
playbook alone still validates. Through the real ansible-playbook; the site's addresses do not exist, so a passing
run also proves no play opened a connection."""

from tests.unit.foundation.test_inventory_plugin import ROOT, ansible, base_site, write_site

VALIDATED = "site tp3-triangle: 3 nodes"


def twice(tmp_path):
    """A playbook that imports validate.yml as site.yml imports it: once per stage (here two stages)."""
    playbook = tmp_path / "two_stages.yml"
    playbook.write_text("".join("- name: Stage %d\n  ansible.builtin.import_playbook: %s\n" % (
        i, ROOT / "playbooks" / "validate.yml") for i in (1, 2)))
    return playbook


def test_two_imports_validate_once(tmp_path):
    proc = ansible("ansible-playbook", "-i", write_site(tmp_path, base_site()), twice(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(VALIDATED) == 1, proc.stdout


def test_validate_alone_still_validates_and_a_bad_site_still_stops_the_first_import(tmp_path):
    alone = ansible("ansible-playbook", "-i", write_site(tmp_path, base_site()), ROOT / "playbooks" / "validate.yml")
    assert alone.returncode == 0 and alone.stdout.count(VALIDATED) == 1, alone.stdout + alone.stderr
    bad_site = write_site(tmp_path, base_site(vars={"site_config_alignment_keys": "kernel"}))
    bad = ansible("ansible-playbook", "-i", bad_site, twice(tmp_path))
    assert bad.returncode != 0 and "site_config_alignment_keys" in bad.stdout + bad.stderr
    assert "PLAY [Validate the site and recipe on the controller]" in bad.stdout
    assert bad.stdout.count("PLAY [Validate the site and recipe on the controller]") == 1, bad.stdout
