package dev.redlock.internal.preflight;

import dev.redlock.internal.preflight.Findings.Check;
import dev.redlock.internal.preflight.Findings.Verdict;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.ForwardingNodeClient;
import dev.redlock.internal.transport.LogEpisodes;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Ticker;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches whether a master is fit for Redlock, and keeps one that the preflight finds unfit (a
 * FAIL: a replica, cluster mode, an evicting memory policy) from voting unless told not to ({@code
 * excludeUnfitMasters(false)}). Whatever the setting, an unfit master is named at WARN once per
 * episode (when found unfit, again only after it was found fit in between; once in the process
 * however many RedLocks find it, {@link LogEpisodes}), with whether it votes and the remedy, and at
 * INFO when it is fit again.
 *
 * <p>Excluded, every call that carries a vote fails at once with the reason, without reaching the
 * master: the acquire, the waiter's acquire in turn at its gate (a round may probe an unfit gate
 * when the others cannot make a quorum), the fence and the extend (the commands of {@link
 * Command.Role#VOTE}). Releases, shortens, queue leaves, notices, admits and diagnostics go
 * through. The verdict is taken when the RedLock is built and refreshed in the background, at most
 * once per interval, while the master is used, so a corrected master votes again. A master that
 * cannot be checked (unreachable, or an ACL that forbids the commands) is not excluded on that
 * account: that is the vote's own business. But a check that reaches nothing (the master
 * restarting, a partition) leaves the last verdict standing and is made again at the master's next
 * use a tenth of the interval later, and one that cannot read the setting that made the master
 * unfit does not find it fixed.
 *
 * <p>It sits outside the circuit breaker: an unfit master is neither a failure for the breaker nor
 * a candidate for a probe when the others cannot make a quorum.
 */
public final class FitNodeClient extends ForwardingNodeClient {

  private static final Logger log = LoggerFactory.getLogger(FitNodeClient.class);

  /** How an excluded master's refusal starts: its outcome's detail, which the errors count by. */
  public static final String UNFIT = "unfit for Redlock: ";

  /** What to do about an unfit master, for the log, the errors and the inspection. */
  public static final String REMEDY =
      "list only standalone masters (not replicas, not cluster mode) with maxmemory-policy"
          + " noeviction or no maxmemory limit; a corrected master is checked again within 10 s"
          + " of its next use and votes";

  private final Preflight preflight;
  private final String name;
  private final String datacenter;
  private final boolean exclude;
  private final long intervalNanos;
  private final Ticker ticker;
  private final Executor judging;
  private final AtomicBoolean checking = new AtomicBoolean();
  private final CompletableFuture<Void> firstCheck = new CompletableFuture<>();
  private volatile NodeUnavailableException unfit; // null: fit (or not known to be unfit)
  private volatile String failing; // the check that found it unfit, while unfit
  private volatile long checkedAtNanos;

  /**
   * Wraps {@code delegate} and starts the first check at once.
   *
   * @param delegate the master's client (its circuit breaker, if any)
   * @param preflight the checks
   * @param name the master's {@code host:port}
   * @param datacenter its datacenter label, or empty
   * @param exclude whether an unfit master is kept from voting; named at WARN either way
   * @param intervalNanos how often, at most, the verdict is refreshed while the master is used
   * @param ticker the clock of the interval
   * @param judging where the verdict's log line goes: off the I/O thread that completed the check
   */
  public FitNodeClient(
      NodeClient delegate,
      Preflight preflight,
      String name,
      String datacenter,
      boolean exclude,
      long intervalNanos,
      Ticker ticker,
      Executor judging) {
    super(delegate);
    this.judging = judging;
    this.preflight = preflight;
    this.name = name;
    this.datacenter = datacenter;
    this.exclude = exclude;
    this.intervalNanos = intervalNanos;
    this.ticker = ticker;
    this.checkedAtNanos = ticker.read();
    check();
  }

  /** Starts a check unless one is running; its verdict replaces the last when it completes. */
  private void check() {
    if (!checking.compareAndSet(false, true)) {
      return;
    }
    long began = ticker.read();
    Preflight.Probe probe = preflight.start(delegate, name, datacenter);
    probe
        .done()
        .whenComplete(
            (v, e) -> {
              boolean reached = judge(probe.result());
              // A verdict is as old as the check's first read: the next is due an interval after
              // this one began, however long its answers took. Not reached: checked again at the
              // next use a tenth of the interval on.
              long now = ticker.read();
              checkedAtNanos =
                  reached ? began : now - (intervalNanos - Math.max(1, intervalNanos / 10));
              checking.set(false);
              firstCheck.complete(null);
            });
  }

  /**
   * Applies the verdict, on whatever thread completed the last answer (often the one that reads
   * every master's replies): a few comparisons here, and the log line on the event thread, since an
   * appender may block. A check that reached nothing changes nothing, nor does one that could not
   * read the setting that made the master unfit (it is not known to be fixed).
   *
   * @return whether the check reached the master
   */
  private boolean judge(Findings.Master found) {
    NodeUnavailableException before = unfit;
    NodeUnavailableException now = null;
    String failed = null;
    boolean unread = false; // the check that found it unfit, unknown this time
    for (Check check : found.checks()) {
      if (check.name().equals("reachable")) {
        if (check.verdict() == Verdict.FAIL) {
          return false;
        }
      } else if (check.verdict() == Verdict.FAIL && now == null) {
        now = new NodeUnavailableException(UNFIT + check.detail());
        failed = check.name();
      } else if (check.verdict() == Verdict.UNKNOWN && check.name().equals(failing)) {
        unread = true;
      }
    }
    if (now == null && before != null && unread) {
      return true;
    }
    unfit = now;
    failing = failed;
    if (now != null && before == null) {
      // At WARN once per episode in this process, whichever of its RedLocks found it first.
      boolean first = LogEpisodes.start(name + " unfit", this);
      String why = now.getMessage();
      String votes =
          exclude
              ? "it does not vote (excludeUnfitMasters)"
              : "it still votes, since excludeUnfitMasters is off: a lock it grants can be lost";
      judging.execute(
          () -> {
            if (first) {
              log.warn("master {} is {}: {}; {}", name, why, votes, REMEDY);
            } else {
              log.debug("master {} is {} (logged already): {}", name, why, votes);
            }
          });
    } else if (now == null && before != null) {
      boolean last = LogEpisodes.end(name + " unfit", this);
      judging.execute(
          () -> {
            if (last) {
              log.info("master {} is fit for Redlock again{}", name, exclude ? " and votes" : "");
            } else {
              log.debug("master {} is fit for Redlock again for this RedLock", name);
            }
          });
    }
    return true;
  }

  /**
   * How a caller waits for a future: until it is done or {@code nanos} have passed on the clock of
   * the interval, or sooner (the caller checks both again).
   */
  @FunctionalInterface
  public interface Wait {
    /**
     * Returns when {@code done} is done, or {@code nanos} have passed, or sooner.
     *
     * @param done what ends the wait
     * @param nanos the longest wait
     * @throws InterruptedException if the thread was interrupted
     */
    void await(java.util.concurrent.Future<?> done, long nanos) throws InterruptedException;
  }

  /** The calling thread blocked on the future. */
  private static final Wait BLOCK =
      (done, nanos) -> {
        try {
          done.get(nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.ExecutionException
            | java.util.concurrent.TimeoutException e) {
          // over: the caller sees which
        }
      };

  /**
   * Waits for the first verdict, until the deadline at most, the calling thread blocked.
   *
   * @param deadlineNanos when to stop waiting, on the ticker
   */
  public void awaitFirstCheck(long deadlineNanos) {
    awaitFirstCheck(deadlineNanos, BLOCK);
  }

  /**
   * Waits for the first verdict, until the deadline at most, as {@code wait} waits (a RedLock's
   * blocked callers' pause: a parked thread, or a simulation's events run until then).
   *
   * @param deadlineNanos when to stop waiting, on the ticker
   * @param wait how the caller waits
   */
  public void awaitFirstCheck(long deadlineNanos, Wait wait) {
    try {
      for (long left = deadlineNanos - ticker.read();
          !firstCheck.isDone() && left > 0;
          left = deadlineNanos - ticker.read()) {
        wait.await(firstCheck, left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // not known yet: it votes until a check says otherwise
  }

  /**
   * The reason this master may not vote, or null if it may (fit, not known to be unfit, or not
   * excluded); refreshes the verdict when it is due.
   */
  @Override
  public NodeUnavailableException excluded() {
    if (ticker.read() - checkedAtNanos > intervalNanos) {
      check();
    }
    return exclude ? unfit : null;
  }

  /**
   * Returns why this master may not vote now, or null if it may.
   *
   * @return the unfit reason, while it is excluded
   */
  public NodeUnavailableException exclusion() {
    return exclude ? unfit : null;
  }

  @Override
  public boolean permits() {
    // An excluded master does not count toward a possible quorum, and no breaker permission is
    // taken for it: if the round calls it anyway (through probe()), the call fails at once.
    return excluded() == null && delegate.permits();
  }

  @Override
  public NodeUnavailableException skipped() {
    NodeUnavailableException reason = exclusion();
    return reason != null ? reason : delegate.skipped();
  }

  @Override
  public NodeClient probe() {
    return excluded() != null ? this : delegate.probe();
  }

  /** The commands that carry a vote ({@link Command.Role#VOTE}) are refused while excluded. */
  @Override
  public <R> CompletableFuture<R> send(Command<R> command) {
    return switch (command.kind().role()) {
      case VOTE -> {
        NodeUnavailableException reason = excluded();
        yield reason != null ? CompletableFuture.failedFuture(reason) : delegate.send(command);
      }
      case ENDING, OTHER -> delegate.send(command);
    };
  }

  @Override
  public void close() {
    LogEpisodes.endAll(this);
    super.close();
  }

  @Override
  public String toString() {
    return "FitNodeClient{"
        + delegate
        + (unfit == null ? "" : exclude ? ", unfit, excluded" : ", unfit")
        + "}";
  }
}
