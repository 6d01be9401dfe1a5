package dev.redlock.shedlock;

import static java.util.Objects.requireNonNull;

import dev.redlock.Lease;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import java.time.Duration;
import java.util.Optional;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;

/**
 * A ShedLock {@link ExtensibleLockProvider} that locks each task on a quorum of the independent
 * Redis masters of a {@link RedLock}.
 *
 * <pre>{@code
 * @Bean
 * LockProvider lockProvider(RedLock redlock) {
 *   return new RedLockProvider(redlock);
 * }
 * }</pre>
 *
 * <h2>What each ShedLock call does</h2>
 *
 * <ul>
 *   <li>{@link #lock} is one {@link RedLock#tryAcquire} round on the resource {@code keyPrefix +
 *       name}, with a TTL that ends the lock at {@code lockAtMostUntil} ({@code createdAt +
 *       lockAtMostFor}, on ShedLock's clock): the time left until then, rounded down to whole
 *       milliseconds. Empty when another holder has it.
 *   <li>{@link SimpleLock#unlock()} releases the lock on every master; while {@code
 *       lockAtLeastUntil} ({@code createdAt + lockAtLeastFor}) is still ahead, it instead shortens
 *       the lock's expiry to the time left until then (rounded up), only on masters where it still
 *       holds this lock's token: never lengthened, never re-created ({@link Lease#releaseAfter}).
 *       It does not throw because masters failed: where it did not arrive, the lock expires at
 *       {@code lockAtMostUntil}.
 *   <li>{@link SimpleLock#extend} is a quorum extend to the new {@code lockAtMostUntil}, and
 *       returns a new lock carrying the new configuration (the old one cannot be used again, as
 *       ShedLock requires). An extend never shortens the masters' expiry: one to a shorter {@code
 *       lockAtMostFor} than is left keeps the longer one. It returns empty when the lock is gone
 *       (expired, or a majority no longer holds it) and when no quorum confirmed in time; then the
 *       lock keeps the expiry it had.
 * </ul>
 *
 * <h2>Limits and failures</h2>
 *
 * The TTL must be one the RedLock accepts: above its node timeout and, with the restart guard on
 * (the default), at most its {@link RedLockBuilder#maxLeaseTime maxLeaseTime}. So {@code
 * lockAtMostFor} must leave more than the node timeout when {@code lock} or {@code extend} is
 * called, and be at most {@code maxLeaseTime}; otherwise they throw {@link
 * IllegalArgumentException} naming {@code lockAtMostFor} (a failed {@code extend} then leaves the
 * old lock usable). When too many masters fail to answer in time for a lock to be granted, {@link
 * #lock} throws ShedLock's {@link LockException} with the {@link QuorumUnavailableException}, which
 * carries each master's answer, as its cause: the task does not run, and the scheduler reports the
 * failure instead of taking it for a lock held elsewhere.
 *
 * <p>Thread-safe. The provider does not own the RedLock: it never closes it, and the RedLock must
 * stay open for as long as the provider is used.
 */
public final class RedLockProvider implements ExtensibleLockProvider {

  /** The prefix put before every lock name unless another is given: {@code "shedlock:"}. */
  public static final String DEFAULT_KEY_PREFIX = "shedlock:";

  private final RedLock redlock;
  private final String keyPrefix;

  /**
   * A provider that locks task {@code name} as the RedLock resource {@code "shedlock:" + name}.
   *
   * @param redlock the coordinator to lock with; not closed by this provider
   * @throws NullPointerException if {@code redlock} is null
   */
  public RedLockProvider(RedLock redlock) {
    this(redlock, DEFAULT_KEY_PREFIX);
  }

  /**
   * A provider that locks task {@code name} as the RedLock resource {@code keyPrefix + name}.
   *
   * @param redlock the coordinator to lock with; not closed by this provider
   * @param keyPrefix put before every lock name; may be empty, and must not start with {@code
   *     redlock:} (the library's own keys)
   * @throws NullPointerException if an argument is null
   */
  public RedLockProvider(RedLock redlock, String keyPrefix) {
    this.redlock = requireNonNull(redlock, "redlock");
    this.keyPrefix = requireNonNull(keyPrefix, "keyPrefix");
  }

  /**
   * Tries once to lock {@code lockConfiguration.getName()} on a quorum until its {@code
   * lockAtMostUntil}. Blocks for at most the RedLock's node timeout.
   *
   * @param lockConfiguration the task's lock: its name, creation time and bounds
   * @return the lock, or empty if another holder has it
   * @throws NullPointerException if {@code lockConfiguration} is null
   * @throws IllegalArgumentException if the time left of {@code lockAtMostFor} is not a TTL the
   *     RedLock accepts (not above its node timeout, or above its {@code maxLeaseTime}), or the
   *     prefixed name is not a resource it accepts
   * @throws LockException if too many masters failed to answer in time; its cause is the {@link
   *     QuorumUnavailableException} with each master's answer
   * @throws IllegalStateException if the RedLock is closed
   */
  @Override
  public Optional<SimpleLock> lock(LockConfiguration lockConfiguration) {
    requireNonNull(lockConfiguration, "lockConfiguration");
    Duration ttl = Deadlines.atMost(ClockProvider.now(), lockConfiguration.getLockAtMostUntil());
    Optional<Lease> lease;
    try {
      lease = redlock.tryAcquire(keyPrefix + lockConfiguration.getName(), ttl);
    } catch (IllegalArgumentException e) {
      throw refused("lock", lockConfiguration, ttl, e);
    } catch (QuorumUnavailableException e) {
      throw new LockException(
          "could not lock " + quote(lockConfiguration.getName()) + ": " + e.getMessage(), e);
    }
    return lease.map(held -> new QuorumLock(held, lockConfiguration));
  }

  @Override
  public String toString() {
    return "RedLockProvider{keyPrefix=" + quote(keyPrefix) + ", " + redlock + "}";
  }

  /** The RedLock refused an argument: say which ShedLock setting it came from. */
  static IllegalArgumentException refused(
      String what, LockConfiguration configuration, Duration ttl, IllegalArgumentException cause) {
    return new IllegalArgumentException(
        "cannot "
            + what
            + " "
            + quote(configuration.getName())
            + " with lockAtMostFor "
            + configuration.getLockAtMostFor()
            + " (a TTL of "
            + ttl
            + " from now): "
            + cause.getMessage(),
        cause);
  }

  static String quote(String name) {
    return "'" + (name.length() <= 64 ? name : name.substring(0, 64) + "...") + "'";
  }
}
