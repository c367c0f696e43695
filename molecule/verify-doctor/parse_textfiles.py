# bad_day.yml: {name: Prometheus text} on stdin, each parsed with prometheus_client's text parser; prints
# {name: {family: [{name, labels, value}]}}. A file that does not parse, or holds no family, fails.
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

out = {}
for name, text in json.load(sys.stdin).items():
    families = {f.name: [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]
                for f in text_string_to_metric_families(text)}
    if not families:
        sys.exit("%s: no metric family" % name)
    out[name] = families
print(json.dumps(out))
