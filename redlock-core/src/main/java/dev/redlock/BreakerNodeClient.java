package dev.redlock;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig.SlidingWindowType;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * The only class that talks to Resilience4j: a circuit breaker in front of one master's client.
 *
 * <p>Errors and replies slower than the node timeout count as failures; a master's TAKEN and GONE
 * answers are successes (it is healthy, the lock is just not ours). When at least half of the last
 * {@value #WINDOW} calls (and at least {@value #MINIMUM_CALLS}) failed, the breaker opens: acquires
 * and extends skip the master at once, as a failed vote, without waiting for its timeout. After the
 * open wait the next call probes it: an answer in time closes the breaker, a failure opens it
 * again. (Requiring several probes would let a client that locks rarely linger half-open.)
 *
 * <p>Releases are still sent to a master whose breaker is not closed (nothing else will clean up
 * its key if it is alive), but are not waited for; probing is left to acquires and extends.
 */
final class BreakerNodeClient implements NodeClient {

  static final int WINDOW = 20;
  static final int MINIMUM_CALLS = 10;
  static final int PROBES = 1;

  private final NodeClient delegate;
  private final CircuitBreaker breaker;
  private final Ticker ticker;
  private final long nodeTimeoutNanos;

  BreakerNodeClient(
      NodeClient delegate,
      String name,
      long nodeTimeoutNanos,
      Duration openWait,
      Ticker ticker,
      BiConsumer<String, RedLockListener.CircuitState> changes) {
    this.delegate = delegate;
    this.ticker = ticker;
    this.nodeTimeoutNanos = nodeTimeoutNanos;
    CircuitBreakerConfig config =
        CircuitBreakerConfig.custom()
            .slidingWindow(WINDOW, MINIMUM_CALLS, SlidingWindowType.COUNT_BASED)
            .failureRateThreshold(50)
            .slowCallRateThreshold(100)
            .slowCallDurationThreshold(Duration.ofNanos(nodeTimeoutNanos).plusDays(1))
            .waitDurationInOpenState(openWait)
            .permittedNumberOfCallsInHalfOpenState(PROBES)
            // No half-open time limit and no automatic transition: either would start a scheduler
            // thread this library does not own. A probe always completes: its round times it out,
            // or the connection's stall limit fails it.
            .automaticTransitionFromOpenToHalfOpenEnabled(false)
            .build();
    this.breaker = CircuitBreaker.of(name, config);
    breaker
        .getEventPublisher()
        .onStateTransition(
            event -> changes.accept(name, state(event.getStateTransition().getToState())));
  }

  private static RedLockListener.CircuitState state(CircuitBreaker.State state) {
    return switch (state) {
      case CLOSED -> RedLockListener.CircuitState.CLOSED;
      case HALF_OPEN -> RedLockListener.CircuitState.HALF_OPEN;
      default -> RedLockListener.CircuitState.OPEN;
    };
  }

  @Override
  public CompletableFuture<NodeReply> acquire(
      byte[] key, byte[] fenceKey, byte[] token, long ttlMillis, long minDatasetAgeMillis) {
    return guarded(() -> delegate.acquire(key, fenceKey, token, ttlMillis, minDatasetAgeMillis));
  }

  @Override
  public CompletableFuture<NodeReply> fence(byte[] key, byte[] fenceKey, byte[] token, long fence) {
    return guarded(() -> delegate.fence(key, fenceKey, token, fence));
  }

  @Override
  public CompletableFuture<NodeReply> extend(byte[] key, byte[] token, long ttlMillis) {
    return guarded(() -> delegate.extend(key, token, ttlMillis));
  }

  @Override
  public CompletableFuture<NodeReply> admit(long minDatasetAgeMillis) {
    return delegate.admit(minDatasetAgeMillis); // an operator's call: never skipped
  }

  @Override
  public CompletableFuture<NodeReply> release(byte[] key, byte[] token) {
    // Probing is left to acquires: a release waited for only while the breaker is closed, so a
    // caller's close() never pays a dead master's timeout for a half-open probe.
    if (breaker.getState() == CircuitBreaker.State.CLOSED && breaker.tryAcquirePermission()) {
      return recorded(delegate.release(key, token));
    }
    delegate.release(key, token);
    return CompletableFuture.failedFuture(new NodeUnavailableException("circuit breaker open"));
  }

  private CompletableFuture<NodeReply> guarded(Supplier<CompletableFuture<NodeReply>> call) {
    if (!breaker.tryAcquirePermission()) {
      return CompletableFuture.failedFuture(new NodeUnavailableException("circuit breaker open"));
    }
    return recorded(call.get());
  }

  private CompletableFuture<NodeReply> recorded(CompletableFuture<NodeReply> reply) {
    long start = ticker.read();
    reply.whenComplete(
        (answer, error) -> {
          long took = ticker.read() - start;
          if (error != null) {
            breaker.onError(took, TimeUnit.NANOSECONDS, error);
          } else if (took > nodeTimeoutNanos) {
            breaker.onError(took, TimeUnit.NANOSECONDS, new NodeUnavailableException("slow reply"));
          } else {
            breaker.onSuccess(took, TimeUnit.NANOSECONDS);
          }
        });
    return reply;
  }

  @Override
  public void awaitFirstConnect(long deadlineNanos) {
    delegate.awaitFirstConnect(deadlineNanos);
  }

  @Override
  public boolean awaitTermination(long deadlineNanos) {
    return delegate.awaitTermination(deadlineNanos);
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public String toString() {
    return "BreakerNodeClient{" + delegate + ", " + breaker.getState() + "}";
  }
}
