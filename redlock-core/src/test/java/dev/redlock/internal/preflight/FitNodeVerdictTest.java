package dev.redlock.internal.preflight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.CapturedLog;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.testkit.Poll;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The verdict on a master's fitness as the operator and the RedLock's build see it: an unfit master
 * named at WARN with whether it votes, at INFO once fit again, again at WARN after a close ended
 * its episode; the build's wait for the first verdict, which ends at its deadline and keeps an
 * interrupt. The log is slf4j-simple's, on System.err; each test names its own master, since the
 * episodes are counted per process.
 */
class FitNodeVerdictTest {

  private static final AtomicInteger PORTS = new AtomicInteger(17_000);

  private final FakeTicker ticker = new FakeTicker();
  private final String name = "10.9.8.7:" + PORTS.incrementAndGet();
  @RegisterExtension final CapturedLog captured = new CapturedLog();

  @AfterEach
  void clearTheInterrupt() {
    Thread.interrupted();
  }

  private List<String> logged(String level) {
    return captured.lines(level, name);
  }

  private FakeNode evicting() {
    FakeNode node = new FakeNode(ticker);
    node.queries.put("CONFIG GET maxmemory", List.of("maxmemory", "67108864"));
    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    return node;
  }

  private FitNodeClient fit(NodeClient master, boolean exclude, long intervalNanos) {
    FitNodeClient client =
        new FitNodeClient(
            master,
            new Preflight(false, 0),
            name,
            "",
            exclude,
            intervalNanos,
            ticker,
            Runnable::run);
    client.awaitFirstCheck(ticker.read() + 1_000_000_000L);
    return client;
  }

  @Test
  void anExcludedUnfitMasterIsNamedAtWarnAsNotVoting() {
    fit(evicting(), true, Long.MAX_VALUE);
    List<String> warned = logged("WARN");
    assertEquals(1, warned.size(), captured::toString);
    assertTrue(warned.get(0).contains("it does not vote (excludeUnfitMasters)"), warned::toString);
  }

  @Test
  void anUnfitMasterThatStillVotesIsNamedAtWarnSayingSo() {
    fit(evicting(), false, Long.MAX_VALUE);
    List<String> warned = logged("WARN");
    assertEquals(1, warned.size(), captured::toString);
    assertTrue(
        warned.get(0).contains("it still votes, since excludeUnfitMasters is off"),
        warned::toString);
  }

  @Test
  void aCorrectedMasterIsToldAtInfoAndAFitOneNeverAtWarn() {
    FakeNode node = evicting();
    FitNodeClient client = fit(node, true, 0);
    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "noeviction"));
    ticker.advance(Duration.ofNanos(1));
    assertTrue(client.permits(), "checked again past the interval: fit, it votes");
    List<String> told = logged("INFO");
    assertEquals(1, told.size(), captured::toString);
    assertTrue(told.get(0).contains("is fit for Redlock again and votes"), told::toString);
    ticker.advance(Duration.ofNanos(1));
    assertTrue(client.permits());
    assertEquals(1, logged("WARN").size(), "fit since: no new episode");
    assertEquals(1, logged("INFO").size(), "fit again only once");
  }

  @Test
  void aMasterFoundUnfitAgainAfterItsClientClosedIsNamedAgain() {
    fit(evicting(), true, Long.MAX_VALUE).close();
    fit(evicting(), true, Long.MAX_VALUE);
    assertEquals(2, logged("WARN").size(), "the close ended the first episode: " + captured);
  }

  @Test
  void anotherClientOfAMasterAlreadyNamedLogsNoSecondWarning() {
    fit(evicting(), true, Long.MAX_VALUE);
    fit(evicting(), true, Long.MAX_VALUE);
    assertEquals(1, logged("WARN").size(), "once per episode in the process: " + captured);
  }

  /** A master whose diagnostics are answered only when the test says so. */
  private static final class Silent extends ForwardingNodeClient {
    final ConcurrentLinkedQueue<Runnable> pending = new ConcurrentLinkedQueue<>();

    Silent(NodeClient delegate) {
      super(delegate);
    }

    @Override
    public <R> CompletableFuture<R> send(Command<R> command) {
      if (command.kind() != Command.Kind.QUERY) {
        return delegate.send(command);
      }
      CompletableFuture<R> later = new CompletableFuture<>();
      pending.add(() -> delegate.send(command).whenComplete((v, e) -> later.complete(v)));
      return later;
    }

    void answer() {
      for (Runnable r; (r = pending.poll()) != null; ) {
        r.run();
      }
    }
  }

  @Test
  void theBuildWaitsForTheFirstVerdictAndThenExcludes() {
    Silent master = new Silent(evicting());
    FitNodeClient client =
        new FitNodeClient(
            master, new Preflight(false, 0), name, "", true, Long.MAX_VALUE, ticker, Runnable::run);
    Thread waiting = Thread.currentThread();
    CompletableFuture<Void> answering =
        CompletableFuture.runAsync(
            () -> {
              Poll.until(
                  Duration.ofSeconds(10),
                  () -> waiting.getState() == Thread.State.TIMED_WAITING,
                  () -> "the build never waited: " + waiting.getState());
              while (!client.toString().contains("unfit")) {
                master.answer(); // each round of answers lets the probe send its next query
                Thread.onSpinWait();
              }
            });
    client.awaitFirstCheck(ticker.read() + Duration.ofSeconds(30).toNanos());
    answering.join();
    assertFalse(client.permits(), "the first verdict is in once the wait returns: excluded");
  }

  @Test
  void aWaitWhoseDeadlinePassedReturnsAtOnceAndTheMasterVotesUntilAVerdict() {
    Silent master = new Silent(evicting());
    FitNodeClient client =
        new FitNodeClient(
            master, new Preflight(false, 0), name, "", true, Long.MAX_VALUE, ticker, Runnable::run);
    ticker.advance(Duration.ofHours(1)); // a clock far from zero: no wait of its reading's size
    long past = ticker.read() - 1;
    // The check never answers: a wait past its deadline must not park at all.
    assertTimeoutPreemptively(Duration.ofSeconds(5), () -> client.awaitFirstCheck(past));
    assertTrue(client.permits(), "not known to be unfit: it votes");
  }

  @Test
  void anInterruptDuringTheWaitEndsItAndIsKept() {
    Silent master = new Silent(evicting());
    FitNodeClient client =
        new FitNodeClient(
            master, new Preflight(false, 0), name, "", true, Long.MAX_VALUE, ticker, Runnable::run);
    Thread.currentThread().interrupt(); // the check never answers: only the interrupt ends it
    client.awaitFirstCheck(ticker.read() + Duration.ofSeconds(30).toNanos());
    assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
  }

  @Test
  void describesWhetherItsMasterIsUnfitAndExcluded() {
    assertTrue(fit(evicting(), true, Long.MAX_VALUE).toString().endsWith(", unfit, excluded}"));
    assertTrue(fit(evicting(), false, Long.MAX_VALUE).toString().endsWith(", unfit}"));
    assertFalse(fit(new FakeNode(ticker), true, Long.MAX_VALUE).toString().contains("unfit"));
  }
}
