package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * A simulated Redis master: the commands the library sends and its scripts call, on a keyspace
 * whose keys expire by this master's own clock, with the library's Lua scripts run for real ({@link
 * Scripts}). One thread drives it; nothing in it blocks or reads the real time.
 *
 * <p>Replies are plain values: a bulk string is a {@code byte[]}, an integer a {@code Long}, an
 * array a {@code List<Object>}, a nil {@code null}, a status {@link Status}, an error {@link
 * Error}. Keys, values and members are bytes, held as ISO-8859-1 strings (one char per byte, so
 * nothing is lost).
 *
 * <p>What it answers as Redis 7.0 does, and what the differential test ({@code
 * SimMasterDifferentialIT}) compares with a real redis-server: GET, SET (NX, XX, PX, EX), DEL,
 * MGET, TIME, PTTL, PEXPIRE, ZADD (NX, XX, GT, LT, CH), ZRANGE (by rank, WITHSCORES), ZRANGEBYSCORE
 * (WITHSCORES, LIMIT), ZREM, ZCARD, PUBLISH, PUBSUB NUMSUB, EVAL, EVALSHA, SCRIPT LOAD, EXISTS and
 * FLUSH, PING, FLUSHALL, DBSIZE. A key expires when its master's clock is past its expiry, as
 * Redis's {@code now > when}; a script sees one time for expiry from its start to its end, as Redis
 * 7 does. Errors are compared by their first word (their code): Redis's wording of the rest varies
 * between versions.
 *
 * <p>Not thread-safe: the simulation's one thread drives it.
 */
public final class SimMaster {

  /** A status reply, such as {@code OK}. */
  public record Status(String text) {}

  /**
   * An error reply: its code (the first word, such as {@code ERR} or {@code WRONGTYPE}), then the
   * text.
   */
  public record Error(String message) {
    /** The code: the message's first word. */
    public String code() {
      int space = message.indexOf(' ');
      return space < 0 ? message : message.substring(0, space);
    }
  }

  /** Where a message published on this master goes: the channel, the message; returns receivers. */
  @FunctionalInterface
  public interface Subscribers {
    /**
     * Delivers a published message.
     *
     * @param channel the channel
     * @param message the message
     * @return how many subscribers receive it (what PUBLISH answers)
     */
    int publish(String channel, String message);
  }

  static final Status OK = new Status("OK");

  /** The WRONGTYPE reply, thrown from deep in a command. */
  static final class WrongType extends RuntimeException {
    WrongType() {
      super(null, null, false, false);
    }
  }

  private static final Error WRONGTYPE =
      new Error("WRONGTYPE Operation against a key holding the wrong kind of value");
  private static final Error NOT_INTEGER = new Error("ERR value is not an integer or out of range");
  static final Error SYNTAX = new Error("ERR syntax error");

  /** A key's value (a string, or a sorted set) and when it expires (ms, or -1). */
  private static final class Entry {
    final Object value; // String, or ZSet
    long expiresAt = -1;

    Entry(Object value) {
      this.value = value;
    }
  }

  private final Map<String, Entry> keys = new HashMap<>();
  private final ZSet.Keyspace keyspace =
      new ZSet.Keyspace() {
        @Override
        public Object lookup(String key) {
          Entry entry = SimMaster.this.lookup(key);
          return entry == null ? null : entry.value;
        }

        @Override
        public void put(String key, ZSet set) {
          keys.put(key, new Entry(set));
        }

        @Override
        public void remove(String key) {
          keys.remove(key);
        }
      };
  private final LongSupplier clockMicros;
  private final Scripts scripts;
  private Subscribers subscribers = (channel, message) -> 0;
  private java.util.function.BiConsumer<List<String>, Object> observer; // null: none
  private String runId;
  private long startedMicros;
  private int runs; // how many times it started: a connection of an earlier run is reset
  private final Map<String, String> config = new TreeMap<>();
  private Map<String, Integer> subscriptions = new TreeMap<>();
  private long frozenMillis = -1; // during a script: the time keys expire by

  /**
   * A master with an empty keyspace.
   *
   * @param clockMicros this master's clock: microseconds since the epoch, as TIME answers
   */
  public SimMaster(LongSupplier clockMicros) {
    this(clockMicros, "0000000000000000000000000000000000000001");
  }

  /**
   * A master with an empty keyspace and the server run {@code runId} (what {@code INFO server}
   * answers as {@code run_id}: a restart is a new master with a new run).
   *
   * @param clockMicros this master's clock: microseconds since the epoch, as TIME answers
   * @param runId its server run
   */
  public SimMaster(LongSupplier clockMicros, String runId) {
    this.clockMicros = clockMicros;
    this.runId = runId;
    this.startedMicros = clockMicros.getAsLong();
    this.scripts = new Scripts(this);
    config.put("appendonly", "no");
    config.put("appendfsync", "everysec");
    config.put("no-appendfsync-on-rewrite", "no");
    config.put("maxmemory", "0");
    config.put("maxmemory-policy", "noeviction");
  }

  /**
   * Sets a configuration parameter, as {@code CONFIG GET} then answers it.
   *
   * @param name the parameter
   * @param value its value
   */
  public void config(String name, String value) {
    config.put(name, value);
  }

  /**
   * Sets where published messages go and who counts as subscribed for PUBSUB NUMSUB.
   *
   * @param subscribers delivers a message, answering how many received it
   * @param subscriptions the number of subscribers of each channel, read by PUBSUB NUMSUB (the
   *     caller keeps it current)
   */
  public void subscribers(Subscribers subscribers, Map<String, Integer> subscriptions) {
    this.subscribers = subscribers;
    this.subscriptions = subscriptions;
  }

  /**
   * Runs one command.
   *
   * @param argv the command's name and arguments
   * @return its reply (see the class comment)
   */
  public Object execute(List<byte[]> argv) {
    List<String> args = new ArrayList<>(argv.size());
    for (byte[] arg : argv) {
      args.add(new String(arg, ISO_8859_1));
    }
    Object reply = run(args, false);
    if (observer != null) {
      observer.accept(args, reply);
    }
    return reply;
  }

  /**
   * Hears every command a client sends (not a script's own calls) with its reply: for a trace.
   *
   * @param observer told each command's arguments and reply, or null for none
   */
  public void observe(java.util.function.BiConsumer<List<String>, Object> observer) {
    this.observer = observer;
  }

  /** Runs one command given as strings (each char one byte). */
  public Object execute(String... argv) {
    return run(Arrays.asList(argv), false);
  }

  /**
   * From now on, records which lines of each script this master runs into {@code coverage}.
   *
   * @param coverage where the lines run are kept
   */
  public void coverage(LineCoverage coverage) {
    scripts.coverage(coverage);
  }

  /**
   * A bug put back on purpose, for the simulation's own tests (never the product's): from now on
   * each script loaded runs as {@code edit} rewrites its source, under the SHA-1 of the source as
   * sent, so the library cannot tell.
   *
   * @param edit rewrites a script's source
   */
  public void editScripts(java.util.function.UnaryOperator<String> edit) {
    scripts.edit(edit);
  }

  /**
   * Restarts the master: a new server run (its connections reset), its scripts forgotten, and its
   * keys lost unless {@code keepData} (a restart from a lossless AOF keeps them all).
   *
   * @param keepData whether the keys survive
   * @param newRunId the new run's {@code run_id}
   */
  public void restart(boolean keepData, String newRunId) {
    if (!keepData) {
      keys.clear();
    }
    scripts.flush();
    runId = newRunId;
    startedMicros = nowMicros();
    runs++;
  }

  /**
   * The keyspace as a snapshot ({@code BGSAVE}, an RDB file) saves it now: each key, its value and
   * its expiry (an absolute time, as RDB keeps it).
   *
   * @return the snapshot, for {@link #restart(Snapshot, String)}
   */
  public Snapshot snapshot() {
    Map<String, Entry> copy = new HashMap<>();
    keys.forEach((key, entry) -> copy.put(key, copy(entry)));
    return new Snapshot(copy);
  }

  /** A copy of {@code entry}: its value (a sorted set copied too) and its expiry. */
  private static Entry copy(Entry entry) {
    Entry copied = new Entry(entry.value instanceof ZSet set ? set.copy() : entry.value);
    copied.expiresAt = entry.expiresAt;
    return copied;
  }

  /** A saved keyspace ({@link #snapshot()}). */
  public static final class Snapshot {
    private final Map<String, Entry> keys;

    private Snapshot(Map<String, Entry> keys) {
      this.keys = keys;
    }
  }

  /**
   * Restarts the master from an older snapshot: a new server run (its connections reset), its
   * scripts forgotten, and its keys those the snapshot saved (a key whose expiry has passed since
   * is gone at once, as a real master drops it as it loads the file): every write since is lost.
   *
   * @param from the snapshot it loads
   * @param newRunId the new run's {@code run_id}
   */
  public void restart(Snapshot from, String newRunId) {
    restart(false, newRunId);
    from.keys.forEach((key, entry) -> keys.put(key, copy(entry))); // it may be loaded again
    expireAll();
  }

  /** Which run of the master this is: a connection opened in an earlier one is reset. */
  public int run() {
    return runs;
  }

  /** The names of the keys not expired, sorted. */
  public java.util.SortedSet<String> keyNames() {
    expireAll();
    return new java.util.TreeSet<>(keys.keySet());
  }

  /** Removes every expired key (a lookup removes the key it finds expired). */
  private void expireAll() {
    for (String key : List.copyOf(keys.keySet())) {
      lookup(key);
    }
  }

  /** The number of keys not expired. */
  public int dbSize() {
    expireAll();
    return keys.size();
  }

  long nowMicros() {
    return clockMicros.getAsLong();
  }

  private long nowMillis() {
    return frozenMillis >= 0 ? frozenMillis : Math.floorDiv(nowMicros(), 1000);
  }

  /** Runs {@code script} with this master's time frozen for expiry, as Redis 7 does. */
  Object frozen(java.util.function.Supplier<Object> script) {
    frozenMillis = Math.floorDiv(nowMicros(), 1000);
    try {
      return script.get();
    } finally {
      frozenMillis = -1;
    }
  }

  /** Runs a command; {@code fromScript}: scripts may not call scripts. */
  Object run(List<String> args, boolean fromScript) {
    if (args.isEmpty()) {
      return new Error("ERR empty command");
    }
    String name = args.get(0).toUpperCase(Locale.ROOT);
    try {
      return switch (name) {
        case "PING" ->
            arity(args, 1, 2)
                ? (args.size() == 1 ? new Status("PONG") : bytes(args.get(1)))
                : arityError(name);
        case "GET" -> args.size() == 2 ? get(args.get(1)) : arityError(name);
        case "SET" -> args.size() >= 3 ? set(args) : arityError(name);
        case "DEL" -> args.size() >= 2 ? del(args) : arityError(name);
        case "MGET" -> args.size() >= 2 ? mget(args) : arityError(name);
        case "TIME" -> args.size() == 1 ? time() : arityError(name);
        case "PTTL" -> args.size() == 2 ? pttl(args.get(1)) : arityError(name);
        case "PEXPIRE" -> args.size() == 3 ? pexpire(args.get(1), args.get(2)) : arityError(name);
        case "ZADD" -> args.size() >= 4 ? ZSet.zadd(keyspace, args) : arityError(name);
        case "ZRANGE" -> args.size() >= 4 ? ZSet.zrange(keyspace, args) : arityError(name);
        case "ZRANGEBYSCORE" ->
            args.size() >= 4 ? ZSet.zrangeByScore(keyspace, args) : arityError(name);
        case "ZREM" -> args.size() >= 3 ? ZSet.zrem(keyspace, args) : arityError(name);
        case "ZCARD" -> args.size() == 2 ? ZSet.zcard(keyspace, args.get(1)) : arityError(name);
        case "PUBLISH" ->
            args.size() == 3
                ? Long.valueOf(subscribers.publish(args.get(1), args.get(2)))
                : arityError(name);
        case "PUBSUB" -> pubsub(args);
        case "DBSIZE" -> (long) dbSize();
        case "INFO" -> bytes(info(args.size() > 1 ? args.get(1) : "server"));
        case "CONFIG" -> config(args);
        case "FLUSHALL" -> {
          keys.clear();
          yield OK;
        }
        case "EVAL", "EVALSHA" ->
            fromScript
                ? new Error("ERR This Redis command is not allowed from script")
                : args.size() >= 3 ? scripts.eval(name.equals("EVAL"), args) : arityError(name);
        case "SCRIPT" ->
            fromScript
                ? new Error("ERR This Redis command is not allowed from script")
                : scripts.command(args);
        default -> new Error("ERR unknown command '" + args.get(0) + "'");
      };
    } catch (NumberFormatException e) {
      return NOT_INTEGER;
    } catch (WrongType e) {
      return WRONGTYPE;
    }
  }

  private static boolean arity(List<String> args, int min, int max) {
    return args.size() >= min && args.size() <= max;
  }

  private static Error arityError(String name) {
    return new Error(
        "ERR wrong number of arguments for '" + name.toLowerCase(Locale.ROOT) + "' command");
  }

  static byte[] bytes(String s) {
    return s.getBytes(ISO_8859_1);
  }

  /** The live entry of {@code key}, removing it if it expired. */
  private Entry lookup(String key) {
    Entry entry = keys.get(key);
    if (entry != null && entry.expiresAt >= 0 && nowMillis() > entry.expiresAt) {
      keys.remove(key);
      return null;
    }
    return entry;
  }

  private Object get(String key) {
    Entry entry = lookup(key);
    if (entry == null) {
      return null;
    }
    return entry.value instanceof String s ? bytes(s) : WRONGTYPE;
  }

  private Object set(List<String> args) {
    boolean nx = false;
    boolean xx = false;
    long expiresIn = -1;
    for (int i = 3; i < args.size(); i++) {
      String option = args.get(i).toUpperCase(Locale.ROOT);
      switch (option) {
        case "NX" -> nx = true;
        case "XX" -> xx = true;
        case "PX", "EX" -> {
          if (i + 1 >= args.size() || expiresIn >= 0) {
            return SYNTAX;
          }
          long n = Long.parseLong(args.get(++i));
          if (n <= 0) {
            return new Error("ERR invalid expire time in 'set' command");
          }
          expiresIn = option.equals("PX") ? n : Math.multiplyExact(n, 1000L);
        }
        default -> {
          return SYNTAX;
        }
      }
    }
    if (nx && xx) {
      return SYNTAX;
    }
    String key = args.get(1);
    Entry existing = lookup(key);
    if ((nx && existing != null) || (xx && existing == null)) {
      return null;
    }
    Entry entry = new Entry(args.get(2));
    if (expiresIn >= 0) {
      entry.expiresAt = nowMillis() + expiresIn;
    }
    keys.put(key, entry);
    return OK;
  }

  private Object del(List<String> args) {
    long n = 0;
    for (int i = 1; i < args.size(); i++) {
      if (lookup(args.get(i)) != null) {
        keys.remove(args.get(i));
        n++;
      }
    }
    return n;
  }

  private Object mget(List<String> args) {
    List<Object> values = new ArrayList<>();
    for (int i = 1; i < args.size(); i++) {
      Entry entry = lookup(args.get(i));
      values.add(entry != null && entry.value instanceof String s ? bytes(s) : null);
    }
    return values;
  }

  private Object time() {
    long micros = nowMicros();
    return List.of(
        bytes(Long.toString(Math.floorDiv(micros, 1_000_000L))),
        bytes(Long.toString(Math.floorMod(micros, 1_000_000L))));
  }

  private Object pttl(String key) {
    Entry entry = lookup(key);
    if (entry == null) {
      return -2L;
    }
    return entry.expiresAt < 0 ? -1L : Math.max(0, entry.expiresAt - nowMillis());
  }

  private Object pexpire(String key, String millis) {
    long ms = Long.parseLong(millis);
    Entry entry = lookup(key);
    if (entry == null) {
      return 0L;
    }
    if (ms <= 0) {
      keys.remove(key);
    } else {
      entry.expiresAt = nowMillis() + ms;
    }
    return 1L;
  }

  /**
   * {@code INFO section}: what the library reads of the server section (its run and uptime), of
   * replication (a master with no replica) and of cluster (standalone).
   */
  private String info(String section) {
    return switch (section.toLowerCase(Locale.ROOT)) {
      case "replication" -> "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n";
      case "cluster" -> "# Cluster\r\ncluster_enabled:0\r\n";
      default ->
          "# Server\r\nredis_version:7.0.0\r\nrun_id:"
              + runId
              + "\r\nuptime_in_seconds:"
              + Math.floorDiv(nowMicros() - startedMicros, 1_000_000L)
              + "\r\n";
    };
  }

  /** {@code CONFIG GET pattern}: the parameters whose name the glob matches ('*' only). */
  private Object config(List<String> args) {
    if (args.size() != 3 || !args.get(1).equalsIgnoreCase("GET")) {
      return new Error("ERR unknown subcommand or wrong number of arguments for 'config' command");
    }
    String glob = args.get(2).replace(".", "\\.").replace("*", ".*");
    List<Object> out = new ArrayList<>();
    config.forEach(
        (name, value) -> {
          if (name.matches(glob)) {
            out.add(bytes(name));
            out.add(bytes(value));
          }
        });
    return out;
  }

  private Object pubsub(List<String> args) {
    if (args.size() >= 2 && args.get(1).equalsIgnoreCase("NUMSUB")) {
      List<Object> out = new ArrayList<>();
      for (int i = 2; i < args.size(); i++) {
        out.add(bytes(args.get(i)));
        out.add((long) subscriptions.getOrDefault(args.get(i), 0));
      }
      return out;
    }
    return new Error("ERR unknown subcommand or wrong number of arguments for 'pubsub' command");
  }

  /** The SHA-1 of {@code text}'s bytes, in lowercase hex, as Redis names a script. */
  static String sha1hex(byte[] text) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-1", e);
    }
  }
}
