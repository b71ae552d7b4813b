/*
 * CuratorBarrierPeer: Apache Curator 5's DistributedBarrier and
 * DistributedDoubleBarrier, for zkrecipes' barrier tests
 * (tests/test_barrier.c).
 *
 *   java -cp DIR:JARS CuratorBarrierPeer MODE CONNECT PATH [ARGS...]
 *
 *   set    CONNECT PATH             setBarrier(); prints "set"
 *   remove CONNECT PATH             removeBarrier(); prints "removed"
 *   wait   CONNECT PATH TIMEOUT_MS  waitOnBarrier(TIMEOUT_MS); prints
 *                                   "gone", or "timeout" (exit 3)
 *   double CONNECT PATH N           a DistributedDoubleBarrier of N members:
 *                                   prints "started", enter() then
 *                                   "entered"; on the line "leave" (or the
 *                                   end of input) leave() and "left"
 *
 * Every wait is bounded by ZKR_PEER_TIMEOUT_MS (default 30000): exit 3
 * ("timeout") past it.  Exit codes: 0 done, 2 usage, 3 timeout, 4 could
 * not connect, 5 error.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBarrierPeer {
  static long timeoutMs() {
    String v = System.getenv("ZKR_PEER_TIMEOUT_MS");
    return v == null ? 30000 : Long.parseLong(v);
  }

  static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  public static void main(String[] args) {
    int rc;
    try {
      rc = run(args);
    } catch (Exception e) {
      System.err.println("CuratorBarrierPeer: " + e);
      rc = 5;
    }
    System.exit(rc);
  }

  static int run(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: CuratorBarrierPeer set|remove|wait|double CONNECT PATH [ARG]");
      return 2;
    }
    long timeout = timeoutMs();
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[1]).sessionTimeoutMs(4000)
        .connectionTimeoutMs(4000).retryPolicy(new RetryNTimes(3, 100)).build();
    client.start();
    try {
      if (!client.blockUntilConnected((int) timeout, TimeUnit.MILLISECONDS))
        return 4;
      String path = args[2];
      switch (args[0]) {
      case "set":
        new DistributedBarrier(client, path).setBarrier();
        say("set");
        return 0;
      case "remove":
        new DistributedBarrier(client, path).removeBarrier();
        say("removed");
        return 0;
      case "wait":
        if (args.length < 4)
          return 2;
        if (new DistributedBarrier(client, path)
                .waitOnBarrier(Long.parseLong(args[3]), TimeUnit.MILLISECONDS)) {
          say("gone");
          return 0;
        }
        say("timeout");
        return 3;
      case "double": {
        if (args.length < 4)
          return 2;
        DistributedDoubleBarrier b =
            new DistributedDoubleBarrier(client, path, Integer.parseInt(args[3]));
        say("started");
        if (!b.enter(timeout, TimeUnit.MILLISECONDS)) {
          say("timeout");
          return 3;
        }
        say("entered");
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.equals("leave"))
          ;
        if (!b.leave(timeout, TimeUnit.MILLISECONDS)) {
          say("timeout");
          return 3;
        }
        say("left");
        return 0;
      }
      default:
        return 2;
      }
    } finally {
      client.close();
    }
  }
}
