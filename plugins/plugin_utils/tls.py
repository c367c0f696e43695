# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The API's TLS, on the controller: the site's certificate and key, and what the collection's clients trust.

A site serves the API over TLS by naming two files on the controller, ``serve_tls_certificate`` (PEM: the server's
certificate first, then any chain) and ``serve_tls_key`` (its private key, PEM, no passphrase), each absolute or
relative to the site folder (``spark_site_dir``; the roles join it the same way, with ``path_join``); the key may be
vault-encrypted. Both or neither.

``problems`` is the validation's refusal before any host is touched: each file there and readable, the certificate
a plain PEM X.509 certificate with nothing secret beside it, the key a PEM private key without a passphrase, and the
key the certificate's. ``notices`` says, without refusing, what clients will object to: a certificate that has
expired, is not valid yet or expires soon, and an address of the head it does not name. An expired certificate is
not refused: the validation runs before every command, and refusing would keep the operator from the doctor,
status and the stop exactly when the API is failing; the doctor makes it an error row instead (``findings``).

The collection's own clients trust the site's certificate file as their only CA (``client_context``); the
doctor's look from the controller (``served``) pins it: the head must present that very certificate.

Controller only: cryptography is ansible-core's own requirement.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import socket
import ssl

try:  # ansible-core requires cryptography; ansible-test's import check runs without it
    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    _DER, _SPKI = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
except ImportError:
    x509 = None

CERTIFICATE, KEY = "serve_tls_certificate", "serve_tls_key"
VAULT_HEADER = b"$ANSIBLE_VAULT;"
SOON_DAYS = 30
TIMEOUT_S = 3.0
NO_CRYPTOGRAPHY = (CERTIFICATE, "cannot be checked: the controller's Python has no cryptography package.",
                   "install it where ansible-core runs (ansible-core requires it): pip install cryptography.")


def enabled(values):
    return any(isinstance(values.get(f), str) and values.get(f) for f in (CERTIFICATE, KEY))


def site_file(value, site_dir):
    """Where a file the site names lies on the controller: as written when absolute, else in the site folder."""
    return os.path.join(site_dir or "", value)


def _read(field, value, site_dir, vault=None):
    """(bytes, None) of the file ``field`` names, or (None, (field, message, fix)). ``vault(path)``: the bytes of a
    vault-encrypted file, opened with the run's vault secrets (the key may be one; the lookup that reads it for the
    head opens it the same way)."""
    path = site_file(value, site_dir)
    where = "" if os.path.isabs(value) else " (a relative path is read from the site folder %s)" % (
        site_dir or os.getcwd())
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None, (field, "%s does not exist%s." % (path, where),
                      "put the file there, or write the path of the file as it is on the controller.")
    except IsADirectoryError:
        return None, (field, "%s is a folder, not a file%s." % (path, where), "name the PEM file itself.")
    except OSError as exc:
        return None, (field, "%s cannot be read by this user: %s." % (path, exc.strerror),
                      "let the user that runs ds41f read it (keep the key 0600, owned by that user).")
    if not data.startswith(VAULT_HEADER):
        return data, None
    if field == CERTIFICATE:
        return None, (field, "%s is vault-encrypted: a certificate is public, and the controller's clients read it "
                      "as the file they trust." % path, "keep the certificate plain; encrypt the key alone.")
    try:
        return vault(path), None
    except Exception as exc:  # whatever the vault says (no secret given, a wrong one): it holds no key's byte
        return None, (field, "%s is vault-encrypted and could not be opened: %s." % (
            path, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__),
            "give the run its vault password (--ask-vault-pass, or ANSIBLE_VAULT_PASSWORD_FILE).")


def certificates(data):
    """The certificates of a PEM file, the server's first; ValueError when there is none."""
    return x509.load_pem_x509_certificates(data)


def problems(values, vault=None):
    """[(field, message, fix)]: the site's certificate and key as the validation judges them (``vault``: see
    ``_read``). The key's bytes are never in a message."""
    cert_value, key_value = values.get(CERTIFICATE), values.get(KEY)
    if not all(isinstance(v, str) for v in (cert_value, key_value)) or not enabled(values):
        return []  # a value of another type: its spec's type check names it
    if not cert_value or not key_value:
        missing, given = (CERTIFICATE, KEY) if not cert_value else (KEY, CERTIFICATE)
        return [(missing, "is empty, but %s names a file: TLS needs the certificate and its key." % given,
                 "set %s too, or empty %s to serve plain HTTP." % (missing, given))]
    if x509 is None:
        return [NO_CRYPTOGRAPHY]
    site_dir = values.get("spark_site_dir")
    cert_data, cert_problem = _read(CERTIFICATE, cert_value, site_dir)
    key_data, key_problem = _read(KEY, key_value, site_dir, vault)
    out = [p for p in (cert_problem, key_problem) if p]
    certs = key = None
    if cert_data is not None:
        try:
            certs = certificates(cert_data)
        except ValueError:
            out.append((CERTIFICATE, "is not a PEM certificate: no -----BEGIN CERTIFICATE----- block in it parses.",
                        "give the server's certificate in PEM (from DER: openssl x509 -inform der -in cert.der "
                        "-out cert.pem), its chain after it."))
        if b"PRIVATE KEY-----" in cert_data:
            out.append((CERTIFICATE, "holds a private key: the certificate is written world-readable (0644) on "
                        "the head and handed to clients as the one they trust.",
                        "keep the key in serve_tls_key's file only, and the certificates alone in this one."))
    if key_data is not None:
        try:
            key = serialization.load_pem_private_key(key_data, password=None)
        except TypeError:  # cryptography's word for a key that needs a password
            out.append((KEY, "is encrypted with a passphrase: nginx would ask for it at every start, with no one "
                        "there to type it.", "write it without (openssl pkey -in key.pem -out plain.pem, kept 0600 "
                        "or in the vault)."))
        except (ValueError, UnsupportedAlgorithm):
            out.append((KEY, "is not a PEM private key: no -----BEGIN ... PRIVATE KEY----- block in it parses.",
                        "give the private key the certificate was issued for, in PEM."))
    if certs and key is not None and (certs[0].public_key().public_bytes(_DER, _SPKI) !=
                                      key.public_key().public_bytes(_DER, _SPKI)):
        out.append((KEY, "is not the key of the certificate in %s (%s): their public keys differ." % (
            CERTIFICATE, certs[0].subject.rfc4514_string() or "no subject"),
            "give the key that certificate was issued for; a chain file lists the server's certificate first."))
    return out


def _utc(cert, name):
    value = getattr(cert, name + "_utc", None)  # cryptography 42 and later
    return value if value is not None else getattr(cert, name).replace(tzinfo=datetime.UTC)


def validity(cert, now=None):
    """None while ``cert`` is valid beyond SOON_DAYS, else (severity, found, fix): error when clients refuse it
    now (expired, or not valid yet), warn when it expires within SOON_DAYS."""
    now = now or datetime.datetime.now(datetime.UTC)
    after, before = _utc(cert, "not_valid_after"), _utc(cert, "not_valid_before")
    renew = "renew it, replace the site's file and run ds41f run serve (nginx reloads it)"
    if now > after:
        return "error", "expired on %s: every client that checks it refuses the API" % after.date(), renew
    if now < before:
        return "error", "not valid before %s: every client that checks it refuses the API until then" % (
            before.isoformat(timespec="minutes")), ("give a certificate valid now (or correct the clock of what made "
                                                    "it), replace the site's file and run ds41f run serve")
    days = (after - now).days
    if days < SOON_DAYS:
        return "warn", "expires on %s, in %d day%s" % (after.date(), days, "" if days == 1 else "s"), renew
    return None


def names(cert):
    """(IP addresses, DNS names) the certificate's subjectAltName holds."""
    try:
        alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    return [str(a) for a in alt.get_values_for_type(x509.IPAddress)], alt.get_values_for_type(x509.DNSName)


def client_addresses(listen, head_address):
    """The addresses clients reach the API by: ``serve_listen`` but loopback, and the head's management address
    where it listens on every interface."""
    out = []
    for value in listen or []:
        try:
            address = ipaddress.ip_address(str(value))
        except ValueError:
            continue  # serve_listen's own check names it
        if address.is_unspecified:
            address = ipaddress.ip_address(head_address)
        if not address.is_loopback and str(address) not in out:
            out.append(str(address))
    return out


def notices(values, head_address, now=None, vault=None):
    """[(field, text, fix)] a valid certificate still deserves: validity, and the head's addresses it does not
    name (a client that connects by one and checks the name, as ds41f bench does, refuses it)."""
    if not enabled(values) or problems(values, vault):
        return []
    cert = certificates(_read(CERTIFICATE, values[CERTIFICATE], values.get("spark_site_dir"))[0])[0]
    out = []
    judged = validity(cert, now)
    if judged:
        out.append((CERTIFICATE, judged[1], judged[2]))
    ips, dns = names(cert)
    for address in client_addresses(values.get("serve_listen"), head_address):
        if address not in ips:
            out.append((CERTIFICATE, "does not name %s (its names: %s): a client that connects by that address and "
                        "checks the name refuses it, ds41f bench among them" % (
                            address, ", ".join(ips + dns) or "none"),
                        "add IP:%s to its subjectAltName, or have clients connect by a name it holds" % address))
    return out


def client_context(ca_file):
    """The TLS context of the collection's clients: the site's certificate file as their only CA; its first
    certificate may itself be the anchor (a self-signed or site-issued server certificate). The name is checked
    as usual."""
    context = ssl.create_default_context(cafile=ca_file)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return context


def fingerprint(der):
    return "SHA-256 %s" % hashlib.sha256(der).hexdigest()[:16]


def served(address, port, ca_file, timeout=TIMEOUT_S):
    """None when ``address:port`` presents the site's certificate (``ca_file``'s first) in a TLS handshake that
    file verifies, else what was found instead. The name is not checked here: the certificate itself is pinned,
    which no other certificate for the name could pass (``notices`` says which addresses it does not name)."""
    with open(ca_file, "rb") as handle:
        want = certificates(handle.read())[0].public_bytes(_DER)
    context = client_context(ca_file)
    context.check_hostname = False
    try:
        with socket.create_connection((address, port), timeout) as raw, context.wrap_socket(raw) as conn:
            got = conn.getpeercert(binary_form=True)
    except ssl.SSLCertVerificationError as exc:
        return "a certificate the site's does not verify (%s)" % exc.verify_message
    except ssl.SSLError as exc:
        return "no TLS handshake (%s)" % (exc.reason or exc)
    except OSError as exc:
        return "no connection (%s)" % (exc.strerror or exc)
    if got != want:
        return "another certificate (%s; the site's is %s)" % (fingerprint(got), fingerprint(want))
    return None


def findings(node, address, port, ca_file, head_file, accepted, now=None):
    """(rows, not checked) of the doctor for the API's TLS as the controller sees it: the site's certificate's
    validity, and what the head presents on ``port`` (``accepted``: whether that port took the controller's TCP
    connection). Each row's object is the head's copy of the certificate (``head_file``), or the port with that copy
    as its cause."""
    head_copy = {"kind": "file", "name": head_file}
    with open(ca_file, "rb") as handle:
        cert = certificates(handle.read())[0]
    rows = []
    judged = validity(cert, now)
    if judged:
        rows.append({"node": node, "stage": "serve", "setting": "the API's TLS certificate (%s)" % CERTIFICATE,
                     "expected": "valid for more than %d days" % SOON_DAYS, "found": judged[1],
                     "severity": judged[0], "object": head_copy, "fix": judged[2]})
    if not accepted:
        return rows, [{"node": node, "check": "the API's TLS from the controller",
                       "reason": "tcp/%d took no connection from the controller" % port}]
    found = served(address, port, ca_file)
    if found:
        rows.append({"node": node, "stage": "serve", "setting": "TLS on tcp/%d from the controller" % port,
                     "expected": "the site's certificate (%s)" % fingerprint(cert.public_bytes(_DER)),
                     "found": found, "severity": "error", "object": {"kind": "port", "name": "tcp/%d" % port},
                     "cause": head_copy, "fix": "ds41f run serve (it writes the site's certificate to %s and reloads "
                                                "nginx)" % head_file})
    return rows, []
