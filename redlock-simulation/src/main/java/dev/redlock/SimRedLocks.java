package dev.redlock;

import dev.redlock.internal.lease.Timing;
import dev.redlock.internal.preflight.FitNodeClient;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NoticeLink;
import dev.redlock.internal.transport.RoundLoop;
import dev.redlock.internal.transport.Subscriber;
import dev.redlock.internal.transport.Ticker;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;

/**
 * Builds a RedLock whose masters are simulated: the builder's hooks that the core keeps for tests
 * (its clients, its clock, its timers and randomness, where its callers wait), reached from the
 * core's own package in the simulation's module.
 */
public final class SimRedLocks {

  private SimRedLocks() {}

  /**
   * Builds {@code builder}'s RedLock on simulated masters.
   *
   * @param builder the settings (its nodes name the masters; no connection is made to them)
   * @param ticker the client's clock
   * @param clients the client of master {@code i}
   * @param loop where callers wait for their rounds
   * @param timing the lease layer's timers and randomness
   * @return the RedLock
   */
  public static RedLock build(
      RedLockBuilder builder,
      Ticker ticker,
      IntFunction<NodeClient> clients,
      RoundLoop loop,
      Timing timing) {
    return build(builder, ticker, clients, loop, timing, null);
  }

  /**
   * Builds {@code builder}'s RedLock on simulated masters, whose wake-up links are simulated too.
   *
   * @param builder the settings (its nodes name the masters; no connection is made to them)
   * @param ticker the client's clock
   * @param clients the client of master {@code i}
   * @param loop where callers wait for their rounds
   * @param timing the lease layer's timers and randomness
   * @param subscribers the wake-up link to master {@code i}, telling the given listener; null for
   *     none (waiters then poll)
   * @return the RedLock
   */
  public static RedLock build(
      RedLockBuilder builder,
      Ticker ticker,
      IntFunction<NodeClient> clients,
      RoundLoop loop,
      Timing timing,
      BiFunction<Integer, NoticeLink.Listener, Subscriber> subscribers) {
    if (subscribers != null) {
      builder.subscribers(subscribers);
    }
    return builder
        .ticker(ticker)
        .nodeClients((address, index, timeout, t) -> clients.apply(index))
        .roundLoop(loop)
        .timing(timing)
        .build();
  }

  /**
   * Which masters {@code redlock}'s fitness checks exclude from voting now (unfit, with {@code
   * excludeUnfitMasters} on): the checker's view of what the library decided, read from the
   * masters' clients it built.
   *
   * @param redlock a RedLock built here
   * @return whether master {@code m} is excluded now
   */
  public static IntPredicate excluded(RedLock redlock) {
    try {
      java.lang.reflect.Field masters = redlock.coordinator.getClass().getDeclaredField("masters");
      masters.setAccessible(true);
      Object all = masters.get(redlock.coordinator);
      java.lang.reflect.Field nodes = all.getClass().getDeclaredField("nodes");
      nodes.setAccessible(true);
      List<?> clients = (List<?>) nodes.get(all);
      return m -> clients.get(m) instanceof FitNodeClient fit && fit.exclusion() != null;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("the masters' clients moved: " + e, e);
    }
  }

  /**
   * Returns {@code lease}'s token, the value its keys hold on the masters (as ISO-8859-1 text, as
   * the simulation's observers read the commands): the checker's name for a lease.
   *
   * @param lease the lease
   * @return its token
   */
  public static String token(Lease lease) {
    try {
      java.lang.reflect.Method token = lease.grant().getClass().getDeclaredMethod("token");
      token.setAccessible(true);
      return new String((byte[]) token.invoke(lease.grant()), StandardCharsets.ISO_8859_1);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("a lease's token cannot be read", e);
    }
  }
}
