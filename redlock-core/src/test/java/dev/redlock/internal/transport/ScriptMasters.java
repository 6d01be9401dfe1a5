package dev.redlock.internal.transport;

import dev.redlock.RedLock;
import dev.redlock.RedLocks;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What the script contract tests ({@code *ScriptIT}) read on the real masters: the keys, the
 * masters' clock, and how many script calls a master has run, so that a test can wait until a
 * round's late answers (a round is decided at a majority; the others run the script later) have run
 * before asserting what they left.
 */
final class ScriptMasters {

  private ScriptMasters() {}

  /**
   * The node timeout of {@link #redlock}: long enough that a round on five masters is not timed out
   * on a loaded two-core machine (a test's acquire would fail before it tests anything), and below
   * the shortest TTL and extension the tests ask for (1 s).
   */
  static final Duration NODE_TIMEOUT = Duration.ofMillis(500);

  /** An admitted RedLock on every master of {@code cluster}, with {@link #NODE_TIMEOUT}. */
  static RedLock redlock(RedisCluster cluster) {
    return RedLocks.admitted(
        RedLock.builder().nodes(cluster.uris()).nodeTimeout(NODE_TIMEOUT).build());
  }

  /**
   * The text of the library's script {@code name} (e.g. {@code "fence.lua"}), from the class path
   * as the library loads it (where the Lua mutation run puts its mutant).
   */
  static String script(String name) {
    try (InputStream in = ScriptMasters.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("no script " + name + " beside " + ScriptMasters.class);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Runs the library's script {@code name} on {@code admin}'s master by {@code EVAL}, with {@code
   * keys} and then {@code args}: a test of the script's own answers (its KEYS and ARGV are its
   * contract, whatever Java code calls it). Returns the decoded reply.
   */
  static Object eval(RedisAdmin admin, String name, List<String> keys, String... args) {
    List<String> command = new ArrayList<>();
    command.add("EVAL");
    command.add(script(name));
    command.add(Integer.toString(keys.size()));
    command.addAll(keys);
    command.addAll(List.of(args));
    return admin.command(command.toArray(String[]::new));
  }

  /**
   * What a release's notice says: the SHA-1 of its token in hex (Redis's {@code redis.sha1hex}),
   * which names the release without revealing the token.
   */
  static String sha1hex(String token) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-1").digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A token of ours, for the tests that run a script directly. */
  static final String TOKEN = "fedcba9876543210fedcba9876543210";

  /** A value no lease of the library holds: another client's token. */
  static final String OTHER = "0123456789abcdef0123456789abcdef";

  /**
   * How many script calls ({@code EVALSHA} and {@code EVAL}) {@code admin}'s master has run, from
   * {@code INFO commandstats}.
   */
  static long scriptCalls(RedisAdmin admin) {
    return stat(admin, "evalsha", "calls") + stat(admin, "eval", "calls");
  }

  /** One field of a command's line in {@code INFO commandstats}; 0 if it has none yet. */
  static long stat(RedisAdmin admin, String command, String field) {
    String prefix = "cmdstat_" + command + ":";
    for (String line : String.valueOf(admin.command("INFO", "commandstats")).split("\r?\n")) {
      if (line.startsWith(prefix)) {
        for (String pair : line.substring(prefix.length()).split(",")) {
          if (pair.startsWith(field + "=")) {
            return Long.parseLong(pair.substring(field.length() + 1));
          }
        }
      }
    }
    return 0;
  }

  /** Each of {@code masters}' script calls so far, in the order given. */
  static long[] scriptCalls(RedisCluster cluster, int... masters) {
    long[] calls = new long[masters.length];
    for (int i = 0; i < masters.length; i++) {
      calls[i] = scriptCalls(cluster.node(masters[i]).admin());
    }
    return calls;
  }

  /**
   * Waits until each of {@code masters} has run at least {@code more} script calls since {@code
   * before} (from {@link #scriptCalls(RedisCluster, int...)} with the same masters).
   */
  static void awaitScripts(RedisCluster cluster, long[] before, int more, int... masters) {
    for (int i = 0; i < masters.length; i++) {
      RedisAdmin admin = cluster.node(masters[i]).admin();
      long after = before[i] + more;
      int master = masters[i];
      Poll.until(
          Duration.ofSeconds(5),
          () -> scriptCalls(admin) >= after,
          () -> "master " + master + " ran the round's script");
    }
  }

  /** The master's clock, in microseconds ({@code TIME}). */
  static long timeMicros(RedisAdmin admin) {
    List<?> time = (List<?>) admin.command("TIME");
    return Long.parseLong((String) time.get(0)) * 1_000_000 + Long.parseLong((String) time.get(1));
  }

  /** Replaces {@code key} on {@code master} by another client's, for {@code ttlMillis}. */
  static void takenByAnother(RedisCluster cluster, String key, long ttlMillis, int... masters) {
    for (int i : masters) {
      RedisAdmin admin = cluster.node(i).admin();
      admin.command("DEL", key);
      admin.command("SET", key, OTHER, "PX", Long.toString(ttlMillis));
    }
  }

  /** The index of the master that queues the waiters of {@code resource}, or -1 if none does. */
  static int queueAt(RedisCluster cluster, String resource) {
    for (int i = 0; i < cluster.nodes().size(); i++) {
      RedisProcess node = cluster.node(i);
      if ((Long) node.admin().command("ZCARD", "redlock:queue:" + resource) > 0) {
        return i;
      }
    }
    return -1;
  }

  /** The members of the sorted set {@code key}, lowest score first. */
  static List<?> zmembers(RedisAdmin admin, String key) {
    return (List<?>) admin.command("ZRANGE", key, "0", "-1");
  }

  /**
   * Finds {@code resource}'s gate: with the key held by another client on every master (left so), a
   * waiter that asks only when woken queues, and is interrupted once queued (it gives up and leaves
   * the queue, within half its stale window, or this fails). Returns the index of the master where
   * it queued.
   */
  static int findGate(RedisCluster cluster, String resource) throws Exception {
    takenByAnother(cluster, resource, 60_000, 0, 1, 2, 3, 4);
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try (RedLock finder =
        RedLocks.admitted(
            RedLock.builder()
                .nodes(cluster.uris())
                .nodeTimeout(NODE_TIMEOUT)
                .retryDelay(Duration.ofSeconds(2))
                .build())) {
      Future<?> finding =
          thread.submit(
              () -> finder.acquire(resource, Duration.ofSeconds(10), Duration.ofSeconds(10)));
      Poll.until(
          Duration.ofSeconds(5), () -> queueAt(cluster, resource) >= 0, () -> "a waiter queued");
      int gate = queueAt(cluster, resource);
      finding.cancel(true); // gives up: it leaves the queue
      RedisAdmin admin = cluster.node(gate).admin();
      // Half its stale window (2 x (2 s + 500 ms)): a queue emptied only by expiry is still full.
      Poll.until(
          Duration.ofMillis(2_500),
          () ->
              zmembers(admin, "redlock:queue:" + resource).isEmpty()
                  && zmembers(admin, "redlock:queue-seen:" + resource).isEmpty(),
          () ->
              "the waiter that gave up left the queue: "
                  + zmembers(admin, "redlock:queue:" + resource)
                  + zmembers(admin, "redlock:queue-seen:" + resource));
      return gate;
    } finally {
      thread.shutdownNow();
    }
  }
}
