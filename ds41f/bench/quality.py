"""The quality gate: a fixed task, asked N times at temperature 0; every answer must pass, or the bench stops.

The task and its pass criterion are data (``--quality-task FILE``, JSON): ``prompt``, ``max_tokens``,
``reasoning`` and ``criterion``, one of
- ``{"type": "regex", "pattern": "..."}``: the answer matches the pattern (re.search, DOTALL);
- ``{"type": "python_test", "test": "..."}``: the answer's first Python code block, followed by the test
  code, exits 0 in a fresh interpreter (isolated mode, a temporary folder, a time limit).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# The default gate: a small least-recently-used cache, checked by running it (the task the seed deployment's
# release tests use is of this kind; this wording and test are this project's own).
LRU_TASK = {
    "name": "lru-cache",
    "prompt": (
        "Write a Python class LRUCache with a constructor taking a positive integer capacity, a method "
        "get(key) that returns the value or -1 when the key is absent, and a method put(key, value) that "
        "inserts or updates the key and, when the cache is over capacity, evicts the least recently used "
        "key. Both operations must run in O(1). Answer with one Python code block and nothing else."
    ),
    "max_tokens": 1024,
    "reasoning": False,
    "criterion": {
        "type": "python_test",
        "test": (
            "c = LRUCache(2)\n"
            "c.put(1, 1); c.put(2, 2)\n"
            "assert c.get(1) == 1\n"
            "c.put(3, 3)\n"
            "assert c.get(2) == -1\n"
            "c.put(4, 4)\n"
            "assert c.get(1) == -1 and c.get(3) == 3 and c.get(4) == 4\n"
            "c.put(3, 30)\n"
            "assert c.get(3) == 30\n"
        ),
    },
}
_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


class TaskError(ValueError):
    """A quality task file that cannot be used; the message names the field."""


def load_task(path=None):
    if path is None:
        return dict(LRU_TASK)
    try:
        task = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise TaskError("%s: cannot read the quality task (%s)" % (path, exc)) from exc
    for key in ("prompt", "criterion"):
        if key not in task:
            raise TaskError("%s: %s is missing. Fix: add it (see ds41f/bench/quality.py)." % (path, key))
    kind = task["criterion"].get("type")
    if kind not in ("regex", "python_test"):
        raise TaskError("%s: criterion.type %r is not regex or python_test." % (path, kind))
    return dict({"name": Path(path).stem, "max_tokens": 512, "reasoning": False}, **task)


def judge(task, answer, timeout=20):
    """(passed, why) for one answer."""
    criterion = task["criterion"]
    if criterion["type"] == "regex":
        ok = re.search(criterion["pattern"], answer, re.S) is not None
        return ok, "matches" if ok else "does not match %r" % criterion["pattern"]
    match = _CODE.search(answer)
    if not match:
        return False, "no Python code block in the answer"
    with tempfile.TemporaryDirectory(prefix="ds41f-quality-") as tmp:
        script = Path(tmp) / "answer.py"
        script.write_text(match.group(1) + "\n\n" + criterion["test"])
        try:
            proc = subprocess.run([sys.executable, "-I", str(script)], cwd=tmp, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, "the test did not finish in %d s" % timeout
    if proc.returncode == 0:
        return True, "the test passes"
    tail = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
    return False, "the test fails: %s" % tail[:200]
