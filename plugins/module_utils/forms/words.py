# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""One-word forms: the syntax of a value where one program reads it (apt, modprobe, limits.d, docker run, git,
nvidia-smi, the hub, the kernel). Each function returns (reason, fix) when the value does not have the form, else
None; a value is a string unless the form says otherwise.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import firewall, proxy

_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]+")
_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~:_-]*")
_USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}")
_MODPROBE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.,:+/-]+)?")
_URL = re.compile(r"https://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%+-]+)+/?")
_HUB = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
# docker's reference grammar (distribution/reference): [host[:port]/]path[:tag][@digest], path in lower case.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
                    r"(?::[0-9]+)?/)?%s(?:/%s)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
                    % (_COMPONENT, _COMPONENT))
_COMMAND = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*|(/[A-Za-z0-9._+@~-]+)+")
_CPUS = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*")
_CLOCKS = re.compile(r"([0-9]+),([0-9]+)")
_GPUS = re.compile(r"all|[1-9][0-9]*|device=[0-9A-Za-z-]+(,[0-9A-Za-z-]+)*")
_CAP = re.compile(r"(CAP_)?[A-Z][A-Z_]*")
_SECURITY_OPT = re.compile(r"[a-z-]+([=:][A-Za-z0-9_.,:/=-]+)?")
ULIMITS = ("core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss", "rtprio",
           "rttime", "sigpending", "stack")
_ULIMIT = re.compile(r"(?P<name>[a-z]+)=(?P<soft>-1|[0-9]+)(:(?P<hard>-1|[0-9]+))?")
_FLAG = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_-]*")


def _fits(pattern, value):
    return isinstance(value, str) and bool(pattern.fullmatch(value))


def package(value):
    if _fits(re.compile(r"%s(=%s)?" % (_PACKAGE.pattern, _VERSION.pattern)), value):
        return None
    return ("is not a Debian package name, optionally with =version: apt would read another argument or none.",
            "write name or name=version (lower-case name of letters, digits, + - .), e.g. dkms or "
            "linux-image-7.0.0-1019-nvidia-64k=7.0.0-1019.19~24.04.2.")


def version(value):
    if _fits(_VERSION, value):
        return None
    return ("is not a version (a digit, then letters, digits and . + ~ : _ -).", "write it as the package manager "
            "or the kernel prints it, e.g. 580.178.04 or 7.0.0-1019-nvidia-64k.")


def user(value):
    if _fits(_USER, value):
        return None
    return ("is not a Unix user name: limits.d reads a line per user, and * or @group there would give every user "
            "or a group unlimited locked memory.", "write a user name (lower-case letters, digits, _ . -, at most "
            "32), one per element.")


def variable(value):
    if _fits(_VARIABLE, value):
        return None
    return ("is not a variable name.", "use letters, digits and underscores, not starting with a digit.")


def interface(value):
    if _fits(_IFNAME, value):
        return None
    return ("is not a network interface name (at most 15 characters, no slash or space).",
            "write the netdev as ip link shows it, e.g. enP7s7.")


def modprobe_options(value):
    if isinstance(value, str) and value and all(_MODPROBE.fullmatch(w) for w in value.split(" ")):
        return None
    return ("is not a modprobe option list: words name=value separated by single spaces (no #, quotes or line "
            "breaks), which the options line of modprobe.d takes as they are.",
            "write it like modeset=1 fbdev=1.")


def url(value):
    if _fits(_URL, value):
        return None
    return ("is not an https URL of plain characters: git would take another transport (ext::, file://, ssh) or "
            "read part of it as an option.", "write https://host/path, e.g. https://github.com/owner/repo.git.")


def hub_repository(value):
    if _fits(_HUB, value):
        return None
    return ("is not a hub repository owner/name.",
            "write it as the hub shows it, e.g. deepseek-ai/DeepSeek-V4.1-Flash.")


def image(value):
    if _fits(_IMAGE, value) and len(value) <= 255:
        return None
    return ("is not an image reference docker accepts ([registry/]name[:tag][@sha256:digest], the name in lower "
            "case).", "write it like spark-ds41f:spark-ds41f-1030 or registry.example:5000/team/image:tag.")


def command(value):
    if _fits(_COMMAND, value):
        return None
    return ("is not a program: a name looked up on PATH or an absolute path, of plain characters.",
            "write e.g. python3 or /usr/bin/python3.")


def word(value):
    if isinstance(value, str) and value and value == value.strip():
        return None
    return ("is empty or has leading or trailing spaces: the program would get an argument it does not expect.",
            "write the argument itself.")


def text(value):
    if isinstance(value, str) and value.strip():
        return None
    return ("is empty.", "write the text.")


def ipv4(value):
    try:
        ipaddress.IPv4Address(value)
        return None
    except (ipaddress.AddressValueError, ValueError, TypeError):
        return ("is not an IPv4 address (four numbers 0-255, no leading zeros).", "write e.g. 192.168.1.11.")


def address_prefix(value):
    if isinstance(value, str) and "/" in value:
        try:
            ipaddress.ip_interface(value)
            return None
        except ValueError:
            pass
    return ("is not address/prefix.", "write e.g. 172.26.0.1/16.")


def network(value):
    try:
        ipaddress.ip_network(value)
        if "/" in value:
            return None
    except (ValueError, TypeError):
        pass
    return ("is not a network/prefix (host bits zero).", "write e.g. 172.80.0.0/16.")


def cpus(value):
    if _fits(_CPUS, value) and all(int(a) <= int(b) for a, b in
                                   (p.split("-") for p in value.split(",") if "-" in p)):
        return None
    return ("is not a CPU list docker --cpuset-cpus takes.", "write CPU numbers and ranges, e.g. 5-9,15-19.")


def clocks(value):
    match = _CLOCKS.fullmatch(value) if isinstance(value, str) else None
    if match and int(match.group(1)) <= int(match.group(2)):
        return None
    return ("is not MIN,MAX in MHz with MIN <= MAX, as nvidia-smi -lgc takes it in the unit's ExecStart= line.",
            "write e.g. 0,2200.")


def gpus(value):
    if _fits(_GPUS, value):
        return None
    return ("is not a docker --gpus request.", "write all, a count such as 1, or device=0,1.")


def capability(value):
    if _fits(_CAP, value) and value.upper() not in ("ALL", "CAP_ALL"):
        return None
    return ("is not one Linux capability name (ALL is every capability).", "write one name such as IPC_LOCK.")


def security_option(value):
    if _fits(_SECURITY_OPT, value):
        return None
    return ("is not a docker --security-opt value (key=value or key:value, one word).",
            "write e.g. seccomp=unconfined or no-new-privileges.")


def ulimit(value):
    match = _ULIMIT.fullmatch(value) if isinstance(value, str) else None
    if match and match.group("name") in ULIMITS:
        return None
    return ("is not a docker --ulimit value name=soft[:hard] (-1 for unlimited).",
            "write e.g. memlock=-1:-1; names: %s." % ", ".join(ULIMITS))


def api_key(value):
    """The key as the head's API proxy matches it (proxy.key_problem), which the key file and SGLang's config
    file carry as well."""
    if not proxy.key_problem(value):
        return None
    return ("has characters the API proxy's key map cannot match as they are (it takes letters, digits and "
            "- . _ ~ + / =).", "use only those, or leave it empty to have one generated on the head.")


def ip_address(value):
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        return ("is not an IP address.", "name an address of the head (its management address, one of its fabric "
                "addresses, or 0.0.0.0 for every interface).")


def network_or_address(value):
    """An address or network as the firewall writes it (firewall.network: never every address)."""
    try:
        firewall.network(value, "")
        return None
    except firewall.FirewallError as exc:
        message, _, fix = str(exc).partition(": ")[2].partition(" Fix: ")
        return (message.split(" ", 1)[1] if message.startswith("'") else message, fix)


def flag_name(value):
    if _fits(_FLAG, value):
        return None
    return ("is not a flag name (--name).", "write the flag as the engine's help lists it, e.g. --engram-config.")
