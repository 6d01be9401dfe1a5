package dev.redlock.internal.transport;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commands of one master's connection, in order: those waiting for the connection to open and
 * those written and awaiting replies. Callers write here (the write side); the transport opens
 * links and hands each reply back to match it with the oldest command in flight (the read side).
 * Both meet under one lock, a {@link ReentrantLock} so that a virtual thread waiting here never
 * pins its carrier.
 *
 * <p>Both transports share it: {@link PipelinedNodeClient}'s I/O thread ({@link JedisLink}, a
 * blocking read per master) and {@link SelectorNodeClient}'s selector ({@link SelectorLink}, one
 * thread for every master). A {@link Link} is what both look like from here: a connection that
 * writes a command without blocking for long and can be closed from any thread.
 *
 * <p>Nothing blocks without bound:
 *
 * <ul>
 *   <li>a caller's write cannot block: the commands awaiting replies are bounded in commands and in
 *       bytes (at most half the socket's send buffer), an acquire to a share of that ({@link
 *       QueueLimit}), and beyond it commands fail at once, with a failure that names this client's
 *       limit and that no circuit breaker counts against the master. A blocking link's write
 *       therefore always fits in the socket; a non-blocking link never blocks anyway, and the bound
 *       caps what it keeps for the socket to take later;
 *   <li>after a failed connection attempt, commands fail at once until the retry time, so a dead
 *       master costs nothing rather than a timeout per round;
 *   <li>after a link broke on a protocol error, commands fail at once for a back-off that doubles
 *       with each such link in a row (until a link answers a command), so a master that answers
 *       with garbage costs a connection only now and then; a link merely lost reconnects at once;
 *   <li>a link whose oldest command has waited longer than the stall limit is dropped (its commands
 *       fail) and the next command opens a new one. A SET still sitting unread in a paused server's
 *       buffer may then be applied after our release; it holds only our token and expires with its
 *       TTL.
 * </ul>
 *
 * <p><b>A master that lost its scripts</b> (a restart, {@code SCRIPT FLUSH}) answers an EVALSHA
 * with NOSCRIPT; such a command is sent again, once, behind a reload of the scripts, and no command
 * of a lease runs after a later one of the same lease: {@link ScriptReload} says how.
 */
final class CommandPipeline<L extends CommandPipeline.Link> {

  private static final Logger log = LoggerFactory.getLogger(CommandPipeline.class);

  /** Why commands fail once the client is closed: its own doing. */
  static final String CLIENT_CLOSED = "client is closed";

  /** After a failed connection attempt, commands fail at once for this long. */
  static final long RECONNECT_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /**
   * After a link broke on a protocol error, commands fail at once for this long before the next
   * connection; the wait doubles with each such link in a row. A master that sends garbage, or
   * replies beyond the decoder's limits, would otherwise cost a connection, a handshake and up to a
   * reply's bound of bytes on every round; a master that only restarted is reconnected at once.
   */
  static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /**
   * The longest wait after protocol errors in a row: a master that mends is used again within this
   * long, a master that does not costs a connection this often.
   */
  static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(3);

  /** The least time a command may wait for its reply before its connection is dropped. */
  static final long MIN_STALL_NANOS = TimeUnit.SECONDS.toNanos(2);

  /** How long a command may wait for its reply before its connection is dropped. */
  static long stallNanos(long nodeTimeoutNanos) {
    return Math.max(MIN_STALL_NANOS, 20 * nodeTimeoutNanos);
  }

  /**
   * One open, handshaken connection to a master, single-use: once closed or broken it only fails.
   */
  interface Link {

    /**
     * Sends one command, or (a link that {@link #kick}s) buffers it to be sent. Never blocks for
     * long: the pipeline keeps the unanswered bytes below the send buffer (a non-blocking link
     * buffers what the socket does not take at once).
     *
     * @throws RuntimeException if the connection is broken or closed
     */
    void write(NodeCommand command);

    /**
     * Sends what {@link #write} buffered, unless another thread is sending already (it then sends
     * this too), or replies are due that the link's reader sends it after: called after every
     * write, outside the pipeline's lock, so that callers in numbers share system calls. A link
     * that sends in {@link #write} needs none.
     */
    default void kick() {}

    /** Closes the connection without flushing; callable from any thread, idempotent. */
    void close();

    /**
     * Whether the handshake loaded every script; if the master refused {@code SCRIPT LOAD} for good
     * (any other refusal fails the handshake), scripts go by EVAL for the link's lifetime.
     */
    boolean scriptsLoaded();

    /** What the handshake learned of the server's run ({@code INFO server}, persistence). */
    Incarnation.Facts facts();

    /** The socket's send buffer, in bytes. */
    int sendBufferBytes();
  }

  private enum State {
    /** No link; the next command starts a connection attempt (after the retry time). */
    IDLE,
    /** The transport is opening a link; commands wait. */
    CONNECTING,
    /** A link is open; commands are written at once. */
    CONNECTED,
    CLOSED
  }

  /** What a blocking transport's I/O thread should do next ({@link #awaitWork}). */
  sealed interface Work<L> {}

  /** Open a link. */
  record Connect<L>() implements Work<L> {}

  /** Read replies from this link until it breaks or is dropped. */
  record Read<L>(L link) implements Work<L> {}

  /** The pipeline is closed: stop. */
  record Stop<L>() implements Work<L> {}

  private final Ticker ticker;
  private final long stallNanos;
  private final Runnable connect;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final ArrayDeque<NodeCommand> waiting = new ArrayDeque<>(); // guarded by lock
  private final ArrayDeque<NodeCommand> inFlight = new ArrayDeque<>(); // guarded by lock
  private State state = State.CONNECTING; // guarded by lock
  private L link; // guarded by lock
  private final QueueLimit queued = new QueueLimit(); // guarded by lock: waiting + in flight
  private long retryAtNanos; // guarded by lock
  private long backoffNanos; // guarded by lock: the last wait after a protocol error; 0: none since
  private boolean answered; // guarded by lock: the current link has answered a command
  private String lastError = "not connected"; // guarded by lock
  private boolean attempted; // guarded by lock: a first connection attempt has finished
  private final ScriptReload scripts = new ScriptReload(); // guarded by lock
  private boolean draining; // guarded by lock: awaitDrained is waiting; replies signal
  private Incarnation incarnation; // guarded by lock: the server run of the current (or last) link
  private long lastHeardNanos; // guarded by lock: when that run last answered
  private final Hearing hearing; // when the master last answered, for TimedReply
  private volatile NodeClient.Watcher watcher; // hears how connection attempts end, or null
  private final PipelineWaits waits; // how callers wait, or null: parked on changed

  /**
   * A pipeline that starts {@link State#CONNECTING}: the transport opens the first link at once.
   *
   * @param connect asks the transport to open a link, when a command finds none (not called for the
   *     first one); runs on the caller's thread outside the lock, and must not block. A transport
   *     whose I/O thread waits in {@link #awaitWork} needs none.
   */
  CommandPipeline(Ticker ticker, long stallNanos, Runnable connect) {
    this(ticker, stallNanos, connect, null, null);
  }

  /**
   * As above, read by a reader that is not always watching its socket (a selector's), as {@code
   * watch} tells (or null): the time it was not is not held against the master ({@link
   * TimedReply}); its callers waiting as {@code waits} does (or, if null, parked on its condition).
   */
  CommandPipeline(
      Ticker ticker, long stallNanos, Runnable connect, ReaderWatch watch, PipelineWaits waits) {
    this.ticker = ticker;
    this.stallNanos = stallNanos;
    this.connect = connect;
    this.hearing = new Hearing(watch);
    this.waits = waits;
  }

  /**
   * Has {@code watcher} hear how each connection attempt ends; if the last one failed (and no other
   * is under way), it hears of that at once, on this thread.
   */
  void watch(NodeClient.Watcher watcher) {
    String failed;
    lock.lock();
    try {
      this.watcher = watcher;
      failed = attempted && state == State.IDLE ? lastError : null;
    } finally {
      lock.unlock();
    }
    if (failed != null) {
      watcher.connectFailed(failed);
    }
  }

  // ---- write side: any thread

  /** Writes {@code command}, queues it for the connection, or fails it at once. */
  void submit(NodeCommand command) {
    List<NodeCommand> dropped = List.of();
    L broken = null;
    L written = null;
    String rejection = null;
    boolean ours = false; // the rejection is this client's own limit or its close
    boolean connecting = false;
    lock.lock();
    try {
      long now = ticker.read();
      if (state == State.CONNECTED
          && !inFlight.isEmpty()
          && now - inFlight.peek().writtenAt > stallNanos) {
        broken = link;
        dropped = detach("no reply for " + TimeUnit.NANOSECONDS.toMillis(stallNanos) + " ms");
        retryAtNanos = now;
      }
      switch (state) {
        case CONNECTED -> {
          if (queued.full(command)) {
            ours = true;
            rejection = queued.refusal(command);
          } else if (scripts.reloading()) {
            waiting.add(command); // behind the reload and what it sends again (ScriptReload)
            queued.add(command);
          } else {
            queued.add(command);
            if (!write(command)) {
              broken = link;
              dropped = detach(lastError); // none dropped above: a stall leaves it IDLE
            } else {
              written = link;
            }
          }
        }
        case CONNECTING -> {
          if (queued.full(command)) {
            ours = true;
            rejection = queued.refusal(command);
          } else {
            waiting.add(command);
            queued.add(command);
          }
        }
        case IDLE -> {
          if (now - retryAtNanos < 0) {
            rejection = lastError;
          } else {
            state = State.CONNECTING;
            waiting.add(command);
            queued.add(command);
            changed.signalAll();
            connecting = true;
          }
        }
        case CLOSED -> {
          rejection = CLIENT_CLOSED;
          ours = true;
        }
      }
    } finally {
      lock.unlock();
    }
    if (written != null) {
      written.kick();
    }
    if (broken != null) {
      broken.close();
    }
    failAll(dropped, "connection dropped: ", false);
    if (rejection != null) {
      command.fail(
          ours
              ? NodeUnavailableException.clientSide(rejection)
              : new NodeUnavailableException(rejection));
    }
    if (connecting) {
      connect.run();
    }
  }

  /**
   * Writes one command on the link and puts it in flight; on an I/O error records the error and
   * returns false (the command then fails with the link's others).
   */
  private boolean write(NodeCommand command) {
    command.writtenAt = ticker.read();
    command.reply.written(command.writtenAt, hearing);
    command.incarnation = incarnation;
    scripts.wholeIfRefused(command);
    if (command.sendWhole) {
      queued.goesWhole(command);
    }
    inFlight.add(command);
    try {
      link.write(command);
      return true;
    } catch (RuntimeException e) {
      lastError = describe(e);
      return false;
    }
  }

  // ---- read side: the transport's thread

  /** Waits until there is something for a blocking transport's I/O thread to do. */
  Work<L> awaitWork() throws InterruptedException {
    lock.lock();
    try {
      while (state == State.IDLE) {
        changed.await();
      }
      if (state == State.CLOSED) {
        return new Stop<>();
      }
      return link == null ? new Connect<>() : new Read<>(link);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Records the end of a connection attempt: {@code opened} is the new link, or null if the attempt
   * failed with {@code error}; then commands fail at once until {@code retryAtNanos}.
   */
  void connected(L opened, String error, long retryAtNanos) {
    List<NodeCommand> dropped = List.of();
    L broken = null;
    String replaced = null;
    NodeClient.Watcher told = null;
    boolean closing = false;
    lock.lock();
    try {
      attempted = true;
      changed.signalAll();
      if (state != State.CLOSED) {
        told = watcher;
      }
      if (state == State.CLOSED) {
        closing = true;
        broken = opened;
        dropped = detach(CLIENT_CLOSED);
      } else if (opened == null) {
        dropped = detach(error);
        this.retryAtNanos = retryAtNanos;
      } else {
        link = opened;
        state = State.CONNECTED;
        answered = false;
        long now = ticker.read();
        Incarnation previous = incarnation;
        incarnation = Incarnation.after(previous, lastHeardNanos, opened.facts(), now);
        lastHeardNanos = now; // its commands are written from now: TimedReply times them so
        if (incarnation.replaced()) {
          replaced = previous.runId() + " -> " + incarnation.runId();
        }
        scripts.opened(opened.scriptsLoaded());
        queued.sendBuffer(opened.sendBufferBytes());
        while (!waiting.isEmpty()) {
          if (!write(waiting.poll())) {
            broken = opened;
            dropped = detach(lastError);
            break;
          }
        }
      }
    } finally {
      lock.unlock();
    }
    if (replaced != null) {
      log.warn(
          "a different server answers at {} now (run {}), up since before the last one was"
              + " heard: it may lack locks the last one granted, and does not vote until the"
              + " restart guard's time has passed or it is admitted",
          opened,
          replaced);
    }
    if (told != null && opened == null && error != null) {
      told.connectFailed(error);
    } else if (told != null && opened != null && broken == null) {
      told.connected();
    }
    if (broken == null && opened != null) {
      opened.kick(); // the commands that waited for it
    }
    if (broken != null) {
      broken.close();
    }
    failAll(dropped, "", closing);
  }

  /**
   * Matches a reply read from {@code from} with the oldest command in flight and completes it; a
   * command written as several parts keeps each reply until its last. Returns false if the link is
   * no longer this pipeline's (dropped or closed): the reader stops.
   */
  boolean replied(L from, Object reply) {
    NodeCommand command;
    NodeUnavailableException failure = null;
    List<NodeCommand> overtaken = List.of();
    String broken = null;
    boolean wrote = false;
    boolean garbled = false;
    lock.lock();
    try {
      if (link != from) {
        return false; // its commands have been failed already
      }
      lastHeardNanos = ticker.read();
      command = inFlight.peek();
      hearing.answered(command == null ? null : command.reply, lastHeardNanos);
      if (command != null && command.collect(reply)) {
        return true; // one of its parts; the last completes it
      }
      inFlight.poll();
      if (command != null) {
        backoffNanos = 0; // the master answered a command: it speaks the protocol again
        answered = true;
      }
      if (command == null) {
        broken = "protocol error: reply without a command";
        garbled = true;
      } else if (command.kind == NodeCommand.Kind.LOAD) {
        queued.remove(command);
        wrote = scripts.reloaded(reply, link);
        broken = wrote && !sendAfterReload() ? lastError : null;
        command = null; // the transport's own: nothing to complete
      } else if (reply instanceof ServerError error && error.noScript()) {
        // Unless one is in flight (then behind this command), a reload: even where SCRIPT LOAD was
        // refused for good, since its answers are what sends again what it holds back.
        wrote = !scripts.reloading();
        broken = wrote && !scripts.reload(this::writeCounted) ? lastError : null;
        if (scripts.keep(command)) {
          command = null; // still counted in the queue; answered once sent again, or failed
        } else {
          queued.remove(command);
          failure = ScriptReload.NOSCRIPT; // sent whole already: at most once
        }
      } else {
        queued.remove(command);
        if (scripts.reloading() && command.callsScript()) {
          overtaken = scripts.overtaken(command);
          for (NodeCommand kept : overtaken) {
            queued.remove(kept);
          }
        }
      }
      if (draining && inFlight.isEmpty() && waiting.isEmpty()) {
        changed.signalAll();
      }
    } finally {
      lock.unlock();
    }
    for (NodeCommand earlier : overtaken) {
      earlier.fail(ScriptReload.OVERTAKEN);
    }
    if (broken != null) {
      if (command != null) {
        command.fail(new NodeUnavailableException("connection lost: " + broken));
      }
      lost(from, broken, garbled);
      return false;
    }
    if (wrote) {
      from.kick(); // the reload, or what it held back
    }
    if (command != null) {
      if (failure != null) {
        command.fail(failure);
      } else {
        command.complete(reply);
      }
    }
    return true;
  }

  /** Writes a command of the pipeline's own (a reload's) on the link, counting its bytes. */
  private boolean writeCounted(NodeCommand command) {
    queued.add(command);
    return write(command);
  }

  /**
   * The reload is answered, and so is every command written before it: writes again those that
   * answered NOSCRIPT, whole, then those that waited, in order. Returns false if the link broke.
   */
  private boolean sendAfterReload() {
    if (!scripts.sendKept(this::write)) {
      return false;
    }
    while (!waiting.isEmpty()) {
      if (!write(waiting.poll())) {
        return false;
      }
    }
    return true;
  }

  /**
   * The link broke: fails its commands; the next command reconnects, at once if the link had
   * answered a command (or had none in flight), else after the back-off.
   */
  void lost(L from, String reason) {
    lost(from, reason, false);
  }

  /**
   * The link broke because the master broke the protocol (bytes that are no RESP2, a reply beyond
   * the decoder's limits): fails its commands; commands then fail at once until the back-off
   * ({@link #MIN_BACKOFF_NANOS}, doubling) has passed, and the next one reconnects.
   */
  void protocolError(L from, String reason) {
    lost(from, reason, true);
  }

  private void lost(L from, String reason, boolean protocolError) {
    List<NodeCommand> dropped = List.of();
    lock.lock();
    try {
      if (link == from) {
        // A link lost with commands in flight before it ever answered one (a master that resets
        // every connection at its first command) backs off as a protocol error does: otherwise
        // each command would cost a whole new handshake.
        boolean unanswering = !answered && !inFlight.isEmpty();
        dropped = detach(reason);
        retryAtNanos = ticker.read();
        if (protocolError || unanswering) {
          backoffNanos =
              backoffNanos == 0 ? MIN_BACKOFF_NANOS : Math.min(MAX_BACKOFF_NANOS, 2 * backoffNanos);
          retryAtNanos += backoffNanos;
        }
      }
    } finally {
      lock.unlock();
    }
    from.close();
    failAll(dropped, "connection lost: ", false);
  }

  /** Waits until the first connection attempt has finished or the deadline passes. */
  void awaitFirstAttempt(long deadlineNanos) {
    awaitChange(() -> attempted || state == State.CLOSED, deadlineNanos);
  }

  /**
   * Waits until no command is waiting or in flight (answered, or failed with a lost link), or the
   * deadline passes.
   */
  void awaitDrained(long deadlineNanos) {
    lock.lock();
    try {
      draining = true; // replies now signal when the last one is in
    } finally {
      lock.unlock();
    }
    awaitChange(() -> inFlight.isEmpty() && waiting.isEmpty(), deadlineNanos);
  }

  /**
   * Waits on {@link #changed} (or as {@link #waits} does) until {@code done} (checked under the
   * lock) or the deadline; an interrupt ends the wait and stays set.
   */
  private void awaitChange(java.util.function.BooleanSupplier done, long deadlineNanos) {
    if (waits != null) {
      java.util.function.BooleanSupplier locked =
          () -> {
            lock.lock();
            try {
              return done.getAsBoolean();
            } finally {
              lock.unlock();
            }
          };
      while (!locked.getAsBoolean() && deadlineNanos - ticker.read() > 0) {
        waits.await(locked, deadlineNanos);
      }
      return;
    }
    lock.lock();
    try {
      while (!done.getAsBoolean()) {
        long left = deadlineNanos - ticker.read();
        if (left <= 0) {
          return;
        }
        changed.awaitNanos(left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      lock.unlock();
    }
  }

  /** Fails every command and closes the link; a blocking I/O thread then stops. Idempotent. */
  void close() {
    List<NodeCommand> dropped;
    L current;
    lock.lock();
    try {
      if (state == State.CLOSED) {
        return;
      }
      current = link;
      dropped = detach(CLIENT_CLOSED); // signals the waits, which see CLOSED once we unlock
      state = State.CLOSED;
    } finally {
      lock.unlock();
    }
    if (current != null) {
      current.close();
    }
    failAll(dropped, "", true);
  }

  /** Fails every command and stops for good, after the transport's thread itself failed. */
  void failed(String reason) {
    List<NodeCommand> dropped;
    lock.lock();
    try {
      dropped = detach("I/O thread failed: " + reason);
      state = State.CLOSED;
    } finally {
      lock.unlock();
    }
    failAll(dropped, "", true); // the client's own thread: nothing to hold against the master
  }

  /** Detaches the current link; returns the commands that were waiting on it. */
  private List<NodeCommand> detach(String reason) {
    for (NodeCommand command : inFlight) {
      command.lostInFlight = true; // written, unanswered: the master may still run it
    }
    List<NodeCommand> dropped = new ArrayList<>(inFlight);
    scripts.drainTo(dropped);
    dropped.addAll(waiting);
    inFlight.clear();
    waiting.clear();
    queued.clear();
    changed.signalAll(); // awaitDrained: nothing is in flight any more
    link = null;
    lastError = reason;
    if (state != State.CLOSED) {
      state = State.IDLE;
    }
    return dropped;
  }

  /**
   * Fails {@code commands} with the last error; {@code ours} if it is the client's own (its close,
   * its thread's failure): then no circuit breaker counts it against the master.
   */
  private void failAll(List<NodeCommand> commands, String prefix, boolean ours) {
    if (commands.isEmpty()) {
      return;
    }
    String reason;
    lock.lock();
    try {
      reason = lastError;
    } finally {
      lock.unlock();
    }
    NodeUnavailableException error = new NodeUnavailableException(prefix + reason, false, ours);
    NodeUnavailableException lost = null;
    for (NodeCommand command : commands) {
      if (command.lostInFlight) {
        if (lost == null) {
          lost = new NodeUnavailableException(prefix + reason, true, ours);
        }
        command.fail(lost);
      } else {
        command.fail(error);
      }
    }
  }

  static String describe(Throwable e) {
    Throwable cause = e.getCause() != null && e.getMessage() == null ? e.getCause() : e;
    String message = cause.getMessage();
    return message == null ? cause.getClass().getSimpleName() : message;
  }
}
