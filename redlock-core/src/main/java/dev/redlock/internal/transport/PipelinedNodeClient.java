package dev.redlock.internal.transport;

import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One master's client over Jedis: one pipelined connection and one I/O thread. The transport of
 * {@code rediss://} (TLS) masters; {@code redis://} masters use {@link SelectorNodeClient} unless a
 * test or {@link Transport#usePlaintext} asks for this one.
 *
 * <p>Callers write their command on the connection themselves (through the {@link CommandPipeline},
 * under a short lock) and return; the daemon thread {@code redlock-io-N} opens the connection
 * ({@link JedisLink}), reads replies in order and completes each command's future. So a round costs
 * the caller N socket writes and one wake-up, as in a hand-written multiplexed client, while Jedis
 * still connects (TLS, AUTH, SELECT) and writes the commands; replies are decoded by {@link
 * Resp.Decoder}, within its limits.
 *
 * <p>Why one pipelined connection rather than a pool: Redis executes one connection's commands in
 * order, so a release queued behind an acquire on the same master can never overtake it, and a late
 * reply is always read and matched to its command.
 *
 * <p>The parts, after Lettuce's: {@link NodeCommand} encodes commands and decodes replies; {@link
 * CommandPipeline} holds the queue, the byte cap and the commands in flight; this class builds the
 * commands and runs the I/O thread, which connects, reconnects after a delay, and reads.
 */
public final class PipelinedNodeClient extends CommandNodeClient {

  private static final Logger log = LoggerFactory.getLogger(PipelinedNodeClient.class);

  private final String name;
  private final NodeAddress address;
  private final long connectTimeoutNanos;
  private final SSLContext tls;
  private final Ticker ticker;
  private final CommandPipeline<JedisLink> pipeline;
  private final Thread thread;

  /**
   * Makes the client and starts its I/O thread, which opens the first connection at once: each
   * attempt (TCP, TLS, the handshake) is bounded by {@code connectTimeoutNanos}, each command's
   * wait for its reply by the stall limit derived from {@code nodeTimeoutNanos}.
   *
   * @param address the master
   * @param index the master's place in the configuration, for its thread's name
   * @param nodeTimeoutNanos the master's node timeout
   * @param connectTimeoutNanos how long each connection attempt may take
   * @param ticker the clock of the stall limit and the reconnect delay
   * @param tls the TLS context of a {@code rediss://} master; null for {@code redis://}
   */
  public PipelinedNodeClient(
      NodeAddress address,
      int index,
      long nodeTimeoutNanos,
      long connectTimeoutNanos,
      Ticker ticker,
      SSLContext tls) {
    this.address = address;
    this.name = address.toString();
    this.connectTimeoutNanos = connectTimeoutNanos;
    this.tls = tls;
    this.ticker = ticker;
    // Its I/O thread waits in awaitWork(), which hears when a command wants a connection.
    this.pipeline =
        new CommandPipeline<>(ticker, CommandPipeline.stallNanos(nodeTimeoutNanos), () -> {});
    this.thread = new Thread(this::run, "redlock-io-" + index + "-" + name);
    thread.setDaemon(true);
    thread.start();
  }

  @Override
  CommandPipeline<?> pipeline() {
    return pipeline;
  }

  private void run() {
    try {
      while (true) {
        CommandPipeline.Work<JedisLink> work = pipeline.awaitWork();
        if (work instanceof CommandPipeline.Read<JedisLink> read) {
          readReplies(read.link());
        } else if (work instanceof CommandPipeline.Connect<JedisLink>) {
          connect();
        } else {
          return;
        }
      }
    } catch (InterruptedException e) {
      // close() interrupts only when it has already failed every command
    } catch (RuntimeException | Error e) {
      log.error("I/O thread for {} failed; the node will count as unavailable", name, e);
      pipeline.failed(CommandPipeline.describe(e));
    }
  }

  private void connect() {
    try {
      pipeline.connected(JedisLink.open(address, connectTimeoutNanos, tls), null, 0);
    } catch (RuntimeException e) {
      String error = CommandPipeline.describe(e);
      log.debug("cannot connect to {}: {}", name, error);
      pipeline.connected(null, error, ticker.read() + CommandPipeline.RECONNECT_DELAY_NANOS);
    }
  }

  private void readReplies(JedisLink link) {
    while (true) {
      Object reply;
      try {
        reply = link.read();
      } catch (Resp.ProtocolException e) {
        log.debug("connection to {} broken: protocol error: {}", name, e.getMessage());
        pipeline.protocolError(link, "protocol error: " + e.getMessage());
        return;
      } catch (RuntimeException e) {
        String reason = CommandPipeline.describe(e);
        log.debug("connection to {} lost: {}", name, reason);
        pipeline.lost(link, reason);
        return;
      }
      if (!pipeline.replied(link, reply)) {
        return;
      }
    }
  }

  @Override
  public boolean awaitTermination(long deadlineNanos) {
    long left = deadlineNanos - ticker.read();
    try {
      if (left > 0) {
        TimeUnit.NANOSECONDS.timedJoin(thread, left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !thread.isAlive();
  }

  @Override
  public String toString() {
    return "PipelinedNodeClient{" + name + "}";
  }
}
