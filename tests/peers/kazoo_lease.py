#!/usr/bin/python3
# kazoo's NonBlockingLease and MultiNonBlockingLease on the leases of
# zkrecipes' time leases (tests/test_timelease.c).  Run by Debian's
# /usr/bin/python3, which sees kazoo.
#
#   kazoo_lease.py HOSTS PATH obtain IDENT MS NOW
#       NonBlockingLease(PATH, MS milliseconds, IDENT) with kazoo's clock
#       reading NOW (seconds since the epoch, UTC)
#   kazoo_lease.py HOSTS PATH multi COUNT IDENT MS NOW
#       MultiNonBlockingLease(COUNT, PATH, ...) the same way
# Prints "obtained" or "refused"; exit status 0, 2 for bad usage.
import datetime
import sys

from kazoo.client import KazooClient


def main(argv):
    if len(argv) < 6 or argv[2] not in ("obtain", "multi") or \
            (argv[2] == "multi" and len(argv) < 7):
        print("usage: kazoo_lease.py HOSTS PATH obtain IDENT MS NOW | "
              "multi COUNT IDENT MS NOW", file=sys.stderr)
        return 2
    hosts, path, mode = argv[0], argv[1], argv[2]
    rest = argv[3:]
    count = int(rest.pop(0)) if mode == "multi" else 0
    ident, ms, now = rest[0], int(rest[1]), float(rest[2])
    when = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=now)
    duration = datetime.timedelta(milliseconds=ms)
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=15)
    try:
        if mode == "obtain":
            lease = client.NonBlockingLease(path, duration, identifier=ident,
                                            utcnow=lambda: when)
        else:
            lease = client.MultiNonBlockingLease(count, path, duration,
                                                 identifier=ident,
                                                 utcnow=lambda: when)
        print("obtained" if lease else "refused")
        sys.stdout.flush()
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
