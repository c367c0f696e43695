"""The run's identity: what was measured, so two reports can be told apart and compared fairly.

Each field is a value, or ``{"unknown": why}``: the client commit, the server's version, model and engine
configuration (from its /version and /metrics), and for a cluster (an inventory) the recipe's config hash and
release, each node's image ID and kernel. A loopback server is this machine: its kernel is read here.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import platform
import subprocess

from ds41f import paths
from ds41f.bench import client, memory

# One remote command line (ssh hands its words to the node's shell as one string): kernel, image ID, recipe.
# Each answer on its own tagged line (docker prints a blank line for a missing container).
NODE_PROBE = ("printf 'kernel=%s\\nimage=%s\\nrecipe=%s\\n' \"$(uname -r)\" "
              "\"$(docker inspect --format '{{.Image}}' spark-ds41f 2>/dev/null)\" "
              "\"$(tr -d '\\n' < /etc/ds41f/recipe.json 2>/dev/null)\"",)


def unknown(why):
    return {"unknown": why}


def _git(*args):
    try:
        return subprocess.run(["git", *args], cwd=str(paths.ROOT), capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def client_commit():
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return unknown("not a git checkout")
    return commit + ("-dirty" if _git("status", "--porcelain", "--untracked-files=no") else "")


def config_hash(site_file):
    """sha256 over the site file and the recipe's group_vars (what renders a cluster's launch)."""
    h = hashlib.sha256()
    for path in [site_file, *sorted((paths.ROOT / "group_vars" / "all").glob("*.yml"))]:
        h.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


async def server(url, api_key):
    out = {}
    try:
        out["server_version"] = json.loads(await client.get_text(url + "/version", api_key=api_key)).get("version")
    except (client.RequestError, OSError, ValueError) as exc:
        out["server_version"] = unknown("GET /version: %s" % exc)
    try:
        text = await client.get_text(url + "/metrics")
        lines = sorted(line for line in text.splitlines() if line.startswith("vllm:cache_config_info{"))
        out["engine_config_hash"] = (hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16] if lines else
                                     unknown("the engine's /metrics have no vllm:cache_config_info"))
    except (client.RequestError, OSError) as exc:
        out["engine_config_hash"] = unknown("GET /metrics: %s" % exc)
    return out


async def _probe(host, argv):
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    if proc.returncode:
        raise RuntimeError(err.decode(errors="replace").strip()[-200:] or "exit %d" % proc.returncode)
    tagged = dict(line.partition("=")[::2] for line in out.decode().splitlines() if "=" in line)
    kernel, image, recipe = (tagged.get(k, "").strip() for k in ("kernel", "image", "recipe"))
    return {"kernel": kernel or unknown("uname -r printed nothing"),
            "image_id": image or unknown("docker inspect spark-ds41f as the SSH user on %s found no container" % host),
            "recipe": json.loads(recipe) if recipe else unknown("no /etc/ds41f/recipe.json on %s" % host)}


async def nodes(hosts):
    """Per node of a cluster: kernel, the serving container's image ID, its recipe (over SSH, read-only)."""
    out = {}
    for host, hostvars in hosts.items():
        try:
            out[host] = await _probe(host, memory.ssh_argv(hostvars, host, NODE_PROBE))
        except (OSError, RuntimeError, ValueError, TimeoutError) as exc:
            reason = unknown("cannot read %s over SSH: %s" % (host, exc))
            out[host] = {"kernel": reason, "image_id": reason, "recipe": reason}
    return out


def local_node():
    return {"kernel": platform.release(),
            "image_id": unknown("a loopback server runs as a process on this machine, not from an image")}


async def collect(url, api_key, model, shape, site_file, hosts, loopback):
    data = {"client_commit": client_commit(), "model": model,
            "shape": shape or unknown("no --shape, and no --inventory site file naming one")}
    data.update(await server(url, api_key))
    if site_file is not None:
        data["config_hash"] = config_hash(site_file)
        found = await nodes(hosts)
        data["nodes"] = found
        releases = {n["recipe"].get("release") for n in found.values() if isinstance(n["recipe"], dict)
                    and "unknown" not in n["recipe"]}
        data["release"] = releases.pop() if len(releases) == 1 else unknown(
            "the nodes' /etc/ds41f/recipe.json disagree: %s" % sorted(releases) if releases else
            "no node's /etc/ds41f/recipe.json could be read")
    else:
        why = "no --inventory: the server at %s is not a deployed cluster this bench can read" % url
        data["config_hash"] = unknown(why)
        data["release"] = unknown(why)
        data["nodes"] = {memory.LOCAL: local_node()} if loopback else {}
        if not loopback:
            data["kernel"] = unknown(why)
    return data
