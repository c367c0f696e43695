"""The compliance suite's judge: twelve conforming objects, nothing around them, stopped on its own."""

import json

from ds41f.bench import compliance

BOOKS = [{"title": "T%d" % i, "author": "A", "year": 1900 + i, "pages": 100 + i} for i in range(12)]


def test_twelve_conforming_objects_that_stopped_pass():
    assert compliance.judge(json.dumps(BOOKS), "stop", "book", 12) == (True, "12 conforming objects")


def test_every_way_to_fail_names_itself():
    text = json.dumps(BOOKS)
    assert compliance.judge(text, "length", "book", 12)[1] == "did not stop on its own (finish_reason length)"
    assert compliance.judge("```json\n%s\n```" % text, "stop", "book", 12)[1] == "fenced in a code block"
    assert compliance.judge("Here: " + text, "stop", "book", 12)[1].startswith("not one JSON value")
    assert compliance.judge(json.dumps(BOOKS[:11]), "stop", "book", 12)[1] == "11 objects, not 12"
    bad = BOOKS[:5] + [dict(BOOKS[5], year="1905")] + BOOKS[6:]
    ok, why = compliance.judge(json.dumps(bad), "stop", "book", 12)
    assert not ok and why.startswith("object 5:") and "integer" in why


def test_the_schema_arm_sends_the_array_schema_through_response_format():
    body = compliance.body("m", "flight", 12, 4096, "schema")
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["minItems"] == schema["maxItems"] == 12 and schema["items"] == compliance.RECORDS["flight"]
    assert "response_format" not in compliance.body("m", "flight", 12, 4096, "prompt")
    assert len(compliance.RECORDS) == 8


def test_a_truncated_json_1k_array_is_scored_object_by_object():
    good = {"id": 1, "name": "n", "description": "d", "tags": ["a"], "created": "2026-01-01"}
    bad = dict(good, id="two")
    text = "[\n  %s,\n  %s,\n  {\"id\": 3, \"name\": \"cut off her" % (json.dumps(good), json.dumps(bad))
    got = compliance.score_truncated(text)
    assert got["objects"] == 2 and got["closed_parses"] and got["json_schema_valid"] == 0.5
    assert "'two' is not of type 'integer'" in got["first_violation"]
    assert json.loads(got["closed"]) == [good, bad]
    assert compliance.score_truncated("no json here")["objects"] == 0
