/*
 * CuratorRevokePeer: Apache Curator 5's lock revocation (an
 * InterProcessMutex made revocable with makeRevocable(), and
 * Revoker.attemptRevoke()) for zkrecipes' revocation tests
 * (tests/test_revoke.c).
 *
 *   java -cp DIR:JARS CuratorRevokePeer MODE CONNECT ARGS...
 *
 *   hold   CONNECT PATH ID
 *          Acquire the mutex PATH, made revocable, whose node holds ID;
 *          prints "acquired NODE".  When Curator's RevocationListener is
 *          called, prints "revoke-requested", releases ("released") and
 *          exits 0; a line on standard input, or its end, releases the
 *          same way without a request.
 *   hold-read CONNECT PATH ID, hold-write CONNECT PATH ID
 *          The same with the read or the write lock of an
 *          InterProcessReadWriteLock at PATH (both are InterProcessMutex,
 *          and makeRevocable() applies to them as to the mutex): NODE is
 *          its one participant node ("__READ__" or "__WRIT__").
 *   revoke CONNECT NODE
 *          Revoker.attemptRevoke(client, NODE): prints "revoked" and
 *          exits 0 (a missing node is no error there: Curator ignores it).
 *
 * Exit statuses: 0 done, 2 bad usage, 3 not acquired in time, 4 no
 * connection, 5 an error.  CuratorPeer's Mutex (its id as node data) and
 * connect() serve here too.  The peer never outlives ZKR_PEER_TIMEOUT_MS
 * (default 60000) plus the session: a watchdog ends it with status 124.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.Revoker;

public final class CuratorRevokePeer {
  /* CuratorPeer's: its deadlines (from the environment) and its stdout,
   * flushed after every line. */
  static final long timeoutMs = CuratorPeer.peerTimeoutMs;
  static final int sessionMs = CuratorPeer.sessionMs;
  static final PrintStream out = CuratorPeer.out;

  static int hold(CuratorFramework client, String path, String id)
      throws Exception {
    CuratorPeer.Mutex m = new CuratorPeer.Mutex(client, path, id);
    return holdRevocable(m, () -> m.node());
  }

  /* hold-read and hold-write: a side of a read-write lock. */
  static int holdSide(CuratorFramework client, String path, String id,
                      boolean read) throws Exception {
    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(
        client, path, id.getBytes(StandardCharsets.UTF_8));
    InterProcessMutex m = read ? rw.readLock() : rw.writeLock();
    return holdRevocable(m, () -> m.getParticipantNodes().iterator().next());
  }

  interface NodeOf {
    String get() throws Exception;
  }

  /* Make @p m revocable, acquire it, print "acquired NODE", and release it
   * at a revocation request or a line on standard input. */
  static int holdRevocable(InterProcessMutex m, NodeOf node) throws Exception {
    /* What the main thread waits for: a revocation request or a line. */
    LinkedBlockingQueue<String> wake = new LinkedBlockingQueue<>();
    /* The listener runs on Curator's thread; the mutex is the acquiring
     * thread's, which releases it. */
    m.makeRevocable(forLock -> wake.add("revoke"));
    if (!m.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
      out.println("timeout");
      return 3;
    }
    out.println("acquired " + node.get());
    Thread reader = new Thread(() -> {
      try {
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        in.readLine();
      } catch (Exception e) {
        /* end of input all the same */
      }
      wake.add("line");
    });
    reader.setDaemon(true);
    reader.start();
    String why = wake.poll(timeoutMs, TimeUnit.MILLISECONDS);
    if ("revoke".equals(why))
      out.println("revoke-requested");
    m.release();
    out.println("released");
    return why == null ? 3 : 0;
  }

  public static void main(String[] args) {
    Thread watchdog = new Thread(() -> {
      try {
        Thread.sleep(timeoutMs + sessionMs);
      } catch (InterruptedException e) {
        return;
      }
      System.err.println("CuratorRevokePeer: watchdog");
      Runtime.getRuntime().halt(124);
    });
    watchdog.setDaemon(true);
    watchdog.start();
    int status;
    try {
      if (args.length == 4 && args[0].equals("hold")) {
        try (CuratorFramework client = CuratorPeer.connect(args[1])) {
          status = hold(client, args[2], args[3]);
        }
      } else if (args.length == 4 && (args[0].equals("hold-read") ||
                                      args[0].equals("hold-write"))) {
        try (CuratorFramework client = CuratorPeer.connect(args[1])) {
          status = holdSide(client, args[2], args[3],
                            args[0].equals("hold-read"));
        }
      } else if (args.length == 3 && args[0].equals("revoke")) {
        try (CuratorFramework client = CuratorPeer.connect(args[1])) {
          Revoker.attemptRevoke(client, args[2]);
          out.println("revoked");
          status = 0;
        }
      } else {
        System.err.println(
            "usage: CuratorRevokePeer hold|hold-read|hold-write CONNECT PATH ID"
            + " | revoke CONNECT NODE");
        status = 2;
      }
    } catch (CuratorPeer.Exit e) {
      System.err.println("CuratorRevokePeer: " + e.getMessage());
      status = e.code;
    } catch (Exception e) {
      System.err.println("CuratorRevokePeer: " + e);
      status = 5;
    }
    out.flush();
    Runtime.getRuntime().halt(status);
  }
}
