"""Prompts of the bench: a distinct prose and code prompt per stream, the portable and precision groups, and
the text of cold prefill.

Prefill text (``--prefill-text``): ``source`` is Python's standard library source (real, varied text on every
machine; the default); ``filler`` repeats one 18-word phrase, which a model with n-gram tables or caches reads
faster than real text; ``novel`` is random pseudo-words, which no table has seen.
"""

from __future__ import annotations

import random
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


FILLER = ("the quiet harbour keeps its boats in rows while gulls circle over nets drying in "
          "the morning sun ")  # 18 words
PREFILL_TEXTS = ("source", "filler", "novel")
_LETTERS = "etaoinshrdlcumwfgypbvk"


def filler_text(min_chars):
    return FILLER * (min_chars // len(FILLER) + 1)


def novel_text(min_chars, seed):
    """Random pseudo-words (a fixed seed per prompt): text no n-gram table or cache has seen."""
    rng = random.Random(seed)
    words, size = [], 0
    while size < min_chars:
        word = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 9)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def prefill_messages(tokens, chars_per_token, offset, tag, text="source"):
    """A prompt of about ``tokens`` tokens of the chosen text; a first line naming a unique ``tag`` defeats every
    prefix cache."""
    want = int(tokens * chars_per_token)
    if text == "source":
        body = source_text(offset + want + 1)[offset:offset + want]
    elif text == "filler":
        body = filler_text(want)[:want]
    else:
        body = novel_text(want, offset)[:want]
    head = "Request %s. Summarise the following text.\n" % tag
    return [{"role": "user", "content": head + body}]


# -- the portable decode group: the protocol public DGX Spark benchmarks use (reasoning off, exactly 256
# tokens, a distinct prompt per stream, workloads from a number sequence through code and JSON to prose). --

_TOPICS = ["tides", "volcanoes", "compilers", "photosynthesis", "jet engines", "glaciers", "bread yeast",
           "radio waves", "coral reefs", "hash tables", "bird migration", "solar cells", "earthquakes",
           "vaccines", "sailing", "paper making"]


def _portable(case, stream):
    topic = _TOPICS[stream % len(_TOPICS)]
    if case == "count":
        return "Count upward from %d by ones, one number per line, and keep going." % (100 * stream + 1)
    if case == "explain":
        return "Explain how %s work, step by step, for a curious teenager." % topic
    if case == "tasks":
        return CODE[stream % len(CODE)]
    if case == "rows":
        return ("Write a JSON array of records about %s, each with the fields id, name, year and note; "
                "write as many as you can." % topic)
    if case == "math":
        return ("Solve step by step: a tank holds %d litres and drains %d litres a minute while a pipe fills it "
                "at %d litres a minute. When is it empty?" % (500 + 37 * stream, 9 + stream % 5, 3 + stream % 3))
    if case in ("chat", "chat-sampled"):
        return "Hi! I am planning a weekend trip to see %s. What should I know before I go?" % topic
    if case == "essay":
        return "Write an essay on what the study of %s teaches us about the world." % topic
    return "Tell a story about a child who discovers %s for the first time." % topic  # story


PORTABLE = ("count", "explain", "tasks", "rows", "math", "chat", "essay", "story", "chat-sampled")
PORTABLE_TEMPERATURE = {"chat-sampled": 0.7}  # every other case is greedy


def portable_messages(case, stream):
    return [{"role": "user", "content": _portable(case, stream)}]


# -- the precision group: prompts whose natural answer runs past 1,024 tokens, so none is forced past its end. --

PRECISION = {
    "prose-1k": "Write a long, detailed history of the city of %s from its founding to today, with a chapter "
                "for every century. Do not summarise; give every chapter several paragraphs.",
    "code-1k": "Write a complete, documented Python module implementing a %s, with a class per concept, "
               "type hints, docstrings, error handling and an extensive pytest test suite.",
    "json-1k": "Write a JSON array of 60 detailed %s records. Each record has the fields id (integer), name, "
               "description (two sentences), tags (a list of three strings) and created (an ISO date). "
               "Answer with the JSON only.",
}
_PRECISION_SUBJECTS = {"prose-1k": ["Lisbon", "Kyoto", "Cairo", "Krakow"],
                       "code-1k": ["text adventure engine", "spreadsheet formula evaluator", "tiny database",
                                   "chess move validator"],
                       "json-1k": ["library book", "weather station", "museum exhibit", "ship voyage"]}


def precision_messages(case, stream):
    subjects = _PRECISION_SUBJECTS[case]
    return [{"role": "user", "content": PRECISION[case] % subjects[stream % len(subjects)]}]
