"""Bad inputs made from the forms: for every declared option, the values its form must refuse, by class.

Nothing here is a list of variables: the options come from the roles' argument specs and each gets the bad values
of the form it declares (``BAD``, and for a path under roots, values made from its own roots), a control character
in every string it can hold, and - for the lock-out rules, the sshd drop-in, the engine flags and the secrets -
cases made from the tables those checks keep (the units recovery needs, the sshd keywords, the flag tables).
``cases()`` returns (class, variable, value, expected field prefix); test_forms_bad_inputs.py runs them.
"""

import datetime

import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import recipe
from ansible_collections.dgxspark.ds41f.plugins.module_utils.forms import engine_flags, lockout, sshd
from tests.conftest import ROOT

# {form: bad values}; a value is a string unless the form takes a mapping or a list as a whole.
BAD = {
    "unit": ["ssh", "ssh.service; reboot", "-ssh.service", "../evil.service", "ssh service", "*.service"],
    "service unit": ["ssh.socket", "ssh", "a/b.service", "ssh.service reboot.target"],
    "time span": ["forever", "0", "infinity", "5 mins", "-5s", "1.5.2s", "0s", "10 parsecs"],
    "boot target": ["rescue.target", "emergency.target", "poweroff.target", "reboot.target", "multi-user",
                    "default.target"],
    "model folder": ["/", "/var", "/var/lib", "/etc/models", "models/x", "/var/lib/ds41f/m odels", "/usr/share/x",
                     "/var/lib/ds41f/../../etc", "/opt/x:y"],
    "container path": ["/", "/etc", "models", "/usr/lib/x", "/models:rw", "/models/"],
    "swap file": ["/etc/shadow", "/swap file.img", "/boot/swap.img", "swap.img", "/var/lib/ds41f/data.img"],
    "netplan file": ["/etc/netplan/50-cloud-init.yaml", "/etc/netplan/00-installer-config.yaml",
                     "/etc/network/interfaces", "/etc/netplan/40-cx7.yml"],
    "modprobe options": ["modeset=1 # x", "modeset=1  fbdev=1", "modeset='1'", "modeset=1;fbdev=1", ""],
    "sshd keyword": ["Match", "include", "Pass word"],
    "user name": ["*", "@wheel", "root soft", "Root", "-x"],
    "package": ["dkms; rm -rf /", "Dkms", "-y", "dkms =1", "dkms=", "foo/bar"],
    "version": ["latest", "v1.0", "1.0 ", "-1"],
    "https URL": ["http://example.com/x.git", "ext::sh -c touch% /tmp/x", "file:///etc", "https://host/x y",
                  "git@github.com:x/y.git"],
    "hub repository": ["model", "a/b/c", "a /b", "../x"],
    "image reference": ["Spark:latest", "spark ds41f", "spark:", "a:b:c", "-x"],
    "program": ["hf --token x", "./hf", "hf;id", ""],
    "argument list": [" vllm", "", "vllm "],
    "text": ["", "   "],
    "node name": ["dgx9", "DGX1", "dgxl"],
    "variable name": ["1X", "A-B", "a b"],
    "interface name": ["eth0/1", "a-very-long-interface-name", "eth 0"],
    "IPv4 address": ["192.168.1.300", "10.0.0.01", "host", "::1"],
    "address with prefix": ["172.26.0.1", "172.26.0.1/33", "x/16"],
    "network": ["172.80.0.1/16", "172.80.0.0", "default"],
    "CPU list": ["5-", "9-5", "a", "1,,2", "0-3 "],
    "clock range": ["2200", "2200,0", "0,2200,3", "max"],
    "GPU request": ["0", "some", "device=", "all,1"],
    "capability": ["ALL", "ipc_lock", "IPC LOCK", "CAP_ALL"],
    "security option": ["seccomp=unconfined apparmor=unconfined", "=x"],
    "ulimit": ["memlock", "memlock=-2", "foo=1:1", "memlock=1:2:3"],
    "bind mount": ["/:/host:rw", "/etc:/etc:ro", "/var/cache/x", "relative:/x", "/var/cache/x:/x:rx",
                   "/var/cache/x:/:rw"],
    "device": ["/etc/shadow:/dev/x", "/dev/infiniband:/dev/infiniband:rwx", "dev/x"],
    "API key": ["a b", 'key"', "x'y", "back\\slash", "semi;colon", "dollar$"],
    "network or address": ["0.0.0.0/0", "::/0", "10.0.0.300", "any", "10.0.0.0/33"],
    "IP address": ["head", "10.0.0.300", "10.0.0.0/24"],
    "controller path": [" "],
    "JSON object": [{"when": datetime.date(2026, 12, 7)}, {1: "x"}, {"a": float("nan")}, {"a": {"b": {1, 2}}}],
    "engine config of": [{"cudagraph_mod": "FULL"}, {"level": 3, "nope_key": 1}],
    "flag names per release": [{"r1": ["engram-config"]}, {"r1": "--x"}],
    "boot markers": [{"required": ["(unclosed"]}, {"bogus": []}, {"kernel_families": {"x": "[bad"}}],
    "boot markers per release": [{"rel": {"required": ["[bad"]}}, {"rel": []}],
    "guards per shape": [{"tp9-ring": {"startup_gib": 5, "steady_gib": 3}}, {"tp4-ring": {"startup": 5}}],
    "shape launch": [{"tp9-ring": {}}, {"tp4-ring": {"cpuset": "5-"}}, {"tp4-ring": {"device_cgroup_rules": ["x"]}},
                     {"tp4-ring": {"device_binds": [{"source": "/etc/shadow", "target": "/dev/x"}]}}],
    "environment": [{"A-B": "1"}, {"1A": "x"}, {"A": ["list"]}],
    "sysctl settings": [{"Kernel Panic": 1}, {"kernel": 1}, {"kernel.panic = 1 #": 1}],
    "bench arguments": [["--no-such-bench-flag"]],
}
# A good value of a list of mappings the recipe leaves empty, so each sub-option's bad value has a mapping to go in.
SAMPLES = {"firewall_allow": [{"port": 9100, "proto": "tcp", "sources": ["192.0.2.0/24"]}]}
# One of each: what the C0, C1, format and separator classes of control characters look like.
CONTROLS = ("\n", "\r", "\x00", "\x1b", "\x85", "\u202e", "\u200b", "\u2028")


def options():
    """[(variable, spec, where inside it)] of every option, sub-options as their own entries (``.key``, or
    ``[0].key`` in a list of mappings)."""
    out = []
    for path in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        for entry in yaml.safe_load(path.read_text())["argument_specs"].values():
            for name, spec in recipe._with_declared(entry.get("options") or {}).items():
                out.append((name, spec, ()))
                for key, sub in (spec.get("options") or {}).items():
                    out.append((name, sub, ("[0]." if spec.get("type") == "list" else ".") + key))
    return out


def _path_under(arg):
    root = arg.split(",")[0].strip()
    return ["relative/x", "/etc/passwd", root + "/../passwd", root + "/a b", root + "/x%i", root + "//x",
            root + "/x/", "/"]


def _shape(spec, bad):
    """The value a variable of this spec holds when its form's bad value is ``bad``."""
    if spec.get("type") == "list" and not isinstance(bad, list):
        return [bad]
    return bad


def _inject(spec, char, base):
    """``base`` (the recipe's value, or a default of the type) with ``char`` in one of its strings."""
    kind = spec.get("type", "str")
    if kind in ("str", "path"):
        return ("%sx" % base if isinstance(base, str) else "x") + char
    if kind == "list":
        return ["x%s" % char]
    if kind == "dict":
        return {"key": "x%s" % char}
    return None


def cases(recipe_values):
    """[(class, variable, value, field prefix)] over every option; ``recipe_values``: the templated recipe."""
    out, seen = [], set()
    for name, spec, keys in options():
        if (name, keys) in seen:
            continue  # an option several roles declare (kernel_release): once
        seen.add((name, keys))
        field = name + "".join(keys)
        form, arg = spec.get("form"), spec.get("form_arg")
        bads = _path_under(arg) if form == "path under" else BAD.get(form, [])
        if form is None and name == "serve_args" or form in ("engine flags", "SGLang flags"):
            bads = []  # made from the flag tables below
        for bad in bads:
            if bad == "" and spec.get("allow_empty"):
                continue
            out.append(("form: %s" % form, name, _wrap(name, keys, _shape(spec, bad), recipe_values), field))
        for char in CONTROLS:
            value = _inject(spec, char, None if keys else recipe_values.get(name))
            if value is not None:
                out.append(("control character", name, _wrap(name, keys, value, recipe_values), field))
    return out + lockout_cases(recipe_values) + sshd_cases(recipe_values) + flag_cases() + secret_cases()


def _wrap(name, keys, value, recipe_values):
    """A sub-option's value inside its parent (the recipe's mapping, or the first mapping of its list, with that key
    replaced)."""
    if not keys:
        return value
    parent, key = recipe_values.get(name) or SAMPLES.get(name), keys.rpartition(".")[2]
    if keys.startswith("[0]"):
        return [dict(parent[0], **{key: value})] + list(parent[1:])
    return dict(parent or {}, **{key: value})


def lockout_cases(recipe_values):
    needed = sorted(lockout.recovery_units(recipe_values))
    return [("lock-out: %s" % name, name, list(recipe_values.get(name) or []) + [unit], name)
            for name in lockout.LISTS for unit in needed]


def sshd_cases(recipe_values):
    base = dict(recipe_values["host_baseline_sshd"])
    out = []
    for key, (spelling, strong, _) in sshd.AUTHENTICATION.items():
        weak = {"permitrootlogin": ["yes", "no", "forced-commands-only"]}.get(key, ["yes" if strong == ("no",)
                                                                                  else "no"])
        out += [("sshd: weakens authentication", "host_baseline_sshd", dict(base, **{spelling: w}),
                 "host_baseline_sshd.%s" % spelling) for w in weak]
        out.append(("sshd: YAML boolean", "host_baseline_sshd", dict(base, **{spelling: False}),
                    "host_baseline_sshd.%s" % spelling))
    for key, (spelling, _) in sshd.LIMITS.items():
        bad = {"maxstartups": "0:30:0", "persourcenetblocksize": "0:0", "tcpkeepalive": "maybe",
               "usedns": "maybe", "loglevel": "LOUD"}.get(key, 0)
        out.append(("sshd: no limit or malformed", "host_baseline_sshd", dict(base, **{spelling: bad}),
                    "host_baseline_sshd.%s" % spelling))
    out += [("sshd: unknown keyword", "host_baseline_sshd", dict(base, **{k: v}), "host_baseline_sshd.%s" % k)
            for k, v in (("AllowUsers", "nobody"), ("Port", "2222"), ("Match", "User x"), ("Include", "/tmp/x"),
                         ("ForceCommand", "/bin/false"), ("AuthorizedKeysFile", "/dev/null"),
                         ("LoginGraceTme", 30), ("Login Grace", 30))]
    out.append(("sshd: time not in seconds", "host_baseline_sshd", dict(base, LoginGraceTime="2m"),
                "host_baseline_sshd.LoginGraceTime"))
    return out


def _misspelt(flag):
    return flag[:-2] + flag[-1] if len(flag) > 6 else flag + "x"


def flag_cases():
    """From both flag tables: a misspelt flag, a bad value of each kind, a value given to a flag that takes
    none, and a flag without its value."""
    out = []
    for engine, variable in (("vllm", "serve_args"), ("sglang", "serve_sglang_args")):
        table = engine_flags.table(engine)
        kinds = {}
        for flag, spec in table["flags"].items():
            if flag.startswith("--") and spec.get("action") != "custom" and flag not in table.get("refused", {}):
                kinds.setdefault(spec.get("type", "flag").partition("|")[0] + str(bool(spec.get("choices"))),
                                 []).append((flag, spec))
        for kind, flags in sorted(kinds.items()):
            for flag, spec in flags[:3]:
                out.append(("engine flag: misspelt", variable, [_misspelt(flag)], variable))
                if spec["nargs"] == 0:
                    out.append(("engine flag: value to a switch", variable, [flag + "=1"], variable))
                    continue
                out.append(("engine flag: without its value", variable, [flag], variable))
                bad = {"int": "x", "human_int": "1.5K", "human_int_auto": "x", "float": "x", "json": "{",
                       "config": "{"}.get(kind[:-5] if kind.endswith("False") else kind[:-4])
                if spec.get("choices"):
                    bad = "no-such-choice"
                if bad:
                    out.append(("engine flag: bad value", variable, [flag, bad], variable))
    out.append(("engine flag: patched --*-config not JSON", "serve_args", ["--engram-config", "{table_memory"],
                "serve_args"))
    return out


def secret_cases():
    return [("secret", "serve_api_key", value, "serve_api_key")
            for value in SECRETS]


# Secrets that are wrong in every way: each carries 4242 (or is a number with it), which no message may show.
SECRETS = (424242, 4242.5, ["sk-in-a-list-4242"], "sk with a space 4242", "sk-newline\n4242", "sk-\u202e-4242",
           'sk"quote4242', "sk'4242")
