#!/usr/bin/python3
# kazoo's plain Counter (no support_curator) on a zkrecipes counter
# (tests/test_counters.c): the number as ASCII text, ZKRC_COUNTER_KAZOO.
# Run by Debian's /usr/bin/python3, which sees kazoo.
#
#   kazoo_plain_counter.py HOSTS PATH add N    add 1, N times (kazoo
#                                               retries each on a version
#                                               conflict), print the value
#   kazoo_plain_counter.py HOSTS PATH read      print the value
#   kazoo_plain_counter.py HOSTS PATH set V     counter += V - value
#   kazoo_plain_counter.py HOSTS PATH raw       print the node's bytes
# Exit status 0, 1 when kazoo raised (its message on stderr), 2 bad usage.
import sys

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry


def main(argv):
    if len(argv) < 3 or argv[2] not in ("add", "read", "set", "raw"):
        print("usage: kazoo_plain_counter.py HOSTS PATH add N|read|set V|raw",
              file=sys.stderr)
        return 2
    # Conflicts retried many times, with kazoo's own backoff.
    client = KazooClient(hosts=argv[0], timeout=10.0,
                         command_retry=KazooRetry(max_tries=200, delay=0.002,
                                                  max_delay=0.064))
    client.start(timeout=15)
    try:
        counter = client.Counter(argv[1])
        if argv[2] == "add":
            for _ in range(int(argv[3])):
                counter += 1
        elif argv[2] == "set":
            counter += int(argv[3]) - counter.value
        elif argv[2] == "raw":
            data, _ = client.get(argv[1])
            print(data.decode("ascii"))
            return 0
        print(counter.value)
        sys.stdout.flush()
    except Exception as e:  # noqa: BLE001 - told to the test as exit 1
        print("kazoo_plain_counter.py: %r" % (e,), file=sys.stderr)
        return 1
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
