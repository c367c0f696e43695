# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""The collective check's program: one rank of a torch.distributed group, run inside the engine image.

The module ``collective_check`` passes this file's source to the image's Python (``python3 -c``), with the
rank's settings as JSON in ``DS41F_COLLECTIVE`` and the engine's own environment (the fabric stage's env
file, the recipe's env) around it. Only the standard library is imported at load time, so the module can
import this file without torch; ``main()`` imports torch.

Phases, each with a deadline, so a rank never waits forever:

1. local: the socket interfaces the backend binds to (``GLOO_SOCKET_IFNAME`` or ``NCCL_SOCKET_IFNAME``)
   exist, are up and carry an IPv4 address; on rank 0 the master address is one of the node's own.
2. rendezvous: rank 0 hosts a TCPStore on the master port; the others reach it (a refused, dropped or
   unroutable connection is told apart). Every rank posts what it is (node, release, image ID, torch, its
   local problem if any); rank 0 waits for all of them, compares them, and posts one verdict that names the
   rank that did not join, or the first rank that differs, or the first local problem.
3. group: with a good verdict, ``init_process_group`` over that store, an all-reduce and an all-gather of
   known values checked bit for bit (the first wrong element is named with the rank it came from), then a
   timed all-reduce for bandwidth.

One line ``DS41F-COLLECTIVE {json}`` on stdout is the rank's result; exit 0 only when it is ok.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import struct
import sys
import threading
import time

MARK = "DS41F-COLLECTIVE "
SIOCGIFADDR = 0x8915
IFF_UP = 0x1
# Known values: small integers, so float32 sums over up to 8 ranks are exact in any reduction order.
PATTERN_MOD = 4096


def who(cfg, rank):
    nodes = cfg.get("nodes") or []
    return "rank %d (%s)" % (rank, nodes[rank] if 0 <= rank < len(nodes) else "?")


def ipv4_of(name):
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        packed = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name[:15].encode()))
    return socket.inet_ntoa(packed[20:24])


def interface_problem(spec, sysfs="/sys/class/net"):
    """None when an interface named by a *_SOCKET_IFNAME value is up with an IPv4 address, else why not.

    NCCL's syntax: ``=name`` exact, ``name`` a prefix, ``^name`` excluded (not checked), comma separated."""
    try:
        present = sorted(os.listdir(sysfs))
    except OSError:
        return "cannot list %s" % sysfs
    reasons = []
    for item in [i.strip() for i in spec.split(",") if i.strip()]:
        if item.startswith("^"):
            return None
        exact = item.startswith("=")
        name = item.lstrip("=")
        matches = [n for n in present if n == name or (not exact and n.startswith(name))]
        if not matches:
            reasons.append("no interface %s on this node" % name)
        for match in matches:
            try:
                with open(os.path.join(sysfs, match, "flags")) as f:
                    flags = int(f.read().strip(), 16)
                with open(os.path.join(sysfs, match, "operstate")) as f:
                    state = f.read().strip()
            except (OSError, ValueError):
                reasons.append("cannot read the state of %s" % match)
                continue
            if not flags & IFF_UP or state in ("down", "lowerlayerdown", "notpresent"):
                reasons.append("interface %s is down (operstate %s)" % (match, state))
                continue
            try:
                ipv4_of(match)
            except OSError:
                reasons.append("interface %s has no IPv4 address" % match)
                continue
            return None
    return "; ".join(reasons) or "no interface in %r" % spec


def master_problem(addr):
    """On rank 0: None when ``addr`` is an address of this node (so the store is where the others look)."""
    try:
        infos = socket.getaddrinfo(addr, None, socket.AF_INET, socket.SOCK_STREAM)
    except OSError as e:
        return "the master address %s does not resolve (%s)" % (addr, e)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((infos[0][4][0], 0))
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                return "the master address %s is not an address of this node" % addr
            return "cannot bind the master address %s (%s)" % (addr, e.strerror)
    return None


def reach(addr, port, deadline):
    """None once a TCP connection to addr:port succeeds before the deadline, else the last cause."""
    cause = "no attempt was made"
    while time.monotonic() < deadline:
        left = deadline - time.monotonic()
        try:
            socket.create_connection((addr, port), timeout=max(0.2, min(3.0, left))).close()
            return None
        except TimeoutError:
            cause = "no answer (packets dropped: a firewall on the way or on the head?)"
        except ConnectionRefusedError:
            cause = "connection refused (nothing listens there, or a firewall rejects it)"
            time.sleep(0.3)
        except OSError as e:
            cause = "%s (a wrong master address, or no route to it?)" % (e.strerror or e)
            time.sleep(0.3)
    return cause


def pattern(torch, rank, count):
    base = torch.arange(count, dtype=torch.int64)
    return ((base * 7 + rank * 13) % PATTERN_MOD).to(torch.float32)


def first_difference(torch, got, want):
    bad = (got != want).nonzero()
    if bad.numel() == 0:
        return None
    i = int(bad[0][0])
    return i, float(got[i]), float(want[i])


def identity(cfg):
    return {"node": cfg["node"], "release": cfg.get("release", ""), "image_id": cfg.get("image_id", "")}


def judge(cfg, posts, joined_s):
    """Rank 0's verdict over every rank's post ({rank: post}); the same text for every rank."""
    world = cfg["world_size"]
    missing = [r for r in range(world) if r not in posts]
    where = "%s:%s" % (cfg["master_addr"], cfg["master_port"])
    for r in sorted(posts):  # a rank's own reason first: it says more than "did not join"
        if posts[r].get("problem"):
            return {"ok": False, "message": "%s: %s" % (who(cfg, r), posts[r]["problem"]), "ranks": [r]}
    if missing:
        return {"ok": False, "message": "%s did not join the rendezvous %s within %d s" % (
            ", ".join(who(cfg, r) for r in missing), where, cfg["timeout_s"]), "ranks": missing}
    head = posts[0]
    for r in range(1, world):
        post = posts[r]
        for key, label in (("release", "release"), ("image_id", "image"), ("torch", "torch")):
            if post.get(key) != head.get(key):
                return {"ok": False, "ranks": [r], "message": "%s runs %s %s, but %s runs %s" % (
                    who(cfg, r), label, str(post.get(key))[:19] or "(none)", who(cfg, 0),
                    str(head.get(key))[:19] or "(none)")}
    return {"ok": True, "message": "all %d ranks joined %s in %.1f s" % (world, where, joined_s), "ranks": [],
            "addresses": {posts[r]["address"]: r for r in range(world) if posts[r].get("address")}}


def rendezvous(torch, cfg, result, local_problem, started):
    """Phase 2: the store, every rank's post, rank 0's verdict. Returns (store, verdict)."""
    from datetime import timedelta

    rank, world = cfg["rank"], cfg["world_size"]
    addr, port, timeout = cfg["master_addr"], int(cfg["master_port"]), float(cfg["timeout_s"])
    deadline = started + timeout
    if rank == 0:
        try:
            # The server listens on every address; its own client goes over loopback, so a master address
            # that is not this node's is reported as such (phase 1), not as a store that cannot start.
            store = torch.distributed.TCPStore("127.0.0.1", port, None, True, timedelta(seconds=timeout),
                                               wait_for_workers=False)
        except Exception as e:  # noqa: BLE001 (torch raises RuntimeError or DistNetworkError)
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            cause = "port %d is in use on this node (an engine running?)" % port if "in use" in text else text
            return None, {"ok": False, "message": "%s: cannot host the rendezvous on port %d: %s" % (
                who(cfg, 0), port, cause), "ranks": [0]}
    else:
        cause = reach(addr, port, deadline)
        if cause:
            return None, {"ok": False, "ranks": [rank], "message": "%s: cannot reach the rendezvous %s:%d "
                          "within %d s: %s" % (who(cfg, rank), addr, port, timeout, cause)}
        store = torch.distributed.TCPStore(addr, port, None, False,
                                           timedelta(seconds=max(1.0, deadline - time.monotonic())))
    post = dict(identity(cfg), torch=torch.__version__, problem=local_problem, address=result.get("address", ""))
    store.set("ds41f/join/%d" % rank, json.dumps(post))
    result["join_s"] = round(time.monotonic() - started, 3)
    if rank == 0:
        posts = {}
        while time.monotonic() < deadline and len(posts) < world:
            for r in range(world):
                key = "ds41f/join/%d" % r
                if r not in posts and store.check([key]):
                    posts[r] = json.loads(store.get(key))
                    if posts[r].get("problem"):
                        deadline = 0  # one rank cannot take part: say so now, not at the timeout
            time.sleep(0.1)
        verdict = judge(cfg, posts, time.monotonic() - started)
        store.set("ds41f/verdict", json.dumps(verdict))
        return store, verdict
    try:
        store.wait(["ds41f/verdict"], timedelta(seconds=timeout + 30))
        return store, json.loads(store.get("ds41f/verdict"))
    except Exception:  # noqa: BLE001
        return store, {"ok": False, "ranks": [0], "message": "%s: no verdict from %s within %d s (the head's "
                       "check stopped?)" % (who(cfg, rank), who(cfg, 0), timeout + 30)}


def collectives(torch, cfg, store, result):
    """Phase 3: the group, the bit-exact checks, the bandwidth."""
    from datetime import timedelta

    dist = torch.distributed
    rank, world = cfg["rank"], cfg["world_size"]
    device = "cpu"
    if cfg["backend"] == "nccl":
        torch.cuda.set_device(0)
        device = "cuda"
    t0 = time.monotonic()
    dist.init_process_group(cfg["backend"], store=dist.PrefixStore("ds41f/group", store), rank=rank,
                            world_size=world, timeout=timedelta(seconds=float(cfg["timeout_s"])))
    result["group_s"] = round(time.monotonic() - t0, 3)
    count = int(cfg.get("check_elements", 65536))
    mine = pattern(torch, rank, count).to(device)
    dist.all_reduce(mine)
    want = sum(pattern(torch, r, count) for r in range(world))
    diff = first_difference(torch, mine.cpu(), want)
    if diff:
        raise CheckFailed("all-reduce element %d is %r, expected %r (the sum of every rank's known values)" % diff)
    result["all_reduce"] = "bit-exact (%d float32)" % count
    slots = [torch.empty(count, dtype=torch.float32, device=device) for _ in range(world)]
    dist.all_gather(slots, (pattern(torch, rank, count) + rank * PATTERN_MOD).to(device))
    for r in range(world):
        diff = first_difference(torch, slots[r].cpu(), pattern(torch, r, count) + r * PATTERN_MOD)
        if diff:
            raise CheckFailed("all-gather slot of %s: element %d is %r, expected %r" % ((who(cfg, r),) + diff))
    result["all_gather"] = "bit-exact (%d float32 per rank)" % count
    size = int(cfg.get("size_bytes", 8 << 20))
    iters = max(1, int(cfg.get("iterations", 5)))
    buf = torch.ones(size // 4, dtype=torch.float32, device=device)
    dist.all_reduce(buf)  # warm-up: connections and buffers
    dist.barrier()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.monotonic()
    for _ in range(iters):
        dist.all_reduce(buf)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = (time.monotonic() - t0) / iters
    algbw = size / seconds / 1e6
    result.update(bytes=size, iterations=iters, seconds_per_op=round(seconds, 6), algbw_mbs=round(algbw, 1),
                  busbw_mbs=round(algbw * 2 * (world - 1) / world, 1) if world > 1 else round(algbw, 1))
    dist.barrier()
    dist.destroy_process_group()


class CheckFailed(Exception):
    pass


def socket_address(spec, sysfs="/sys/class/net"):
    """The IPv4 address of the first interface a *_SOCKET_IFNAME value names (how peers see this rank)."""
    for item in [i.strip().lstrip("=") for i in spec.split(",") if i.strip() and not i.startswith("^")]:
        for name in sorted(os.listdir(sysfs)):
            if name == item or name.startswith(item):
                try:
                    return ipv4_of(name)
                except OSError:
                    continue
    return ""


def explain(cfg, error, addresses):
    """An exception's first line; a peer's address in it (Gloo's ``remote=[ip]``) is named by its rank."""
    lines = [line for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
    text = lines[0][:300]
    found = re.search(r"remote=\[([0-9.]+)\]", text)
    if found and found.group(1) in addresses:
        peer = addresses[found.group(1)]
        reason = "timed out" if "timed out" in text else "failed"
        return "connecting to %s at %s %s (%s)" % (who(cfg, peer), found.group(1), reason, text)
    return "%s: %s" % (type(error).__name__, text)


def watchdog(cfg, result):
    """After three timeouts, print what is known and exit: a rank stuck in a collective still reports."""
    limit = 3 * float(cfg["timeout_s"])

    def expire():
        if "cause" not in result and not result.get("ok"):
            result["cause"] = "%s: still in the collective check after %d s (a peer stopped answering?)" % (
                who(cfg, result["rank"]), limit)
            result["ranks"] = [result["rank"]]
        print(MARK + json.dumps(result, sort_keys=True), flush=True)
        os._exit(1)

    timer = threading.Timer(limit, expire)
    timer.daemon = True
    timer.start()


def main():
    started = time.monotonic()
    cfg = json.loads(os.environ["DS41F_COLLECTIVE"])
    rank = int(cfg["rank"])
    result = {"rank": rank, "node": cfg["node"], "backend": cfg["backend"], "ok": False}
    key = "GLOO_SOCKET_IFNAME" if cfg["backend"] == "gloo" else "NCCL_SOCKET_IFNAME"
    result["socket_ifname"] = os.environ.get(key, "")
    local = interface_problem(result["socket_ifname"]) if result["socket_ifname"] else None
    if local is None and result["socket_ifname"]:
        result["address"] = socket_address(result["socket_ifname"])
    if local is None and rank == 0:
        local = master_problem(cfg["master_addr"])
    store = None
    addresses = {}
    try:
        import torch
        import torch.distributed  # noqa: F401

        result["torch"] = torch.__version__
        result["import_s"] = round(time.monotonic() - started, 3)
        # The deadlines start once torch is imported (seconds on a loaded machine), the same on every rank.
        watchdog(cfg, result)
        store, verdict = rendezvous(torch, cfg, result, local, time.monotonic())
        result["rendezvous"] = verdict["message"]
        addresses.update(verdict.get("addresses") or {})
        if not verdict["ok"]:
            result["cause"] = verdict["message"]
            result["ranks"] = verdict.get("ranks", [])
        else:
            collectives(torch, cfg, store, result)
            result["ok"] = True
    except CheckFailed as e:
        result["cause"] = "%s: %s" % (who(cfg, rank), e)
        result["ranks"] = [rank]
    except Exception as e:  # noqa: BLE001 (any failure is this rank's result, never a hang)
        result["cause"] = "%s: %s" % (who(cfg, rank), explain(cfg, e, addresses))
        result["ranks"] = [rank]
    result["total_s"] = round(time.monotonic() - started, 3)
    if rank == 0 and store is not None:
        # The store lives in this process: keep it up until the others have read the verdict.
        time.sleep(float(cfg.get("linger_s", 2)))
    print(MARK + json.dumps(result, sort_keys=True), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
