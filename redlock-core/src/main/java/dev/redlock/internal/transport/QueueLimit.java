package dev.redlock.internal.transport;

/**
 * The bound on one master's queue in this client ({@link CommandPipeline}): the commands awaiting
 * the master's replies (written, or waiting for the connection or a script reload) are at most
 * {@value #COMMANDS} commands and at most half the socket's send buffer in bytes (at least {@value
 * #MIN_BYTES}), counting each command as written (a script by its SHA-1, its body too once it goes
 * whole). An acquire may fill only {@value #ACQUIRE_SHARE_PERCENT}% of either: the rest is kept for
 * the commands of leases already held (fence, extend, release), so however many waiters retry their
 * rounds, a holder's commands find room, behind at most that many acquires.
 *
 * <p>A command beyond the bound is refused at once with a {@link
 * NodeUnavailableException#clientSide} failure whose message names this client's limit ({@link
 * #QUEUE_FULL}, {@link Trouble#CLIENT_LIMIT}): a failed vote of its round, which a waiter retries,
 * never counted against the master by its circuit breaker.
 *
 * <p>Why these figures. Bytes: a blocking link's write must always fit in the socket (see {@link
 * CommandPipeline}). Commands: few enough that a healthy master answers them all well within a node
 * timeout (a script costs it some tens of microseconds), many enough that the 1,000 waiters of one
 * client on ten resources, each with a round in flight, rarely meet the acquires' share
 * (AsyncLoadIT; the benchmark's async-load section). Guarded by the pipeline's lock.
 */
final class QueueLimit {

  /** The least bound on bytes awaiting replies, whatever the send buffer. */
  static final long MIN_BYTES = 64 * 1024;

  /** The most commands awaiting one master's replies. */
  static final int COMMANDS = 512;

  /** The share, in percent, of either bound that acquires and their cleanups may fill. */
  static final int ACQUIRE_SHARE_PERCENT = 50;

  /** What a command refused by this bound says first: the master had nothing to do with it. */
  static final String QUEUE_FULL = "this client's own queue to the master is full";

  private long bytes;
  private int commands;
  private long limitBytes = MIN_BYTES;

  /** A link opened with a send buffer of {@code sendBufferBytes}: the bytes' bound follows it. */
  void sendBuffer(int sendBufferBytes) {
    limitBytes = Math.max(MIN_BYTES, sendBufferBytes / 2);
  }

  /** Whether {@code command} finds no room: then {@link #refusal} says why. */
  boolean full(NodeCommand command) {
    long mostCommands = COMMANDS;
    long mostBytes = limitBytes;
    if (command.ofAttempt()) {
      mostCommands = mostCommands * ACQUIRE_SHARE_PERCENT / 100;
      mostBytes = mostBytes * ACQUIRE_SHARE_PERCENT / 100;
    }
    return commands >= mostCommands || bytes + command.bytes > mostBytes;
  }

  /** Why {@code command} was refused, in this bound's figures. */
  String refusal(NodeCommand command) {
    String limits = COMMANDS + " commands, " + limitBytes / 1024 + " KiB";
    return QUEUE_FULL
        + " ("
        + commands
        + " commands, "
        + (bytes + 1023) / 1024
        + " KiB await its replies; "
        + (command.ofAttempt()
            ? "an acquire or its cleanup may fill "
                + ACQUIRE_SHARE_PERCENT
                + "% of the limit, "
                + limits
                + ", the rest is kept for held leases"
            : "the limit is " + limits)
        + ")";
  }

  /** Counts {@code command} in. */
  void add(NodeCommand command) {
    bytes += command.counted();
    commands++;
  }

  /** Counts {@code command} out: answered, or failed. */
  void remove(NodeCommand command) {
    bytes -= command.counted();
    commands--;
  }

  /** {@code command} goes whole (EVAL): its script's body counts too, from now until it is out. */
  void goesWhole(NodeCommand command) {
    if (!command.countedWhole) {
      int before = command.counted();
      command.countedWhole = true;
      bytes += command.counted() - before;
    }
  }

  /** Nothing is queued any more: the link was detached. */
  void clear() {
    bytes = 0;
    commands = 0;
  }
}
