"""The quality gate's criteria: the default task is judged by running the answer; tasks are data."""

import json

import pytest

from ds41f.bench import quality

GOOD = """Here it is:
```python
from collections import OrderedDict

class LRUCache:
    def __init__(self, capacity):
        self.capacity, self.data = capacity, OrderedDict()

    def get(self, key):
        if key not in self.data:
            return -1
        self.data.move_to_end(key)
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.capacity:
            self.data.popitem(last=False)
```"""


def test_a_correct_lru_passes_and_a_wrong_one_fails_with_the_reason():
    task = quality.load_task()
    assert quality.judge(task, GOOD) == (True, "the test passes")
    ok, why = quality.judge(task, GOOD.replace("last=False", "last=True"))
    assert not ok and "AssertionError" in why
    assert quality.judge(task, "I would rather not.") == (False, "no Python code block in the answer")


def test_an_answer_that_never_ends_is_stopped():
    ok, why = quality.judge(quality.load_task(), "```python\nwhile True: pass\n```", timeout=1)
    assert not ok and "did not finish" in why


def test_a_task_file_with_a_regex_criterion(tmp_path):
    path = tmp_path / "any.json"
    path.write_text(json.dumps({"prompt": "Say something.", "criterion": {"type": "regex", "pattern": r"\S"}}))
    task = quality.load_task(str(path))
    assert task["name"] == "any" and task["max_tokens"] == 512
    assert quality.judge(task, "words")[0] and not quality.judge(task, "   ")[0]


def test_a_bad_task_file_names_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"prompt": "x", "criterion": {"type": "vibes"}}))
    with pytest.raises(quality.TaskError, match="criterion.type 'vibes'"):
        quality.load_task(str(path))
