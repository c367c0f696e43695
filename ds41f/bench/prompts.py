"""Prompts of the bench: a distinct prose and code prompt per stream, and real text for cold prefill.

Prefill text is Python's standard library source (real, varied text on every machine), never a repeated
filler phrase, which a model with n-gram or prefix caches reads faster than real text.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

PROSE = [
    "Describe how a river delta forms, from the sediment the river carries to the shape of its channels.",
    "Explain to a new colleague why a team keeps a written record of every production incident.",
    "Write a short history of the bicycle, from the first wooden machines to modern road bikes.",
    "Describe a busy railway station at dawn as the first trains arrive.",
    "Explain how a bee colony decides where to build a new nest.",
    "Write a letter from a lighthouse keeper describing a winter storm.",
    "Explain what makes bread rise and why some loaves come out dense.",
    "Describe the life of a glacier over ten thousand years.",
    "Explain to a child how a map shows hills and valleys on flat paper.",
    "Write about a small town library and the people who use it on one Saturday.",
    "Explain why the sky changes colour at sunset.",
    "Describe the work of a night-shift nurse in a children's hospital.",
    "Explain how a sailing boat can move against the wind.",
    "Write a travel diary entry about crossing a desert by train.",
    "Explain how vaccines teach the immune system to recognise a disease.",
    "Describe a market in a harbour town the morning the fishing boats return.",
]
CODE = [
    "Write a Python function that merges overlapping intervals in a list of (start, end) pairs, with tests.",
    "Implement a thread-safe bounded queue in Python with put and get that block, and explain it.",
    "Write a C function that reverses a singly linked list in place.",
    "Implement Dijkstra's shortest path algorithm in Python with a binary heap.",
    "Write a Rust function that parses a line of comma-separated integers, returning errors for bad input.",
    "Write a Bash script that rotates log files older than seven days into a compressed archive.",
    "Implement a trie in Python with insert, search and prefix listing.",
    "Write a SQL schema for a library loaning books, and a query for overdue loans.",
    "Implement an LRU cache in Go with O(1) operations.",
    "Write a Python generator that yields the lines of a large file in reverse order.",
    "Implement binary search over a sorted array in JavaScript, and handle duplicates.",
    "Write a Python class that rate-limits calls with a token bucket.",
    "Implement matrix multiplication in C with cache-friendly loop order, and explain the order.",
    "Write a Python function that validates an IPv4 address without using libraries.",
    "Implement a simple HTTP request parser in Python that handles headers and a body.",
    "Write a Python decorator that retries a function with exponential backoff.",
]
KINDS = {"prose": PROSE, "code": CODE}


def decode_messages(kind, stream):
    """The chat messages of one stream of a decode point: a distinct prompt per stream."""
    prompts = KINDS[kind]
    return [{"role": "user", "content": prompts[stream % len(prompts)]}]


def source_text(min_chars):
    """At least min_chars of real text from the standard library's sources, in a fixed order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts, size = [], 0
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text)
        if size >= min_chars:
            break
    return "".join(parts)


def prefill_messages(tokens, chars_per_token, offset, tag):
    """A prompt of about ``tokens`` tokens of source text; a first line naming a unique ``tag`` defeats every
    prefix cache."""
    want = int(tokens * chars_per_token)
    text = source_text(offset + want + 1)
    body = text[offset:offset + want]
    head = "Request %s. Summarise the following source code.\n" % tag
    return [{"role": "user", "content": head + body}]
