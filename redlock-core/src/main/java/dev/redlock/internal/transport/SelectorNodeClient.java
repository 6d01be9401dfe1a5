package dev.redlock.internal.transport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One plaintext master's client on the RedLock's shared {@link SelectorLoop}: one pipelined
 * connection ({@link SelectorLink}) and no thread of its own.
 *
 * <p>The caller writes its command on the non-blocking socket itself, through the {@link
 * CommandPipeline} (the same queue, byte cap, in-flight matching and NOSCRIPT handling as {@link
 * PipelinedNodeClient}'s); the loop connects, reads the replies and completes each command's
 * future. A command that finds no connection starts an attempt on the loop; a failed attempt makes
 * commands fail at once for {@link CommandPipeline#RECONNECT_DELAY_NANOS}, a link broken by a
 * protocol error for a back-off ({@link CommandPipeline#protocolError}).
 */
public final class SelectorNodeClient extends CommandNodeClient implements SelectorLink.Events {

  private static final Logger log = LoggerFactory.getLogger(SelectorNodeClient.class);

  private final String name;
  private final NodeAddress address;
  private final long connectTimeoutNanos;
  private final Ticker ticker;
  private final SelectorLoop loop;
  private final CommandPipeline<SelectorLink> pipeline;

  /**
   * Makes the client and starts its first connection attempt on {@code loop}: each attempt (connect
   * and handshake) is bounded by {@code connectTimeoutNanos}, each command's wait for its reply by
   * the stall limit derived from {@code nodeTimeoutNanos} (rounds have their own deadlines).
   *
   * @param address the master, {@code redis://}
   * @param nodeTimeoutNanos the master's node timeout
   * @param connectTimeoutNanos how long each connection attempt may take
   * @param ticker the clock of the stall limit and the reconnect delay
   * @param loop the selector every plaintext master of the RedLock shares
   */
  public SelectorNodeClient(
      NodeAddress address,
      long nodeTimeoutNanos,
      long connectTimeoutNanos,
      Ticker ticker,
      SelectorLoop loop) {
    this.address = address;
    this.name = address.toString();
    this.connectTimeoutNanos = connectTimeoutNanos;
    this.ticker = ticker;
    this.loop = loop;
    this.pipeline =
        new CommandPipeline<>(
            ticker,
            CommandPipeline.stallNanos(nodeTimeoutNanos),
            this::connect,
            loop.watch(),
            null);
    connect();
  }

  private void connect() {
    SelectorLink.open(loop, address, connectTimeoutNanos, this);
  }

  @Override
  CommandPipeline<?> pipeline() {
    return pipeline;
  }

  // ---- the link's events, on the loop's thread

  @Override
  public void opened(SelectorLink link) {
    pipeline.connected(link, null, 0);
  }

  @Override
  public void failed(String error) {
    log.debug("cannot connect to {}: {}", name, error);
    pipeline.connected(null, error, ticker.read() + CommandPipeline.RECONNECT_DELAY_NANOS);
  }

  @Override
  public boolean replied(SelectorLink link, Object reply) {
    return pipeline.replied(link, reply);
  }

  @Override
  public void lost(SelectorLink link, String reason) {
    log.debug("connection to {} lost: {}", name, reason);
    pipeline.lost(link, reason);
  }

  @Override
  public void protocolError(SelectorLink link, String reason) {
    log.debug("connection to {} broken: {}", name, reason);
    pipeline.protocolError(link, reason);
  }

  @Override
  public String toString() {
    return "SelectorNodeClient{" + name + "}";
  }
}
