package dev.redlock.internal.transport;

import dev.redlock.simulation.RespCodec;
import dev.redlock.simulation.SimMaster;
import dev.redlock.simulation.SimProcess;
import dev.redlock.simulation.Simulation;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One master's client in a simulation: the library's own pipeline ({@link CommandPipeline}) and
 * codec ({@link NodeCommand}'s parts written by {@link Resp}, replies read by {@link
 * Resp.Decoder}), with the socket and the selector replaced by a simulated connection whose bytes
 * reach the {@link SimMaster} and come back as events of the {@link Simulation}, each way in order,
 * after a delay the simulation decides. Lives in the transport's package (in the simulation's
 * module) to reach the pipeline, which the core does not export.
 */
public final class SimNodeClient extends CommandNodeClient {

  private final Simulation sim;
  private final SimMaster master;
  private final Ticker ticker;
  private final LongSupplier delayNanos;
  private final LongSupplier healsAt;
  private final SimProcess process;
  private final CommandPipeline<Link> pipeline;

  /**
   * Makes the client and its first connection, at once (the RedLock's build waits for it).
   *
   * @param sim the simulation whose events carry the bytes
   * @param master the master
   * @param ticker the client's clock
   * @param nodeTimeoutNanos the master's node timeout (the pipeline's stall limit derives from it)
   * @param delayNanos each message's delay, one way
   * @param healsAt when a partition between this client and the master heals, on the simulation's
   *     clock (0 or the past: none now); a message sent across it waits for the heal, as TCP's
   *     retransmissions would carry it, and a connection attempt fails
   * @param process the client's process: once it crashed, nothing is sent or received
   */
  public SimNodeClient(
      Simulation sim,
      SimMaster master,
      Ticker ticker,
      long nodeTimeoutNanos,
      LongSupplier delayNanos,
      LongSupplier healsAt,
      SimProcess process) {
    this.sim = sim;
    this.process = process;
    this.master = master;
    this.ticker = ticker;
    this.delayNanos = delayNanos;
    this.healsAt = healsAt;
    this.pipeline =
        new CommandPipeline<>(
            ticker, CommandPipeline.stallNanos(nodeTimeoutNanos), () -> sim.after(0, this::open));
    open();
  }

  @Override
  CommandPipeline<?> pipeline() {
    return pipeline;
  }

  /** A connection attempt: the handshake answered at once by a reachable master, as events do. */
  private void open() {
    if (process.dead()) {
      return;
    }
    if (healsAt.getAsLong() > sim.now()) {
      pipeline.connected(
          null, "connection refused", ticker.read() + CommandPipeline.RECONNECT_DELAY_NANOS);
      return;
    }
    Object info = decode(master.execute("INFO", "server"));
    Object config = decode(master.execute("CONFIG", "GET", "*append*"));
    for (LuaScript script : LuaScript.ALL) {
      master.execute(List.of(ascii("SCRIPT"), ascii("LOAD"), script.body()));
    }
    pipeline.connected(new Link(Incarnation.Facts.of(info, config), master.run()), null, 0);
  }

  /** A master's reply as the library reads it: through its own decoder. */
  private static Object decode(Object reply) {
    return new Resp.Decoder().next(ByteBuffer.wrap(RespCodec.encode(reply)));
  }

  private static byte[] ascii(String s) {
    return s.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  }

  /** One simulated connection: bytes each way in order, lost once it is closed or cut. */
  private final class Link implements CommandPipeline.Link {
    private final Incarnation.Facts facts;
    private final int run; // the master's run it was opened to
    private final Resp.Decoder decoder = new Resp.Decoder();
    private boolean closed;
    private long toMasterAt; // when the last message to the master arrives
    private long backAt; // when the last reply arrives

    Link(Incarnation.Facts facts, int run) {
      this.facts = facts;
      this.run = run;
    }

    /** When a message sent now arrives: after its delay and any partition, after the last one. */
    private long arrival(long last) {
      return Math.max(last, Math.max(sim.now(), healsAt.getAsLong()) + delayNanos.getAsLong());
    }

    /** Whether the master restarted since this connection opened: then it was reset. */
    private boolean reset() {
      if (closed || process.dead()) {
        return true;
      }
      if (master.run() != run) {
        closed = true;
        pipeline.lost(this, "connection reset by peer (the master restarted)");
        return true;
      }
      return false;
    }

    @Override
    public void write(NodeCommand command) {
      if (closed) {
        throw new IllegalStateException("connection is closed");
      }
      if (process.dead()) {
        return; // nothing of a crashed process runs; its socket is gone with it
      }
      for (int part = 0, parts = command.parts(); part < parts; part++) {
        byte[] verb = LinkOutput.verb(command.verb(part));
        byte[][] words = command.arguments(part);
        ByteBuffer bytes = ByteBuffer.allocate(Resp.length(verb, words));
        Resp.write(bytes, verb, words);
        byte[] written = bytes.array();
        toMasterAt = arrival(toMasterAt);
        sim.after(toMasterAt - sim.now(), () -> arrive(written));
      }
    }

    /** The command reaches the master, which runs it and answers. */
    private void arrive(byte[] written) {
      if (reset()) {
        return;
      }
      for (List<byte[]> args : RespCodec.commands(written)) {
        byte[] reply = RespCodec.encode(master.execute(args));
        backAt = arrival(backAt);
        sim.after(backAt - sim.now(), () -> heard(reply));
      }
    }

    /** The reply reaches the client, whose pipeline matches it with its command. */
    private void heard(byte[] reply) {
      if (reset()) {
        return;
      }
      ByteBuffer in = ByteBuffer.wrap(reply);
      for (Object value = decoder.next(in); value != Resp.INCOMPLETE; value = decoder.next(in)) {
        if (!pipeline.replied(this, value)) {
          closed = true;
          return;
        }
      }
    }

    @Override
    public void close() {
      closed = true;
    }

    @Override
    public boolean scriptsLoaded() {
      return true;
    }

    @Override
    public Incarnation.Facts facts() {
      return facts;
    }

    @Override
    public int sendBufferBytes() {
      return 1 << 20;
    }
  }
}
