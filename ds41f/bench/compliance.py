"""The compliance suite: structured output a client can parse, on natural completion.

Each record type asks for a JSON array of exactly ``items`` (12) objects with room to finish (4,096 tokens),
once from the prompt alone and once constrained by the same array schema through ``response_format``.
A request passes when it stopped on its own (``finish_reason`` "stop"), its whole answer parses as an array of
exactly ``items`` objects (no code fence, no commentary) and every object conforms to the record's schema
(python-jsonschema, Draft 2020-12).
"""

from __future__ import annotations

import json

ARMS = ("prompt", "schema")  # prompt-only; constrained through response_format


def _obj(properties, required=None):
    return {"type": "object", "properties": properties, "required": required or sorted(properties),
            "additionalProperties": False}


_S, _I, _N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
RECORDS = {
    "book": _obj({"title": _S, "author": _S, "year": _I, "pages": _I}),
    "city": _obj({"name": _S, "country": _S, "population": _I, "coastal": {"type": "boolean"}}),
    "planet": _obj({"name": _S, "moons": _I, "radius_km": _N, "gas_giant": {"type": "boolean"}}),
    "employee": _obj({"id": _I, "name": _S, "role": _S, "salary": _N}),
    "recipe": _obj({"dish": _S, "minutes": _I, "ingredients": {"type": "array", "items": _S, "minItems": 1}}),
    "flight": _obj({"code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2,4}$"}, "origin": _S,
                    "destination": _S, "seats": _I}),
    "sensor": _obj({"sensor_id": _S, "celsius": _N, "battery_pct": {"type": "integer", "minimum": 0,
                                                                     "maximum": 100}}),
    "song": _obj({"title": _S, "artist": _S, "seconds": _I, "genre": {"enum": ["rock", "jazz", "pop", "folk",
                                                                                "classical"]}}),
}


def array_schema(record, items):
    return {"type": "array", "items": RECORDS[record], "minItems": items, "maxItems": items}


def prompt(record, items):
    fields = ", ".join("%s (%s)" % (k, v.get("type", "one of " + "/".join(v.get("enum", []))))
                       for k, v in RECORDS[record]["properties"].items())
    return ("Return a JSON array of exactly %d %s objects, each with exactly these fields: %s. Answer with the "
            "JSON array only: no code fence, no text before or after it." % (items, record, fields))


def body(model, record, items, max_tokens, arm):
    out = {"model": model, "messages": [{"role": "user", "content": prompt(record, items)}],
           "max_tokens": max_tokens, "temperature": 0,
           "chat_template_kwargs": {"thinking": False, "enable_thinking": False}}
    if arm == "schema":
        out["response_format"] = {"type": "json_schema",
                                  "json_schema": {"name": "%s_list" % record, "schema": array_schema(record, items),
                                                  "strict": True}}
    return out


def judge(text, finish_reason, record, items):
    """(passed, why) for one answer."""
    from jsonschema import Draft202012Validator

    if finish_reason != "stop":
        return False, "did not stop on its own (finish_reason %s)" % finish_reason
    stripped = text.strip()
    if stripped.startswith("```"):
        return False, "fenced in a code block"
    try:
        data = json.loads(stripped)
    except ValueError as exc:
        return False, "not one JSON value (%s)" % str(exc)[:80]
    if not isinstance(data, list):
        return False, "not an array (%s)" % type(data).__name__
    if len(data) != items:
        return False, "%d objects, not %d" % (len(data), items)
    validator = Draft202012Validator(RECORDS[record])
    for i, obj in enumerate(data):
        error = next(iter(validator.iter_errors(obj)), None)
        if error is not None:
            return False, "object %d: %s" % (i, error.message[:120])
    return True, "%d conforming objects" % items


# -- the precision group's json-1k: truncated arrays (the 1,024-token budget ends them), scored object by object --

JSON_1K_RECORD = _obj({"id": _I, "name": _S, "description": _S, "tags": {"type": "array", "items": _S},
                       "created": _S})


def score_truncated(text, schema=JSON_1K_RECORD):
    """{objects, closed_parses, closed, json_schema_valid, first_violation} of an array cut off by the budget:
    the completed objects (decoded one by one from the opening bracket), whether the prefix parses once closed
    after the last of them, and the share of them that conform to the record schema."""
    from jsonschema import Draft202012Validator

    start = text.find("[")
    objects, pos, end, decoder = [], start + 1, start + 1, json.JSONDecoder()
    while start >= 0:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break
        objects.append(obj)
        end = pos  # just after the last completed object
    closed = bool(objects)
    if closed:
        try:
            json.loads(text[start:end] + "]")
        except ValueError:
            closed = False
    validator = Draft202012Validator(schema)
    errors = [next(iter(validator.iter_errors(o)), None) for o in objects]
    bad = [e for e in errors if e is not None]
    return {"objects": len(objects), "closed_parses": closed, "closed": text[start:end] + "]" if closed else None,
            "json_schema_valid": (len(objects) - len(bad)) / len(objects) if objects else 0.0,
            "first_violation": bad[0].message[:160] if bad else None}
