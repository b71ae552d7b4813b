/*
 * Curator's DistributedAtomicLong on a zkrecipes counter (tests/test_counters.c):
 * the format of ZKRC_COUNTER_ATOMIC_LONG, an 8-byte big-endian long, and
 * its promotion to an InterProcessMutex; and its DistributedAtomicInteger
 * on ZKRC_COUNTER_SHARED_COUNT's 4 bytes (the modes int-read, int-set,
 * int-cas, int-add: read, set, cas and add without LOCK, on an Integer).
 *
 *   CuratorAtomicPeer read CONNECT PATH        print "value V"
 *   CuratorAtomicPeer set CONNECT PATH V       forceSet(V), print "value V"
 *   CuratorAtomicPeer cas CONNECT PATH E V     compareAndSet(E, V), print
 *                                              "cas true|false PRE POST"
 *   CuratorAtomicPeer add CONNECT PATH N [LOCK]
 *                                              increment() N times (each
 *                                              repeated until it succeeds,
 *                                              optimistic once then promoted
 *                                              to LOCK when given), print
 *                                              "promoted P" (increments that
 *                                              took the lock) and "value V";
 *                                              it says "ready" and starts at
 *                                              a line on stdin
 *   CuratorAtomicPeer hold CONNECT LOCK        acquire an InterProcessMutex
 *                                              at LOCK, print "held", release
 *                                              it at the end of stdin, print
 *                                              "released"
 * Exit status 0; 2 bad usage; 1 an error (on stderr).
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicInteger;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorAtomicPeer {
  static final PrintStream out = System.out;

  static void usage() {
    System.err.println(
        "usage: CuratorAtomicPeer [int-]read|set|cas|add|hold CONNECT PATH ...");
    out.flush();
    Runtime.getRuntime().halt(2);
  }

  static CuratorFramework connect(String hosts) throws Exception {
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(hosts)
        .sessionTimeoutMs(10000)
        .connectionTimeoutMs(10000)
        .retryPolicy(new RetryNTimes(3, 100))
        .build();
    client.start();
    if (!client.blockUntilConnected(20, TimeUnit.SECONDS))
      throw new Exception("could not connect to " + hosts);
    return client;
  }

  static int run(String[] a) throws Exception {
    if (a.length < 3)
      usage();
    String mode = a[0];
    CuratorFramework client = connect(a[1]);
    try {
      if (mode.startsWith("int-"))
        return runInteger(client, mode.substring(4), a);
      switch (mode) {
      case "hold": {
        InterProcessMutex m = new InterProcessMutex(client, a[2]);
        if (!m.acquire(30, TimeUnit.SECONDS))
          throw new Exception("lock not acquired in 30 s");
        out.println("held");
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null)
          ;
        m.release();
        out.println("released");
        return 0;
      }
      case "read": {
        DistributedAtomicLong n = new DistributedAtomicLong(client, a[2], new RetryNTimes(0, 0));
        out.println("value " + n.get().postValue());
        return 0;
      }
      case "set": {
        if (a.length != 4)
          usage();
        DistributedAtomicLong n = new DistributedAtomicLong(client, a[2], new RetryNTimes(0, 0));
        n.forceSet(Long.parseLong(a[3]));
        out.println("value " + n.get().postValue());
        return 0;
      }
      case "cas": {
        if (a.length != 5)
          usage();
        DistributedAtomicLong n = new DistributedAtomicLong(client, a[2], new RetryNTimes(0, 0));
        AtomicValue<Long> v = n.compareAndSet(Long.parseLong(a[3]), Long.parseLong(a[4]));
        out.println("cas " + v.succeeded() + " " + v.preValue() + " " + v.postValue());
        return 0;
      }
      case "add": {
        if (a.length != 4 && a.length != 5)
          usage();
        DistributedAtomicLong n;
        if (a.length == 5)
          n = new DistributedAtomicLong(client, a[2], new RetryNTimes(0, 0),
              PromotedToLock.builder().lockPath(a[4])
                  .retryPolicy(new RetryNTimes(20, 1))
                  .timeout(20, TimeUnit.SECONDS).build());
        else
          n = new DistributedAtomicLong(client, a[2], new RetryNTimes(20, 1));
        out.println("ready");
        out.flush();
        if (new BufferedReader(new InputStreamReader(System.in)).readLine() == null)
          throw new Exception("no go line");
        long promoted = 0;
        for (int i = Integer.parseInt(a[3]); i > 0; i--) {
          AtomicValue<Long> v;
          do {
            v = n.increment();
            promoted += v.getStats().getPromotedLockTries() > 0 ? 1 : 0;
          } while (!v.succeeded());
        }
        out.println("promoted " + promoted);
        out.println("value " + n.get().postValue());
        return 0;
      }
      default:
        usage();
        return 2;
      }
    } finally {
      client.close();
    }
  }

  /* The modes on a DistributedAtomicInteger (Curator's 4-byte counter). */
  static int runInteger(CuratorFramework client, String mode, String[] a) throws Exception {
    DistributedAtomicInteger n = new DistributedAtomicInteger(client, a[2], new RetryNTimes(0, 0));
    switch (mode) {
    case "read":
      out.println("value " + n.get().postValue());
      return 0;
    case "set":
      if (a.length != 4)
        usage();
      n.forceSet(Integer.parseInt(a[3]));
      out.println("value " + n.get().postValue());
      return 0;
    case "cas": {
      if (a.length != 5)
        usage();
      AtomicValue<Integer> v = n.compareAndSet(Integer.parseInt(a[3]), Integer.parseInt(a[4]));
      out.println("cas " + v.succeeded() + " " + v.preValue() + " " + v.postValue());
      return 0;
    }
    case "add": {
      if (a.length != 4)
        usage();
      n = new DistributedAtomicInteger(client, a[2], new RetryNTimes(20, 1));
      out.println("ready");
      out.flush();
      if (new BufferedReader(new InputStreamReader(System.in)).readLine() == null)
        throw new Exception("no go line");
      for (int i = Integer.parseInt(a[3]); i > 0; i--) {
        AtomicValue<Integer> v;
        do
          v = n.increment();
        while (!v.succeeded());
      }
      out.println("value " + n.get().postValue());
      return 0;
    }
    default:
      usage();
      return 2;
    }
  }

  public static void main(String[] args) {
    int code;
    try {
      code = run(args);
    } catch (Throwable e) {
      System.err.println("CuratorAtomicPeer: " + e);
      code = 1;
    }
    out.flush();
    /* Curator's and ZooKeeper's threads may linger after close(). */
    Runtime.getRuntime().halt(code);
  }
}
