#!/usr/bin/python3
"""kazoo_barrier: kazoo's Barrier and DoubleBarrier for zkrecipes' barrier
tests (tests/test_barrier.c).  Run it with Debian's /usr/bin/python3
(python3-kazoo).

  kazoo_barrier.py set    CONNECT PATH             create(); "set"
  kazoo_barrier.py remove CONNECT PATH             remove(); "removed" or
                                                   "absent"
  kazoo_barrier.py wait   CONNECT PATH TIMEOUT_MS  wait(); "gone" or
                                                   "timeout" (exit 3)
  kazoo_barrier.py double CONNECT PATH N [ID]      a DoubleBarrier of N:
                                                   "started", enter(), then
                                                   "entered NODE"; on the
                                                   line "leave" (or the end
                                                   of input) leave(), "left"

kazoo's enter() and leave() have no timeout: a watchdog thread ends the
peer (exit 3, "timeout") after ZKR_PEER_TIMEOUT_MS (default 30000).  Exit
codes: 0 done, 2 usage, 3 timeout, 4 could not connect.

Licensed under the Apache License, Version 2.0 (see COPYING).
"""
import logging
import os
import sys
import threading


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    logging.disable(logging.CRITICAL)
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError
    timeout_s = int(os.environ.get("ZKR_PEER_TIMEOUT_MS", "30000")) / 1000.0

    def watchdog():
        say("timeout")
        os._exit(3)
    dog = threading.Timer(timeout_s, watchdog)
    dog.daemon = True
    dog.start()
    mode, hosts, path = argv[1], argv[2], argv[3]
    client = KazooClient(hosts=hosts, timeout=4.0)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        return 4
    try:
        if mode == "set":
            client.Barrier(path).create()
            say("set")
        elif mode == "remove":
            say("removed" if client.Barrier(path).remove() else "absent")
        elif mode == "wait" and len(argv) > 4:
            if not client.Barrier(path).wait(int(argv[4]) / 1000.0):
                say("timeout")
                return 3
            say("gone")
        elif mode == "double" and len(argv) > 4:
            ident = argv[5] if len(argv) > 5 else None
            b = client.DoubleBarrier(path, int(argv[4]), identifier=ident)
            say("started")
            b.enter()
            if not b.participating:
                return 5
            say("entered " + b.node_name)
            for line in sys.stdin:
                if line.strip() == "leave":
                    break
            b.leave()
            say("left")
        else:
            sys.stderr.write(__doc__)
            return 2
        return 0
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
