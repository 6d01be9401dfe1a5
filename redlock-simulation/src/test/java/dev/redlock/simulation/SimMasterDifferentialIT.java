package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The simulated master answers as a real redis-server does: seeded random sequences of the commands
 * the library sends and of its scripts' calls (every script, every operation and flavour, with the
 * arguments the library gives them), run on both, every reply compared, and after each command the
 * whole state the library keeps (its keys' values, sorted sets with their scores, and their
 * expiry).
 *
 * <p>Both masters' clocks are this machine's clock (the sim's reads it as the real one's TIME
 * does), so a reply that carries a time is compared within a tolerance that fits its unit (a TIME's
 * seconds within 2 s; milliseconds since the epoch within 2 s; microseconds within 2 s; a PTTL
 * within 2 s): a unit swapped (a thousandfold) or a window applied twice is still a mismatch. So
 * that no decision falls on a boundary, TTLs are 30 minutes and more and a waiter's stale window is
 * either 0 (stale by the next command) or an hour. Errors are compared by their code.
 */
class SimMasterDifferentialIT {

  private static final String[] SCRIPTS = {
    "release.lua", "extend.lua", "shorten.lua", "fence.lua", "admit.lua", "queue.lua", "keyset.lua"
  };
  private static final String COUNTER = "redlock:fence";
  private static final String MARKER = "redlock:born";
  private static final String RECORD = "redlock:admitted";
  private static final String[] RESOURCES = {"r:a", "r:b", "r:c"};
  private static final String[] TOKENS = {"t1", "t2", "t3"};
  private static final String[] CLIENTS = {"00000000000000a1", "00000000000000b2"};
  private static final String[] WAITERS = {
    CLIENTS[0] + "w1", CLIENTS[0] + "w2", CLIENTS[1] + "w3", CLIENTS[1] + "w4"
  };

  /**
   * The only script lines the sequences may leave unrun, and why: {@code admit.lua}'s marker stored
   * in the very millisecond of the lost one that the record names ({@code ms + 1}), which two
   * servers' clocks cannot be made to share ({@code AdmitScriptIT} covers it on a real
   * redis-server); {@code keyset.lua}'s answer to an unknown operation, which no library call
   * sends.
   */
  private static final Map<String, String> UNREACHED =
      Map.of("admit.lua", "ms = ms + 1", "keyset.lua", "unknown key-set operation");

  private static RedisProcess server;
  private static final Map<String, Integer> outcomes = new java.util.TreeMap<>();
  private static final LineCoverage coverage = new LineCoverage();
  private static final List<RespSocket> subscribers = new ArrayList<>();

  @BeforeAll
  static void start() {
    server = RedisProcess.start();
  }

  @AfterAll
  static void stop() throws IOException {
    for (RespSocket s : subscribers) {
      s.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void everyReplyAndEveryKeyMatchARealRedis() throws IOException {
    int compared = 0;
    for (long seed = 1; seed <= 6; seed++) {
      compared += run(seed, 1500);
    }
    System.out.printf("differential: %d replies compared, 0 mismatches%n", compared);
    outcomes.forEach((outcome, n) -> System.out.printf("  %6d  %s%n", n, outcome));
    List<String> missed = new ArrayList<>();
    for (String script : SCRIPTS) {
      String source = source(script);
      String sha = SimMaster.sha1hex(source.getBytes(ISO_8859_1));
      int[] counts = coverage.counts(sha);
      java.util.BitSet never = coverage.neverRun(sha);
      System.out.printf(
          "  %s: %d of %d lines of code run; never: %s%n", script, counts[1], counts[0], never);
      String[] lines = source.split("\n", -1);
      never.stream()
          .filter(line -> !lines[line - 1].contains(UNREACHED.getOrDefault(script, "\0")))
          .mapToObj(line -> script + ":" + line + " " + lines[line - 1].trim())
          .forEach(missed::add);
    }
    assertEquals(List.of(), missed, "script lines no sequence ran on both masters");
    assertTrue(compared > 200_000, "compared " + compared);
  }

  /** One seed's sequence of {@code steps} commands; the replies compared. */
  private int run(long seed, int steps) throws IOException {
    Random random = new Random(seed);
    Map<String, Integer> subscriptions = new HashMap<>();
    SimMaster sim = new SimMaster(() -> ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now()));
    sim.coverage(coverage);
    sim.subscribers((channel, message) -> subscriptions.getOrDefault(channel, 0), subscriptions);
    int compared = 0;
    try (RespSocket real = new RespSocket(server.host(), server.port())) {
      real.execute("FLUSHALL");
      real.execute("SCRIPT", "FLUSH");
      // Some clients listen: on one resource's channel and on one client's own channel.
      for (String channel :
          List.of("redlock:wake:" + RESOURCES[random.nextInt(3)], "redlock:wake:@" + CLIENTS[0])) {
        RespSocket listener = new RespSocket(server.host(), server.port());
        listener.execute("SUBSCRIBE", channel);
        subscribers.add(listener);
        subscriptions.merge(channel, 1, Integer::sum);
      }
      Map<String, String> shas = new LinkedHashMap<>();
      for (String script : SCRIPTS) {
        String source = source(script);
        Object realSha = real.execute("SCRIPT", "LOAD", source);
        Object simSha = sim.execute("SCRIPT", "LOAD", source);
        same(seed, "SCRIPT LOAD " + script, realSha, simSha);
        shas.put(script, new String((byte[]) realSha, ISO_8859_1));
      }
      List<String> trail = new ArrayList<>();
      if (seed == 1) {
        for (Object scripted : rareBranches(shas)) {
          if (scripted instanceof Long millis) { // real time passes on both masters' clock
            java.util.concurrent.locks.LockSupport.parkNanos(millis * 1_000_000);
          } else {
            compared += compare(seed, trail, real, sim, (String[]) scripted, shas);
          }
        }
      }
      for (int step = 0; step < steps; step++) {
        compared += compare(seed, trail, real, sim, next(random, shas), shas);
      }
    } finally {
      for (RespSocket s : subscribers) {
        s.close();
      }
      subscribers.clear();
    }
    return compared;
  }

  /** Runs {@code command} on both masters; compares the reply, then the whole state. */
  private static int compare(
      long seed,
      List<String> trail,
      RespSocket real,
      SimMaster sim,
      String[] command,
      Map<String, String> shas)
      throws IOException {
    trail.add(String.join(" ", command));
    Object expected = real.execute(command);
    Object actual = sim.execute(command);
    same(seed, trail, expected, actual);
    int compared = 1;
    outcomes.merge(
        name(command, shas)
            + " -> "
            + Replies.show(expected)
                .replaceAll("\\[\"\\d{10}\", \"\\d+\"\\]", "TIME")
                .replaceAll("\\d{6,}", "N"),
        1,
        Integer::sum);
    if (command[command.length - 1].equals("1") && name(command, shas).startsWith("shorten")) {
      // Shortened to 1 ms: past it on both masters before the state is read.
      long until = System.nanoTime() + 3_000_000;
      while (System.nanoTime() - until < 0) {
        Thread.onSpinWait();
      }
    }
    for (String[] look : state()) {
      Object expectedState = real.execute(look);
      Object actualState = sim.execute(look);
      if (!(look[0].equals("PTTL")
          && expectedState instanceof Long e
          && actualState instanceof Long a
          && e > 0
          && a > 0
          && Math.abs(e - a) <= 5)) { // a short expiry read a millisecond apart on each
        same(seed, trail, expectedState, actualState);
      }
      compared++;
    }
    return compared;
  }

  /**
   * Commands (and, as a {@code Long}, milliseconds of real time to let pass) that reach the
   * branches random sequences reach rarely or never, with margins of 150 ms and more around each
   * decision of time (19 ms for the 1 ms window, which only the one side can cross): a set's fence
   * with no counter yet, then raising it; a waiter that went stale swept by the release at the gate
   * (a window of 1 ms, 20 ms later, behind a live one); a first waiter granted at its gate for two
   * stale windows (300 ms each) yielding to the next, asking every 250 ms.
   */
  private static List<Object> rareBranches(Map<String, String> shas) {
    String keyset = shas.get("keyset.lua");
    String queueScript = shas.get("queue.lua");
    String release = shas.get("release.lua");
    String r = RESOURCES[0];
    String queue = "redlock:queue:" + r;
    String seen = "redlock:seen:" + r;
    java.util.function.BiFunction<String, String, String[]> ask =
        (waiter, window) -> queueCall(queueScript, r, "acquire", "t1", "1800000", waiter, window);
    List<Object> steps = new ArrayList<>();
    steps.add(new String[] {"DEL", COUNTER});
    steps.add(
        new String[] {
          "EVALSHA", keyset, "5", "r:b", "r:c", COUNTER, MARKER, RECORD, "acquire", "t2", "1800000",
          "2"
        });
    steps.add(
        new String[] {"EVALSHA", keyset, "3", "r:b", "r:c", COUNTER, "fence", "t2", "5", "2"});
    steps.add(
        new String[] {"EVALSHA", keyset, "3", "r:b", "r:c", COUNTER, "fence", "t2", "40", "2"});
    // A waiter, then another with a 1 ms window: the second is stale when the release at the
    // gate runs, which drops it before it names the first.
    steps.add(new String[] {"SET", r, "t3", "PX", "1800000"});
    steps.add(ask.apply(WAITERS[2], "3600000"));
    steps.add(ask.apply(WAITERS[0], "1"));
    steps.add(20L);
    steps.add(new String[] {"EVALSHA", release, "3", r, queue, seen, "t3"});
    steps.add(ask.apply(WAITERS[2], "3600000")); // granted: the first now
    steps.add(new String[] {"DEL", r});
    // A first waiter that keeps asking (600 ms window, every 450 ms) and is granted each time,
    // with another queued behind it: past two windows since its first grant (at 1,350 ms, not at
    // 900), it yields.
    steps.add(queueCall(queueScript, r, "leave", "t1", "1800000", WAITERS[2], "0"));
    steps.add(ask.apply(WAITERS[1], "600"));
    steps.add(ask.apply(WAITERS[3], "3600000"));
    for (int i = 0; i < 4; i++) {
      steps.add(new String[] {"DEL", r});
      steps.add(450L);
      steps.add(ask.apply(WAITERS[1], "600"));
    }
    steps.add(new String[] {"DEL", r});
    // A set's waiter joins the queue (queue.lua's join): behind the two waiters there (0); first
    // once they left, with the key free (1, told its turn, once); a waiter behind it refused with
    // the key free; first again (1); then every one leaves.
    steps.add(queueCall(queueScript, r, "join", "", "0", WAITERS[0], "3600000"));
    steps.add(queueCall(queueScript, r, "leave", "", "0", WAITERS[1], "0"));
    steps.add(queueCall(queueScript, r, "leave", "", "0", WAITERS[3], "0"));
    steps.add(queueCall(queueScript, r, "join", "", "0", WAITERS[0], "3600000"));
    steps.add(ask.apply(WAITERS[2], "3600000"));
    steps.add(queueCall(queueScript, r, "join", "", "0", WAITERS[0], "3600000"));
    steps.add(queueCall(queueScript, r, "leave", "", "0", WAITERS[0], "0"));
    steps.add(queueCall(queueScript, r, "leave", "", "0", WAITERS[2], "0"));
    return steps;
  }

  /** A {@code queue.lua} call as the library makes it, on resource {@code r}. */
  private static String[] queueCall(
      String sha, String r, String op, String token, String ttl, String waiter, String window) {
    return new String[] {
      "EVALSHA",
      sha,
      "6",
      r,
      COUNTER,
      MARKER,
      RECORD,
      "redlock:queue:" + r,
      "redlock:seen:" + r,
      op,
      token,
      ttl,
      waiter,
      window
    };
  }

  /** What the library keeps on a master: read after every command. */
  private static List<String[]> state() {
    List<String[]> looks = new ArrayList<>();
    for (String key : List.of(COUNTER, MARKER, RECORD)) {
      looks.add(new String[] {"GET", key});
      looks.add(new String[] {"PTTL", key});
    }
    for (String r : RESOURCES) {
      looks.add(new String[] {"GET", r});
      looks.add(new String[] {"PTTL", r});
      looks.add(new String[] {"ZRANGE", "redlock:queue:" + r, "0", "-1", "WITHSCORES"});
      looks.add(new String[] {"PTTL", "redlock:queue:" + r});
      looks.add(new String[] {"ZRANGE", "redlock:seen:" + r, "0", "-1", "WITHSCORES"});
      looks.add(new String[] {"PTTL", "redlock:seen:" + r});
    }
    return looks;
  }

  /** A command as the library sends it, or as a script would be called by it. */
  private static String[] next(Random random, Map<String, String> shas) {
    String r = pick(random, RESOURCES);
    String token = pick(random, TOKENS);
    String ttl = pick(random, "1800000", "3600000", "7200000");
    String queue = "redlock:queue:" + r;
    String seen = "redlock:seen:" + r;
    switch (random.nextInt(12)) {
      case 0:
        return new String[] {"SET", r, token, "NX", "PX", ttl};
      case 1:
        return new String[] {"MGET", COUNTER, MARKER, RECORD};
      case 2:
        {
          List<String> c = new ArrayList<>(List.of("EVALSHA", shas.get("release.lua")));
          int flavour = random.nextInt(5);
          if (flavour == 4) {
            c.addAll(List.of("3", r, queue, seen, token)); // at the gate
          } else {
            c.addAll(List.of("1", r, token));
            if (flavour > 0) {
              c.add(pick(random, "quiet", "next", "notice"));
            }
          }
          return c.toArray(String[]::new);
        }
      case 3:
        return new String[] {
          "EVALSHA", shas.get("extend.lua"), "1", r, token, pick(random, "1800000", "10000000")
        };
      case 4:
        return new String[] {
          "EVALSHA",
          shas.get("shorten.lua"),
          "1",
          r,
          token,
          pick(random, "1", "1800000", "10000000")
        };
      case 5:
        return new String[] {
          "EVALSHA",
          shas.get("fence.lua"),
          "2",
          r,
          COUNTER,
          token,
          pick(random, "7", "12", "0012", "99999999999999999999", "x1")
        };
      case 6:
        return new String[] {
          "EVALSHA", shas.get("admit.lua"), "2", MARKER, RECORD, pick(random, "", "run-1", "run-2")
        };
      case 7:
      case 8:
        return queueCall(
            shas.get("queue.lua"),
            r,
            pick(random, "leave", "join", "acquire", "acquire", "acquire", "acquire"),
            token,
            ttl,
            pick(random, WAITERS),
            pick(random, "0", "3600000"));
      case 9:
        {
          List<String> set = new ArrayList<>(Arrays.asList(RESOURCES));
          java.util.Collections.shuffle(set, random);
          set = new ArrayList<>(set.subList(0, 1 + random.nextInt(3)));
          set.sort(null);
          String op = pick(random, "acquire", "acquire", "release", "extend", "shorten", "fence");
          List<String> c = new ArrayList<>(List.of("EVALSHA", shas.get("keyset.lua")));
          List<String> keys = new ArrayList<>(set);
          if (op.equals("acquire")) {
            keys.addAll(List.of(COUNTER, MARKER, RECORD));
          } else if (op.equals("fence")) {
            keys.add(COUNTER);
          }
          c.add(Integer.toString(keys.size()));
          c.addAll(keys);
          String number =
              op.equals("fence")
                  ? pick(random, "5", "40")
                  : op.equals("acquire") ? ttl : pick(random, "1800000", "10000000");
          c.addAll(List.of(op, token, number, Integer.toString(set.size())));
          if (op.equals("release") && random.nextBoolean()) {
            c.add("quiet");
          }
          return c.toArray(String[]::new);
        }
      case 10:
        return new String[] {"DEL", r};
      default:
        return new String[] {
          "PUBSUB", "NUMSUB", "redlock:wake:" + r, "redlock:wake:@" + pick(random, CLIENTS)
        };
    }
  }

  /** The script a command calls and its operation, or the command's name. */
  private static String name(String[] command, Map<String, String> shas) {
    if (!command[0].equals("EVALSHA")) {
      return command[0];
    }
    String script = "?";
    for (Map.Entry<String, String> e : shas.entrySet()) {
      if (e.getValue().equals(command[1])) {
        script = e.getKey();
      }
    }
    int numkeys = Integer.parseInt(command[2]);
    String first = command.length > 3 + numkeys ? command[3 + numkeys] : "";
    return switch (script) {
      case "queue.lua", "keyset.lua" -> script + " " + first;
      case "release.lua" ->
          script + (numkeys == 3 ? " gate" : command.length > 5 ? " " + command[5] : " plain");
      default -> script;
    };
  }

  @SafeVarargs
  private static <T> T pick(Random random, T... choices) {
    return choices[random.nextInt(choices.length)];
  }

  private static String source(String script) throws IOException {
    try (InputStream in =
        SimMaster.class
            .getClassLoader()
            .getResourceAsStream("dev/redlock/internal/transport/" + script)) {
      if (in == null) {
        throw new IOException("no script " + script + " on the class path");
      }
      return new String(in.readAllBytes(), ISO_8859_1);
    }
  }

  private static void same(long seed, Object what, Object expected, Object actual) {
    if (!Replies.same(expected, actual)) {
      String where = what instanceof List<?> trail ? tail(trail) : what.toString();
      assertEquals(
          Replies.show(expected), Replies.show(actual), "seed " + seed + ", after:\n  " + where);
    }
  }

  /** The last commands before a mismatch, one a line. */
  private static String tail(List<?> trail) {
    List<?> last = trail.subList(Math.max(0, trail.size() - 12), trail.size());
    StringBuilder out = new StringBuilder();
    for (Object command : last) {
      out.append(out.length() == 0 ? "" : "\n  ").append(command);
    }
    return out.toString();
  }
}
