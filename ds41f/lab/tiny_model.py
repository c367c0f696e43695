"""A tiny Llama-shaped model made offline, for the lab's real vLLM (no hub, no download).

Run by ``ds41f.lab.engine build`` with the engine's own site folder on PYTHONPATH (torch, transformers and
tokenizers live there, not in the controller's venv):

    python -m ds41f.lab.tiny_model OUT_DIR

The tokenizer is a byte-level BPE trained on Python's standard library sources (text every machine has);
the weights are random from a fixed seed. The model answers nonsense and rarely stops on its own: callers
ask for ``max_tokens`` and read token counts from ``usage``.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

VOCAB = 2048
SPECIAL = ["<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]
# Shaped after the usual role-tag templates; `thinking` (chat_template_kwargs) is accepted and ignored.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# Head size 64 (128 / 2): vLLM's CPU attention needs at least 32.
CONFIG = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
              num_key_value_heads=2, max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False)
SEED = 20261130
TRAINING_FILES = 300  # the first stdlib modules by name: enough text for a 2k vocabulary in ~2 s


def training_text():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py"))[:TRAINING_FILES]:
        yield path.read_text(encoding="utf-8", errors="replace")


def make_tokenizer(out):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   model_max_length=CONFIG["max_position_embeddings"])
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def make_model(out, tokenizer):
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         torch_dtype="bfloat16", **CONFIG)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                     pad_token_id=tokenizer.pad_token_id).save_pretrained(out)


def main(argv):
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(out)
    make_model(out, tokenizer)
    print(json.dumps({"model": str(out), "vocab": len(tokenizer), **CONFIG}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
