#!/usr/bin/python3
# kazoo's Counter(support_curator=True) on a zkrecipes shared counter
# (tests/test_shared.c): Curator SharedCount's format, a 4-byte big-endian
# signed integer.  Run by Debian's /usr/bin/python3, which sees kazoo.
#
#   kazoo_counter.py HOSTS PATH add N    add 1, N times (kazoo retries
#                                         each on a version conflict)
#   kazoo_counter.py HOSTS PATH read     print the value
#   kazoo_counter.py HOSTS PATH set V    set it to V (counter - value + V)
# Exit status 0, 2 for bad usage.
import sys

from kazoo.client import KazooClient


def main(argv):
    if len(argv) < 3 or argv[2] not in ("add", "read", "set"):
        print("usage: kazoo_counter.py HOSTS PATH add N|read|set V",
              file=sys.stderr)
        return 2
    client = KazooClient(hosts=argv[0], timeout=10.0)
    client.start(timeout=15)
    try:
        counter = client.Counter(argv[1], support_curator=True)
        if argv[2] == "add":
            for _ in range(int(argv[3])):
                counter += 1
        elif argv[2] == "set":
            counter += int(argv[3]) - counter.value
        print(counter.value)
        sys.stdout.flush()
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
