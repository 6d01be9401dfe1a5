package dev.redlock.internal.transport;

import java.io.IOException;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host-name lookups of a {@link SelectorLoop}'s connection attempts. A name that is not an IP
 * literal is resolved on a separate, short-lived thread ({@code redlock-io-resolver-N-M}), so a
 * slow DNS server cannot hold up every master; one lookup per host at a time, which later attempts
 * for that host join, so a resolver that hangs costs one thread per host however often the attempts
 * repeat. The answers go back to the loop's leader, which owns the waiting attempts.
 */
final class HostLookups {

  private static final Logger log = LoggerFactory.getLogger(HostLookups.class);

  /** A resolver thread with nothing to resolve stops after this long. */
  private static final long RESOLVER_IDLE_SECONDS = 10;

  private final SelectorLoop loop;
  private final SelectorLoop.HostLookup lookup;
  private final ThreadPoolExecutor resolver;

  /**
   * The hosts being looked up, each with the attempts waiting for its lookup (the leader's). A host
   * stays here until its lookup returns, even once no attempt waits: a later one joins it rather
   * than start another.
   */
  private final Map<String, List<Waiter>> lookups = new HashMap<>();

  /** The lookups of {@code loop} (its {@code number} names the threads), by {@code lookup}. */
  HostLookups(SelectorLoop loop, SelectorLoop.HostLookup lookup, int number) {
    this.loop = loop;
    this.lookup = lookup;
    AtomicInteger resolvers = new AtomicInteger();
    // No bound here: one lookup per host at a time (resolve) bounds the threads by the hosts.
    this.resolver =
        new ThreadPoolExecutor(
            0,
            Integer.MAX_VALUE,
            RESOLVER_IDLE_SECONDS,
            TimeUnit.SECONDS,
            new SynchronousQueue<>(),
            task -> {
              Thread t =
                  new Thread(
                      task, "redlock-io-resolver-" + number + "-" + resolvers.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Looks {@code host} up on a resolver thread, then hands every address it has ({@code
   * InetAddress[]}), or the failure's description, to {@code done} on the loop's thread. A lookup
   * of {@code host} already running is joined, not doubled: at most one per host at a time, however
   * often attempts repeat while a resolver hangs. Until then {@code waiting} is told if the loop
   * stops; {@link #forget} when it no longer waits. Returns false if the loop is stopping. The
   * leader only.
   */
  boolean resolve(String host, SelectorLoop.Handler waiting, Consumer<Object> done) {
    List<Waiter> joined = lookups.get(host);
    if (joined == null) {
      try {
        resolver.execute(() -> lookUp(host));
      } catch (RejectedExecutionException e) {
        return false;
      }
      joined = new ArrayList<>(1);
      lookups.put(host, joined);
    } else if (loop.stopping()) {
      return false;
    }
    joined.add(new Waiter(waiting, done));
    return true;
  }

  /** {@code waiting} no longer waits for a lookup (its attempt timed out); the leader only. */
  void forget(SelectorLoop.Handler waiting) {
    for (List<Waiter> joined : lookups.values()) {
      joined.removeIf(w -> w.handler == waiting);
    }
  }

  /** On a resolver thread: looks {@code host} up and hands the answer to every attempt waiting. */
  private void lookUp(String host) {
    Object result;
    try {
      InetAddress[] all = lookup.lookUp(host);
      result =
          all != null && all.length > 0 ? all : "cannot resolve " + host + ": no address found";
    } catch (IOException | RuntimeException e) {
      result = "cannot resolve " + host + ": " + CommandPipeline.describe(e);
    } catch (Throwable e) {
      log.error("looking up {} failed", host, e); // the host must leave lookups all the same
      loop.report("host lookup of " + host, e);
      result = "cannot resolve " + host + ": " + CommandPipeline.describe(e);
    }
    Object answer = result;
    loop.execute(() -> answered(host, answer)); // if the loop stops instead, it tells the waiting
  }

  /**
   * On the leader: the lookup of {@code host} ended; each attempt still waiting gets the answer.
   */
  private void answered(String host, Object answer) {
    List<Waiter> joined = lookups.remove(host);
    if (joined == null) {
      return;
    }
    for (Waiter waiter : joined) {
      try {
        waiter.done.accept(answer);
      } catch (Throwable e) {
        loop.contain(waiter.handler, "I/O task", e);
      }
    }
  }

  /**
   * As the loop stops for good, on its thread: no more lookups; the attempts still waiting are
   * added to {@code stopped}, to be told.
   */
  void stop(List<SelectorLoop.Handler> stopped) {
    resolver.shutdownNow();
    for (List<Waiter> joined : lookups.values()) {
      for (Waiter waiter : joined) {
        stopped.add(waiter.handler);
      }
    }
    lookups.clear();
  }

  /** Waits at most {@code waitNanos} for the resolver threads to end. */
  void awaitTermination(long waitNanos) throws InterruptedException {
    resolver.awaitTermination(waitNanos, TimeUnit.NANOSECONDS);
  }

  /** Whether every resolver thread has ended. */
  boolean terminated() {
    return resolver.isTerminated();
  }

  /** An attempt waiting for a host's lookup: its link, and what to give the answer to. */
  private record Waiter(SelectorLoop.Handler handler, Consumer<Object> done) {}
}
