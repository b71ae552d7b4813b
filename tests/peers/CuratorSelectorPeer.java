/*
 * CuratorSelectorPeer: Apache Curator 5's LeaderSelector with autoRequeue
 * taking turns with zkrecipes' runners (tests/test_runner.c).  Its wire is
 * InterProcessMutex's: "_c_<uuid>-lock-<seq>" nodes holding the id.
 *
 *   java -cp DIR:JARS CuratorSelectorPeer CONNECT PATH ID TURNS WORK_MS HOLD_FIRST
 *
 * Each leadership prints "STARTED TOKEN T0", works WORK_MS ms and prints
 * "TURN TOKEN T0 T1" (TOKEN: the czxid of the leader's node; times:
 * System.nanoTime(), CLOCK_MONOTONIC on Linux, in microseconds: the clock
 * of tests/holds.h).  With HOLD_FIRST 1 the first leadership also waits
 * for a line on stdin (at most 30 s).  After TURNS leaderships the
 * selector is closed (a leadership begun meanwhile is interrupted and
 * printed too) and "DONE" printed.  "READY" once connected.  Exit status
 * 0; 2 for bad usage; 3 when TURNS did not come within 60 s.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public class CuratorSelectorPeer {
  static long nowUs() {
    return System.nanoTime() / 1000;
  }

  static synchronized void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  /** The czxid of the leader's node: the lowest "lock-" sequence, which
   *  must hold our id; -1 when it does not. */
  static long token(CuratorFramework client, String path, String id) throws Exception {
    List<String> kids = client.getChildren().forPath(path);
    String best = null;
    long bestSeq = Long.MAX_VALUE;
    for (String k : kids) {
      int i = k.lastIndexOf("lock-");
      if (i < 0)
        continue;
      long seq = Long.parseLong(k.substring(i + 5));
      if (seq < bestSeq) {
        bestSeq = seq;
        best = k;
      }
    }
    if (best == null)
      return -1;
    Stat st = new Stat();
    byte[] data = client.getData().storingStatIn(st).forPath(path + "/" + best);
    return id.equals(new String(data, StandardCharsets.UTF_8)) ? st.getCzxid() : -1;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: CuratorSelectorPeer CONNECT PATH ID TURNS WORK_MS HOLD_FIRST");
      System.exit(2);
    }
    final String path = args[1];
    final String id = args[2];
    final int turns = Integer.parseInt(args[3]);
    final long workMs = Long.parseLong(args[4]);
    final boolean holdFirst = args[5].equals("1");
    final CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[0])
        .sessionTimeoutMs(10000)
        .connectionTimeoutMs(10000)
        .retryPolicy(new RetryNTimes(3, 100))
        .build();
    client.start();
    if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
      System.err.println("could not connect");
      System.exit(1);
    }
    say("READY");
    final CountDownLatch done = new CountDownLatch(turns);
    final CountDownLatch go = new CountDownLatch(1);
    Thread reader = new Thread(() -> { /* the first line on stdin */
      try {
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      } catch (Exception e) {
        /* end of input: go all the same */
      }
      go.countDown();
    });
    reader.setDaemon(true);
    reader.start();
    final int[] n = {0};
    LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
      @Override
      public void takeLeadership(CuratorFramework c) throws Exception {
        long t0 = nowUs();
        long token = token(c, path, id);
        say("STARTED " + token + " " + t0);
        try {
          if (holdFirst && n[0]++ == 0)
            go.await(30, TimeUnit.SECONDS);
          Thread.sleep(workMs);
        } catch (InterruptedException e) {
          /* closed: the turn ends here */
        } finally {
          say("TURN " + token + " " + t0 + " " + nowUs());
          done.countDown();
        }
      }
    });
    selector.setId(id);
    selector.autoRequeue();
    selector.start();
    boolean all = done.await(60, TimeUnit.SECONDS);
    selector.close();
    client.close();
    say("DONE");
    System.exit(all ? 0 : 3);
  }
}
