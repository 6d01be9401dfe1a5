package dev.redlock.internal.transport;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs each kind of misconfiguration of one master ({@link Trouble}) at WARN once, when it starts,
 * and at INFO when it clears (once per episode in the process: {@link LogEpisodes}): unreachable,
 * authentication refused, permission denied (with the command), database index out of range, and
 * the restart guard not counting its vote. It hears the master's connection attempts ({@link
 * NodeClient#watch}) and the answers to the lock commands; the preflight's diagnostics are left
 * alone (an ACL may forbid them on purpose, and the inspection says so). Passes every call through
 * unchanged.
 *
 * <p>Each trouble is kept under a key: one for the connection (unreachable, authentication,
 * database, or a handshake command denied), one for the restart guard, one per denied command. A
 * trouble clears when the master shows it is over: a connection opens; an acquire is counted; the
 * denied command (or, for commands denied inside a script, a script) runs.
 *
 * <p>Sits directly on the transport's client, inside the circuit breaker, so that it sees what the
 * master answered and not the breaker's skips. The log lines go to {@code logging} (the event
 * thread), off the I/O thread that completed the answer, since an appender may block.
 */
public final class DiagnosingNodeClient extends ForwardingNodeClient implements NodeClient.Watcher {

  private static final Logger log = LoggerFactory.getLogger(DiagnosingNodeClient.class);

  private static final String CONNECTION = "connection";
  private static final String GUARD = "restart guard";

  /** What an acquire that was answered shows the user may run. */
  private static final Set<String> ACQUIRE_COMMANDS =
      Set.of(GUARD, "set", "time", "mget", "info", "keys");

  /** What a script that was answered shows the user may run. */
  private static final Set<String> SCRIPT_COMMANDS =
      Set.of(
          "evalsha",
          "eval",
          Trouble.INSIDE_SCRIPT,
          "keys",
          "get",
          "set",
          "del",
          "pexpire",
          "pttl",
          "time");

  private final String name;
  private final long guardMillis;
  private final Executor logging;
  private final ReentrantLock lock = new ReentrantLock();
  private final Map<String, String> troubles = new HashMap<>(); // guarded by lock: key -> what
  private volatile boolean troubled; // whether troubles is not empty: the hot path reads only this

  /**
   * Wraps {@code delegate} and starts hearing its connection attempts.
   *
   * @param delegate the master's transport client
   * @param name the master's {@code host:port}
   * @param guardMillis the restart guard's time, or 0: whether an acquire's vote counted is the
   *     guard's decision ({@link RestartGuardRule#judge}), which the log reports as the quorum
   *     layer decides it
   * @param logging where the log lines are written from: off the I/O thread
   */
  public DiagnosingNodeClient(
      NodeClient delegate, String name, long guardMillis, Executor logging) {
    super(delegate);
    this.name = name;
    this.guardMillis = guardMillis;
    this.logging = logging;
    delegate.watch(this);
  }

  // ---- the connection

  @Override
  public void connected() {
    clear(CONNECTION);
  }

  @Override
  public void connectFailed(String error) {
    Trouble trouble = Trouble.ofError(error);
    start(CONNECTION, trouble == null ? Trouble.UNREACHABLE : trouble, error);
  }

  // ---- the lock commands

  @Override
  public <R> CompletableFuture<R> send(Command<R> command) {
    CompletableFuture<R> reply = delegate.send(command);
    switch (command.kind()) {
      case ACQUIRE, ACQUIRE_IN_TURN -> reply.whenComplete(heardAcquire);
      case FENCE, EXTEND, RELEASE, SHORTEN, NOTICE, ADMIT -> reply.whenComplete(heardOther);
      case JOIN, LEAVE, QUERY -> {
        // the queue's bookkeeping, and the preflight's diagnostics, which an ACL may forbid on
        // purpose: not watched
      }
    }
    return reply;
  }

  // One callback each, made once: every vote passes here, so no lambda is allocated per call.
  private final BiConsumer<Object, Throwable> heardAcquire =
      (answer, error) -> heard((NodeReply) answer, error, true);
  private final BiConsumer<Object, Throwable> heardOther =
      (answer, error) -> heard((NodeReply) answer, error, false);

  private void heard(NodeReply answer, Throwable error, boolean acquire) {
    if (error != null) {
      Throwable cause =
          error.getCause() != null && error.getMessage() == null ? error.getCause() : error;
      String message = String.valueOf(cause.getMessage());
      if (Trouble.ofError(message) == Trouble.PERMISSION) {
        start(Trouble.deniedCommand(message), Trouble.PERMISSION, message);
      }
      return;
    }
    if (acquire) {
      answer = RestartGuardRule.judge(answer, guardMillis);
    }
    if (answer.status() == Vote.RESTARTED) {
      if (answer.detail().contains("NOPERM")) {
        start("info", Trouble.PERMISSION, answer.detail());
      } else {
        start(GUARD, Trouble.RESTART_GUARD, answer.detail());
      }
      return;
    }
    clearAll(acquire ? ACQUIRE_COMMANDS : SCRIPT_COMMANDS);
  }

  // ---- the log

  /** Records {@code trouble} under {@code key}; logs it at WARN unless it was already there. */
  private void start(String key, Trouble trouble, String detail) {
    String command = trouble == Trouble.PERMISSION ? Trouble.deniedCommand(detail) : null;
    String what = command != null ? trouble.label() + " for " + command : trouble.label();
    String before;
    lock.lock();
    try {
      before = troubles.put(key, what);
      troubled = true;
    } finally {
      lock.unlock();
    }
    if (what.equals(before)) {
      return;
    }
    if (before != null) {
      LogEpisodes.end(name + " " + before, this); // replaced by the new trouble
    }
    // At WARN once per episode in this process, whichever of its RedLocks met it first.
    boolean first = LogEpisodes.start(name + " " + what, this);
    String cost = command != null ? " (" + command + ": " + Trouble.costOf(command) + ")" : "";
    logging.execute(
        () -> {
          if (first) {
            log.warn("master {}: {}: {}{}; {}", name, what, detail, cost, trouble.remedy());
          } else {
            log.debug("master {}: {}: {}{} (logged already)", name, what, detail, cost);
          }
        });
  }

  private void clear(String key) {
    String was;
    lock.lock();
    try {
      was = troubles.remove(key);
      troubled = !troubles.isEmpty();
    } finally {
      lock.unlock();
    }
    if (was != null) {
      boolean last = LogEpisodes.end(name + " " + was, this);
      logging.execute(
          () -> {
            if (last) {
              log.info("master {}: {} is over", name, was);
            } else {
              log.debug("master {}: {} is over for this RedLock", name, was);
            }
          });
    }
  }

  private void clearAll(Set<String> keys) {
    if (!troubled) {
      return; // the usual case: a volatile read per answer, no lock, no log line
    }
    for (String key : keys) {
      clear(key);
    }
  }

  @Override
  public void close() {
    LogEpisodes.endAll(this);
    super.close();
  }

  @Override
  public String toString() {
    return "DiagnosingNodeClient{" + delegate + "}";
  }
}
