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

USAGE = ("usage: kazoo_lease.py HOSTS PATH obtain IDENT MS NOW | "
         "multi COUNT IDENT MS NOW")


def lease(client, path, mode, args):
    """The lease object kazoo made, from the arguments after MODE."""
    count = int(args.pop(0)) if mode == "multi" else None
    ident, duration = args[0], datetime.timedelta(milliseconds=int(args[1]))
    when = datetime.datetime(1970, 1, 1) + \
        datetime.timedelta(seconds=float(args[2]))
    kwargs = {"identifier": ident, "utcnow": lambda: when}
    if count is None:
        return client.NonBlockingLease(path, duration, **kwargs)
    return client.MultiNonBlockingLease(count, path, duration, **kwargs)


def main(argv):
    wanted = {"obtain": 6, "multi": 7}
    if len(argv) < 3 or len(argv) != wanted.get(argv[2]):
        print(USAGE, file=sys.stderr)
        return 2
    client = KazooClient(hosts=argv[0], timeout=10.0)
    client.start(timeout=15)
    got = False
    try:
        got = bool(lease(client, argv[1], argv[2], argv[3:]))
    finally:
        client.stop()
        client.close()
    print("obtained" if got else "refused", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
