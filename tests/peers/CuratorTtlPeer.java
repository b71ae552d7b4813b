/*
 * CuratorTtlPeer: Apache Curator 5's PersistentTtlNode
 * (org.apache.curator.framework.recipes.nodes) for zkrecipes' TTL node
 * interoperability tests (tests/test_ttlnode.c).
 *
 *   java -cp DIR:JARS CuratorTtlPeer keep CONNECT PATH TTL_MS DATA
 *
 * Prints "found DATA" (the data at PATH before it starts, "-" when there
 * is no node), starts a PersistentTtlNode of PATH with TTL_MS and DATA
 * (UTF-8), prints "created" once its first create is done and "touched"
 * once its touch child exists (Curator writes it a TTL / 2 after the
 * start).  Commands: "data" prints "data DATA" (PATH's data on the
 * servers); "quit" or end of input closes the node ("closed", exit 0).
 * Exit 4 when it cannot connect, 5 on another error.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;

public final class CuratorTtlPeer {
  static final long TIMEOUT_MS = 30000;

  static String read(CuratorFramework client, String path) throws Exception {
    if (client.checkExists().forPath(path) == null)
      return "-";
    byte[] data = client.getData().forPath(path);
    return data == null ? "" : new String(data, StandardCharsets.UTF_8);
  }

  /* Until PATH/touch exists, by a watch on it. */
  static boolean awaitTouch(CuratorFramework client, String child)
      throws Exception {
    long deadline = System.currentTimeMillis() + TIMEOUT_MS;
    while (System.currentTimeMillis() < deadline) {
      CountDownLatch changed = new CountDownLatch(1);
      Watcher w = (WatchedEvent e) -> changed.countDown();
      if (client.checkExists().usingWatcher(w).forPath(child) != null)
        return true;
      changed.await(deadline - System.currentTimeMillis(),
                    TimeUnit.MILLISECONDS);
    }
    return false;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 5 || !args[0].equals("keep")) {
      System.err.println("usage: CuratorTtlPeer keep CONNECT PATH TTL_MS DATA");
      System.exit(2);
    }
    String path = args[2];
    long ttl = Long.parseLong(args[3]);
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[1])
        .sessionTimeoutMs(10000)
        .connectionTimeoutMs(10000)
        .retryPolicy(new RetryNTimes(3, 100))
        .build();
    client.start();
    if (!client.blockUntilConnected((int) TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
      System.err.println("could not connect to " + args[1]);
      System.exit(4);
    }
    int status = 0;
    try {
      System.out.println("found " + read(client, path));
      System.out.flush();
      PersistentTtlNode node = new PersistentTtlNode(
          client, path, ttl, args[4].getBytes(StandardCharsets.UTF_8));
      node.start();
      if (!node.waitForInitialCreate(TIMEOUT_MS, TimeUnit.MILLISECONDS))
        throw new Exception("no initial create");
      System.out.println("created");
      System.out.flush();
      if (!awaitTouch(client, path + "/" + PersistentTtlNode.DEFAULT_CHILD_NODE_NAME))
        throw new Exception("no touch child");
      System.out.println("touched");
      System.out.flush();
      BufferedReader in = new BufferedReader(
          new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line; (line = in.readLine()) != null && !line.equals("quit");) {
        if (line.equals("data"))
          System.out.println("data " + read(client, path));
        else
          System.out.println("error unknown command");
        System.out.flush();
      }
      node.close();
      System.out.println("closed");
      System.out.flush();
    } catch (Exception e) {
      System.err.println("error: " + e);
      status = 5;
    }
    client.close();
    System.exit(status);
  }
}
