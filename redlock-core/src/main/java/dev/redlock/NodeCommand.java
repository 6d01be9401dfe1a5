package dev.redlock;

import dev.redlock.NodeOutcome.Status;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One command for one master and the decoding of its reply: the command codec.
 *
 * <p>Scripts are called by EVALSHA with the script's SHA-1 (every connection loads the scripts when
 * it opens); the plain acquire is {@code SET key token NX PX ttl}. The fenced or guarded acquire is
 * no script but three plain commands written together, {@code TIME}, {@code SET key token NX PX
 * ttl}, {@code MGET fenceKey marker}, whose three replies make one answer (see {@link #acquire}).
 * The transport writes each of the {@link #parts()} ({@link #verb(int)}, {@link #arguments(int)})
 * and hands each reply it reads back, in order, to {@link #collect}, then the last to {@link
 * #complete}: a {@link Long}, a {@code byte[]}, a {@link List}, {@code null}, or a {@link
 * ServerError}.
 */
final class NodeCommand {

  /** What the command is, which says how to read its reply. */
  enum Kind {
    /** {@code SET key token NX PX ttl}: answers OK or nil. */
    SET,
    /**
     * The fenced or guarded acquire: {@code TIME}, {@code SET key token NX PX ttl} and {@code MGET
     * fenceKey marker}, three replies.
     */
    ACQUIRE,
    /** Any other script: answers 1, 0 or -1. */
    SCRIPT,
    /** {@code SCRIPT LOAD}: the transport's own; its reply is not a vote. */
    LOAD,
    /** A read-only diagnostic ({@code INFO}, {@code CONFIG GET}, {@code TIME}): a raw answer. */
    QUERY
  }

  /** The Redis command a {@link NodeCommand} is sent as. */
  enum Verb {
    SET,
    EVALSHA,
    EVAL,
    SCRIPT,
    INFO,
    CONFIG,
    TIME,
    MGET
  }

  private static final byte[] NX = ascii("NX");
  private static final byte[] PX = ascii("PX");
  private static final byte[] LOAD_WORD = ascii("LOAD");

  final Kind kind;
  private final LuaScript script;
  private final byte[][] keys;
  private final byte[][] args;

  /** About how many bytes the command takes on the wire, for the transport's cap. */
  final int bytes;

  /** Completed with the master's answer, or exceptionally when it cannot answer. */
  final CompletableFuture<NodeReply> reply = new CompletableFuture<>();

  /**
   * For a {@link Kind#QUERY}: the raw answer ({@code byte[]}, {@link Long}, {@link List}, or null),
   * or exceptionally with the server's error or the failure.
   */
  final CompletableFuture<Object> value;

  private final Verb queryVerb; // for a QUERY

  /** For an ACQUIRE: the least dataset age (ms) for a vote to count; 0: no restart guard. */
  private final long minDatasetAgeMillis;

  /**
   * For an ACQUIRE: run (on the reading thread, never under a lock) when the master has no
   * dataset-birth marker, to have one stored; set by the client before the command is submitted.
   */
  Runnable onNewDataset;

  private Object[]
      earlier; // for an ACQUIRE: the replies to its first parts, guarded by the pipeline's lock
  private int received; // guarded by the pipeline's lock

  long writtenAt; // guarded by the pipeline's lock

  /**
   * EVAL rather than EVALSHA: the link's master refused {@code SCRIPT LOAD} for good, or the
   * command answered NOSCRIPT and is sent again (once: a command sent whole cannot meet NOSCRIPT).
   * Guarded by the pipeline's lock.
   */
  boolean sendWhole;

  private NodeCommand(Kind kind, LuaScript script, byte[][] keys, byte[]... args) {
    this(kind, null, script, 0, keys, args);
  }

  private NodeCommand(
      Kind kind,
      Verb queryVerb,
      LuaScript script,
      long minDatasetAgeMillis,
      byte[][] keys,
      byte[]... args) {
    this.kind = kind;
    this.queryVerb = queryVerb;
    this.minDatasetAgeMillis = minDatasetAgeMillis;
    this.value = kind == Kind.QUERY ? new CompletableFuture<>() : null;
    this.script = script;
    this.keys = keys;
    this.args = args;
    int size = (kind == Kind.ACQUIRE ? 128 : 64) + (script == null ? 0 : script.body().length);
    for (byte[] key : keys) {
      size += key.length + 16;
    }
    for (byte[] arg : args) {
      size += arg.length + 16;
    }
    this.bytes = size;
  }

  /** The plain Redlock acquire: {@code SET key token NX PX ttl}. */
  static NodeCommand set(byte[] key, byte[] token, long ttlMillis) {
    return new NodeCommand(Kind.SET, null, new byte[][] {key}, token, NX, PX, number(ttlMillis));
  }

  /**
   * The fenced or guarded acquire, which also reads the master's clock, the fence counter and the
   * dataset's age: {@code TIME}, then {@code SET key token NX PX ttl}, then {@code MGET fenceKey
   * marker}, written together and run in that order on the master. With neither fencing ({@code
   * fenceKey} null) nor the restart guard ({@code minDatasetAgeMillis} 0), the plain {@link #set}.
   *
   * <p>Why three plain commands are as good as the script they replace (which cost a master about
   * three times as much). Nothing here needs them to run atomically, only in order:
   *
   * <ul>
   *   <li>the fence counter is read after our {@code SET NX} ran, which is all the fencing argument
   *       needs ({@link Leases#storeFence}): on a master where it succeeded, every earlier lease's
   *       store there came first; only our own lease can store after it while our key holds;
   *   <li>the clock is read before the {@code SET} and the marker after it, so the age the guard
   *       checks, clock minus birth, is never more than the dataset's age when the {@code SET} ran;
   *       a marker stored between them (after a {@code FLUSHALL}) is younger still;
   *   <li>on a master too young to vote the {@code SET} still runs (the script skipped it). The key
   *       holds only our token, so it excludes others there as any key does, and it is released
   *       with the lease, or at once when the acquire fails, like any other master's.
   * </ul>
   *
   * A master without a marker (new, restarted without its data, or flushed) answers RESTARTED when
   * the guard is on, and {@link #onNewDataset} has the marker stored (by the admit script, with the
   * master's own clock).
   */
  static NodeCommand acquire(
      byte[] key, byte[] fenceKey, byte[] token, long ttlMillis, long minDatasetAgeMillis) {
    if (fenceKey == null && minDatasetAgeMillis == 0) {
      return set(key, token, ttlMillis);
    }
    return new NodeCommand(
        Kind.ACQUIRE,
        null,
        null,
        minDatasetAgeMillis,
        new byte[][] {key, fenceKey, LuaScript.DATASET_MARKER},
        token,
        number(ttlMillis));
  }

  /** The fence script: stores a fencing token while the key holds our token. */
  static NodeCommand fence(byte[] key, byte[] fenceKey, byte[] token, long fence) {
    return script(LuaScript.FENCE, new byte[][] {key, fenceKey}, token, number(fence));
  }

  /** The release script: compare-and-delete. */
  static NodeCommand release(byte[] key, byte[] token) {
    return script(LuaScript.RELEASE, new byte[][] {key}, token);
  }

  /** The extend script: compare-and-lengthen, never re-creating the key. */
  static NodeCommand extend(byte[] key, byte[] token, long ttlMillis) {
    return script(LuaScript.EXTEND, new byte[][] {key}, token, number(ttlMillis));
  }

  /** The shorten script: compare-and-shorten, never lengthening or re-creating the key. */
  static NodeCommand shorten(byte[] key, byte[] token, long ttlMillis) {
    return script(LuaScript.SHORTEN, new byte[][] {key}, token, number(ttlMillis));
  }

  /** A read-only diagnostic command, e.g. {@code INFO replication} or {@code CONFIG GET x}. */
  static NodeCommand query(Verb verb, String... args) {
    byte[][] words = new byte[args.length][];
    for (int i = 0; i < args.length; i++) {
      words[i] = args[i].getBytes(StandardCharsets.UTF_8);
    }
    return new NodeCommand(Kind.QUERY, verb, null, 0, new byte[0][], words);
  }

  /** The admit script: marks the master's dataset as old enough to vote. */
  static NodeCommand admit(long minDatasetAgeMillis) {
    return script(
        LuaScript.ADMIT, new byte[][] {LuaScript.DATASET_MARKER}, number(minDatasetAgeMillis));
  }

  private static NodeCommand script(LuaScript script, byte[][] keys, byte[]... args) {
    return new NodeCommand(Kind.SCRIPT, script, keys, args);
  }

  /** {@code SCRIPT LOAD} of one script. */
  static NodeCommand load(LuaScript script) {
    return new NodeCommand(Kind.LOAD, script, new byte[0][]);
  }

  /**
   * How many commands this one is written as, each with its own reply: 3 for an ACQUIRE, else 1.
   */
  int parts() {
    return kind == Kind.ACQUIRE ? 3 : 1;
  }

  /** The verb of part {@code part} (0-based). */
  Verb verb(int part) {
    if (kind == Kind.ACQUIRE) {
      return part == 0 ? Verb.TIME : part == 1 ? Verb.SET : Verb.MGET;
    }
    return verb();
  }

  /** The words after the verb of part {@code part}, as written. */
  byte[][] arguments(int part) {
    if (kind == Kind.ACQUIRE) {
      return switch (part) {
        case 0 -> NO_WORDS;
        case 1 -> new byte[][] {keys[0], args[0], NX, PX, args[1]};
        default -> new byte[][] {keys[1], keys[2]};
      };
    }
    return arguments();
  }

  /**
   * Takes one reply of a command written as several parts. Returns true if it was not the last (it
   * is kept for {@link #complete}); false if it was, and the caller then completes the command with
   * it. Under the pipeline's lock.
   */
  boolean collect(Object answer) {
    if (kind != Kind.ACQUIRE || received == 2) {
      return false;
    }
    if (earlier == null) {
      earlier = new Object[2];
    }
    earlier[received++] = answer;
    return true;
  }

  /** The verb of a single-part command. */
  Verb verb() {
    return switch (kind) {
      case SET -> Verb.SET;
      case LOAD -> Verb.SCRIPT;
      case QUERY -> queryVerb;
      default -> sendWhole ? Verb.EVAL : Verb.EVALSHA;
    };
  }

  /** The words after the verb of a single-part command, as written. */
  byte[][] arguments() {
    if (kind == Kind.SET) {
      byte[][] words = new byte[1 + args.length][];
      words[0] = keys[0];
      System.arraycopy(args, 0, words, 1, args.length);
      return words;
    }
    if (kind == Kind.LOAD) {
      return new byte[][] {LOAD_WORD, script.body()};
    }
    if (kind == Kind.QUERY) {
      return args;
    }
    byte[][] words = new byte[2 + keys.length + args.length][];
    words[0] = sendWhole ? script.body() : script.sha1();
    words[1] = number(keys.length);
    System.arraycopy(keys, 0, words, 2, keys.length);
    System.arraycopy(args, 0, words, 2 + keys.length, args.length);
    return words;
  }

  /** Decodes the master's reply and completes {@link #reply}. */
  void complete(Object answer) {
    if (kind == Kind.QUERY) {
      if (answer instanceof ServerError error) {
        value.completeExceptionally(new NodeUnavailableException(error.firstLine()));
      } else {
        value.complete(answer);
      }
      reply.complete(NodeReply.of(Status.GRANTED));
      return;
    }
    if (kind == Kind.ACQUIRE) {
      completeAcquire(earlier[0], earlier[1], answer); // collect() kept the first two
      return;
    }
    if (answer instanceof ServerError error) {
      reply.completeExceptionally(new NodeUnavailableException(error.firstLine()));
      return;
    }
    NodeReply decoded = decode(answer);
    if (decoded == null) {
      reply.completeExceptionally(new NodeUnavailableException("unexpected reply to " + kind));
    } else {
      reply.complete(decoded);
    }
  }

  /**
   * Whether the command calls a script, and so can meet NOSCRIPT. Every such command may be sent
   * again after a NOSCRIPT answer, once and in order ({@link CommandPipeline} argues why that is
   * safe).
   */
  boolean callsScript() {
    return kind == Kind.SCRIPT;
  }

  /**
   * Whether both commands are scripts of the same lease: the same key and the same token (fence,
   * release, extend, shorten; the admit script belongs to no lease).
   */
  boolean sameLease(NodeCommand other) {
    return ofLease()
        && other.ofLease()
        && Arrays.equals(args[0], other.args[0])
        && Arrays.equals(keys[0], other.keys[0]);
  }

  private boolean ofLease() {
    return kind == Kind.SCRIPT && script != LuaScript.ADMIT;
  }

  /** Fails the command: the master could not answer it. */
  void fail(NodeUnavailableException error) {
    reply.completeExceptionally(error);
    if (value != null) {
      value.completeExceptionally(error);
    }
  }

  private NodeReply decode(Object answer) {
    switch (kind) {
      case SET:
        return NodeReply.of(answer == null ? Status.TAKEN : Status.GRANTED);
      case SCRIPT:
        return answer instanceof Long code ? NodeReply.ofScriptCode(code) : null;
      case LOAD:
        return NodeReply.of(Status.GRANTED);
      default:
        throw new AssertionError(kind);
    }
  }

  /** Decodes the three replies of an ACQUIRE: {@code TIME}, {@code SET}, {@code MGET}. */
  private void completeAcquire(Object time, Object set, Object values) {
    ServerError error =
        time instanceof ServerError e1
            ? e1
            : set instanceof ServerError e2 ? e2 : values instanceof ServerError e3 ? e3 : null;
    if (error != null) {
      reply.completeExceptionally(new NodeUnavailableException(error.firstLine()));
      return;
    }
    long micros;
    long fence;
    Long born;
    try {
      if (!(time instanceof List<?> clock && clock.size() == 2)
          || !(values instanceof List<?> read && read.size() == 2)
          || !(set == null || set instanceof byte[])) {
        throw new NumberFormatException("unexpected reply to ACQUIRE");
      }
      micros = parse(clock.get(0)) * 1_000_000 + parse(clock.get(1));
      fence = read.get(0) == null ? 0 : parse(read.get(0));
      born = read.get(1) == null ? null : parse(read.get(1));
    } catch (NumberFormatException e) {
      reply.completeExceptionally(new NodeUnavailableException("unexpected reply to ACQUIRE"));
      return;
    }
    if (born == null && onNewDataset != null) {
      onNewDataset.run();
    }
    Status status;
    if (minDatasetAgeMillis > 0 && (born == null || micros / 1000 - born < minDatasetAgeMillis)) {
      status = Status.RESTARTED;
    } else {
      status = set == null ? Status.TAKEN : Status.GRANTED;
    }
    reply.complete(new NodeReply(status, fence, micros));
  }

  private static long parse(Object word) {
    if (word instanceof byte[] bytes) {
      String text = new String(bytes, StandardCharsets.US_ASCII);
      try {
        return Long.parseLong(text);
      } catch (NumberFormatException e) {
        return (long) Double.parseDouble(text); // a number Lua stored, e.g. 1.7e+12
      }
    }
    if (word instanceof Long value) {
      return value;
    }
    throw new NumberFormatException("not a number");
  }

  private static final byte[][] NO_WORDS = new byte[0][];

  private static byte[] number(long value) {
    return ascii(Long.toString(value));
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * An error reply from the server; the stream is still in step.
   *
   * @param message the server's message, e.g. {@code NOSCRIPT No matching script}
   */
  record ServerError(String message) {

    /** Whether the server lost the script (restart, {@code SCRIPT FLUSH}). */
    boolean noScript() {
      return message.startsWith("NOSCRIPT");
    }

    /**
     * Whether this answer to {@code SCRIPT LOAD} refuses it for as long as the connection lasts: an
     * ACL without {@code SCRIPT} ({@code NOPERM}), or a server or proxy without the command. Every
     * other error ({@code LOADING}, {@code BUSY}, {@code TRYAGAIN}, {@code MASTERDOWN}, ...) may
     * pass, so it is worth trying again.
     */
    boolean refusesScriptLoad() {
      return message.startsWith("NOPERM")
          || message.startsWith("ERR unknown command")
          || message.startsWith("ERR unknown subcommand");
    }

    String firstLine() {
      int newline = message.indexOf('\n');
      return newline < 0 ? message : message.substring(0, newline);
    }
  }
}
