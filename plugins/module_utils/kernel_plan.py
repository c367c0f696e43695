# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The kernel stage's decisions, as pure functions of what was read: which GRUB entry to pin, whether a
node needs a boot and of which kind, whether a boot passed its health gate, and what follows a verdict.

The rollout is canary first, then one node at a time:

    pin the stock entry as the default  ->  install  ->  grub-reboot the target once  ->  reboot  ->  gate
        gate passed: the target becomes the default
        gate failed: the stock entry stays the default, next_entry is cleared, the node boots stock again
                     and the rollout stops
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.boot import entry_path, missing_params

PIN_FILE = "/etc/default/grub.d/zz-ds41f-kernel.cfg"
PIN_HEADER = "# Written by dgxspark.ds41f (kernel stage): the entry GRUB boots by default.\n"
CMDLINE_FILE = "/etc/default/grub.d/zz-ds41f-cmdline.cfg"
# A kernel parameter as the drop-in may carry it into a shell word: name or name=value, no quoting needed.
CMDLINE_PARAM = r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:+/-]+)?"


class PlanError(ValueError):
    """The bootloader cannot do what the stage needs; str() names the finding and the fix."""


def entry_for(entries, release, what):
    path = entry_path(entries, release)
    if path is None:
        known = sorted({e["release"] for e in entries if e["plain"] and e["release"]})
        raise PlanError("%s kernel %s has no entry in grub.cfg (entries: %s). Fix: install its packages and run "
                        "update-grub, or set the stage's release variable to one of those." % (
                            what, release, ", ".join(known) or "none"))
    return path


def pin_text(path):
    return '%sGRUB_DEFAULT="%s"\n' % (PIN_HEADER, path)


_CMDLINE_SCRIPT = """\
# Written by dgxspark.ds41f (kernel stage): kernel parameters every boot needs.
# grub-mkconfig sources this with /bin/sh after /etc/default/grub and the files sorted before it.
for _ds41f_param in %s; do
  case " $GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT " in
    *" $_ds41f_param "*) ;;
    *) GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT:+$GRUB_CMDLINE_LINUX_DEFAULT }$_ds41f_param" ;;
  esac
done
unset _ds41f_param
"""


def cmdline_text(params):
    """The GRUB drop-in that puts each of ``params`` on every normal entry's command line, unless a file sourced
    before it already does (DGX OS 26.09.2's nvidia-spark-grub-kho sets kho=off): no parameter twice."""
    return _CMDLINE_SCRIPT % " ".join(params)


def with_cmdline(decided, missing):
    """A decision (``boot_plan``) on a node whose running command line lacks ``missing``: a node that needs no other
    boot reboots into the entry it is to run (its pin names it, or this run moves the pin to it), so the parameters
    the drop-in put in grub.cfg take effect. A trial or reboot boots anyway and picks them up."""
    if missing and decided["action"] in ("none", "make-default"):
        return dict(decided, action="reboot")
    return decided


def boot_plan(want, stock, running, grub):
    """What a node needs to run ``want`` (a release): {action, pin, entry}. ``pin`` is the entry GRUB should
    boot by default now, ``entry`` the one to boot next; ``action`` is one of

    - ``none``: it runs ``want`` and the pin names it;
    - ``make-default``: it runs ``want`` (a passed trial) and the pin moves to it, no boot needed;
    - ``trial``: the stock entry stays pinned, ``want`` boots once (grub-reboot), is gated, then pinned;
    - ``reboot``: ``want`` is the stock kernel (a revert), pinned already: reboot and gate.

    Until ``want`` is installed (no entry yet) a trial has no entry. ``grub`` is None on a node without a
    bootloader of its own (a lab container); otherwise ``entries``, ``default`` (the path the pin names) and
    ``next_entry`` (a pending one-time boot).
    """
    if grub is None:
        if running == want:
            return {"action": "none", "pin": None, "entry": None}
        return {"action": "reboot" if want == stock else "trial", "pin": None, "entry": None}
    want_path = entry_path(grub["entries"], want)
    if running == want and want_path:
        action = "none" if grub.get("default") == want_path else "make-default"
        return {"action": action, "pin": want_path, "entry": want_path}
    stock_path = entry_for(grub["entries"], stock, "the stock")
    if want == stock:
        return {"action": "reboot", "pin": stock_path, "entry": stock_path}
    pending = grub.get("next_entry")
    if pending and pending != want_path:
        raise PlanError("grubenv holds next_entry=%s, a one-time boot someone else armed. Fix: check why, then "
                        "grub-editenv /boot/grub/grubenv unset next_entry." % pending)
    return {"action": "trial", "pin": stock_path, "entry": want_path}


def gate(expect, seen, container):
    """The health gate after a boot: {ok, failures, unchecked}.

    ``expect``: kernel, page_size, driver (a version, or None when no driver is expected), cmdline (parameters the
    command line must set, or None), boot (the token read before the reboot). ``seen``: kernel, page_size, driver,
    cmdline (/proc/cmdline), boot, systemd (is-system-running), marker (a lab-only file that makes this node come
    back wrong). In a container the kernel, page size, driver and command line are the host's, so they are listed
    as unchecked rather than passed or failed.
    """
    failures, unchecked = [], []
    if seen.get("boot") == expect.get("boot"):
        failures.append("no new boot: the boot identity is still %s" % seen.get("boot"))
    if seen.get("systemd") not in ("running", "degraded"):
        failures.append("systemd is %r, not running" % seen.get("systemd"))
    checks = (("kernel", expect.get("kernel"), seen.get("kernel")),
              ("page size", expect.get("page_size"), seen.get("page_size")),
              ("driver", expect.get("driver"), seen.get("driver")))
    for name, want, found in checks:
        if want is None:
            continue
        if container:
            unchecked.append("%s (a container runs the host's kernel)" % name)
        elif found != want:
            failures.append("%s is %s, expected %s" % (name, found, want))
    if expect.get("cmdline"):
        if container:
            unchecked.append("command line (a container runs the host's kernel)")
        else:
            missing = missing_params(seen.get("cmdline"), expect["cmdline"])
            if missing:
                failures.append("the kernel command line lacks %s" % " ".join(missing))
    if seen.get("marker"):
        failures.append("lab marker %s: this node was made to come back wrong" % seen["marker"])
    return {"ok": not failures, "failures": failures, "unchecked": unchecked}


def lab_running(record, stock):
    """In a container the running kernel is the host's: the release a lab node counts as running is the one
    its last passed gate recorded (the stock release before any)."""
    return (record or {}).get("kernel") or stock


def parse_apt_simulate(rc, output):
    """`apt-get --simulate --no-remove install ...`: {installs: [[package, version]], removals: [package],
    error: the first 'E:' line or None}. A transaction that needs removals is refused by --no-remove."""
    installs, removals, error = [], [], None
    for line in (output or "").splitlines():
        words = line.split()
        if line.startswith("Inst ") and len(words) >= 2:
            version = line.split("(", 1)[1].split()[0] if "(" in line else None
            installs.append([words[1], version])
        elif line.startswith("Remv ") and len(words) >= 2:
            removals.append(words[1])
        elif line.startswith("E: ") and error is None:
            error = line[3:].strip()
    if rc != 0 and error is None:
        error = "apt-get exited %d" % rc
    return {"installs": installs, "removals": removals, "error": error}
