package dev.redlock.internal.transport;

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
 * ttl}, {@code MGET counter marker admitted}, whose three replies make one answer (see {@link
 * #acquire}). The transport writes each of the {@link #parts()} ({@link #verb(int)}, {@link
 * #arguments(int)}) and hands each reply it reads back, in order, to {@link #collect}, then the
 * last to {@link #complete}: a {@link Long}, a {@code byte[]}, a {@link List}, {@code null}, or a
 * {@link ServerError}.
 *
 * <p>A lease's key may be a {@link LockKey.Set} (a multi-resource lease): then every command on it
 * is one call of the key-set script ({@code keyset.lua}) over all of its keys, and the acquire's
 * one reply is read as the three of the single acquire.
 */
public final class NodeCommand {

  /** What the command is, which says how to read its reply. */
  enum Kind {
    /** {@code SET key token NX PX ttl}: answers OK or nil. */
    SET,
    /**
     * The fenced or guarded acquire: {@code TIME}, {@code SET key token NX PX ttl} and {@code MGET
     * counter marker admitted}, three replies.
     */
    ACQUIRE,
    /** Any other script: answers 1, 0 or -1. */
    SCRIPT,
    /**
     * The acquire of a {@link LockKey.Set}: one call of the key-set script, whose one reply holds
     * what the ACQUIRE's three do.
     */
    ACQUIRE_SET,
    /** {@code SCRIPT LOAD}: the transport's own; its reply is not a vote. */
    LOAD,
    /** A read-only diagnostic ({@code INFO}, {@code CONFIG GET}, {@code TIME}): a raw answer. */
    QUERY
  }

  /**
   * The Redis command a {@link NodeCommand} is sent as; the preflight's diagnostics name theirs
   * ({@link NodeClient#query}).
   */
  public enum Verb {
    /** {@code SET}: the plain acquire, and part of the fenced or guarded one. */
    SET,
    /** {@code EVALSHA}: a script by its SHA-1. */
    EVALSHA,
    /** {@code EVAL}: a script sent whole. */
    EVAL,
    /** {@code SCRIPT LOAD}. */
    SCRIPT,
    /** {@code INFO}: a diagnostic, and the handshake's read of the server's run. */
    INFO,
    /** {@code CONFIG GET}: a diagnostic, and the handshake's read of the persistence. */
    CONFIG,
    /** {@code TIME}: the master's clock. */
    TIME,
    /** {@code MGET}: the acquire's read of the fence counters and the guard's keys. */
    MGET
  }

  private static final byte[] NX = ascii("NX");
  private static final byte[] PX = ascii("PX");
  private static final byte[] LOAD_WORD = ascii("LOAD");
  private static final byte[] QUIET = ascii("quiet");
  private static final byte[] NOTICE = ascii("notice");
  private static final byte[] NEXT = ascii("next");

  final Kind kind;
  private final LuaScript script;
  private final byte[][] keys;
  private final byte[][] args;

  /** About how many bytes the command takes as first written (a script by its SHA-1). */
  final int bytes;

  boolean countedWhole; // guarded by the pipeline's lock: sent whole, its script's body counts
  private boolean cleanup; // a quiet release: the cleanup of a failed acquire (or a lost lease)

  /** Completed with the master's answer, or exceptionally when it cannot answer. */
  final TimedReply reply = new TimedReply();

  /**
   * For a {@link Kind#QUERY}: the raw answer ({@code byte[]}, {@link Long}, {@link List}, or null),
   * or exceptionally with the server's error or the failure.
   */
  final CompletableFuture<Object> value;

  private final Verb queryVerb; // for a QUERY

  /**
   * For an ACQUIRE: the restart guard's age (ms), of which the codec reads only whether it is on
   * (then the reply carries what the guard judges); 0: no restart guard.
   */
  private final long guardMillis;

  /** For an ADMIT: whether it admits the server run too (else it only stores a missing marker). */
  private final boolean admitsRun;

  /**
   * For an ACQUIRE: run (on the reading thread, never under a lock) when the master has no
   * dataset-birth marker, to have one stored; set by the client before the command is submitted.
   */
  Runnable onNewDataset;

  /**
   * The server run of the link the command was written on, as its handshake saw it; set by the
   * pipeline before the command is written, guarded by its lock. The acquire's restart guard and
   * the admit read it.
   */
  Incarnation incarnation;

  private Object[]
      earlier; // for an ACQUIRE: the replies to its first parts, guarded by the pipeline's lock
  private int received; // guarded by the pipeline's lock

  long writtenAt; // guarded by the pipeline's lock

  /**
   * Set when the connection it was written on is dropped before its answer: its failure then says
   * the master may still run it ({@link NodeUnavailableException#mayHaveRun}). Guarded by the
   * pipeline's lock, read after.
   */
  boolean lostInFlight;

  /**
   * EVAL rather than EVALSHA: the link's master refused {@code SCRIPT LOAD} for good, or the
   * command answered NOSCRIPT and is sent again (once: a command sent whole cannot meet NOSCRIPT).
   * Guarded by the pipeline's lock.
   */
  boolean sendWhole;

  private NodeCommand(Kind kind, LuaScript script, byte[][] keys, byte[]... args) {
    this(kind, null, script, 0, false, keys, args);
  }

  private NodeCommand(
      Kind kind,
      Verb queryVerb,
      LuaScript script,
      long guardMillis,
      boolean admitsRun,
      byte[][] keys,
      byte[]... args) {
    this.kind = kind;
    this.queryVerb = queryVerb;
    this.guardMillis = guardMillis;
    this.admitsRun = admitsRun;
    this.value = kind == Kind.QUERY ? new CompletableFuture<>() : null;
    this.script = script;
    this.keys = keys;
    this.args = args;
    int size =
        (kind == Kind.ACQUIRE ? 128 : 64)
            + (script == null
                ? 0
                : kind == Kind.LOAD ? script.body().length : script.sha1().length);
    for (byte[] key : keys) {
      size += key.length + 16;
    }
    for (byte[] arg : args) {
      size += arg.length + 16;
    }
    this.bytes = size;
  }

  /**
   * Encodes {@code command}: the codec's one entry from the node port. Decides nothing; each kind
   * has its encoding below.
   *
   * @param command the command
   * @return it encoded, with its future
   */
  static NodeCommand of(Command<?> command) {
    return switch (command.kind()) {
      case ACQUIRE -> acquire((Command.Acquire) command);
      case ACQUIRE_IN_TURN -> QueueCommands.acquireInTurn((Command.AcquireInTurn) command);
      case JOIN -> QueueCommands.join((Command.Join) command);
      case LEAVE -> QueueCommands.leave((Command.Leave) command);
      case FENCE -> fence((Command.Fence) command);
      case RELEASE -> release((Command.Release) command);
      case NOTICE -> notice((Command.Notice) command);
      case EXTEND -> extend((Command.Extend) command);
      case SHORTEN -> shorten((Command.Shorten) command);
      case ADMIT -> admit();
      case QUERY -> query(((Command.Query) command).verb(), ((Command.Query) command).args());
    };
  }

  /**
   * This encoding's future, as {@code command}'s reply: the raw answer of a query, the decoded
   * {@link NodeReply} of every other command.
   *
   * @param command the command this encodes
   * @param <R> its reply
   * @return the future its sender waits on
   */
  @SuppressWarnings(
      "unchecked") // Query is a Command<Object>, every other command Command<NodeReply>
  <R> CompletableFuture<R> replyTo(Command<R> command) {
    return (CompletableFuture<R>) (command.kind() == Command.Kind.QUERY ? value : reply);
  }

  /** The plain Redlock acquire: {@code SET key token NX PX ttl}. */
  static NodeCommand set(byte[] key, byte[] token, long ttlMillis) {
    return new NodeCommand(Kind.SET, null, new byte[][] {key}, token, NX, PX, number(ttlMillis));
  }

  /**
   * The fenced or guarded acquire, which also reads the master's clock, its fence counter, the
   * dataset's age and the admitted server run: {@code TIME}, then {@code SET key token NX PX ttl},
   * then {@code MGET counter marker admitted}, written together and run in that order on the
   * master. With neither fencing nor the restart guard ({@code guardMillis} 0), the plain {@link
   * #set}.
   *
   * <p>Why three plain commands are as good as the script they replace (which cost a master about
   * three times as much). Nothing here needs them to run atomically, only in order:
   *
   * <ul>
   *   <li>the fence counter is read after our {@code SET NX} ran, which is all the fencing argument
   *       needs (the lease layer's {@code Leases.storeFence}): on a master where it succeeded,
   *       every earlier lease's store there came first; only our own lease can store after it while
   *       our key holds;
   *   <li>the clock is read before the {@code SET} and the marker after it, so the age the guard
   *       checks, clock minus birth, is never more than the dataset's age when the {@code SET} ran;
   *       a marker stored between them (after a {@code FLUSHALL}) is younger still;
   *   <li>on a master too young to vote the {@code SET} still runs (the script skipped it). The key
   *       holds only our token, so it excludes others there as any key does, and it is released
   *       with the lease, or at once when the acquire fails, like any other master's.
   * </ul>
   *
   * With the guard on, the reply carries what the guard judges ({@link NodeReply.GuardReading}): a
   * master without a marker (new, restarted without its data, or flushed) is judged RESTARTED, and
   * {@link #onNewDataset} has the marker stored (by the admit script, with the master's own clock);
   * so is a master whose server run is too young ({@link Incarnation#refusal}): the marker survives
   * a restart that reloads a snapshot, the run does not.
   */
  private static NodeCommand acquire(Command.Acquire acquire) {
    byte[] token = acquire.token();
    long ttlMillis = acquire.ttlMillis();
    long guardMillis = acquire.guardMillis();
    if (acquire.key() instanceof LockKey.Set set) {
      return KeySetCommands.acquire(set, token, ttlMillis, guardMillis);
    }
    byte[] key = acquire.key().bytes();
    if (!acquire.fenced() && guardMillis == 0) {
      return set(key, token, ttlMillis);
    }
    return new NodeCommand(
        Kind.ACQUIRE,
        null,
        null,
        guardMillis,
        false,
        new byte[][] {key, LuaScript.FENCE_COUNTER, LuaScript.DATASET_MARKER, LuaScript.ADMITTED},
        token,
        number(ttlMillis));
  }

  /** The fence script: stores a fencing token in the master's counter while the key holds ours. */
  private static NodeCommand fence(Command.Fence c) {
    if (c.key() instanceof LockKey.Set set) {
      return KeySetCommands.onSet("fence", set, c.token(), c.fence(), LuaScript.FENCE_COUNTER);
    }
    return script(
        LuaScript.FENCE,
        new byte[][] {c.key().bytes(), LuaScript.FENCE_COUNTER},
        c.token(),
        number(c.fence()));
  }

  /**
   * The release script, compare-and-delete, in its flavour: plain, with its notice; at the gate,
   * where waiters queue, the notice names the first queued waiter (the script reads the queue, a
   * key the release elsewhere does not pass, so that only the gate pays for it); at the master
   * after the gate, telling no one and answering whether some client waits there ({@link
   * NodeReply#waitersListening()}); quiet, without its notice, the cleanup of an acquire that
   * failed. A key set has no gate: its releases are plain or quiet.
   */
  private static NodeCommand release(Command.Release c) {
    byte[] token = c.token();
    if (c.key() instanceof LockKey.Set set) {
      if (c.flavour() != Command.Flavour.QUIET) {
        return KeySetCommands.onSet("release", set, token, 0);
      }
      NodeCommand command = KeySetCommands.releaseQuietly(set, token);
      command.cleanup = true;
      return command;
    }
    byte[] key = c.key().bytes();
    return switch (c.flavour()) {
      case PLAIN -> script(LuaScript.RELEASE, keys(key), token);
      case AT_GATE ->
          script(
              LuaScript.RELEASE,
              new byte[][] {
                key,
                LuaScript.prefixed(LuaScript.QUEUE_PREFIX, key),
                LuaScript.prefixed(LuaScript.QUEUE_SEEN_PREFIX, key)
              },
              token);
      case AT_NEXT -> script(LuaScript.RELEASE, keys(key), token, NEXT);
      case QUIET -> {
        NodeCommand command = script(LuaScript.RELEASE, keys(key), token, QUIET);
        command.cleanup = true;
        yield command;
      }
    };
  }

  /** The release script's notice alone: deletes nothing, tells the resource's waiters. */
  private static NodeCommand notice(Command.Notice c) {
    return script(LuaScript.RELEASE, keys(c.key()), c.token(), NOTICE);
  }

  private static byte[][] keys(byte[] key) {
    return new byte[][] {key};
  }

  /** The extend script: compare-and-lengthen, never re-creating the key. */
  private static NodeCommand extend(Command.Extend c) {
    if (c.key() instanceof LockKey.Set set) {
      return KeySetCommands.onSet("extend", set, c.token(), c.ttlMillis());
    }
    return script(LuaScript.EXTEND, keys(c.key().bytes()), c.token(), number(c.ttlMillis()));
  }

  /** The shorten script: compare-and-shorten, never lengthening or re-creating the key. */
  private static NodeCommand shorten(Command.Shorten c) {
    if (c.key() instanceof LockKey.Set set) {
      return KeySetCommands.onSet("shorten", set, c.token(), c.ttlMillis());
    }
    return script(LuaScript.SHORTEN, keys(c.key().bytes()), c.token(), number(c.ttlMillis()));
  }

  /**
   * A call of the key-set script, for {@link KeySetCommands}: an ACQUIRE_SET (whose restart guard
   * asks {@code guardMillis}) or a SCRIPT.
   */
  static NodeCommand keySetScript(Kind kind, long guardMillis, byte[][] keys, byte[]... args) {
    return new NodeCommand(kind, null, LuaScript.KEY_SET, guardMillis, false, keys, args);
  }

  /**
   * A call of the queue script, for {@link QueueCommands}: an ACQUIRE_SET (whose restart guard asks
   * {@code guardMillis}) or a SCRIPT.
   */
  static NodeCommand queueScript(Kind kind, long guardMillis, byte[][] keys, byte[]... args) {
    return new NodeCommand(kind, null, LuaScript.QUEUE, guardMillis, false, keys, args);
  }

  /** A read-only diagnostic command, e.g. {@code INFO replication} or {@code CONFIG GET x}. */
  static NodeCommand query(Verb verb, String... args) {
    byte[][] words = new byte[args.length][];
    for (int i = 0; i < args.length; i++) {
      words[i] = args[i].getBytes(StandardCharsets.UTF_8);
    }
    return new NodeCommand(Kind.QUERY, verb, null, 0, false, new byte[0][], words);
  }

  /**
   * The admit script: admits the server run of the link it is written on (its {@code run_id},
   * filled in when written) with the master's dataset (its birth marker, stored now if missing), so
   * that the master votes at once for every client, whatever its {@code maxLeaseTime} ({@link
   * RestartGuardRule}). Completes exceptionally if the link could not read the run: the script then
   * only stored a missing marker, and the guard still refuses the master.
   */
  static NodeCommand admit() {
    return new NodeCommand(
        Kind.SCRIPT,
        null,
        LuaScript.ADMIT,
        0,
        true,
        new byte[][] {LuaScript.DATASET_MARKER, LuaScript.ADMITTED},
        NO_RUN);
  }

  /** The admit script storing a missing dataset-birth marker, dated now, and nothing else. */
  static NodeCommand markBirth() {
    return script(
        LuaScript.ADMIT, new byte[][] {LuaScript.DATASET_MARKER, LuaScript.ADMITTED}, NO_RUN);
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
        default -> new byte[][] {keys[1], keys[2], keys[3]};
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
    if (admitsRun && incarnation != null && incarnation.runId() != null) {
      words[words.length - 1] = ascii(incarnation.runId());
    }
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
      reply.complete(NodeReply.of(Vote.GRANTED));
      return;
    }
    if (kind == Kind.ACQUIRE) {
      completeAcquire(earlier[0], earlier[1], answer); // collect() kept the first two
      return;
    }
    if (kind == Kind.ACQUIRE_SET) {
      Object[] replies = KeySetCommands.asAcquire(answer); // the three of an ACQUIRE, or null
      if (replies != null) {
        completeAcquire(replies[0], replies[1], replies[2]);
      } else {
        reply.completeExceptionally(
            new NodeUnavailableException(
                answer instanceof ServerError error
                    ? error.firstLine()
                    : "unexpected reply to ACQUIRE_SET"));
      }
      return;
    }
    if (answer instanceof ServerError error) {
      reply.completeExceptionally(new NodeUnavailableException(error.firstLine()));
      return;
    }
    if (admitsRun && (incarnation == null || incarnation.runId() == null)) {
      String why = incarnation == null ? "not connected" : incarnation.unknown();
      reply.completeExceptionally(
          new NodeUnavailableException("cannot admit: the server run is unknown (" + why + ")"));
      return;
    }
    NodeReply decoded = decode(answer);
    if (decoded == null) {
      reply.completeExceptionally(new NodeUnavailableException("unexpected reply to " + kind));
    } else {
      reply.complete(decoded);
    }
  }

  /** The bytes {@link QueueLimit} counts: {@link #bytes}, and the script's once it goes whole. */
  int counted() {
    return countedWhole ? bytes + script.body().length : bytes;
  }

  /** Whether it is an acquire (a round's try, which a retry repeats) or a failed one's cleanup. */
  boolean ofAttempt() {
    return kind == Kind.SET || kind == Kind.ACQUIRE || kind == Kind.ACQUIRE_SET || cleanup;
  }

  /**
   * Whether the command calls a script, and so can meet NOSCRIPT. Every such command may be sent
   * again after a NOSCRIPT answer, once and in order ({@link CommandPipeline} argues why that is
   * safe).
   */
  boolean callsScript() {
    return kind == Kind.SCRIPT || kind == Kind.ACQUIRE_SET;
  }

  /**
   * Whether both commands are scripts of the same lease: the same key and the same token (fence,
   * release, extend, shorten; the admit script belongs to no lease), or the same key and the same
   * waiter in its gate's queue (its acquires in turn, joins and leaves: a waiter's place is its
   * own, and joins and leaves carry no token).
   */
  boolean sameLease(NodeCommand other) {
    if (!ofLease() || !other.ofLease() || !Arrays.equals(keys[0], other.keys[0])) {
      return false;
    }
    if (script == LuaScript.QUEUE
        && other.script == LuaScript.QUEUE
        && Arrays.equals(waiter(), other.waiter())) {
      return true; // one waiter's place in the queue: its acquires in turn, joins and leaves
    }
    byte[] token = token();
    return token.length > 0 && Arrays.equals(token, other.token()); // joins and leaves have none
  }

  private boolean ofLease() {
    return (kind == Kind.SCRIPT && script != LuaScript.ADMIT) || kind == Kind.ACQUIRE_SET;
  }

  /** The waiter of a queue script's call: its fourth argument ({@link QueueCommands}). */
  private byte[] waiter() {
    return args[3];
  }

  /**
   * The lease's token: the second argument of the key-set and queue scripts (their first names the
   * operation), every other script's first.
   */
  private byte[] token() {
    return script == LuaScript.KEY_SET || script == LuaScript.QUEUE ? args[1] : args[0];
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
        return NodeReply.of(answer == null ? Vote.TAKEN : Vote.GRANTED);
      case SCRIPT:
        return answer instanceof Long code ? NodeReply.ofScriptCode(code) : null;
      case LOAD:
        return NodeReply.of(Vote.GRANTED);
      default:
        throw new AssertionError(kind);
    }
  }

  /**
   * Decodes the three replies of an ACQUIRE: {@code TIME}, {@code SET}, {@code MGET counter marker
   * admitted}; with the restart guard, the reply carries what the guard judges ({@link
   * NodeReply.GuardReading}): the codec decides no vote, the quorum layer has {@link
   * RestartGuardRule#judge} do it.
   */
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
    byte[] marker;
    byte[] admitted;
    try {
      if (!(time instanceof List<?> clock && clock.size() == 2)
          || !(values instanceof List<?> read && read.size() == 3)
          || !(set == null || set instanceof byte[])) {
        throw new NumberFormatException("unexpected reply to ACQUIRE");
      }
      micros = parse(clock.get(0)) * 1_000_000 + parse(clock.get(1));
      fence = read.get(0) == null ? 0 : parse(read.get(0));
      born = read.get(1) == null ? null : parse(read.get(1));
      marker = read.get(1) instanceof byte[] bytes ? bytes : null;
      admitted = read.get(2) instanceof byte[] record ? record : null;
    } catch (NumberFormatException e) {
      reply.completeExceptionally(new NodeUnavailableException("unexpected reply to ACQUIRE"));
      return;
    }
    if (born == null && onNewDataset != null) {
      onNewDataset.run();
    }
    Vote vote = set == null ? Vote.TAKEN : Vote.GRANTED;
    reply.complete(
        guardMillis > 0
            ? new NodeReply(
                vote,
                fence,
                micros,
                "",
                new NodeReply.GuardReading(born, marker, admitted, incarnation, writtenAt))
            : new NodeReply(vote, fence, micros));
  }

  static long parse(Object word) {
    return Ascii.parse(word);
  }

  private static final byte[][] NO_WORDS = new byte[0][];

  /** The admit script's run argument when it admits no run; filled in when written otherwise. */
  private static final byte[] NO_RUN = new byte[0];

  static byte[] number(long value) {
    return Ascii.number(value);
  }

  static byte[] ascii(String text) {
    return Ascii.bytes(text);
  }
}
