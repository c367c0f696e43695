"""Prefill texts and the portable and precision groups' prompts."""

from ds41f.bench import prompts


def test_the_three_prefill_texts():
    source = prompts.prefill_messages(1000, 3.0, 0, "t", "source")[0]["content"]
    filler = prompts.prefill_messages(1000, 3.0, 0, "t", "filler")[0]["content"]
    novel = prompts.prefill_messages(1000, 3.0, 7, "t", "novel")[0]["content"]
    for text in (source, filler, novel):
        assert text.startswith("Request t.") and len(text.split("\n", 1)[1]) == 3000
    assert len(prompts.FILLER.split()) == 18 and filler.split("\n", 1)[1].startswith(prompts.FILLER)
    assert "def " in source or "import " in source
    assert novel == prompts.prefill_messages(1000, 3.0, 7, "t", "novel")[0]["content"]  # reproducible per offset
    assert novel != prompts.prefill_messages(1000, 3.0, 8, "t", "novel")[0]["content"]  # fresh per prompt


def test_portable_prompts_are_distinct_per_stream_and_only_chat_sampled_samples():
    for case in prompts.PORTABLE:
        texts = {prompts.portable_messages(case, s)[0]["content"] for s in range(16)}
        assert len(texts) == 16, case
    assert prompts.PORTABLE_TEMPERATURE == {"chat-sampled": 0.7}
    assert prompts.portable_messages("tasks", 3)[0]["content"] == prompts.CODE[3]


def test_precision_cases():
    assert set(prompts.PRECISION) == {"prose-1k", "code-1k", "json-1k"}
    assert "Lisbon" in prompts.precision_messages("prose-1k", 0)[0]["content"]
