/*
 * CuratorPeer: an Apache Curator 5 participant (InterProcessMutex,
 * InterProcessReadWriteLock, InterProcessSemaphoreV2, LeaderLatch) for
 * zkrecipes' interoperability tests and benchmark (and its caches, for the
 * benchmark).
 *
 *   java -cp DIR:JARS CuratorPeer MODE CONNECT PATH ARGS...
 *
 *   hold  CONNECT PATH ID [TIMEOUT_MS]
 *         Acquire the mutex (TIMEOUT_MS: 0 tries once; default: the peer
 *         timeout).  Prints "acquired NODE" or "timeout" (exit 3).  Then
 *         reads commands: "participants" prints the queue; any other line,
 *         or end of input, releases ("released") and exits 0.
 *   rhold CONNECT PATH ID [TIMEOUT_MS]
 *   whold CONNECT PATH ID [TIMEOUT_MS]
 *         As hold, on the read (rhold) or write (whold) side of an
 *         InterProcessReadWriteLock whose nodes hold ID; prints "acquired"
 *         (without the node, which Curator does not give out).
 *   rwcount CONNECT PATH ID N COUNTERFILE
 *         An InterProcessReadWriteLock on a shared counter: warm up, "ready",
 *         wait for a line, then N rounds, round i on the write side when
 *         i % 3 == 0 (read the integer in COUNTERFILE, sleep 1 ms, write it
 *         + 1) and on the read side otherwise (read it, sleep 1 ms, read it
 *         again: it must not have moved).  Prints "done N writes=W
 *         moved=M" (M: reads that saw the counter move under them).
 *   shold CONNECT PATH ID N [TIMEOUT_MS]
 *         As hold, for one lease of an InterProcessSemaphoreV2 of N leases
 *         whose nodes hold ID: "acquired NODE" (the lease node's name) or
 *         "timeout" (exit 3); any line, or end of input, returns the lease
 *         ("released").
 *   scount CONNECT PATH ID N ROUNDS SLOTDIR
 *         An InterProcessSemaphoreV2 of N leases: warm up, "ready", wait for
 *         a line, then ROUNDS times: acquire a lease, create one of the files
 *         SLOTDIR/slot-0 .. slot-(N-1) exclusively (O_EXCL; when all N exist,
 *         more than N are inside: a violation), sleep 2 ms, remove it,
 *         return the lease.  Prints "done ROUNDS violations=V".
 *   shell CONNECT PATH ID
 *         One mutex driven by commands: "acquire [TIMEOUT_MS]" ("acquired
 *         NODE" / "timeout"), "release" ("released" / "error not held"),
 *         "participants", "quit" or end of input (releases, exits 0).
 *   count CONNECT PATH ID N COUNTERFILE
 *         Warm up (one acquire/release), print "ready", wait for a line (end
 *         of input starts at once), then N times: acquire, read the integer
 *         in COUNTERFILE (missing or empty: 0), sleep 1 ms, write it + 1,
 *         append "ID\n" to COUNTERFILE.trace, release.  Prints "done N".
 *   loop  CONNECT PATH SECONDS [ID]
 *         Warm up, "ready", wait for a line as above, then acquire and
 *         release as fast as possible for SECONDS.  Prints "done ops=N
 *         secs=S ops_per_sec=R acquire_p50_us=A acquire_p99_us=B
 *         cycle_p50_us=C cycle_p99_us=D" (cycle: acquire + release).
 *   latch CONNECT PATH ID
 *         Join a LeaderLatch ("joined NODE"); "leader" / "notleader" are
 *         printed whenever leadership changes.  Commands: "status" ("status
 *         leader|follower"), "leaderid" ("leaderid ID", Curator's view),
 *         "participants", "close" (leave: "closed"), "join" (again:
 *         "joined NODE"), "quit" or end of input (exits 0).
 *   group CONNECT PATH ID PAYLOAD
 *         A GroupMember (org.apache.curator.framework.recipes.nodes) of the
 *         group PATH with id ID and payload PAYLOAD (UTF-8).  Prints
 *         "joined NODE" once its node exists.  Commands: "members" prints
 *         "members ID=PAYLOAD ..." (getCurrentMembers(), sorted by id);
 *         "await ID=PAYLOAD" waits until getCurrentMembers() has ID with
 *         PAYLOAD, at most 8 s (less than the tests wait for a reply), then
 *         prints "members ..." (the view then, whether it came or not);
 *         "awaitgone ID" the same until ID is not a member; "set
 *         PAYLOAD" (setThisData: "set"); "quit" or end of input leaves the
 *         group ("left") and exits 0.
 *
 * Modes for the benchmark (bench/zkr-bench.c):
 *
 *   bench CONNECT
 *         A long-lived peer (its JVM stays warm from one measurement to the
 *         next).  Prints "ready", then runs commands:
 *         "loop PATH SECONDS": as the loop mode, on client 0, starting
 *         right after its warm-up (no "ready" / start line);
 *         "contend PATH SECONDS CLIENTS MARKER": CLIENTS clients (sessions),
 *         one thread each with its own mutex, warm up, then all acquire and
 *         release PATH for SECONDS; inside every hold the thread creates
 *         the file MARKER exclusively (O_EXCL) and removes it again: when
 *         it already exists another holder is inside too, a violation.
 *         Prints "done ops=N secs=S violations=V", then "ops A,H,R,D ..."
 *         with the times of every cycle in microseconds of System.nanoTime()
 *         (CLOCK_MONOTONIC on Linux, comparable between processes):
 *         acquire called, acquired, release called, released.
 *         "rwlock PATH SECONDS READERS HOLD_MS": READERS+1 clients, one
 *         thread each, on one InterProcessReadWriteLock: READERS readers
 *         loop acquire-read/release, the last client acquire-write/hold
 *         HOLD_MS/release; "semaphore PATH SECONDS CLIENTS N HOLD_MS":
 *         CLIENTS clients loop acquire/hold HOLD_MS/return on an
 *         InterProcessSemaphoreV2 of N leases.  Both warm up (one cycle per
 *         thread), print "ready", start on the next line, run for SECONDS
 *         and print what zkr-bench-worker's rwlock and semaphore modes
 *         print: "done secs=S violations=V" and per side
 *         "[reader_|writer_]ops=N ..wait_p50_us=A ..wait_p99_us=B".
 *         Clients are opened on first use and kept; "quit" or end of input
 *         closes them and exits 0.
 *   herd  CONNECT PATH N
 *         N+1 clients on one mutex; "ready" once all are connected.  Then
 *         "hold": client 0 acquires ("held"); "queue": clients 1..N each
 *         start a thread that acquires ("acquired K" when it gets the lock)
 *         and holds it; each "release" makes the current holder release
 *         ("released"); after N+1 releases, "done N"; the next line (or
 *         end of input) closes the clients and exits 0.
 *   cache CONNECT PATH KIND
 *         One of Curator's caches on PATH, KIND: node (NodeCache), tree
 *         (TreeCache), curator (CuratorCache of the tree at PATH),
 *         curator-node (CuratorCache with SINGLE_NODE_CACHE).  Prints
 *         "ready init_us=N nodes=K" once its first read is complete (N:
 *         since the cache was created; K: the nodes in its copy), then one
 *         line per change
 *         of the copy, "event ADDED|UPDATED|REMOVED PATH VERSION MZXID T_NS"
 *         (the node's stat: the new one, or the last one seen for REMOVED;
 *         NodeCache's REMOVED has -1; T_NS: System.nanoTime() on entering
 *         the listener, CLOCK_MONOTONIC on Linux).  Commands: "clock"
 *         prints "clock T_NS" (System.nanoTime() now, for the benchmark to
 *         check that it reads its own clock); "quit" or end of input.
 *
 *   discovery CONNECT BASE register NAME ID ADDRESS PORT
 *         Register a DYNAMIC instance with Curator's ServiceDiscovery
 *         (curator-x-discovery, JsonInstanceSerializer) under BASE: payload
 *         the Map {"lang":"java"}, uriSpec "{scheme}://{address}:{port}/x".
 *         Prints "registered"; commands: "update PORT" (updateService with
 *         the new port: "updated"), "quit" or end of input (unregisters,
 *         exits 0).
 *   discovery CONNECT BASE query NAME
 *         queryForInstances(NAME): one line per instance (by id), "instance ID
 *         ADDRESS PORT SSLPORT SERVICETYPE REGTIME URISPEC PAYLOAD" (null
 *         for what is unset; URISPEC as its template, variables in braces;
 *         PAYLOAD as Jackson writes it, last since it may hold spaces),
 *         then "done N".
 *   discovery CONNECT BASE names
 *         queryForNames(): "names A,B,..." (sorted).
 *
 * "participants" prints "participants ID,ID,..." in Curator's queue order
 * (node data of each contender, read by Curator).
 *
 * Node data: the participant ID (InterProcessMutex writes the client's IP
 * address unless getLockNodeBytes() is overridden, as done here).
 *
 * Exit codes: 0 done; 2 usage; 3 an acquisition timed out; 4 could not
 * connect; 5 any other error (message on stderr); 6 no command arrived
 * within the peer timeout; 124 the watchdog fired.
 *
 * Environment: ZKR_PEER_TIMEOUT_MS bounds every wait that has no timeout of
 * its own (connecting, acquiring, reading a command), default 60000;
 * ZKR_PEER_SESSION_MS the session timeout asked for, default 10000;
 * ZKR_PEER_LIFETIME_S the watchdog (whole process), default 300 (plus
 * SECONDS in loop mode).  Only these lines go to stdout: run with slf4j-nop
 * on the class path so that nothing logs there.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.ZKPaths;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.UriSpec;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorPeer {
  static final int EXIT_OK = 0, EXIT_USAGE = 2, EXIT_TIMEOUT = 3,
      EXIT_CONNECT = 4, EXIT_ERROR = 5, EXIT_NO_COMMAND = 6,
      EXIT_WATCHDOG = 124;

  /* stdout with a flush after every line: the reader waits for lines. */
  static final PrintStream out =
      new PrintStream(new FileOutputStream(FileDescriptor.out), true);

  static final long peerTimeoutMs = envLong("ZKR_PEER_TIMEOUT_MS", 60000);
  static final int sessionMs = (int) envLong("ZKR_PEER_SESSION_MS", 10000);

  /** Thrown to leave with a given exit code. */
  static final class Exit extends Exception {
    private static final long serialVersionUID = 1L;
    final int code;

    Exit(int code, String message) {
      super(message);
      this.code = code;
    }
  }

  static long envLong(String name, long dflt) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty())
      return dflt;
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      System.err.println("CuratorPeer: ignoring bad " + name + "=" + v);
      return dflt;
    }
  }

  static long parseNumber(String what, String s, long min) throws Exit {
    try {
      long v = Long.parseLong(s);
      if (v >= min)
        return v;
    } catch (NumberFormatException e) {
      /* reported below */
    }
    throw new Exit(EXIT_USAGE, "bad " + what + ": " + s);
  }

  /* ------------------------------------------------------------ stdin */

  /**
   * Lines of stdin, read by a daemon thread so that every wait for a command
   * can have a deadline.  End of input is the line EOF.
   */
  static final class Commands {
    static final String EOF = new String("<eof>");
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();

    Commands() {
      Thread t = new Thread(this::readAll, "stdin");
      t.setDaemon(true);
      t.start();
    }

    private void readAll() {
      try (BufferedReader r = new BufferedReader(
               new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null;)
          lines.add(line.trim());
      } catch (IOException e) {
        System.err.println("CuratorPeer: stdin: " + e);
      }
      lines.add(EOF);
    }

    /** The next line (EOF at end of input); Exit when none comes in time. */
    String next() throws Exit, InterruptedException {
      String line = lines.poll(peerTimeoutMs, TimeUnit.MILLISECONDS);
      if (line == null)
        throw new Exit(EXIT_NO_COMMAND,
                       "no command within " + peerTimeoutMs + " ms");
      if (line == EOF)
        lines.add(EOF); /* every later read sees the end too */
      return line;
    }
  }

  /* ------------------------------------------------------------- mutex */

  /** InterProcessMutex whose node holds our participant id. */
  static final class Mutex extends InterProcessMutex {
    private final byte[] id;

    Mutex(CuratorFramework client, String path, String id) {
      super(client, path);
      this.id = id.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    protected byte[] getLockNodeBytes() {
      return id;
    }

    /** Full path of the calling thread's node (while held). */
    String node() {
      return getLockPath();
    }
  }

  static CuratorFramework connect(String connect) throws Exit, InterruptedException {
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(connect)
        .sessionTimeoutMs(sessionMs)
        .connectionTimeoutMs((int) Math.min(sessionMs, peerTimeoutMs))
        .retryPolicy(new RetryNTimes(3, 100))
        .build();
    client.start();
    if (!client.blockUntilConnected((int) peerTimeoutMs, TimeUnit.MILLISECONDS)) {
      client.close();
      throw new Exit(EXIT_CONNECT, "could not connect to " + connect);
    }
    return client;
  }

  /** Contenders' ids in Curator's own order. */
  static String participants(CuratorFramework client, Mutex m) throws Exception {
    List<String> ids = new ArrayList<>();
    for (String node : m.getParticipantNodes()) {
      try {
        ids.add(new String(client.getData().forPath(node), StandardCharsets.UTF_8));
      } catch (KeeperException.NoNodeException e) {
        /* left meanwhile */
      }
    }
    return "participants " + String.join(",", ids);
  }

  static boolean acquire(Mutex m, long timeoutMs) throws Exception {
    if (m.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
      out.println("acquired " + m.node());
      return true;
    }
    out.println("timeout");
    return false;
  }

  static void release(Mutex m) throws Exception {
    m.release();
    out.println("released");
  }

  static int hold(CuratorFramework client, Commands in, String path, String id,
                  long timeoutMs) throws Exception {
    Mutex m = new Mutex(client, path, id);
    if (!acquire(m, timeoutMs))
      return EXIT_TIMEOUT;
    while (in.next().equals("participants"))
      out.println(participants(client, m));
    release(m);
    return EXIT_OK;
  }

  /** hold on a side of an InterProcessReadWriteLock (rhold, whold). */
  static int rwHold(CuratorFramework client, Commands in, String path,
                    String id, boolean write, long timeoutMs) throws Exception {
    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(
        client, path, id.getBytes(StandardCharsets.UTF_8));
    InterProcessMutex side = write ? rw.writeLock() : rw.readLock();
    if (!side.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
      out.println("timeout");
      return EXIT_TIMEOUT;
    }
    out.println("acquired");
    in.next(); /* any line, or end of input */
    side.release();
    out.println("released");
    return EXIT_OK;
  }

  static InterProcessSemaphoreV2 semaphore(CuratorFramework client, String path,
                                           String id, int n) {
    InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, n);
    sem.setNodeData(id.getBytes(StandardCharsets.UTF_8));
    return sem;
  }

  /** hold one lease of an InterProcessSemaphoreV2 (shold). */
  static int semHold(CuratorFramework client, Commands in, String path,
                     String id, int n, long timeoutMs) throws Exception {
    InterProcessSemaphoreV2 sem = semaphore(client, path, id, n);
    Lease lease = sem.acquire(timeoutMs, TimeUnit.MILLISECONDS);
    if (lease == null) {
      out.println("timeout");
      return EXIT_TIMEOUT;
    }
    out.println("acquired " + lease.getNodeName());
    in.next(); /* any line, or end of input */
    sem.returnLease(lease);
    out.println("released");
    return EXIT_OK;
  }

  /* Take one of the n slot files of dir; null when all are taken. */
  static Path takeSlot(Path dir, int n) throws IOException {
    for (int k = 0; k < n; k++) {
      Path slot = dir.resolve("slot-" + k);
      try {
        return Files.createFile(slot);
      } catch (FileAlreadyExistsException e) {
        /* taken: try the next */
      }
    }
    return null;
  }

  static int semCount(CuratorFramework client, Commands in, String path,
                      String id, int n, long rounds, String slotDir)
      throws Exception {
    InterProcessSemaphoreV2 sem = semaphore(client, path, id, n);
    Path dir = Paths.get(slotDir);
    Lease warm = sem.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS);
    if (warm == null)
      throw new Exit(EXIT_TIMEOUT, "warm-up acquisition timed out");
    sem.returnLease(warm);
    waitForGo(in);
    long violations = 0;
    for (long i = 0; i < rounds; i++) {
      Lease lease = sem.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS);
      if (lease == null) {
        out.println("timeout");
        return EXIT_TIMEOUT;
      }
      Path slot = takeSlot(dir, n);
      if (slot == null)
        violations++;
      Thread.sleep(2); /* the work inside the lease */
      if (slot != null)
        Files.delete(slot);
      sem.returnLease(lease);
    }
    out.println("done " + rounds + " violations=" + violations);
    return EXIT_OK;
  }

  static int rwCount(CuratorFramework client, Commands in, String path,
                     String id, long n, String counterFile) throws Exception {
    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(
        client, path, id.getBytes(StandardCharsets.UTF_8));
    Path file = Paths.get(counterFile);
    warmUp(rw.writeLock());
    waitForGo(in);
    long writes = 0, moved = 0;
    for (long i = 0; i < n; i++) {
      boolean write = i % 3 == 0;
      InterProcessMutex side = write ? rw.writeLock() : rw.readLock();
      if (!side.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS)) {
        out.println("timeout");
        return EXIT_TIMEOUT;
      }
      int value = readCounter(file);
      Thread.sleep(1); /* widen the window a violation would need */
      if (write) {
        Files.write(file, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
        writes++;
      } else if (readCounter(file) != value) {
        moved++;
      }
      side.release();
    }
    out.println("done " + n + " writes=" + writes + " moved=" + moved);
    return EXIT_OK;
  }

  static int shell(CuratorFramework client, Commands in, String path, String id)
      throws Exception {
    Mutex m = new Mutex(client, path, id);
    for (;;) {
      String cmd = in.next();
      String[] w = cmd.split("\\s+");
      if (cmd == Commands.EOF || w[0].equals("quit")) {
        if (m.isOwnedByCurrentThread())
          release(m);
        return EXIT_OK;
      } else if (w[0].equals("acquire") && w.length <= 2) {
        acquire(m, w.length == 2 ? parseNumber("timeout", w[1], 0) : peerTimeoutMs);
      } else if (w[0].equals("release") && w.length == 1) {
        if (m.isOwnedByCurrentThread())
          release(m);
        else
          out.println("error not held");
      } else if (w[0].equals("participants") && w.length == 1) {
        out.println(participants(client, m));
      } else {
        out.println("error unknown command: " + cmd);
      }
    }
  }

  /* Warm-up: load the lock's classes and open the paths once, so that the
   * first measured or contended acquisition is not the JVM's first. */
  static void warmUp(InterProcessMutex m) throws Exception {
    if (!m.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS))
      throw new Exit(EXIT_TIMEOUT, "warm-up acquisition timed out");
    m.release();
  }

  static void waitForGo(Commands in) throws Exception {
    out.println("ready");
    in.next(); /* any line, or end of input */
  }

  static int readCounter(Path file) throws IOException, Exit {
    String s;
    try {
      s = new String(Files.readAllBytes(file), StandardCharsets.UTF_8).trim();
    } catch (NoSuchFileException e) {
      return 0;
    }
    if (s.isEmpty())
      return 0;
    try {
      return Integer.parseInt(s);
    } catch (NumberFormatException e) {
      throw new Exit(EXIT_ERROR, "counter file holds " + s);
    }
  }

  static int count(CuratorFramework client, Commands in, String path, String id,
                   long n, String counterFile) throws Exception {
    Mutex m = new Mutex(client, path, id);
    Path file = Paths.get(counterFile);
    Path trace = Paths.get(counterFile + ".trace");
    byte[] traceLine = (id + "\n").getBytes(StandardCharsets.UTF_8);
    warmUp(m);
    waitForGo(in);
    for (long i = 0; i < n; i++) {
      if (!m.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS)) {
        out.println("timeout");
        return EXIT_TIMEOUT;
      }
      int value = readCounter(file);
      Thread.sleep(1); /* widen the window a lost update would need */
      Files.write(file, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
      Files.write(trace, traceLine, StandardOpenOption.CREATE,
                  StandardOpenOption.APPEND);
      m.release();
    }
    out.println("done " + n);
    return EXIT_OK;
  }

  /* Curator's SharedCount on a zkrecipes counter (tests/test_shared.c):
   * read it, set it, or add 1 N times by trySetCount (which reads again
   * after a version conflict); then print "value V". */
  static int sharedCount(CuratorFramework client, String path, String op,
                         int arg) throws Exception {
    SharedCount count = new SharedCount(client, path, 0);
    count.start();
    try {
      if (op.equals("set")) {
        count.setCount(arg);
      } else if (op.equals("add")) {
        for (int i = 0; i < arg; i++) {
          VersionedValue<Integer> v = count.getVersionedValue();
          while (!count.trySetCount(v, v.getValue() + 1))
            v = count.getVersionedValue();
        }
      }
      out.println("value " + count.getCount());
      return EXIT_OK;
    } finally {
      count.close();
    }
  }

  static long percentileUs(long[] nanos, int n, double p) {
    if (n == 0)
      return 0;
    long[] sorted = Arrays.copyOf(nanos, n);
    Arrays.sort(sorted);
    int i = (int) Math.ceil(p * n) - 1;
    return sorted[Math.max(0, Math.min(n - 1, i))] / 1000;
  }

  static int loop(CuratorFramework client, Commands in, String path, String id,
                  long seconds) throws Exception {
    Mutex m = new Mutex(client, path, id);
    warmUp(m);
    waitForGo(in);
    return measureLoop(m, seconds);
  }

  /* Acquire and release as fast as possible for SECONDS; print the result. */
  static int measureLoop(Mutex m, long seconds) throws Exception {
    long[] acquireNs = new long[1 << 16], cycleNs = new long[1 << 16];
    int n = 0;
    long start = System.nanoTime(), end = start + seconds * 1_000_000_000L;
    long now = start;
    while (now < end) {
      if (n == acquireNs.length) {
        acquireNs = Arrays.copyOf(acquireNs, 2 * n);
        cycleNs = Arrays.copyOf(cycleNs, 2 * n);
      }
      if (!m.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS)) {
        out.println("timeout");
        return EXIT_TIMEOUT;
      }
      long held = System.nanoTime();
      m.release();
      long done = System.nanoTime();
      acquireNs[n] = held - now;
      cycleNs[n] = done - now;
      n++;
      now = done;
    }
    double secs = (now - start) / 1e9;
    out.printf("done ops=%d secs=%.3f ops_per_sec=%.1f acquire_p50_us=%d "
                   + "acquire_p99_us=%d cycle_p50_us=%d cycle_p99_us=%d%n",
               n, secs, n / secs, percentileUs(acquireNs, n, 0.50),
               percentileUs(acquireNs, n, 0.99), percentileUs(cycleNs, n, 0.50),
               percentileUs(cycleNs, n, 0.99));
    return EXIT_OK;
  }

  /* ------------------------------------------------------------- latch */

  static LeaderLatch joinLatch(CuratorFramework client, String path, String id)
      throws Exception {
    LeaderLatch latch = new LeaderLatch(client, path, id);
    latch.addListener(new LeaderLatchListener() {
      @Override
      public void isLeader() {
        out.println("leader");
      }

      @Override
      public void notLeader() {
        out.println("notleader");
      }
    });
    latch.start();
    /* start() creates the node in the background and offers no event for
     * it: look for it, with a deadline. */
    long deadline = System.nanoTime() + peerTimeoutMs * 1_000_000L;
    while (latch.getOurPath() == null) {
      if (System.nanoTime() > deadline)
        throw new Exit(EXIT_TIMEOUT, "the latch's node was not created in time");
      Thread.sleep(5);
    }
    out.println("joined " + latch.getOurPath());
    return latch;
  }

  static int latch(CuratorFramework client, Commands in, String path, String id)
      throws Exception {
    LeaderLatch latch = joinLatch(client, path, id);
    for (;;) {
      String cmd = in.next();
      if (cmd == Commands.EOF || cmd.equals("quit")) {
        if (latch != null)
          latch.close();
        return EXIT_OK;
      } else if (cmd.equals("close") && latch != null) {
        latch.close();
        latch = null;
        out.println("closed");
      } else if (cmd.equals("join") && latch == null) {
        latch = joinLatch(client, path, id);
      } else if (cmd.equals("status") && latch != null) {
        out.println("status " + (latch.hasLeadership() ? "leader" : "follower"));
      } else if (cmd.equals("leaderid") && latch != null) {
        out.println("leaderid " + latch.getLeader().getId());
      } else if (cmd.equals("participants") && latch != null) {
        List<String> ids = new ArrayList<>();
        for (Participant p : latch.getParticipants())
          ids.add(p.getId());
        out.println("participants " + String.join(",", ids));
      } else {
        out.println("error unknown command or state: " + cmd);
      }
    }
  }


  /* ------------------------------------------------------------- group */

  /** Curator's view as "ID=PAYLOAD ..." sorted by id. */
  static String members(GroupMember g) {
    List<String> ids = new ArrayList<>();
    for (Map.Entry<String, byte[]> e : g.getCurrentMembers().entrySet())
      ids.add(e.getKey() + "="
              + (e.getValue() == null
                     ? "" : new String(e.getValue(), StandardCharsets.UTF_8)));
    java.util.Collections.sort(ids);
    return String.join(" ", ids);
  }

  /** Poll Curator's view (GroupMember has no listener) until @p done, at
   *  most 8 s; then print it, whatever it is (the caller compares). */
  static void awaitMembers(GroupMember g, java.util.function.Predicate<String> done)
      throws InterruptedException {
    long deadline = System.nanoTime() + Math.min(peerTimeoutMs, 8000) * 1_000_000L;
    String view = members(g);
    while (!done.test(" " + view + " ") && System.nanoTime() < deadline) {
      Thread.sleep(10);
      view = members(g);
    }
    out.println("members " + view);
  }

  static int group(CuratorFramework client, Commands in, String path, String id,
                   String payload) throws Exception {
    GroupMember g = new GroupMember(client, path, id,
                                    payload.getBytes(StandardCharsets.UTF_8));
    g.start();
    String node = ZKPaths.makePath(path, id);
    /* start() creates the node in the background and offers no event for
     * it: look for it, with a deadline. */
    long deadline = System.nanoTime() + peerTimeoutMs * 1_000_000L;
    while (client.checkExists().forPath(node) == null) {
      if (System.nanoTime() > deadline)
        throw new Exit(EXIT_TIMEOUT, "the member's node was not created in time");
      Thread.sleep(5);
    }
    out.println("joined " + node);
    try {
      for (;;) {
        String cmd = in.next();
        String[] w = cmd.split(" ", 2);
        if (cmd == Commands.EOF || cmd.equals("quit")) {
          return EXIT_OK;
        } else if (cmd.equals("members")) {
          out.println("members " + members(g));
        } else if (w[0].equals("await") && w.length == 2) {
          awaitMembers(g, view -> view.contains(" " + w[1] + " "));
        } else if (w[0].equals("awaitgone") && w.length == 2) {
          awaitMembers(g, view -> !view.contains(" " + w[1] + "="));
        } else if (w[0].equals("set") && w.length == 2) {
          g.setThisData(w[1].getBytes(StandardCharsets.UTF_8));
          out.println("set");
        } else {
          out.println("error unknown command: " + cmd);
        }
      }
    } finally {
      g.close();
      out.println("left");
    }
  }

  /* ------------------------------------------------------------- bench */

  /* Open clients until there are @p n. */
  static void ensureClients(List<CuratorFramework> clients, String connect, int n)
      throws Exit, InterruptedException {
    while (clients.size() < n)
      clients.add(connect(connect));
  }

  static void closeClients(List<CuratorFramework> clients) {
    for (CuratorFramework c : clients)
      c.close();
    clients.clear();
  }

  /** One thread of "contend": its mutex, its cycles, its violations. */
  static final class Contender extends Thread {
    final Mutex m;
    final Path marker;
    final CyclicBarrier start;
    final long[] startNs; /* [0]: set by the barrier's action */
    final long seconds;
    long[] times = new long[4 << 12];
    int n; /* values in times: 4 per cycle */
    int violations;
    Throwable error;

    Contender(Mutex m, Path marker, CyclicBarrier start, long[] startNs,
              long seconds) {
      super("contender");
      this.m = m;
      this.marker = marker;
      this.start = start;
      this.startNs = startNs;
      this.seconds = seconds;
    }

    /** The exclusion check inside a hold; true when someone else is in. */
    boolean violated() throws IOException {
      try {
        Files.createFile(marker); /* O_CREAT | O_EXCL */
      } catch (FileAlreadyExistsException e) {
        return true;
      }
      Files.delete(marker);
      return false;
    }

    void record(long a, long h, long r, long d) {
      if (n + 4 > times.length)
        times = Arrays.copyOf(times, 2 * times.length);
      times[n++] = a;
      times[n++] = h;
      times[n++] = r;
      times[n++] = d;
    }

    @Override
    public void run() {
      try {
        warmUp(m);
        start.await(peerTimeoutMs, TimeUnit.MILLISECONDS);
        long end = startNs[0] + seconds * 1_000_000_000L;
        for (long now = System.nanoTime(); now < end;) {
          if (!m.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS))
            throw new Exit(EXIT_TIMEOUT, "an acquisition timed out");
          long held = System.nanoTime();
          if (violated())
            violations++;
          long releasing = System.nanoTime();
          m.release();
          long done = System.nanoTime();
          record(now, held, releasing, done);
          now = done;
        }
      } catch (Throwable e) {
        error = e;
        start.reset(); /* nobody waits for us any more */
      }
    }
  }

  static void contend(List<CuratorFramework> clients, String path,
                      long seconds, String marker) throws Exception {
    int n = clients.size();
    long[] startNs = new long[1];
    CyclicBarrier start = new CyclicBarrier(n, () -> startNs[0] = System.nanoTime());
    List<Contender> threads = new ArrayList<>();
    for (int i = 0; i < n; i++)
      threads.add(new Contender(new Mutex(clients.get(i), path, "curator-contend-" + i),
                                Paths.get(marker), start, startNs, seconds));
    for (Contender t : threads)
      t.start();
    long ops = 0, violations = 0;
    StringBuilder line = new StringBuilder("ops");
    for (Contender t : threads) {
      t.join();
      if (t.error != null)
        throw t.error instanceof Exception ? (Exception) t.error
                                           : new Exception(t.error);
      ops += t.n / 4;
      violations += t.violations;
      for (int i = 0; i < t.n; i += 4)
        line.append(' ').append(t.times[i] / 1000).append(',')
            .append(t.times[i + 1] / 1000).append(',')
            .append(t.times[i + 2] / 1000).append(',')
            .append(t.times[i + 3] / 1000);
    }
    double secs = (System.nanoTime() - startNs[0]) / 1e9;
    out.printf("done ops=%d secs=%.3f violations=%d%n", ops, secs, violations);
    out.println(line);
  }

  /* ---------------------------------------------------- bench: family */

  /** What the threads of one "rwlock" or "semaphore" run share. */
  static final class FamilyRun {
    final CountDownLatch warmed, go = new CountDownLatch(1);
    final int holdMs, leases;
    volatile long startNs, endNs;
    final AtomicInteger readersIn = new AtomicInteger(),
        writersIn = new AtomicInteger(), leasesIn = new AtomicInteger(),
        violations = new AtomicInteger();

    FamilyRun(int threads, int holdMs, int leases) {
      this.warmed = new CountDownLatch(threads);
      this.holdMs = holdMs;
      this.leases = leases;
    }
  }

  /** One client of "rwlock" (a reader or the writer) or "semaphore", as
   *  zkr-bench-worker's rwlock and semaphore modes run ours: warm up (one
   *  cycle), wait for the start, loop until the end; per cycle the wait
   *  from acquire called to held. */
  static final class FamilyClient extends Thread {
    final FamilyRun run;
    final InterProcessMutex side; /* rwlock */
    final boolean writer;
    final InterProcessSemaphoreV2 sem; /* semaphore */
    long[] waits = new long[1 << 12];
    int n;
    long finishedNs;
    Throwable error;

    FamilyClient(FamilyRun run, InterProcessMutex side, boolean writer,
                 InterProcessSemaphoreV2 sem) {
      super("family");
      this.run = run;
      this.side = side;
      this.writer = writer;
      this.sem = sem;
    }

    static void holdFor(int ms) throws InterruptedException {
      if (ms > 0)
        Thread.sleep(ms);
    }

    /** One cycle, with the exclusion check; returns when it held. */
    long cycle() throws Exception {
      long held;
      if (sem != null) {
        Lease lease = sem.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS);
        if (lease == null)
          throw new Exit(EXIT_TIMEOUT, "a lease acquisition timed out");
        held = System.nanoTime();
        if (run.leasesIn.getAndIncrement() >= run.leases)
          run.violations.incrementAndGet();
        holdFor(run.holdMs);
        run.leasesIn.decrementAndGet();
        sem.returnLease(lease);
        return held;
      }
      if (!side.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS))
        throw new Exit(EXIT_TIMEOUT, "an acquisition timed out");
      held = System.nanoTime();
      if (writer) {
        if (run.writersIn.getAndIncrement() != 0 || run.readersIn.get() != 0)
          run.violations.incrementAndGet();
        holdFor(run.holdMs);
        run.writersIn.decrementAndGet();
      } else {
        run.readersIn.incrementAndGet();
        if (run.writersIn.get() != 0)
          run.violations.incrementAndGet();
        run.readersIn.decrementAndGet();
      }
      side.release();
      return held;
    }

    @Override
    public void run() {
      try {
        cycle(); /* warm-up */
        run.warmed.countDown();
        if (!run.go.await(peerTimeoutMs, TimeUnit.MILLISECONDS))
          throw new Exit(EXIT_NO_COMMAND, "no start");
        long now = run.startNs;
        while (now < run.endNs) {
          long held = cycle();
          if (n == waits.length)
            waits = Arrays.copyOf(waits, 2 * n);
          waits[n++] = held - now;
          now = System.nanoTime();
        }
        finishedNs = now;
      } catch (Throwable e) {
        error = e;
        run.warmed.countDown(); /* do not keep the others waiting */
      }
    }
  }

  /** " PREFIXops=N PREFIXwait_p50_us=A PREFIXwait_p99_us=B" of the
   *  clients whose writer flag is @p writers. */
  static String familySide(List<FamilyClient> threads, boolean writers,
                           String prefix) {
    int total = 0;
    for (FamilyClient t : threads)
      if (t.writer == writers)
        total += t.n;
    long[] all = new long[total];
    int k = 0;
    for (FamilyClient t : threads)
      if (t.writer == writers) {
        System.arraycopy(t.waits, 0, all, k, t.n);
        k += t.n;
      }
    return String.format(" %sops=%d %swait_p50_us=%d %swait_p99_us=%d", prefix,
                         total, prefix, percentileUs(all, total, 0.50), prefix,
                         percentileUs(all, total, 0.99));
  }

  /** "rwlock" (@p leases 0: clients.size()-1 readers and one writer) or
   *  "semaphore" (all clients on an N = @p leases semaphore). */
  static void family(List<CuratorFramework> clients, Commands in, String path,
                     long seconds, int leases, int holdMs) throws Exception {
    int n = clients.size();
    FamilyRun run = new FamilyRun(n, holdMs, leases);
    List<FamilyClient> threads = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] id = ("curator-family-" + i).getBytes(StandardCharsets.UTF_8);
      if (leases > 0) {
        InterProcessSemaphoreV2 sem =
            new InterProcessSemaphoreV2(clients.get(i), path, leases);
        sem.setNodeData(id);
        threads.add(new FamilyClient(run, null, false, sem));
      } else {
        InterProcessReadWriteLock rw =
            new InterProcessReadWriteLock(clients.get(i), path, id);
        boolean writer = i == n - 1;
        threads.add(new FamilyClient(run, writer ? rw.writeLock() : rw.readLock(),
                                     writer, null));
      }
    }
    for (FamilyClient t : threads)
      t.start();
    run.warmed.await();
    for (FamilyClient t : threads)
      if (t.error != null)
        throw new Exception("warm-up: " + t.error);
    out.println("ready");
    in.next(); /* the start line */
    run.startNs = System.nanoTime();
    run.endNs = run.startNs + seconds * 1_000_000_000L;
    run.go.countDown();
    long last = run.startNs;
    for (FamilyClient t : threads) {
      t.join();
      if (t.error != null)
        throw t.error instanceof Exception ? (Exception) t.error
                                           : new Exception(t.error);
      last = Math.max(last, t.finishedNs);
    }
    StringBuilder line = new StringBuilder();
    line.append(String.format("done secs=%.3f violations=%d",
                              (last - run.startNs) / 1e9, run.violations.get()));
    line.append(familySide(threads, false, leases > 0 ? "" : "reader_"));
    if (leases == 0)
      line.append(familySide(threads, true, "writer_"));
    out.println(line);
  }

  static int bench(String connect, Commands in) throws Exception {
    List<CuratorFramework> clients = new ArrayList<>();
    try {
      out.println("ready");
      for (;;) {
        String cmd = in.next();
        String[] w = cmd.split("\\s+");
        if (cmd == Commands.EOF || w[0].equals("quit")) {
          return EXIT_OK;
        } else if (w[0].equals("loop") && w.length == 3) {
          long seconds = parseNumber("SECONDS", w[2], 1);
          ensureClients(clients, connect, 1);
          Mutex m = new Mutex(clients.get(0), w[1], "curator-loop");
          warmUp(m);
          measureLoop(m, seconds);
        } else if (w[0].equals("contend") && w.length == 5) {
          long seconds = parseNumber("SECONDS", w[2], 1);
          int n = (int) parseNumber("CLIENTS", w[3], 1);
          ensureClients(clients, connect, n);
          contend(clients.subList(0, n), w[1], seconds, w[4]);
        } else if (w[0].equals("rwlock") && w.length == 5) {
          long seconds = parseNumber("SECONDS", w[2], 1);
          int readers = (int) parseNumber("READERS", w[3], 1);
          int holdMs = (int) parseNumber("HOLD_MS", w[4], 0);
          ensureClients(clients, connect, readers + 1);
          family(clients.subList(0, readers + 1), in, w[1], seconds, 0, holdMs);
        } else if (w[0].equals("semaphore") && w.length == 6) {
          long seconds = parseNumber("SECONDS", w[2], 1);
          int n = (int) parseNumber("CLIENTS", w[3], 1);
          int leases = (int) parseNumber("N", w[4], 1);
          int holdMs = (int) parseNumber("HOLD_MS", w[5], 0);
          ensureClients(clients, connect, n);
          family(clients.subList(0, n), in, w[1], seconds, leases, holdMs);
        } else {
          out.println("error unknown command: " + cmd);
        }
      }
    } finally {
      closeClients(clients);
    }
  }

  /* -------------------------------------------------------------- herd */

  /** A queued contender of "herd": acquires, then holds until told. */
  static final class HerdWaiter extends Thread {
    final Mutex m;
    final int index;
    final LinkedBlockingQueue<HerdWaiter> holders;
    final CountDownLatch releaseNow = new CountDownLatch(1);
    final CountDownLatch released = new CountDownLatch(1);

    HerdWaiter(Mutex m, int index, LinkedBlockingQueue<HerdWaiter> holders) {
      super("herd-" + index);
      this.m = m;
      this.index = index;
      this.holders = holders;
    }

    @Override
    public void run() {
      try {
        if (!m.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS)) {
          System.err.println("CuratorPeer: herd waiter " + index + " timed out");
          return;
        }
        out.println("acquired " + index);
        holders.add(this);
        if (!releaseNow.await(peerTimeoutMs, TimeUnit.MILLISECONDS))
          return;
        m.release(); /* by the thread that acquired it */
        released.countDown();
      } catch (Exception e) {
        System.err.println("CuratorPeer: herd waiter " + index + ": " + e);
      }
    }
  }

  static void expect(Commands in, String want) throws Exception {
    String line = in.next();
    if (!line.equals(want))
      throw new Exit(EXIT_USAGE, "expected \"" + want + "\", got \"" + line + "\"");
  }

  static int herd(String connect, Commands in, String path, int n) throws Exception {
    List<CuratorFramework> clients = new ArrayList<>();
    List<HerdWaiter> waiters = new ArrayList<>();
    try {
      ensureClients(clients, connect, n + 1);
      out.println("ready");
      expect(in, "hold");
      Mutex first = new Mutex(clients.get(0), path, "herd-0");
      if (!first.acquire(peerTimeoutMs, TimeUnit.MILLISECONDS))
        throw new Exit(EXIT_TIMEOUT, "the first acquisition timed out");
      out.println("held");
      expect(in, "queue");
      LinkedBlockingQueue<HerdWaiter> holders = new LinkedBlockingQueue<>();
      for (int i = 1; i <= n; i++) {
        HerdWaiter w = new HerdWaiter(new Mutex(clients.get(i), path, "herd-" + i),
                                      i, holders);
        w.setDaemon(true);
        waiters.add(w);
        w.start();
      }
      for (int k = 0; k <= n; k++) {
        expect(in, "release");
        if (k == 0) {
          first.release();
        } else {
          HerdWaiter w = holders.poll(peerTimeoutMs, TimeUnit.MILLISECONDS);
          if (w == null)
            throw new Exit(EXIT_TIMEOUT, "nobody acquired the lock in time");
          w.releaseNow.countDown();
          if (!w.released.await(peerTimeoutMs, TimeUnit.MILLISECONDS))
            throw new Exit(EXIT_ERROR, "herd waiter " + w.index + " did not release");
        }
        out.println("released");
      }
      out.println("done " + n);
      /* Keep the sessions until told: the benchmark reads the servers'
       * counters before they close (a close is a request too). */
      in.next();
      for (HerdWaiter w : waiters)
        w.join(peerTimeoutMs);
      return EXIT_OK;
    } finally {
      closeClients(clients);
    }
  }

  /* ------------------------------------------------------------- cache */

  /** One line per change of the copy: "event TYPE PATH VERSION MZXID T_NS"
   *  (T_NS: System.nanoTime() on entering the listener; VERSION and MZXID
   *  of the node's stat, -1 when the cache gives none). */
  static void cacheEvent(String type, String path, ChildData d, long t) {
    Stat st = d == null ? null : d.getStat();
    out.println("event " + type + " " + path + " "
                + (st == null ? -1 : st.getVersion()) + " "
                + (st == null ? -1 : st.getMzxid()) + " " + t);
  }

  /** NodeCache: told that the node changed, not how (nor the old value). */
  @SuppressWarnings("deprecation")
  static AutoCloseable nodeCache(CuratorFramework client, String path,
                                 CountDownLatch initialized) throws Exception {
    org.apache.curator.framework.recipes.cache.NodeCache c =
        new org.apache.curator.framework.recipes.cache.NodeCache(client, path);
    boolean[] present = new boolean[1];
    c.getListenable().addListener(() -> {
      long t = System.nanoTime();
      ChildData d = c.getCurrentData();
      String type = d == null ? "REMOVED" : present[0] ? "UPDATED" : "ADDED";
      present[0] = d != null;
      cacheEvent(type, path, d, t);
    });
    c.start(true); /* reads the node before returning */
    present[0] = c.getCurrentData() != null;
    initialized.countDown();
    return c;
  }

  @SuppressWarnings("deprecation")
  static AutoCloseable treeCache(CuratorFramework client, String path,
                                 CountDownLatch initialized) throws Exception {
    TreeCache c = TreeCache.newBuilder(client, path).build();
    c.getListenable().addListener((cl, ev) -> {
      long t = System.nanoTime();
      switch (ev.getType()) {
      case NODE_ADDED:
        cacheEvent("ADDED", ev.getData().getPath(), ev.getData(), t);
        break;
      case NODE_UPDATED:
        cacheEvent("UPDATED", ev.getData().getPath(), ev.getData(), t);
        break;
      case NODE_REMOVED:
        cacheEvent("REMOVED", ev.getData().getPath(), ev.getData(), t);
        break;
      case INITIALIZED:
        initialized.countDown();
        break;
      default:
        out.println("connection " + ev.getType());
      }
    });
    c.start();
    return c;
  }

  /** CuratorCache (persistent recursive watches): the tree at PATH, or the
   *  node alone with SINGLE_NODE_CACHE. */
  static AutoCloseable curatorCache(CuratorFramework client, String path,
                                    boolean singleNode,
                                    CountDownLatch initialized) {
    CuratorCache c = singleNode
        ? CuratorCache.build(client, path, CuratorCache.Options.SINGLE_NODE_CACHE)
        : CuratorCache.build(client, path);
    c.listenable().addListener(
        CuratorCacheListener.builder()
            .forAll((type, oldData, data) -> {
              long t = System.nanoTime();
              switch (type) {
              case NODE_CREATED:
                cacheEvent("ADDED", data.getPath(), data, t);
                break;
              case NODE_CHANGED:
                cacheEvent("UPDATED", data.getPath(), data, t);
                break;
              default:
                cacheEvent("REMOVED", oldData.getPath(), oldData, t);
              }
            })
            .forInitialized(initialized::countDown)
            .build());
    c.start();
    return c;
  }

  /** The number of nodes in cache @p c (of the tree at @p path). */
  @SuppressWarnings("deprecation")
  static int cacheSize(AutoCloseable c, String path) {
    if (c instanceof CuratorCache)
      return ((CuratorCache) c).size();
    if (c instanceof TreeCache)
      return treeSize((TreeCache) c, path);
    return ((org.apache.curator.framework.recipes.cache.NodeCache) c)
               .getCurrentData() == null ? 0 : 1;
  }

  @SuppressWarnings("deprecation")
  static int treeSize(TreeCache c, String path) {
    if (c.getCurrentData(path) == null)
      return 0;
    int n = 1;
    Map<String, ChildData> children = c.getCurrentChildren(path);
    if (children != null)
      for (String child : children.keySet())
        n += treeSize(c, ZKPaths.makePath(path, child));
    return n;
  }

  /**
   * "cache": one cache of KIND on PATH; "ready init_us=N nodes=K" once its
   * first read is complete, then an "event" line per change; commands "clock" (prints
   * "clock T_NS", System.nanoTime(), for the caller to check that it reads
   * the same clock) and "quit" (or end of input) close it and exit 0.
   */
  static int cache(CuratorFramework client, Commands in, String path,
                   String kind) throws Exception {
    CountDownLatch initialized = new CountDownLatch(1);
    long start = System.nanoTime();
    AutoCloseable c;
    switch (kind) {
    case "node":
      c = nodeCache(client, path, initialized);
      break;
    case "tree":
      c = treeCache(client, path, initialized);
      break;
    case "curator":
      c = curatorCache(client, path, false, initialized);
      break;
    default:
      c = curatorCache(client, path, true, initialized);
    }
    try {
      if (!initialized.await(peerTimeoutMs, TimeUnit.MILLISECONDS))
        throw new Exit(EXIT_TIMEOUT, "the cache did not initialize in time");
      long initUs = (System.nanoTime() - start) / 1000;
      out.println("ready init_us=" + initUs + " nodes=" + cacheSize(c, path));
      for (;;) {
        String cmd = in.next();
        if (cmd == Commands.EOF || cmd.equals("quit"))
          return EXIT_OK;
        if (cmd.equals("clock"))
          out.println("clock " + System.nanoTime());
        else
          out.println("error unknown command: " + cmd);
      }
    } finally {
      c.close();
    }
  }

  /* ---------------------------------------------------------- discovery */

  static ServiceInstance<Object> javaInstance(String name, String id,
                                              String address, int port)
      throws Exception {
    Map<String, String> payload = new java.util.HashMap<>();
    payload.put("lang", "java");
    return ServiceInstance.<Object>builder().name(name).id(id).address(address)
        .port(port).payload(payload)
        .uriSpec(new UriSpec("{scheme}://{address}:{port}/x")).build();
  }

  static String uriTemplate(UriSpec spec) {
    if (spec == null)
      return "null";
    StringBuilder b = new StringBuilder();
    for (UriSpec.Part p : spec.getParts())
      b.append(p.isVariable() ? "{" + p.getValue() + "}" : p.getValue());
    return b.toString();
  }

  /** discovery mode: register (and update, unregister), query, names. */
  static int discovery(CuratorFramework client, Commands in, String base,
                       String[] a) throws Exception {
    ServiceDiscovery<Object> sd = ServiceDiscoveryBuilder.builder(Object.class)
        .client(client).basePath(base).build();
    sd.start();
    try {
      switch (a[3]) {
      case "register": {
        ServiceInstance<Object> inst =
            javaInstance(a[4], a[5], a[6], Integer.parseInt(a[7]));
        sd.registerService(inst);
        out.println("registered");
        for (;;) {
          String cmd = in.next();
          if (cmd == Commands.EOF || cmd.equals("quit")) {
            sd.unregisterService(inst);
            return EXIT_OK;
          }
          if (cmd.startsWith("update ")) {
            inst = javaInstance(a[4], a[5], a[6],
                                Integer.parseInt(cmd.substring(7).trim()));
            sd.updateService(inst);
            out.println("updated");
          } else {
            out.println("error unknown command: " + cmd);
          }
        }
      }
      case "query": {
        ObjectMapper mapper = new ObjectMapper();
        int n = 0;
        List<ServiceInstance<Object>> found =
            new ArrayList<>(sd.queryForInstances(a[4]));
        found.sort((x, y) -> x.getId().compareTo(y.getId()));
        for (ServiceInstance<Object> i : found) {
          out.println("instance " + i.getId() + " " + i.getAddress() + " "
                      + i.getPort() + " " + i.getSslPort() + " "
                      + i.getServiceType() + " " + i.getRegistrationTimeUTC()
                      + " " + uriTemplate(i.getUriSpec()) + " "
                      + mapper.writeValueAsString(i.getPayload()));
          n++;
        }
        out.println("done " + n);
        return EXIT_OK;
      }
      default: {
        List<String> names = new ArrayList<>(sd.queryForNames());
        java.util.Collections.sort(names);
        out.println("names " + String.join(",", names));
        return EXIT_OK;
      }
      }
    } finally {
      sd.close();
    }
  }

  /* -------------------------------------------------------------- main */

  static void usage() throws Exit {
    throw new Exit(EXIT_USAGE,
                   "usage: CuratorPeer hold CONNECT PATH ID [TIMEOUT_MS]\n"
                       + "       CuratorPeer rhold|whold CONNECT PATH ID [TIMEOUT_MS]\n"
                       + "       CuratorPeer shold CONNECT PATH ID N [TIMEOUT_MS]\n"
                       + "       CuratorPeer scount CONNECT PATH ID N ROUNDS SLOTDIR\n"
                       + "       CuratorPeer shell CONNECT PATH ID\n"
                       + "       CuratorPeer count CONNECT PATH ID N COUNTERFILE\n"
                       + "       CuratorPeer rwcount CONNECT PATH ID N COUNTERFILE\n"
                       + "       CuratorPeer loop CONNECT PATH SECONDS [ID]\n"
                       + "       CuratorPeer latch CONNECT PATH ID\n"
                       + "       CuratorPeer bench CONNECT\n"
                       + "       CuratorPeer herd CONNECT PATH N\n"
                       + "       CuratorPeer cache CONNECT PATH node|tree|curator|curator-node\n"
                       + "       CuratorPeer sharedcount CONNECT PATH read|set V|add N\n"
                       + "       CuratorPeer group CONNECT PATH ID PAYLOAD\n"
                       + "       CuratorPeer discovery CONNECT BASE register NAME ID ADDRESS PORT\n"
                       + "       CuratorPeer discovery CONNECT BASE query NAME\n"
                       + "       CuratorPeer discovery CONNECT BASE names");
  }

  static void startWatchdog(long seconds) {
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(seconds * 1000);
      } catch (InterruptedException e) {
        return;
      }
      System.err.println("CuratorPeer: watchdog: still running after "
                         + seconds + " s");
      Runtime.getRuntime().halt(EXIT_WATCHDOG);
    }, "watchdog");
    t.setDaemon(true);
    t.start();
  }

  static int run(String[] a) throws Exception {
    if (a.length == 2 && a[0].equals("bench")) {
      startWatchdog(envLong("ZKR_PEER_LIFETIME_S", 300));
      return bench(a[1], new Commands());
    }
    if (a.length < 4)
      usage();
    String mode = a[0], connect = a[1], path = a[2];
    if (!path.startsWith("/") || path.endsWith("/") || path.contains("//"))
      throw new Exit(EXIT_USAGE, "bad PATH: " + path);
    long lifetime = envLong("ZKR_PEER_LIFETIME_S", 300);
    switch (mode) {
    case "hold":
    case "rhold":
    case "whold":
    case "shell":
    case "latch":
      if (a.length != 4 && !(mode.endsWith("hold") && a.length == 5))
        usage();
      break;
    case "count":
    case "rwcount":
      if (a.length != 6)
        usage();
      parseNumber("N", a[4], 0);
      break;
    case "shold":
      if (a.length != 5 && a.length != 6)
        usage();
      parseNumber("N", a[4], 1);
      break;
    case "scount":
      if (a.length != 7)
        usage();
      parseNumber("N", a[4], 1);
      parseNumber("ROUNDS", a[5], 0);
      break;
    case "loop":
      if (a.length != 4 && a.length != 5)
        usage();
      lifetime += parseNumber("SECONDS", a[3], 1);
      break;
    case "sharedcount":
      if (!(a.length == 4 && a[3].equals("read")) &&
          !(a.length == 5 && (a[3].equals("set") || a[3].equals("add"))))
        usage();
      if (a.length == 5)
        Long.parseLong(a[4]);
      break;
    case "group":
      if (a.length != 5)
        usage();
      break;
    case "cache":
      if (a.length != 4 || !Arrays.asList("node", "tree", "curator",
                                          "curator-node").contains(a[3]))
        usage();
      break;
    case "discovery":
      if (!(a.length == 8 && a[3].equals("register")) &&
          !(a.length == 5 && a[3].equals("query")) &&
          !(a.length == 4 && a[3].equals("names")))
        usage();
      if (a.length == 8)
        parseNumber("PORT", a[7], 0);
      break;
    case "herd":
      if (a.length != 4)
        usage();
      int n = (int) parseNumber("N", a[3], 1);
      startWatchdog(lifetime);
      return herd(connect, new Commands(), path, n);
    default:
      usage();
    }
    long holdTimeout = mode.endsWith("hold") && a.length == 5
                           ? parseNumber("TIMEOUT_MS", a[4], 0)
                           : peerTimeoutMs;
    startWatchdog(lifetime);
    Commands in = new Commands();
    CuratorFramework client = connect(connect);
    try {
      switch (mode) {
      case "hold":
        return hold(client, in, path, a[3], holdTimeout);
      case "rhold":
      case "whold":
        return rwHold(client, in, path, a[3], mode.equals("whold"),
                      holdTimeout);
      case "shold":
        return semHold(client, in, path, a[3], Integer.parseInt(a[4]),
                       a.length == 6 ? parseNumber("TIMEOUT_MS", a[5], 0)
                                     : peerTimeoutMs);
      case "scount":
        return semCount(client, in, path, a[3], Integer.parseInt(a[4]),
                        Long.parseLong(a[5]), a[6]);
      case "shell":
        return shell(client, in, path, a[3]);
      case "count":
        return count(client, in, path, a[3], Long.parseLong(a[4]), a[5]);
      case "rwcount":
        return rwCount(client, in, path, a[3], Long.parseLong(a[4]), a[5]);
      case "loop":
        return loop(client, in, path, a.length == 5 ? a[4] : "curator-loop",
                    Long.parseLong(a[3]));
      case "cache":
        return cache(client, in, path, a[3]);
      case "group":
        return group(client, in, path, a[3], a[4]);
      case "discovery":
        return discovery(client, in, path, a);
      case "sharedcount":
        return sharedCount(client, path, a[3],
                           a.length == 5 ? Integer.parseInt(a[4]) : 0);
      default:
        return latch(client, in, path, a[3]);
      }
    } finally {
      client.close();
    }
  }

  public static void main(String[] args) {
    int code;
    try {
      code = run(args);
    } catch (Exit e) {
      System.err.println("CuratorPeer: " + e.getMessage());
      code = e.code;
    } catch (Throwable e) {
      System.err.println("CuratorPeer: " + e);
      code = EXIT_ERROR;
    }
    out.flush();
    /* Curator's and ZooKeeper's threads may linger after close(). */
    Runtime.getRuntime().halt(code);
  }
}
