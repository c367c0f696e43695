# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Secure Boot and module signing: `mokutil --sb-state`, `mokutil --test-key`, /etc/dkms/framework.conf.

mokutil's exit status is not its answer (some versions exit 1 for an enrolled key), so only its text counts.
"""

from __future__ import annotations

import re
import shlex

FRAMEWORK_CONF = "/etc/dkms/framework.conf"
SIGNING_KEYS = ("mok_signing_key", "mok_certificate")


def parse_sb_state(text):
    """True (enabled), False (disabled) or None (no EFI variables / not supported / unreadable)."""
    text = text or ""
    if re.search(r"SecureBoot enabled", text):
        return True
    if re.search(r"SecureBoot disabled", text):
        return False
    return None


def parse_test_key(text):
    """'enrolled', 'pending' (queued for the MOK manager at the next boot), 'not-enrolled' or 'unknown'."""
    text = text or ""
    if "is already enrolled" in text:
        return "enrolled"
    if "is already in the enrollment request" in text:
        return "pending"
    if "is not enrolled" in text:
        return "not-enrolled"
    return "unknown"


def parse_framework_conf(text):
    """The signing settings of a DKMS framework file (shell assignments): {name: value} for SIGNING_KEYS."""
    found = {}
    for line in (text or "").splitlines():
        stripped = line.strip()
        for key in SIGNING_KEYS:
            if stripped.startswith(key + "="):
                raw = stripped.split("=", 1)[1]
                try:
                    parts = shlex.split(raw)
                except ValueError:
                    parts = [raw]
                found[key] = parts[0] if parts else ""
    return found


def signing_overrides(host):
    """framework.conf.d drop-ins that set a signing key themselves (they would override framework.conf)."""
    out = {}
    for name in host.listdir("/etc/dkms/framework.conf.d"):
        settings = parse_framework_conf(host.read("/etc/dkms/framework.conf.d/" + name))
        if settings:
            out[name] = settings
    return out
