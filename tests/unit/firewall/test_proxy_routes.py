"""The API proxy in front of every route the pinned engines serve: real nginx with the serve stage's config, and
the routes read from the engines' own applications (vLLM 0.32.0's FastAPI app with every task it supports, and
SGLang 0.5.23's), not from a list kept here.

nginx is the distribution's, unpacked by ``make proxy-nginx`` (never installed); the upstream is a loopback stub
that answers 200 to anything, so a 200 seen through the proxy means the request got through. ``make engine`` and
``make sglang-parser`` provide the engines."""

import ast
import contextlib
import http.server
import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import proxy
from ds41f.lab import engine

from .test_firewall_rules import ROOT

pytestmark = pytest.mark.lab_engine

NGINX = ROOT / ".lab" / "shared" / "nginx" / "root" / "usr" / "sbin" / "nginx"
SGLANG = ROOT / ".lab" / "shared" / "sglang-parser"
KEY = "ds41f-route.test+Key_0123456789abcdef="  # every character a key may hold that a regex reads

VLLM_ROUTES = """
import json, typing, warnings
warnings.simplefilter("ignore")
from vllm.entrypoints.launchers.app import build_app
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.tasks import SupportedTask
from vllm.utils.argparse_utils import FlexibleArgumentParser
args = make_arg_parser(FlexibleArgumentParser()).parse_args(["--model", "x"])
app = build_app(args, supported_tasks=typing.get_args(SupportedTask))  # every task: every route it can serve
print(json.dumps(sorted({r.path for r in app.routes if getattr(r, "path", None)})))
"""


def sglang_routes(package):
    """SGLang's routes as its own source declares them: every ``app.<verb>("/path")`` and router route of
    sglang/srt/entrypoints (with the router's prefix), and every ``Mount("/path", ...)`` (its /metrics). Read from
    the source, since importing the server needs its GPU stack (torchvision, ...)."""
    verbs = {"get", "post", "put", "delete", "patch", "api_route", "websocket"}
    paths = set()
    for source in sorted((package / "sglang" / "srt").rglob("*.py")):
        tree = ast.parse(source.read_text())
        prefixes = {node.targets[0].id: next((k.value.value for k in node.value.keywords if k.arg == "prefix"), "")
                    for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and getattr(node.value.func, "id", None) == "APIRouter" and isinstance(node.targets[0], ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str) and node.args[0].value.startswith("/")):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in verbs and isinstance(func.value, ast.Name) and (
                    func.value.id == "app" or func.value.id in prefixes):
                paths.add(prefixes.get(func.value.id, "") + node.args[0].value)
            elif getattr(func, "id", None) == "Mount":
                paths.add(node.args[0].value)
    return sorted(paths)


def engine_routes(script, *paths):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in paths), VLLM_TARGET_DEVICE="cpu",
               HF_HUB_OFFLINE="1")
    proc = subprocess.run([engine.python(), "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Anything(http.server.BaseHTTPRequestHandler):
    """The engine's place: 200 to every method and path, so a 200 through the proxy means it got through."""

    def log_message(self, *args):
        pass

    def answer(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = do_PUT = do_DELETE = answer


def local_config(conf, folder):
    """The node's config as it is, with this test's own pid file and temp folders (nginx runs as this user here)."""
    return conf.replace("pid /run/ds41f-proxy.pid;", "pid %s/nginx.pid;" % folder).replace(
        "http {\n", "http {\n" + "".join("\t%s_temp_path %s/%s;\n" % (t, folder, t) for t in (
            "client_body", "proxy", "fastcgi", "uwsgi", "scgi")), 1)


@contextlib.contextmanager
def proxied(folder, listen=(), tls=None, handler=Anything):
    """nginx with the serve stage's config (listening on ``listen`` beside loopback, with ``tls`` files) in front
    of ``handler`` on loopback, run from ``folder``: yields (its port, the nginx process) once loopback accepts."""
    if not NGINX.exists():
        pytest.fail("nginx is not unpacked. Fix: make proxy-nginx")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = free_port()
    (folder / "key.conf").write_text(proxy.key_map(KEY))
    conf = proxy.config(list(listen), port, upstream.server_port, str(folder / "key.conf"), tls=tls)
    (folder / "nginx.conf").write_text(local_config(conf, folder))
    server = subprocess.Popen([str(NGINX), "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g",
                               "daemon off;"], stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("nginx did not start: %s" % server.stderr.read())
        yield port, server
    finally:
        server.terminate()
        server.wait(10)
        upstream.shutdown()


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    with proxied(tmp_path_factory.mktemp("proxy")) as (port, _):
        yield "http://127.0.0.1:%d" % port


def status(url, key=None, method="GET"):
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None,
                                     headers={"Authorization": "Bearer " + key} if key else {})
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as exc:
        return exc.code


def check_every_route(api, paths):
    assert len(paths) > 10
    wrong = {}
    for path in proxy.routes({"paths": {p: {} for p in paths}}):
        for method in ("GET", "POST"):
            keyless, keyed = status(api + path, method=method), status(api + path, KEY, method)
            want = 200 if path in proxy.OPEN_PATHS else 401
            if keyless != want or keyed != 200 or status(api + path, "wrong" + KEY, method) != want:
                wrong["%s %s" % (method, path)] = (keyless, keyed)
    assert wrong == {}


def test_every_vllm_route_asks_for_the_key_through_the_proxy(api):
    paths = engine_routes(VLLM_ROUTES, engine.SITE)
    # the routes vLLM's own key leaves open are among them
    assert {"/invocations", "/tokenize", "/detokenize", "/metrics", "/scale_elastic_ep"} <= set(paths)
    check_every_route(api, paths)


def test_every_sglang_route_asks_for_the_key_through_the_proxy(api):
    if not (SGLANG / ".installed").exists():
        pytest.fail("SGLang is not installed. Fix: make sglang-parser")
    paths = sglang_routes(SGLANG)
    # among them, what SGLang's own key leaves open, and its control routes
    assert {"/health", "/ready", "/metrics", "/get_server_info", "/update_weights_from_disk", "/generate"} <= set(paths)
    check_every_route(api, paths)


def test_a_bearer_header_that_only_contains_the_key_is_refused(api):
    for header in ("Bearer  " + KEY, "bearer " + KEY, KEY, "Bearer " + KEY + "x", "Basic " + KEY,
                   "Bearer " + KEY.upper(), "Bearer " + KEY.lower(), "Bearer " + KEY[:-1]):
        request = urllib.request.Request(api + "/v1/models", headers={"Authorization": header})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=10)
        assert err.value.code == 401, header
