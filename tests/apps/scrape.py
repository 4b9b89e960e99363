#!/usr/bin/python3
# scrape.py PORT: GET /metrics from 127.0.0.1:PORT, parse it with Debian's
# python3-prometheus-client, and print one "name{k=v,...} value" line per
# sample (labels sorted) for the apps' tests to grep. Fails (exit 1) if the
# answer is not a 200 in the 0.0.4 text format or a family lacks HELP/TYPE.
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

port = int(sys.argv[1])
with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
    if r.status != 200:
        sys.exit("status %d" % r.status)
    ctype = r.headers["Content-Type"]
    if ctype != "text/plain; version=0.0.4; charset=utf-8":
        sys.exit("content-type %r" % ctype)
    text = r.read().decode()
for fam in text_string_to_metric_families(text):
    if not fam.documentation or fam.type not in ("counter", "gauge"):
        sys.exit("family %s lacks HELP or TYPE" % fam.name)
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        print("%s{%s} %.17g" % (s.name, labels, s.value))
