package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;

/**
 * A plain subscriber of a resource's wake-up channel ({@code redlock:wake:<resource>}), and of any
 * other channels asked for, on every master, as a waiting client is: records each notice as "{@code
 * <master>: gone}" or "{@code <master>: still held}", the key as that master has it when the notice
 * arrives (read on another connection, after the notice).
 */
final class Notices implements AutoCloseable {

  /** A channel the test publishes on after the release, to know every notice before it came. */
  private static final String MARK = "test:mark";

  private final RedisCluster cluster;
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final List<AutoCloseable> closing = new ArrayList<>();
  private final List<String> heard = new CopyOnWriteArrayList<>();
  private final List<String> messages = new CopyOnWriteArrayList<>();
  private volatile CountDownLatch marked;

  /**
   * Subscribes {@code resource}'s channel, and {@code more} channels, on every master of {@code
   * cluster}; returns once done.
   */
  Notices(RedisCluster cluster, String resource, String... more) throws InterruptedException {
    this.cluster = cluster;
    for (int i = 0; i < cluster.nodes().size(); i++) {
      subscribe(i, resource, more);
    }
  }

  private void subscribe(int master, String resource, String... more) throws InterruptedException {
    String[] channels = new String[2 + more.length];
    channels[0] = "redlock:wake:" + resource;
    channels[1] = MARK;
    System.arraycopy(more, 0, channels, 2, more.length);
    RedisProcess node = cluster.node(master);
    Jedis jedis = new Jedis(node.host(), node.port());
    CountDownLatch subscribed = new CountDownLatch(1);
    JedisPubSub listener =
        new JedisPubSub() {
          @Override
          public void onMessage(String channel, String message) {
            if (channel.equals(MARK)) {
              marked.countDown();
              return;
            }
            messages.add(master + " " + channel + " " + message);
            if (channel.equals(channels[0])) {
              heard.add(master + (node.admin().exists(resource) ? ": still held" : ": gone"));
            }
          }

          @Override
          public void onSubscribe(String channel, int count) {
            if (count == channels.length) {
              subscribed.countDown();
            }
          }
        };
    threads.submit(() -> jedis.subscribe(listener, channels));
    assertTrue(subscribed.await(10, TimeUnit.SECONDS), "subscribed at master " + master);
    closing.add(
        () -> {
          listener.unsubscribe();
          jedis.close();
        });
  }

  /**
   * Every notice published so far, once each master's is in: a subscriber hears a master's messages
   * in the order it published them, so once a mark published now has come from every master, so has
   * every notice before it.
   */
  List<String> heard() throws InterruptedException {
    awaitMarks();
    return List.copyOf(heard);
  }

  /**
   * Every message on any subscribed channel so far, as "{@code <master> <channel> <message>}", once
   * each master's is in (as {@link #heard()}).
   */
  List<String> messages() throws InterruptedException {
    awaitMarks();
    return List.copyOf(messages);
  }

  private void awaitMarks() throws InterruptedException {
    marked = new CountDownLatch(cluster.nodes().size());
    for (RedisProcess node : cluster.nodes()) {
      node.admin().command("PUBLISH", MARK, "after the release");
    }
    assertTrue(marked.await(10, TimeUnit.SECONDS), "the marks heard");
  }

  @Override
  public void close() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
    threads.shutdownNow();
  }
}
