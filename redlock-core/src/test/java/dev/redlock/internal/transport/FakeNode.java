package dev.redlock.internal.transport;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A scripted master: answers each command as told and records what it was sent. A public fixture:
 * the API's tests run RedLocks on it ({@code FakeCluster}).
 */
public final class FakeNode implements NodeClient {

  /** How the fake answers a command. */
  public enum Answer {
    GRANT,
    TAKEN,
    GONE,
    RESTARTED,
    FAIL,
    /** Refused at once by this client's own queue to the master ({@link QueueLimit#QUEUE_FULL}). */
    QUEUE_FULL,
    /** Written, then its connection dropped unanswered: the master may still run it. */
    LOST,
    HANG
  }

  private final FakeTicker ticker;
  private final List<String> received = Collections.synchronizedList(new ArrayList<>());
  private final List<byte[]> tokens = Collections.synchronizedList(new ArrayList<>());
  public volatile Answer onSet = Answer.GRANT;

  /** Answers for the next SETs, before falling back to {@link #onSet}. */
  public final java.util.Queue<Answer> nextSets =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  public volatile Answer onExtend = Answer.GRANT;
  public volatile Answer onRelease = Answer.GRANT;

  /** Answers for the next releases, before falling back to {@link #onRelease}. */
  public final java.util.Queue<Answer> nextReleases =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  public volatile Answer onFence = Answer.GRANT;

  /** How the admit script answers ({@link Answer#HANG}: a master slow to answer). */
  public volatile Answer onAdmit = Answer.GRANT;

  /** This master's one fence counter, shared by every resource. */
  public final java.util.concurrent.atomic.AtomicLong fenceCounter =
      new java.util.concurrent.atomic.AtomicLong();

  /** This master's clock, in microseconds, as the acquire reports it. */
  public volatile long timeMicros;

  public volatile long lastGuardMillis = -1;

  /** The token the last fence, release, extend or shorten was sent. */
  public volatile byte[] lastToken;

  /**
   * What each acquire's answer carries for the restart guard to judge, as a guarded acquire's does
   * ({@link NodeReply#reading()}); null: nothing, as a scripted answer.
   */
  public volatile NodeReply.GuardReading reading;

  /** Whether the last acquire asked for the fence counter (false: a plain SET, or none yet). */
  public volatile boolean lastFenced;

  /** Each HANG answer not given yet, for a test to give later from its own thread (or never). */
  public final java.util.Queue<CompletableFuture<Vote>> hanging =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** Added to the ticker before this node answers. */
  public volatile Duration latency = Duration.ZERO;

  public volatile boolean closed;

  /** Runs whenever a release is sent to this master, before it answers. */
  public volatile Runnable whenReleased = () -> {};

  /** A granted release says some waiting client was told of it (the release script's 2). */
  public volatile boolean waitersTold;

  /** A master that advances {@code ticker} by its latency before it answers. */
  public FakeNode(FakeTicker ticker) {
    this.ticker = ticker;
  }

  /** Answers as a master that keeps no queue: an acquire in turn is the plain acquire. */
  @Override
  @SuppressWarnings("unchecked") // a Query is a Command<Object>, every other a Command<NodeReply>
  public <R> CompletableFuture<R> send(Command<R> command) {
    return (CompletableFuture<R>)
        switch (command.kind()) {
          case ACQUIRE -> acquire((Command.Acquire) command);
          case ACQUIRE_IN_TURN -> acquire(((Command.AcquireInTurn) command).plain());
          case FENCE -> fence((Command.Fence) command);
          case RELEASE ->
              release(
                  ((Command.Release) command).key().bytes(), ((Command.Release) command).token());
          case EXTEND -> extend((Command.Extend) command);
          case SHORTEN -> shorten((Command.Shorten) command);
          case JOIN, LEAVE, NOTICE -> CompletableFuture.completedFuture(NodeReply.of(Vote.GRANTED));
          case ADMIT -> admit();
          case QUERY -> query((Command.Query) command);
        };
  }

  private CompletableFuture<NodeReply> acquire(Command.Acquire acquire) {
    byte[] key = acquire.key().bytes();
    long ttlMillis = acquire.ttlMillis();
    received.add("SET " + text(key) + " PX " + ttlMillis);
    tokens.add(acquire.token());
    lastGuardMillis = acquire.guardMillis();
    lastFenced = acquire.fenced();
    Answer next = nextSets.poll();
    ticker.advance(latency);
    long fence = fenceCounter.get();
    return answer(next != null ? next : onSet)
        .thenApply(status -> new NodeReply(status, fence, timeMicros, "", reading));
  }

  private CompletableFuture<NodeReply> fence(Command.Fence command) {
    byte[] key = command.key().bytes();
    long fence = command.fence();
    lastToken = command.token();
    received.add("FENCE " + text(key) + " " + fence);
    CompletableFuture<Vote> reply = answer(onFence);
    if (onFence == Answer.GRANT) {
      fenceCounter.accumulateAndGet(fence, Math::max);
    }
    return reply.thenApply(NodeReply::of);
  }

  private CompletableFuture<NodeReply> release(byte[] key, byte[] token) {
    lastToken = token;
    received.add("RELEASE " + text(key));
    whenReleased.run();
    Answer next = nextReleases.poll();
    Answer answer = next != null ? next : onRelease;
    if (answer == Answer.GRANT && waitersTold) {
      return CompletableFuture.completedFuture(NodeReply.ofScriptCode(2));
    }
    return answer(answer).thenApply(NodeReply::of);
  }

  private CompletableFuture<NodeReply> extend(Command.Extend command) {
    lastToken = command.token();
    received.add("EXTEND " + text(command.key().bytes()) + " PX " + command.ttlMillis());
    ticker.advance(latency);
    return answer(onExtend).thenApply(NodeReply::of);
  }

  private CompletableFuture<NodeReply> shorten(Command.Shorten command) {
    lastToken = command.token();
    received.add("SHORTEN " + text(command.key().bytes()) + " PX " + command.ttlMillis());
    return answer(onRelease).thenApply(NodeReply::of);
  }

  /**
   * Answers to diagnostic queries by command ("INFO replication", "CONFIG GET maxmemory", "TIME"):
   * a String is sent as bulk text, a List as is, a Throwable fails the query, a CompletableFuture
   * answers when the test completes it. Defaults describe a healthy standalone master that loses
   * nothing on a restart.
   */
  public final java.util.Map<String, Object> queries =
      new java.util.concurrent.ConcurrentHashMap<>(
          java.util.Map.of(
              "INFO server", "redis_version:7.0.15\r\nuptime_in_seconds:86400\r\n",
              "INFO replication", "role:master\r\nconnected_slaves:0\r\n",
              "INFO cluster", "cluster_enabled:0\r\n",
              "CONFIG GET maxmemory", List.of("maxmemory", "0"),
              "CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "noeviction"),
              "CONFIG GET appendonly", List.of("appendonly", "yes"),
              "CONFIG GET appendfsync", List.of("appendfsync", "always"),
              "CONFIG GET no-appendfsync-on-rewrite", List.of("no-appendfsync-on-rewrite", "no"),
              "MGET redlock:dataset-born redlock:admitted", List.of("1", "none")));

  private CompletableFuture<Object> query(Command.Query query) {
    String command = (query.verb() + " " + String.join(" ", query.args())).trim();
    synchronized (queried) {
      queried.add(command);
    }
    if (command.equals("TIME") && failTime) {
      return CompletableFuture.failedFuture(new NodeUnavailableException("Connection refused"));
    }
    if (command.equals("TIME")) {
      long micros = System.currentTimeMillis() * 1000;
      return CompletableFuture.completedFuture(
          List.of(
              bytes(Long.toString(micros / 1_000_000)), bytes(Long.toString(micros % 1_000_000))));
    }
    Object answer = queries.get(command);
    if (answer instanceof CompletableFuture<?> later) {
      return later.thenApply(o -> o); // answered when the test completes it: a slow master
    }
    if (answer instanceof Throwable error) {
      return CompletableFuture.failedFuture(error);
    }
    if (answer instanceof String text) {
      return CompletableFuture.completedFuture(bytes(text));
    }
    if (answer instanceof List<?> list) {
      return CompletableFuture.completedFuture(
          list.stream().map(o -> (Object) bytes(String.valueOf(o))).toList());
    }
    return CompletableFuture.completedFuture(null);
  }

  /** Whether TIME fails as if the master were unreachable. */
  public volatile boolean failTime;

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private CompletableFuture<NodeReply> admit() {
    received.add("ADMIT");
    return answer(onAdmit).thenApply(NodeReply::of);
  }

  private CompletableFuture<Vote> answer(Answer answer) {
    return switch (answer) {
      case GRANT -> CompletableFuture.completedFuture(Vote.GRANTED);
      case TAKEN -> CompletableFuture.completedFuture(Vote.TAKEN);
      case GONE -> CompletableFuture.completedFuture(Vote.GONE);
      case RESTARTED -> CompletableFuture.completedFuture(Vote.RESTARTED);
      case FAIL -> CompletableFuture.failedFuture(new NodeUnavailableException("refused"));
      case QUEUE_FULL ->
          CompletableFuture.failedFuture(
              NodeUnavailableException.clientSide(QueueLimit.QUEUE_FULL + " (a fake's)"));
      case LOST ->
          CompletableFuture.failedFuture(new NodeUnavailableException("connection lost", true));
      case HANG -> {
        CompletableFuture<Vote> later = new CompletableFuture<>();
        hanging.add(later);
        yield later;
      }
    };
  }

  /**
   * Every diagnostic query sent so far ({@code INFO server}, {@code CONFIG GET maxmemory}, ...),
   * apart from {@link #received()}: every RedLock checks each master's fitness when it is built.
   */
  public List<String> queried() {
    synchronized (queried) {
      return List.copyOf(queried);
    }
  }

  private final List<String> queried = new java.util.ArrayList<>();

  /** Every command sent so far but the diagnostic queries ({@link #queried()}), as text. */
  public List<String> received() {
    synchronized (received) {
      return List.copyOf(received);
    }
  }

  /** Every acquire's token so far. */
  public List<byte[]> tokens() {
    synchronized (tokens) {
      return List.copyOf(tokens);
    }
  }

  /** Forgets the commands sent so far. */
  public void forget() {
    received.clear();
  }

  @Override
  public void close() {
    closed = true;
  }

  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }
}
