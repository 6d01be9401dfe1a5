package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Host names on the selector transport: one lookup per host at a time, however often attempts
 * repeat while the resolver hangs; a later attempt joins the lookup that runs.
 */
class SelectorLookupTest {

  private static final long ATTEMPT_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final List<String> HOSTS = List.of("alpha.invalid", "beta.invalid");

  private final CountDownLatch resolverAnswers = new CountDownLatch(1);
  private final Map<String, AtomicInteger> started = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> mostAtOnce = new ConcurrentHashMap<>();

  /** A resolver that hangs until the test lets it answer, then knows no host. */
  private InetAddress[] hangingLookup(String host) throws IOException {
    started.computeIfAbsent(host, h -> new AtomicInteger()).incrementAndGet();
    int now = running.computeIfAbsent(host, h -> new AtomicInteger()).incrementAndGet();
    mostAtOnce.computeIfAbsent(host, h -> new AtomicInteger()).accumulateAndGet(now, Math::max);
    try {
      resolverAnswers.await();
    } catch (InterruptedException e) {
      throw new IOException("interrupted", e);
    } finally {
      running.get(host).decrementAndGet();
    }
    throw new UnknownHostException(host + ": no such host, says the test");
  }

  private final SelectorLoop loop = new SelectorLoop((where, error) -> {}, this::hangingLookup);

  @AfterEach
  void stopLoop() {
    resolverAnswers.countDown();
    assertTrue(loop.close(TimeUnit.SECONDS.toNanos(5)), "the selector thread stopped");
  }

  @Test
  void attemptsWhileAHostsLookupHangsJoinItRatherThanStartAnother() throws Exception {
    for (int attempt = 0; attempt < 5; attempt++) {
      for (String host : HOSTS) {
        SelectorLinkIT.Recorder events = attempt(host, ATTEMPT_NANOS);
        ExecutionException failed =
            assertThrows(ExecutionException.class, () -> events.opened.get(5, TimeUnit.SECONDS));
        assertEquals(
            "lookup of " + host + " timed out after 50 ms", failed.getCause().getMessage());
      }
    }
    for (String host : HOSTS) {
      assertEquals(1, started.get(host).get(), "one lookup of " + host + " for five attempts");
      assertEquals(1, mostAtOnce.get(host).get(), "one at a time for " + host);
    }

    // An attempt that joins the lookup still running gets its answer when it comes.
    SelectorLinkIT.Recorder joined = attempt("alpha.invalid", TimeUnit.SECONDS.toNanos(30));
    resolverAnswers.countDown();
    ExecutionException failed =
        assertThrows(ExecutionException.class, () -> joined.opened.get(5, TimeUnit.SECONDS));
    assertTrue(
        failed.getCause().getMessage().startsWith("cannot resolve alpha.invalid: "),
        failed.getCause().getMessage());
    assertEquals(1, started.get("alpha.invalid").get(), "still the one lookup");
  }

  private SelectorLinkIT.Recorder attempt(String host, long timeoutNanos) {
    SelectorLinkIT.Recorder events = new SelectorLinkIT.Recorder();
    SelectorLink.open(loop, NodeAddress.parse("redis://" + host + ":6379"), timeoutNanos, events);
    return events;
  }
}
