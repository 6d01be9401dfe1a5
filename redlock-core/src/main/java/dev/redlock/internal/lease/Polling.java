package dev.redlock.internal.lease;

import dev.redlock.internal.transport.LockKey;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Contention without help ({@code wakeUps(false)}): a refused waiter asks every master again after
 * its retry delay (at random between a half and one and a half of it), hears no release, queues
 * nowhere, and a releaser that asks again takes its lock straight back. Its releases still tell
 * other clients' waiters (the release scripts are the same). Thread-safe.
 */
final class Polling implements Contention {

  /** The one waiting: the timer alone ends each pause. */
  private static final Waiting TIMER_ONLY =
      new Waiting() {
        @Override
        public void follow(Turn turn) {}

        @Override
        public boolean woken() {
          return false;
        }

        @Override
        public CompletableFuture<Void> next() {
          return null;
        }

        @Override
        public void close() {}
      };

  private final RoundTime rounds = new RoundTime();

  @Override
  public Turn turn(Masters masters, LockKey key, long retryDelayNanos) {
    return new Turn(masters, key, retryDelayNanos, false, null);
  }

  @Override
  public void hearFrom(Function<byte[], int[]> heard) {}

  @Override
  public long handOff(byte[] key, Turn turn) {
    return 0;
  }

  @Override
  public Waiting enter(LockKey key) {
    return TIMER_ONLY;
  }

  @Override
  public RoundTime rounds() {
    return rounds;
  }

  @Override
  public void close(long graceNanos) {}

  @Override
  public void close() {}
}
