#!/usr/bin/python3
# kazoo's Election.run taking turns with zkrecipes' runners
# (tests/test_runner.c): kazoo's Election is a kazoo Lock on the path,
# whose contender nodes are "<uuid>__lock__<seq>".  Run by Debian's
# /usr/bin/python3, which sees kazoo.
#
#   kazoo_election.py HOSTS PATH ID TURNS WORK_MS HOLD_FIRST
#
# Runs TURNS elections one after the other; each leadership function
# prints "STARTED TOKEN T0", works WORK_MS ms, and prints
# "TURN TOKEN T0 T1" (TOKEN: the czxid of its lock node; times:
# CLOCK_MONOTONIC in microseconds, the clock of tests/holds.h).  With
# HOLD_FIRST 1 the first leadership also waits for a line on stdin before
# it returns (at most 30 s).  Prints "READY" once connected, "DONE" at the
# end.  Exit status 0, 2 for bad usage.
import select
import sys
import threading
import time

from kazoo.client import KazooClient


def now_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def say(*words):
    print(*words)
    sys.stdout.flush()


def take_turns(client, path, ident, turns, work_ms, hold_first):
    pause = threading.Event()  # never set: its wait is the work's duration
    election = client.Election(path, ident)
    for n in range(turns):
        def lead():
            t0 = now_us()
            node = election.lock.node
            if not node.startswith("/"):
                node = path + "/" + node
            stat = client.exists(node)
            token = stat.czxid if stat else -1
            say("STARTED", token, t0)
            if hold_first and n == 0:
                select.select([sys.stdin], [], [], 30.0)
                sys.stdin.readline()
            pause.wait(work_ms / 1000.0)
            say("TURN", token, t0, now_us())
        election.run(lead)


def main(argv):
    if len(argv) != 6:
        print("usage: kazoo_election.py HOSTS PATH ID TURNS WORK_MS "
              "HOLD_FIRST", file=sys.stderr)
        return 2
    client = KazooClient(hosts=argv[0], timeout=10.0)
    client.start(timeout=15)
    say("READY")
    try:
        take_turns(client, argv[1], argv[2], int(argv[3]), int(argv[4]),
                   argv[5] == "1")
    finally:
        client.stop()
        client.close()
    say("DONE")  # its nodes are gone
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
