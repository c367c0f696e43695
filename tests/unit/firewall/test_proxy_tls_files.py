"""The serve stage's copy of the site's certificate and key on the head (serve_proxy's tls_pair): written once
with their modes, a change of either is a row about its file and a reload, and the key's bytes are in no row,
diff or action. Files in the test's own folder; the pair is made there too."""

import json
import os

from ansible_collections.dgxspark.ds41f.plugins.module_utils.converge import Plan
from ansible_collections.dgxspark.ds41f.plugins.modules import serve_proxy
from tests.unit import certificates as certs


class Module:
    def __init__(self, check_mode):
        self.check_mode = check_mode


def content_rows(plan):
    return [(r["setting"], r["found"], r["object"]["name"]) for r in plan.drift if "attributes" not in r["setting"]]


def keep(folder, cert, key, check_mode=False):
    plan = Plan(Module(check_mode), fix="ds41f run serve")
    paths = (str(folder / "tls.crt"), str(folder / "tls.key"))
    return plan, serve_proxy.tls_pair(plan, paths, cert, key)


def key_lines(key):
    return [line for line in key.splitlines() if len(line) >= 16 and not line.startswith("-----")]


def test_the_pair_is_written_once_with_its_modes_and_the_key_never_shown(tmp_path):
    cert, key, _ = certs.pair(tmp_path, stem="site")
    cert, key = cert.read_text(), key.read_text()
    head = tmp_path / "head"
    head.mkdir(mode=0o700)
    plan, reload = keep(head, cert, key, check_mode=True)
    assert reload and not (head / "tls.crt").exists() and not (head / "tls.key").exists()
    assert content_rows(plan) == [("%s/tls.crt (the site's TLS certificate)" % head, "absent", "%s/tls.crt" % head),
                                  ("%s/tls.key (the site's TLS key)" % head, "absent", "%s/tls.key" % head)]
    assert {r["fix"] for r in plan.drift} == {"ds41f run serve"}
    plan, reload = keep(head, cert, key)
    assert reload and (head / "tls.crt").read_text() == cert and (head / "tls.key").read_text() == key
    assert oct(os.stat(head / "tls.crt").st_mode & 0o777) == "0o644"
    assert oct(os.stat(head / "tls.key").st_mode & 0o777) == "0o600"
    shown = json.dumps(plan.result())
    assert not any(line in shown for line in key_lines(key)) and key_lines(cert)[0] in shown
    plan, reload = keep(head, cert, key)
    assert not reload and content_rows(plan) == []


def test_a_changed_certificate_or_key_on_the_head_is_a_row_about_that_file(tmp_path):
    cert, key, _ = certs.pair(tmp_path, stem="site")
    cert, key = cert.read_text(), key.read_text()
    other_cert, other_key, _ = certs.pair(tmp_path, stem="other")
    head = tmp_path / "head"
    head.mkdir()
    keep(head, cert, key)
    for path, text, what in ((head / "tls.crt", other_cert.read_text(), "certificate"),
                             (head / "tls.key", other_key.read_text(), "key")):
        path.write_text(text)
        plan, reload = keep(head, cert, key, check_mode=True)
        assert reload and content_rows(plan) == [
            ("%s (the site's TLS %s)" % (path, what), "another %s" % what, str(path))]
        assert plan.drift[0]["expected"] == "the site's %s (serve_tls_%s)" % (what, what)
        shown = json.dumps(plan.result())
        assert not any(line in shown for line in key_lines(key) + key_lines(other_key.read_text()))
        keep(head, cert, key)
    os.chmod(head / "tls.key", 0o644)
    plan, reload = keep(head, cert, key, check_mode=True)
    assert not reload and any(r["setting"] == "%s/tls.key attributes" % head for r in plan.drift)


def test_a_site_file_with_crlf_line_ends_is_kept_as_it_is_and_stays_in_sync(tmp_path):
    cert, key, _ = certs.pair(tmp_path, stem="site")
    cert, key = cert.read_text().replace("\n", "\r\n"), key.read_text()
    head = tmp_path / "head"
    head.mkdir()
    keep(head, cert, key)
    assert (head / "tls.crt").read_bytes() == cert.encode()
    plan, reload = keep(head, cert, key, check_mode=True)
    assert not reload and content_rows(plan) == []
