"""Certificates and keys made in a test's own folder (cryptography, ansible-core's requirement): a site's TLS pair
as a site would hand it over, and the wrong ones a site could."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

KEY_TYPES = {"rsa": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
             "ec": lambda: ec.generate_private_key(ec.SECP256R1()),
             "ed25519": ed25519.Ed25519PrivateKey.generate}
NOW = datetime.datetime.now(datetime.UTC)


def new_key(kind="ec"):
    return KEY_TYPES[kind]()


def certificate(key, name="api.test", ips=("127.0.0.1",), dns=(), days=90, start_days=-1, issuer=None, ca=False):
    """A certificate of ``key``'s public half, valid from ``start_days`` to ``days`` from now, self-signed unless
    ``issuer`` = (its certificate, its key) signs it."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_cert, signer_key = issuer if issuer else (None, key)
    alt = [x509.IPAddress(ipaddress.ip_address(a)) for a in ips] + [x509.DNSName(d) for d in dns]
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(signer_cert.subject if signer_cert else subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(NOW + datetime.timedelta(days=start_days))
               .not_valid_after(NOW + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()),
                              critical=False))
    if alt:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                                        critical=True)
    algorithm = None if isinstance(signer_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(signer_key, algorithm)


def pem(*items, password=None):
    """PEM bytes of certificates and private keys, in order (a key encrypted with ``password``)."""
    out = b""
    for item in items:
        if isinstance(item, x509.Certificate):
            out += item.public_bytes(serialization.Encoding.PEM)
        else:
            encryption = (serialization.BestAvailableEncryption(password) if password
                          else serialization.NoEncryption())
            out += item.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return out


def pair(folder, stem="site", kind="ec", **options):
    """(certificate path, key path, key) of a new self-signed pair written in ``folder``."""
    key = new_key(kind)
    cert_path, key_path = folder / ("%s.crt" % stem), folder / ("%s.key" % stem)
    cert_path.write_bytes(pem(certificate(key, **options)))
    key_path.write_bytes(pem(key))
    key_path.chmod(0o600)
    return cert_path, key_path, key
