#!/usr/bin/python3
# kazoo's Party and ShallowParty beside zkrecipes' group in those formats
# (tests/test_party.c).  Run by Debian's /usr/bin/python3, which sees kazoo.
#
#   kazoo_party.py HOSTS PATH party|shallow ID
# Joins the party as ID and prints "joined NODE"; then, for each line on
# stdin, "list" prints "members ID,ID,..." (sorted, as kazoo iterates
# them); at the end of stdin it leaves, prints "left" and exits 0 (2 bad
# usage, 1 when kazoo raised).
import sys

from kazoo.client import KazooClient


def main(argv):
    if len(argv) != 4 or argv[2] not in ("party", "shallow"):
        print("usage: kazoo_party.py HOSTS PATH party|shallow ID",
              file=sys.stderr)
        return 2
    client = KazooClient(hosts=argv[0], timeout=10.0)
    client.start(timeout=15)
    try:
        kind = client.Party if argv[2] == "party" else client.ShallowParty
        party = kind(argv[1], argv[3])
        party.join()
        print("joined " + party.create_path)
        sys.stdout.flush()
        for line in sys.stdin:
            if line.strip() == "list":
                print("members " + ",".join(sorted(party)))
                sys.stdout.flush()
        party.leave()
        print("left")
        sys.stdout.flush()
    except Exception as e:  # noqa: BLE001 - told to the test as exit 1
        print("kazoo_party.py: %r" % (e,), file=sys.stderr)
        return 1
    finally:
        client.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
