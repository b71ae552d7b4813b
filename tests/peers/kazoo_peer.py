#!/usr/bin/python3
"""kazoo_peer: a kazoo Lock participant for zkrecipes' interoperability tests
and benchmark.  Run it with Debian's /usr/bin/python3 (python3-kazoo).

  kazoo_peer.py hold  CONNECT PATH ID [TIMEOUT_MS]
  kazoo_peer.py rhold CONNECT PATH ID [TIMEOUT_MS]
  kazoo_peer.py whold CONNECT PATH ID [TIMEOUT_MS]
  kazoo_peer.py phold CONNECT PATH ID [TIMEOUT_MS]
  kazoo_peer.py shell CONNECT PATH ID
  kazoo_peer.py count CONNECT PATH ID N COUNTERFILE
  kazoo_peer.py rwcount CONNECT PATH ID N COUNTERFILE
  kazoo_peer.py loop  CONNECT PATH SECONDS [ID]
  kazoo_peer.py bench CONNECT
  kazoo_peer.py herd  CONNECT PATH N
  kazoo_peer.py partition CONNECT PATH ID TIME_BOUNDARY_MS ITEM[,ITEM...]

partition is a member of kazoo's SetPartitioner(PATH, set=ITEMs,
identifier=ID, time_boundary=TIME_BOUNDARY_MS / 1000) (issue 17).  It
prints "acquired A,B,..." (its share, sorted; empty when it has none) each
time the partitioner reaches ACQUIRED, "release" when it is asked to
release (and then calls release_set() at once), "failure" (and exits 5)
on FAILURE; on the line "quit" or the end of input it calls finish(),
prints "finished" and exits 0.  With ZKR_PEER_STAMP=1 (the benchmark's)
the lines carry the time kazoo set the state (its _set_state(), observed by
a subclass that changes nothing else), time.monotonic_ns():
"acquired T_NS A,B,...", "release T_NS", "failure T_NS"; and the command
"clock" answers "clock T_NS" (the benchmark checks it is its
CLOCK_MONOTONIC).

The modes, their output lines and the exit codes are those of CuratorPeer
(tests/peers/CuratorPeer.java); read its header.  bench and herd are the
benchmark's (bench/zkr-bench.c); their times are time.monotonic_ns()
(CLOCK_MONOTONIC, comparable between processes).  In bench's "contend" each
client is a KazooClient of its own, used by one thread.  kazoo has no LeaderLatch
(its Election is a Lock with "__lock__" nodes), so there is no latch mode.

The lock is client.Lock(PATH, ID, extra_lock_patterns=["-lock-"]): kazoo's
own nodes are "<uuid hex>__lock__<seq>"; the extra pattern makes it count
Curator's and zkrecipes' "_c_<uuid>-lock-<seq>" nodes as contenders too.
The node data is ID.

phold is hold on a stock Lock, not told about other names (no
extra_lock_patterns): it counts only nodes with kazoo's "__lock__".

rhold and whold are hold on a ReadLock ("__rlock__" nodes, shared) and a
WriteLock ("__lock__", exclusive), with extra_lock_patterns that make them
count the other dialects' nodes: the ReadLock waits for "__WRIT__" and
"-lock-" nodes too, the WriteLock for "__READ__", "__WRIT__" and "-lock-".
rwcount is CuratorPeer's rwcount on that ReadLock and WriteLock (one of
each, on one client): round i writes the counter when i % 3 == 0, reads it
twice around a 1 ms sleep otherwise; "done N writes=W moved=M".

kazoo before 2.9 (Debian's 2.8.0) has a ReadLock that also waits for an
exclusive contender queued *behind* it (python-zk/kazoo#649: the reader
and that writer then wait for each other until a timeout, with kazoo's own
WriteLock as with any other).  With such a kazoo the ReadLock is given
kazoo 2.9's rule (#650): it waits for the nearest exclusive contender
ahead of it only.  Nothing else of kazoo is changed.

Environment: ZKR_PEER_TIMEOUT_MS, ZKR_PEER_SESSION_MS, ZKR_PEER_LIFETIME_S as
for CuratorPeer.  kazoo's log is silenced so that stdout carries only the
protocol lines.

Licensed under the Apache License, Version 2.0 (see COPYING).
"""
import inspect
import logging
import os
import select
import sys
import threading
import time

EXIT_OK, EXIT_USAGE, EXIT_TIMEOUT, EXIT_CONNECT, EXIT_ERROR = 0, 2, 3, 4, 5
EXIT_NO_COMMAND, EXIT_WATCHDOG = 6, 124

USAGE = """usage: kazoo_peer.py hold CONNECT PATH ID [TIMEOUT_MS]
       kazoo_peer.py rhold|whold CONNECT PATH ID [TIMEOUT_MS]
       kazoo_peer.py shell CONNECT PATH ID
       kazoo_peer.py count CONNECT PATH ID N COUNTERFILE
       kazoo_peer.py rwcount CONNECT PATH ID N COUNTERFILE
       kazoo_peer.py loop CONNECT PATH SECONDS [ID]
       kazoo_peer.py bench CONNECT
       kazoo_peer.py herd CONNECT PATH N
       kazoo_peer.py partition CONNECT PATH ID TIME_BOUNDARY_MS ITEMS"""


class Exit(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def env_int(name, default):
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        print("kazoo_peer: ignoring bad %s=%s" % (name, value), file=sys.stderr)
        return default


PEER_TIMEOUT_S = env_int("ZKR_PEER_TIMEOUT_MS", 60000) / 1000.0
SESSION_S = env_int("ZKR_PEER_SESSION_MS", 10000) / 1000.0
STAMP = env_int("ZKR_PEER_STAMP", 0) != 0


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def number(what, text, minimum):
    try:
        value = int(text)
        if value >= minimum:
            return value
    except ValueError:
        pass
    raise Exit(EXIT_USAGE, "bad %s: %s" % (what, text))


class Commands:
    """Lines of stdin, each wait bounded by the peer timeout.  End of input
    is the line None."""

    def __init__(self):
        self.buf = b""
        self.eof = False

    def next(self):
        deadline = time.monotonic() + PEER_TIMEOUT_S
        while b"\n" not in self.buf and not self.eof:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([0], [], [], left)[0]:
                raise Exit(EXIT_NO_COMMAND,
                           "no command within %g s" % PEER_TIMEOUT_S)
            chunk = os.read(0, 4096)
            self.eof = not chunk
            self.buf += chunk
        if b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            return line.decode("utf-8", "replace").strip()
        if self.buf:
            line, self.buf = self.buf, b""
            return line.decode("utf-8", "replace").strip()
        return None


def check_path(path):
    """A ZooKeeper path kazoo would not silently rewrite (it drops empty
    components: "a//b" becomes "/a/b")."""
    if (not path.startswith("/") or path == "/" or path.endswith("/")
            or "//" in path):
        raise Exit(EXIT_USAGE, "bad PATH: " + path)


def connect(hosts):
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError
    client = KazooClient(hosts=hosts, timeout=SESSION_S)
    try:
        client.start(timeout=PEER_TIMEOUT_S)
    except KazooTimeoutError:
        client.close()
        raise Exit(EXIT_CONNECT, "could not connect to " + hosts)
    return client


def fixed_read_predecessor(lock, node):
    """kazoo 2.9's ReadLock._get_predecessor (python-zk/kazoo#650): the
    nearest exclusive contender *ahead* of our node.  kazoo 2.8's returns
    the last exclusive contender of the whole directory, one queued behind
    our reader too (python-zk/kazoo#649): the reader then waits for a
    writer that waits for it, until a timeout.  Sequences are compared as
    numbers (kazoo 2.9 compares their text, the same for these)."""
    from kazoo.retry import ForceRetryError
    ours = int(node[len(lock.prefix):])
    found_self = False
    ahead = []
    for child in lock.client.get_children(lock.path):
        match = lock._contenders_re.search(child)
        if match is not None and int(match.group(1)) < ours:
            ahead.append((int(match.group(1)), child))
        if child == node:
            found_self = True
    if not found_self:  # our node is gone (a session lost meanwhile)
        raise ForceRetryError()
    return max(ahead)[1] if ahead else None


def read_lock_waits_behind():
    """Does this kazoo's ReadLock wait for writers behind it (#649)?"""
    from kazoo import version
    try:
        major, minor = (int(x) for x in version.__version__.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < (2, 9)


class Mutex:
    """A kazoo Lock that counts "-lock-" nodes as contenders."""

    # The kinds of lock: its factory and the other dialects it counts.
    KINDS = {"mutex": ("Lock", ["-lock-"]),
             "plain": ("Lock", []),
             "read": ("ReadLock", ["__WRIT__", "-lock-"]),
             "write": ("WriteLock", ["__READ__", "__WRIT__", "-lock-"])}

    def __init__(self, client, path, ident, kind="mutex"):
        from kazoo.recipe.lock import Lock
        factory, patterns = self.KINDS[kind]
        make = getattr(client, factory)
        if not patterns:
            self.lock = make(path, ident)
        elif "extra_lock_patterns" in inspect.signature(Lock.__init__).parameters:
            self.lock = make(path, ident, extra_lock_patterns=patterns)
        else:  # kazoo < 2.7.1: Curator's and zkrecipes' nodes go unseen
            print("kazoo_peer: this kazoo has no extra_lock_patterns: "
                  "not interoperable", file=sys.stderr)
            self.lock = make(path, ident)
        if kind == "read" and read_lock_waits_behind():
            lock = self.lock
            lock._get_predecessor = (
                lambda node: fixed_read_predecessor(lock, node))
        self.path = path
        self.held = False

    def acquire(self, timeout_s):
        """True when acquired; False when not in time (0: try once)."""
        from kazoo.exceptions import LockTimeout, NoNodeError
        for attempt in range(3):
            try:
                if timeout_s == 0:
                    got = self.lock.acquire(blocking=False)
                else:
                    got = self.lock.acquire(timeout=timeout_s)
                break
            except LockTimeout:
                got = False
                break
            except NoNodeError:
                # kazoo creates the directory once per Lock object and then
                # assumes it stays; Curator and zkrecipes create it as a
                # container node, which the servers delete once empty.
                print("kazoo_peer: the lock directory vanished (a container "
                      "node?); creating it again", file=sys.stderr)
                self.lock.assured_path = False
        else:
            raise Exit(EXIT_ERROR, "the lock directory keeps vanishing")
        self.held = got
        return got

    def node(self):
        return self.path + "/" + self.lock.node

    def release(self):
        self.lock.release()
        self.held = False

    def participants(self):
        return "participants " + ",".join(self.lock.contenders())


def acquire_and_say(m, timeout_s):
    if m.acquire(timeout_s):
        say("acquired " + m.node())
        return True
    say("timeout")
    return False


def release_and_say(m):
    m.release()
    say("released")


def hold(client, cmds, path, ident, timeout_s, kind="mutex"):
    m = Mutex(client, path, ident, kind)
    if not acquire_and_say(m, timeout_s):
        return EXIT_TIMEOUT
    while cmds.next() == "participants":
        say(m.participants())
    release_and_say(m)
    return EXIT_OK


def shell(client, cmds, path, ident):
    m = Mutex(client, path, ident)
    while True:
        cmd = cmds.next()
        words = (cmd or "").split()
        if cmd is None or words == ["quit"]:
            if m.held:
                release_and_say(m)
            return EXIT_OK
        elif words and words[0] == "acquire" and len(words) <= 2:
            timeout_s = (number("timeout", words[1], 0) / 1000.0
                         if len(words) == 2 else PEER_TIMEOUT_S)
            acquire_and_say(m, timeout_s)
        elif words == ["release"]:
            if m.held:
                release_and_say(m)
            else:
                say("error not held")
        elif words == ["participants"]:
            say(m.participants())
        else:
            say("error unknown command: " + cmd)


def warm_up_and_wait(m, cmds):
    if not m.acquire(PEER_TIMEOUT_S):
        raise Exit(EXIT_TIMEOUT, "warm-up acquisition timed out")
    m.release()
    say("ready")
    cmds.next()  # any line, or end of input


def read_counter(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return 0
    try:
        return int(text) if text else 0
    except ValueError:
        raise Exit(EXIT_ERROR, "counter file holds " + text)


def count(client, cmds, path, ident, n, counter_file):
    m = Mutex(client, path, ident)
    warm_up_and_wait(m, cmds)
    for _ in range(n):
        if not m.acquire(PEER_TIMEOUT_S):
            say("timeout")
            return EXIT_TIMEOUT
        value = read_counter(counter_file)
        time.sleep(0.001)  # widen the window a lost update would need
        with open(counter_file, "w") as f:
            f.write(str(value + 1))
        with open(counter_file + ".trace", "a") as f:
            f.write(ident + "\n")
        m.release()
    say("done %d" % n)
    return EXIT_OK


def rwcount(client, cmds, path, ident, n, counter_file):
    """The shared counter under the read-write lock: a writer's
    read-sleep-write must not lose an update, a reader's read-sleep-read
    must not see the counter move (counted in "moved")."""
    reader = Mutex(client, path, ident, "read")
    writer = Mutex(client, path, ident, "write")
    warm_up_and_wait(writer, cmds)
    writes = moved = 0
    for i in range(n):
        write = i % 3 == 0
        side = writer if write else reader
        if not side.acquire(PEER_TIMEOUT_S):
            say("timeout")
            return EXIT_TIMEOUT
        value = read_counter(counter_file)
        time.sleep(0.001)  # widen the window a violation would need
        if write:
            with open(counter_file, "w") as f:
                f.write(str(value + 1))
            writes += 1
        elif read_counter(counter_file) != value:
            moved += 1
        side.release()
    say("done %d writes=%d moved=%d" % (n, writes, moved))
    return EXIT_OK


def percentile_us(samples, p):
    if not samples:
        return 0
    s = sorted(samples)
    i = max(0, min(len(s) - 1, int(-(-p * len(s) // 1)) - 1))
    return int(s[i] * 1e6)


def loop(client, cmds, path, ident, seconds):
    m = Mutex(client, path, ident)
    warm_up_and_wait(m, cmds)
    return measure_loop(m, seconds)


def measure_loop(m, seconds):
    """Acquire and release as fast as possible for SECONDS; say the
    result."""
    acquire_s, cycle_s = [], []
    start = now = time.monotonic()
    end = start + seconds
    while now < end:
        if not m.acquire(PEER_TIMEOUT_S):
            say("timeout")
            return EXIT_TIMEOUT
        held = time.monotonic()
        m.release()
        done = time.monotonic()
        acquire_s.append(held - now)
        cycle_s.append(done - now)
        now = done
    secs = now - start
    say("done ops=%d secs=%.3f ops_per_sec=%.1f acquire_p50_us=%d "
        "acquire_p99_us=%d cycle_p50_us=%d cycle_p99_us=%d"
        % (len(acquire_s), secs, len(acquire_s) / secs,
           percentile_us(acquire_s, 0.50), percentile_us(acquire_s, 0.99),
           percentile_us(cycle_s, 0.50), percentile_us(cycle_s, 0.99)))
    return EXIT_OK


# ------------------------------------------------------------------ bench

def warm_up(m):
    if not m.acquire(PEER_TIMEOUT_S):
        raise Exit(EXIT_TIMEOUT, "warm-up acquisition timed out")
    m.release()


def ensure_clients(clients, hosts, n):
    while len(clients) < n:
        clients.append(connect(hosts))


def close_clients(clients):
    for c in clients:
        c.stop()
        c.close()
    del clients[:]


def violated(marker):
    """The exclusion check inside a hold: True when someone else is in."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return True
    os.close(fd)
    os.unlink(marker)
    return False


class Contender(threading.Thread):
    def __init__(self, m, marker, barrier, seconds):
        super().__init__(name="contender", daemon=True)
        self.m, self.marker, self.barrier = m, marker, barrier
        self.seconds = seconds
        self.times = []  # 4 per cycle, ns
        self.violations = 0
        self.error = None
        self.start_ns = 0

    def run(self):
        try:
            warm_up(self.m)
            self.barrier.wait(PEER_TIMEOUT_S)
            now = self.start_ns = time.monotonic_ns()
            end = now + self.seconds * 1000000000
            while now < end:
                if not self.m.acquire(PEER_TIMEOUT_S):
                    raise Exit(EXIT_TIMEOUT, "an acquisition timed out")
                held = time.monotonic_ns()
                if violated(self.marker):
                    self.violations += 1
                releasing = time.monotonic_ns()
                self.m.release()
                done = time.monotonic_ns()
                self.times += (now, held, releasing, done)
                now = done
        except Exception as e:  # reported by the main thread
            self.error = e
            self.barrier.abort()


def contend(clients, path, seconds, marker):
    barrier = threading.Barrier(len(clients))
    threads = [Contender(Mutex(c, path, "kazoo-contend-%d" % i), marker,
                         barrier, seconds)
               for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for t in threads:
        if t.error is not None:
            raise t.error
    ops = sum(len(t.times) // 4 for t in threads)
    start = min(t.start_ns for t in threads)
    secs = (time.monotonic_ns() - start) / 1e9
    say("done ops=%d secs=%.3f violations=%d"
        % (ops, secs, sum(t.violations for t in threads)))
    parts = ["ops"]
    for t in threads:
        v = [x // 1000 for x in t.times]
        parts += ["%d,%d,%d,%d" % tuple(v[i:i + 4])
                  for i in range(0, len(v), 4)]
    say(" ".join(parts))


def bench(hosts, cmds):
    clients = []
    try:
        say("ready")
        while True:
            cmd = cmds.next()
            words = (cmd or "").split()
            if cmd is None or words == ["quit"]:
                return EXIT_OK
            elif words and words[0] == "loop" and len(words) == 3:
                seconds = number("SECONDS", words[2], 1)
                ensure_clients(clients, hosts, 1)
                m = Mutex(clients[0], words[1], "kazoo-loop")
                warm_up(m)
                measure_loop(m, seconds)
            elif words and words[0] == "contend" and len(words) == 5:
                seconds = number("SECONDS", words[2], 1)
                n = number("CLIENTS", words[3], 1)
                ensure_clients(clients, hosts, n)
                contend(clients[:n], words[1], seconds, words[4])
            else:
                say("error unknown command: " + cmd)
    finally:
        close_clients(clients)


# ------------------------------------------------------------------- herd

class HerdWaiter(threading.Thread):
    def __init__(self, m, index, holders):
        super().__init__(name="herd-%d" % index, daemon=True)
        self.m, self.index, self.holders = m, index, holders
        self.release_now = threading.Event()
        self.released = threading.Event()

    def run(self):
        try:
            if not self.m.acquire(PEER_TIMEOUT_S):
                print("kazoo_peer: herd waiter %d timed out" % self.index,
                      file=sys.stderr)
                return
            say("acquired %d" % self.index)
            self.holders.put(self)
            if self.release_now.wait(PEER_TIMEOUT_S):
                self.m.release()
                self.released.set()
        except Exception as e:
            print("kazoo_peer: herd waiter %d: %s" % (self.index, e),
                  file=sys.stderr)


def expect(cmds, want):
    line = cmds.next()
    if line != want:
        raise Exit(EXIT_USAGE, "expected %r, got %r" % (want, line))


def herd(hosts, cmds, path, n):
    import queue
    clients = []
    try:
        ensure_clients(clients, hosts, n + 1)
        say("ready")
        expect(cmds, "hold")
        first = Mutex(clients[0], path, "herd-0")
        if not first.acquire(PEER_TIMEOUT_S):
            raise Exit(EXIT_TIMEOUT, "the first acquisition timed out")
        say("held")
        expect(cmds, "queue")
        holders = queue.Queue()
        waiters = [HerdWaiter(Mutex(clients[i], path, "herd-%d" % i), i,
                              holders) for i in range(1, n + 1)]
        for w in waiters:
            w.start()
        for k in range(n + 1):
            expect(cmds, "release")
            if k == 0:
                first.release()
            else:
                try:
                    w = holders.get(timeout=PEER_TIMEOUT_S)
                except queue.Empty:
                    raise Exit(EXIT_TIMEOUT, "nobody acquired the lock in time")
                w.release_now.set()
                if not w.released.wait(PEER_TIMEOUT_S):
                    raise Exit(EXIT_ERROR,
                               "herd waiter %d did not release" % w.index)
            say("released")
        say("done %d" % n)
        # Keep the sessions until told: the benchmark reads the servers'
        # counters before they close (a close is a request too).
        cmds.next()
        return EXIT_OK
    finally:
        close_clients(clients)


def stamped_partitioner(client, **kwargs):
    """kazoo's SetPartitioner, with the time of its last state change in
    stamp_ns (the loop below sees a change up to 40 ms late)."""
    from kazoo.recipe.partitioner import SetPartitioner

    class Stamped(SetPartitioner):
        stamp_ns = 0

        def _set_state(self, state):
            self.stamp_ns = time.monotonic_ns()
            super()._set_state(state)

    return Stamped(client, **kwargs)


def stamped(qp, word, rest=None):
    """A partition line; with STAMP the state's time after the word."""
    parts = [word]
    if STAMP:
        parts.append(str(qp.stamp_ns))
    if rest is not None:
        parts.append(rest)
    return " ".join(parts)


def partition(client, cmds, path, ident, boundary_ms, items):
    changed = client.handler.event_object()
    qp = stamped_partitioner(client, path=path, set=items, identifier=ident,
                             time_boundary=boundary_ms / 1000.0,
                             state_change_event=changed)
    told = None
    while True:
        if qp.failed:
            say(stamped(qp, "failure"))
            return EXIT_ERROR
        if qp.release:
            say(stamped(qp, "release"))
            qp.release_set()
            continue
        if qp.acquired and told != qp.state_id:
            told = qp.state_id
            say(stamped(qp, "acquired", ",".join(sorted(qp))))
        # A command, or a state change (polled too: clear() may race set()).
        if select.select([0], [], [], 0.02)[0]:
            cmd = cmds.next()
            if cmd is None or cmd == "quit":
                qp.finish()
                say("finished")
                return EXIT_OK
            if cmd == "clock":
                say("clock %d" % time.monotonic_ns())
                continue
            say("error unknown command: " + cmd)
        changed.wait(0.02)
        changed.clear()


def start_watchdog(seconds):
    def fire():
        print("kazoo_peer: watchdog: still running after %d s" % seconds,
              file=sys.stderr)
        sys.stderr.flush()
        os._exit(EXIT_WATCHDOG)
    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()


def run(argv):
    lifetime = env_int("ZKR_PEER_LIFETIME_S", 300)
    if len(argv) == 2 and argv[0] == "bench":
        start_watchdog(lifetime)
        return bench(argv[1], Commands())
    if len(argv) < 4:
        raise Exit(EXIT_USAGE, USAGE)
    mode, hosts, path = argv[0], argv[1], argv[2]
    check_path(path)
    timeout_s = PEER_TIMEOUT_S
    if mode in ("hold", "phold", "rhold", "whold", "shell"):
        if len(argv) != 4 and not (mode.endswith("hold") and len(argv) == 5):
            raise Exit(EXIT_USAGE, USAGE)
        if len(argv) == 5:
            timeout_s = number("TIMEOUT_MS", argv[4], 0) / 1000.0
    elif mode in ("count", "rwcount"):
        if len(argv) != 6:
            raise Exit(EXIT_USAGE, USAGE)
        number("N", argv[4], 0)
    elif mode == "loop":
        if len(argv) not in (4, 5):
            raise Exit(EXIT_USAGE, USAGE)
        lifetime += number("SECONDS", argv[3], 1)
    elif mode == "partition":
        if len(argv) != 6:
            raise Exit(EXIT_USAGE, USAGE)
        number("TIME_BOUNDARY_MS", argv[4], 0)
    elif mode == "herd":
        if len(argv) != 4:
            raise Exit(EXIT_USAGE, USAGE)
        start_watchdog(lifetime)
        return herd(hosts, Commands(), path, number("N", argv[3], 1))
    else:
        raise Exit(EXIT_USAGE, USAGE)
    start_watchdog(lifetime)
    cmds = Commands()
    client = connect(hosts)
    try:
        if mode.endswith("hold"):
            kind = {"hold": "mutex", "phold": "plain", "rhold": "read",
                    "whold": "write"}[mode]
            return hold(client, cmds, path, argv[3], timeout_s, kind)
        if mode == "shell":
            return shell(client, cmds, path, argv[3])
        if mode == "count":
            return count(client, cmds, path, argv[3], int(argv[4]), argv[5])
        if mode == "partition":
            return partition(client, cmds, path, argv[3], int(argv[4]),
                             argv[5].split(","))
        if mode == "rwcount":
            return rwcount(client, cmds, path, argv[3], int(argv[4]), argv[5])
        return loop(client, cmds, path, argv[4] if len(argv) == 5
                    else "kazoo-loop", int(argv[3]))
    finally:
        client.stop()
        client.close()


def main():
    logging.getLogger("kazoo").addHandler(logging.NullHandler())
    logging.getLogger("kazoo").propagate = False
    try:
        code = run(sys.argv[1:])
    except Exit as e:
        print("kazoo_peer: %s" % e, file=sys.stderr)
        code = e.code
    except Exception as e:  # any kazoo failure: a clear message, no trace
        print("kazoo_peer: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        code = EXIT_ERROR
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # kazoo's threads may linger after close()


if __name__ == "__main__":
    main()
