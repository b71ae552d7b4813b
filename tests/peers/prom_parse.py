#!/usr/bin/python3
# prom_parse.py IN OUT - read IN, a text in Prometheus' exposition format,
# with the Prometheus project's own Python parser (Debian's
# python3-prometheus-client, prometheus_client.parser), and write each of
# its samples to OUT as one line "TYPE<tab>NAME{LABELS}<tab>VALUE": the
# family's type, the sample's name, its labels sorted by name as
# name="value" (the value JSON-quoted), and its value as Python prints a
# float.  tests/test_metrics compares the series it reads back.
#
# Exit status: 0; 1 when the parser refused the text (its message on
# stderr); 77 when prometheus_client is missing (the test is skipped).
# Run with Debian's /usr/bin/python3 (DEBIAN_PYTHON3), which sees it.
#
# Licensed under the Apache License, Version 2.0 (see COPYING).

import json
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(77)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    lines = []
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join("%s=%s" % (k, json.dumps(v))
                                  for k, v in sorted(s.labels.items()))
                lines.append("%s\t%s{%s}\t%r\n"
                             % (family.type, s.name, labels, s.value))
    except Exception as e:  # the parser raises ValueError and others
        print("prom_parse: the parser refused the text: %r" % e,
              file=sys.stderr)
        return 1
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.writelines(lines)
    return 0


sys.exit(main())
