package dev.redlock;

import dev.redlock.NodeOutcome.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** A scripted master: answers each command as told and records what it was sent. */
final class FakeNode implements NodeClient {

  enum Answer {
    GRANT,
    TAKEN,
    GONE,
    FAIL,
    HANG
  }

  private final FakeTicker ticker;
  private final List<String> received = Collections.synchronizedList(new ArrayList<>());
  private final List<byte[]> tokens = Collections.synchronizedList(new ArrayList<>());
  volatile Answer onSet = Answer.GRANT;

  /** Answers for the next SETs, before falling back to {@link #onSet}. */
  final java.util.Queue<Answer> nextSets = new java.util.concurrent.ConcurrentLinkedQueue<>();

  volatile Answer onExtend = Answer.GRANT;
  volatile Answer onRelease = Answer.GRANT;

  /** Added to the ticker before this node answers. */
  volatile Duration latency = Duration.ZERO;

  volatile boolean closed;

  FakeNode(FakeTicker ticker) {
    this.ticker = ticker;
  }

  @Override
  public CompletableFuture<Status> setIfAbsent(byte[] key, byte[] token, long ttlMillis) {
    received.add("SET " + text(key) + " PX " + ttlMillis);
    tokens.add(token);
    Answer next = nextSets.poll();
    return answer(next != null ? next : onSet);
  }

  @Override
  public CompletableFuture<Status> release(byte[] key, byte[] token) {
    received.add("RELEASE " + text(key));
    return answer(onRelease);
  }

  @Override
  public CompletableFuture<Status> extend(byte[] key, byte[] token, long ttlMillis) {
    received.add("EXTEND " + text(key) + " PX " + ttlMillis);
    return answer(onExtend);
  }

  private CompletableFuture<Status> answer(Answer answer) {
    ticker.advance(latency);
    return switch (answer) {
      case GRANT -> CompletableFuture.completedFuture(Status.GRANTED);
      case TAKEN -> CompletableFuture.completedFuture(Status.TAKEN);
      case GONE -> CompletableFuture.completedFuture(Status.GONE);
      case FAIL -> CompletableFuture.failedFuture(new NodeUnavailableException("refused"));
      case HANG -> new CompletableFuture<>();
    };
  }

  List<String> received() {
    synchronized (received) {
      return List.copyOf(received);
    }
  }

  List<byte[]> tokens() {
    synchronized (tokens) {
      return List.copyOf(tokens);
    }
  }

  void forget() {
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
