"""The site's TLS certificate and key, judged on the controller before any host is touched: each bad file a site
could hand over is refused naming its field and the fix, never showing a byte of the key; what a valid certificate
still deserves (validity, the addresses it names) is a warning. Every file is made in the test's own folder."""

import concurrent.futures
import datetime
import hashlib
import json
import os
import subprocess

import pytest
import yaml
from ansible.constants import DEFAULT_VAULT_ID_MATCH
from ansible.parsing.vault import VaultLib, VaultSecret

from ansible_collections.dgxspark.ds41f.plugins.module_utils import validation
from ansible_collections.dgxspark.ds41f.plugins.plugin_utils import tls
from tests.conftest import ROOT
from tests.unit import certificates as certs

from .conftest import collection_recipe, good_site, host_values
from .test_bad_inputs import BIN, SPECS, in_process

PASSWORD = b"vault password of the test"
VAULT = VaultLib([(DEFAULT_VAULT_ID_MATCH, VaultSecret(PASSWORD))])


def vault_file(path):
    """What the validate action's vault reader returns: the file opened with the run's vault secrets."""
    with open(path, "rb") as handle:
        return VAULT.decrypt(handle.read())


def values(folder, cert, key, **more):
    return dict({"serve_tls_certificate": str(cert), "serve_tls_key": str(key), "spark_site_dir": str(folder)},
                **more)


def shows_no_key(found, *key_paths):
    """Whether no line of the keys' PEM bodies (base64, 64 characters a line) is in ``found``."""
    text = json.dumps(found) if not isinstance(found, str) else found
    lines = [line.decode("ascii", "ignore") for path in key_paths for line in path.read_bytes().splitlines()]
    return not any(line in text for line in lines if len(line) >= 16 and not line.startswith("-----"))


@pytest.mark.parametrize("kind", sorted(certs.KEY_TYPES))
def test_a_pair_of_each_key_type_passes_absolute_or_relative_to_the_site_folder(kind, tmp_path):
    cert, key, _ = certs.pair(tmp_path, kind=kind)
    assert tls.problems(values(tmp_path, cert, key)) == []
    assert tls.problems(values(tmp_path, cert.name, key.name)) == []
    assert tls.problems(values(tmp_path / "elsewhere", cert, key)) == []  # absolute: the site folder is not read


def test_a_chain_passes_with_the_servers_certificate_first_and_not_the_other_way(tmp_path):
    ca_key = certs.new_key()
    ca = certs.certificate(ca_key, name="site CA", ips=(), ca=True, days=3650)
    leaf_key = certs.new_key()
    leaf = certs.certificate(leaf_key, issuer=(ca, ca_key))
    (tmp_path / "chain.crt").write_bytes(certs.pem(leaf, ca))
    (tmp_path / "wrong-order.crt").write_bytes(certs.pem(ca, leaf))
    (tmp_path / "leaf.key").write_bytes(certs.pem(leaf_key))
    assert tls.problems(values(tmp_path, "chain.crt", "leaf.key")) == []
    found = tls.problems(values(tmp_path, "wrong-order.crt", "leaf.key"))
    assert [f[0] for f in found] == ["serve_tls_key"] and "public keys differ" in found[0][1]
    assert "server's certificate first" in found[0][2]


def test_neither_is_plain_http_and_one_alone_is_refused_naming_the_other(tmp_path):
    cert, key, _ = certs.pair(tmp_path)
    assert tls.problems(values(tmp_path, "", "")) == []
    for given, missing in (("serve_tls_certificate", "serve_tls_key"), ("serve_tls_key", "serve_tls_certificate")):
        found = tls.problems(dict(values(tmp_path, cert, key), **{missing: ""}))
        assert [f[0] for f in found] == [missing]
        assert given in found[0][1] and "plain HTTP" in found[0][2]


def bad_files():
    """(id, certificate bytes or None for the good one, key bytes or None for the good one, field refused, words)
    of every wrong file a site could give: generated from what a PEM file can hold."""
    other_key = certs.new_key()
    other_cert = certs.certificate(other_key)
    good_key = certs.new_key()
    good_cert = certs.certificate(good_key)
    der_cert = other_cert.public_bytes(certs.serialization.Encoding.DER)
    der_key = good_key.private_bytes(certs.serialization.Encoding.DER, certs.serialization.PrivateFormat.PKCS8,
                                     certs.serialization.NoEncryption())
    cases = [
        ("an empty certificate file", b"", None, "serve_tls_certificate", "not a PEM certificate"),
        ("a DER certificate", der_cert, None, "serve_tls_certificate", "not a PEM certificate"),
        ("text as the certificate", b"hello\n", None, "serve_tls_certificate", "not a PEM certificate"),
        ("the key as the certificate", certs.pem(good_key), None, "serve_tls_certificate", "not a PEM certificate"),
        ("a certificate file that holds its key", certs.pem(good_cert, good_key), None, "serve_tls_certificate",
         "holds a private key"),
        ("an empty key file", None, b"", "serve_tls_key", "not a PEM private key"),
        ("a DER key", None, der_key, "serve_tls_key", "not a PEM private key"),
        ("the certificate as the key", None, certs.pem(good_cert), "serve_tls_key", "not a PEM private key"),
        ("a key of another certificate", None, certs.pem(other_key), "serve_tls_key", "public keys differ"),
        ("a key with a passphrase", None, certs.pem(good_key, password=b"secret"), "serve_tls_key", "passphrase"),
        ("a vault-encrypted certificate", VAULT.encrypt(certs.pem(good_cert)), None, "serve_tls_certificate",
         "vault-encrypted"),
    ]
    return [(cid, cert if cert is not None else certs.pem(good_cert), key if key is not None else certs.pem(good_key),
             field, words) for cid, cert, key, field, words in cases]


BAD_IDS = [c[0] for c in bad_files()]


@pytest.mark.parametrize("case", BAD_IDS)
def test_each_bad_file_is_refused_naming_its_field_and_the_fix_without_the_key(case, tmp_path):
    _, cert_data, key_data, field, words = next(c for c in bad_files() if c[0] == case)
    (tmp_path / "site.crt").write_bytes(cert_data)
    (tmp_path / "site.key").write_bytes(key_data)
    found = tls.problems(values(tmp_path, "site.crt", "site.key"), vault_file)
    assert found and {f[0] for f in found} == {field}, found
    assert any(words in f[1] for f in found) and all(f[2] for f in found)
    assert shows_no_key(found, tmp_path / "site.key")


@pytest.mark.parametrize("field", ["serve_tls_certificate", "serve_tls_key"])
def test_a_missing_file_or_a_folder_is_refused_naming_the_site_folder(field, tmp_path):
    cert, key, _ = certs.pair(tmp_path)
    (tmp_path / "a-folder").mkdir()
    for name, words in (("gone.pem", "does not exist"), ("a-folder", "is a folder")):
        found = tls.problems(dict(values(tmp_path, cert.name, key.name), **{field: name}))
        assert [f[0] for f in found] == [field]
        assert words in found[0][1] and str(tmp_path / name) in found[0][1]
        assert "site folder %s" % tmp_path in found[0][1]


def test_a_vault_encrypted_key_is_opened_with_the_runs_vault(tmp_path):
    cert, key, _ = certs.pair(tmp_path)
    key.write_bytes(VAULT.encrypt(key.read_bytes()))
    assert tls.problems(values(tmp_path, cert, key), vault_file) == []

    def no_secret(path):
        raise RuntimeError("Attempting to decrypt but no vault secrets found")

    found = tls.problems(values(tmp_path, cert, key), no_secret)
    assert [f[0] for f in found] == ["serve_tls_key"] and "no vault secrets" in found[0][1]
    assert "vault password" in found[0][2]


@pytest.mark.parametrize("days, start, words", [(-2, -30, "expired on"), (90, 2, "not valid before"),
                                                (10, -1, "expires on"), (1, -1, "in 0 days")])
def test_validity_is_a_notice_never_a_refusal(days, start, words, tmp_path):
    cert, key, _ = certs.pair(tmp_path, days=days, start_days=start, ips=("192.0.2.11",))
    site = values(tmp_path, cert, key, serve_listen=["192.0.2.11"])
    assert tls.problems(site) == []
    notes = tls.notices(site, "192.0.2.11")
    assert [n[0] for n in notes] == ["serve_tls_certificate"] and words in notes[0][1], notes


def test_a_head_address_the_certificate_does_not_name_is_a_notice(tmp_path):
    cert, key, _ = certs.pair(tmp_path, ips=("192.0.2.11",), dns=("api.example.test",))
    site = values(tmp_path, cert, key, serve_listen=["192.0.2.11"])
    assert tls.notices(site, "192.0.2.11") == []
    # every interface: the head's management address is how clients reach it; loopback needs no name (plain)
    assert tls.notices(dict(site, serve_listen=["0.0.0.0", "127.0.0.1"]), "192.0.2.11") == []
    notes = tls.notices(dict(site, serve_listen=["192.0.2.11", "198.51.100.7"]), "192.0.2.11")
    assert len(notes) == 1 and "does not name 198.51.100.7" in notes[0][1]
    assert "192.0.2.11, api.example.test" in notes[0][1] and "IP:198.51.100.7" in notes[0][2]


def test_the_validation_refuses_through_the_recipe_and_says_what_it_warns(tmp_path, no_contact):
    cert, key, _ = certs.pair(tmp_path, ips=("192.0.2.11",))
    _, other, _ = certs.pair(tmp_path, stem="other")
    site = good_site()
    site["vars"] = {"serve_tls_certificate": cert.name, "serve_tls_key": other.name}
    values_ = host_values(site, {"spark_site_dir": str(tmp_path)})
    _, problems = validation.check(site, list(values_), values_, SPECS, collection_recipe())
    assert [p.field for p in problems] == ["serve_tls_key"], [str(p) for p in problems]
    _, problems = in_process(good_site(), {"serve_tls_key": str(key)}, "-e")
    assert [p.field for p in problems] == ["serve_tls_certificate"]
    assert no_contact == []


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """The real validation play over a site folder that names its pair relatively, the key vault-encrypted, then
    the serve role's own variables templated for the head (nothing connects: the site is on TEST-NET-1, and ssh is
    a stub that records any call); and a site whose key is another certificate's. {case: (rc, output)}."""
    from .conftest import ssh_stub

    root = tmp_path_factory.mktemp("tls-e2e")
    ssh, record = ssh_stub(root)
    runs = {}
    for case in ("good", "another key"):
        folder = root / case.replace(" ", "-")
        folder.mkdir()
        cert, key, _ = certs.pair(folder, days=10, ips=("192.0.2.11",))
        certs.pair(folder, stem="other")
        key_sha256 = hashlib.sha256(key.read_bytes()).hexdigest()
        key.write_bytes(VAULT.encrypt(key.read_bytes()))
        (folder / "vault-pass").write_bytes(PASSWORD)
        site = dict(good_site(), vars={"serve_tls_certificate": "site.crt", "serve_listen": ["192.0.2.11",
                                                                                             "192.0.2.12"],
                                       "serve_tls_key": "site.key" if case == "good" else "other.key"})
        (folder / "site.spark.yml").write_text(yaml.safe_dump(site))
        (folder / "play.yml").write_text(yaml.safe_dump([
            {"import_playbook": str(ROOT / "playbooks" / "validate.yml")},
            {"hosts": "spark_head", "gather_facts": False, "vars": {"serve_api_key_required": True},
             "tasks": [{"ansible.builtin.include_vars": {"file": str(ROOT / "roles" / "serve" / "vars" / "main.yml")}},
                       {"name": "The proxy's arguments carry the site's files", "no_log": True,
                        "ansible.builtin.assert": {"that": [
                            "serve__proxy_args.tls_certificate | ansible.builtin.hash('sha256') == '%s'" % (
                                hashlib.sha256(cert.read_bytes()).hexdigest()),
                            "serve__proxy_args.tls_key | ansible.builtin.hash('sha256') == '%s'" % key_sha256]}}]}]))
        runs[case] = folder
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_SSH_EXECUTABLE=str(ssh),
               ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ["PATH"])

    def play(folder):
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(folder / "site.spark.yml"),
                               "--vault-password-file", str(folder / "vault-pass"), str(folder / "play.yml")],
                              cwd=ROOT, text=True, capture_output=True, timeout=300,
                              env=dict(env, ANSIBLE_LOCAL_TEMP=str(folder / "tmp")))
        return proc.returncode, proc.stdout + proc.stderr

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(runs, pool.map(play, runs.values()), strict=True))
    return results, record, runs


def test_the_validation_play_reads_the_site_folder_and_the_vault_and_warns(e2e):
    results, record, runs = e2e
    rc, out = results["good"]
    assert rc == 0, out[-3000:]
    assert "serve_tls_certificate: expires on" in out and "in 9 days" in out, out[-3000:]
    assert "does not name 192.0.2.12" in out
    assert "The proxy's arguments carry the site's files" in out
    assert shows_no_key(out, runs["good"] / "site.key") and "BEGIN PRIVATE KEY" not in out
    assert record.read_text() == ""


def test_the_validation_play_stops_on_a_key_of_another_certificate(e2e):
    results, record, runs = e2e
    rc, out = results["another key"]
    assert rc != 0 and "serve_tls_key: is not the key of the certificate" in out, out[-3000:]
    assert "BEGIN PRIVATE KEY" not in out
    assert record.read_text() == ""


def test_the_expiry_date_is_the_certificates():
    cert = certs.certificate(certs.new_key(), days=40)
    assert tls.validity(cert) is None
    later = certs.NOW + datetime.timedelta(days=41)
    assert tls.validity(cert, later)[0] == "error"
