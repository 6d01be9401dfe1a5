package dev.redlock;

import dev.redlock.NodeOutcome.Status;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One command for one master and the decoding of its reply: the Lua command codec.
 *
 * <p>Scripts are called by EVALSHA with the script's SHA-1 (every connection loads the scripts when
 * it opens); the plain acquire is {@code SET key token NX PX ttl}. The transport writes {@link
 * #verb()} and {@link #arguments()} and hands the reply it reads back to {@link #complete}: a
 * {@link Long}, a {@code byte[]}, a {@link List}, {@code null}, or a {@link ServerError}.
 */
final class NodeCommand {

  /** What the command is, which says how to read its reply. */
  enum Kind {
    /** {@code SET key token NX PX ttl}: answers OK or nil. */
    SET,
    /** The acquire script: answers {@code {code, fence, time}}. */
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
    TIME
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

  /**
   * Whether the command may be sent again, whole, after a NOSCRIPT answer: only a release or a
   * shorten, which end their lease, so sending one later cannot let it overtake or be overtaken by
   * any other command of the same lease.
   */
  final boolean resendable;

  long writtenAt; // guarded by the pipeline's lock
  boolean sendWhole; // guarded by the pipeline's lock: EVAL rather than EVALSHA

  private NodeCommand(Kind kind, LuaScript script, byte[][] keys, byte[]... args) {
    this(kind, null, script, keys, args);
  }

  private NodeCommand(Kind kind, Verb queryVerb, LuaScript script, byte[][] keys, byte[]... args) {
    this.kind = kind;
    this.queryVerb = queryVerb;
    this.value = kind == Kind.QUERY ? new CompletableFuture<>() : null;
    this.resendable = script == LuaScript.RELEASE || script == LuaScript.SHORTEN;
    this.script = script;
    this.keys = keys;
    this.args = args;
    int size = 64 + (script == null ? 0 : script.body().length);
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
   * The acquire script, which also reads the fence counter, the clock and the dataset's age; with
   * neither fencing ({@code fenceKey} null) nor the restart guard ({@code minDatasetAgeMillis} 0),
   * the plain {@link #set}, no script.
   */
  static NodeCommand acquire(
      byte[] key, byte[] fenceKey, byte[] token, long ttlMillis, long minDatasetAgeMillis) {
    if (fenceKey == null && minDatasetAgeMillis == 0) {
      return set(key, token, ttlMillis);
    }
    return new NodeCommand(
        Kind.ACQUIRE,
        LuaScript.ACQUIRE,
        new byte[][] {key, fenceKey, LuaScript.DATASET_MARKER},
        token,
        number(ttlMillis),
        number(minDatasetAgeMillis));
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
    return new NodeCommand(Kind.QUERY, verb, null, new byte[0][], words);
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

  Verb verb() {
    return switch (kind) {
      case SET -> Verb.SET;
      case LOAD -> Verb.SCRIPT;
      case QUERY -> queryVerb;
      default -> sendWhole ? Verb.EVAL : Verb.EVALSHA;
    };
  }

  /** The words after the verb, as written. */
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

  /** Whether the command calls a script (and so can meet NOSCRIPT). */
  boolean callsScript() {
    return kind == Kind.ACQUIRE || kind == Kind.SCRIPT;
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
      case ACQUIRE:
        if (answer instanceof List<?> values
            && values.size() == 3
            && values.get(0) instanceof Long code
            && values.get(1) instanceof Long fence
            && values.get(2) instanceof Long micros) {
          Status status =
              code == 1L ? Status.GRANTED : code == 2L ? Status.RESTARTED : Status.TAKEN;
          return new NodeReply(status, fence, micros);
        }
        return null;
      default:
        throw new AssertionError(kind);
    }
  }

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

    String firstLine() {
      int newline = message.indexOf('\n');
      return newline < 0 ? message : message.substring(0, newline);
    }
  }
}
