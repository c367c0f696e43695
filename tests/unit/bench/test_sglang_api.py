"""The requests seed 001's gates send are ones SGLang understands: every field of their bodies is a field of SGLang's
own ChatCompletionRequest (sglang.srt.entrypoints.openai.protocol, read from its source as installed by
``make sglang-parser``), and its model list gives the context the bench reads. A field SGLang does not know would
be dropped silently (no logprobs, no context), so this is read from SGLang's source, not assumed."""

import ast
from types import SimpleNamespace

import pytest

from ds41f.bench import kl_gate, prefix_scan, runner
from ds41f.lab import engine

pytestmark = pytest.mark.lab_engine

PROTOCOL = engine.paths.LAB_STATE / "shared" / "sglang-parser" / "sglang" / "srt" / "entrypoints" / "openai" / \
    "protocol.py"
CHAT_STREAM = {"stream", "stream_options"}  # client.chat_stream adds them
CHAT_LOGPROBS = {"stream", "logprobs"}  # client.chat_logprobs adds them


def fields():
    """{class name: its annotated fields, those of the classes it derives from in the same module included}."""
    if not PROTOCOL.exists():
        pytest.fail("SGLang's parser is not installed. Fix: make sglang-parser (after make engine)")
    tree = ast.parse(PROTOCOL.read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def of(name):
        node = classes[name]
        own = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
               and not s.target.id.startswith("_")}
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                own |= of(base.id)
        return own

    return {name: of(name) for name in ("ChatCompletionRequest", "ModelCard", "StreamOptions")}


def bench():
    return runner.Bench("http://127.0.0.1:1", "m", SimpleNamespace(), log=lambda m: None)


def test_the_gates_request_bodies_are_sglang_chat_fields():
    known = fields()["ChatCompletionRequest"]
    kl = set(kl_gate.request_body(bench(), [{"role": "user", "content": "x"}], 8)) | CHAT_LOGPROBS
    scan = set(prefix_scan.request_body(bench(), "doc", 0, 8)) | CHAT_STREAM
    assert {"logprobs", "top_logprobs", "chat_template_kwargs"} <= kl
    assert kl - known == set() and scan - known == set()
    assert "include_usage" in fields()["StreamOptions"]


def test_sglang_lists_its_models_with_their_context():
    assert "max_model_len" in fields()["ModelCard"]
