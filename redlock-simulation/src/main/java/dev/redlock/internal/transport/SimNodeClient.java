package dev.redlock.internal.transport;

import dev.redlock.simulation.ClientClock;
import dev.redlock.simulation.RespCodec;
import dev.redlock.simulation.SimMaster;
import dev.redlock.simulation.SimProcess;
import dev.redlock.simulation.Simulation;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * One master's client in a simulation: the library's own pipeline ({@link CommandPipeline}) and
 * codec ({@link NodeCommand}'s parts written by {@link Resp}, replies read by {@link
 * Resp.Decoder}), with the socket and the selector replaced by a simulated connection whose bytes
 * reach the {@link SimMaster} and come back as events of the {@link Simulation}, each way in order,
 * after a delay the simulation decides. Lives in the transport's package (in the simulation's
 * module) to reach the pipeline, which the core does not export.
 */
public final class SimNodeClient extends CommandNodeClient {

  /** What a fault does to the next reply a connection carries to the client. */
  public enum Tamper {
    /** Nothing: the reply as the master sent it. */
    NONE,
    /**
     * The connection reset half-way through the reply (the peer's RST): the client reads half of
     * it, then loses the connection.
     */
    CUT,
    /**
     * The master stops half-way through the reply and sends nothing more on this connection: the
     * client's stall limit ends it at its next command, else the peer resets it {@link
     * #STALL_RESET_NANOS} later.
     */
    STALL,
    /** An error reply in place of the answer. */
    ERROR,
    /**
     * An array of five bulk strings in place of the answer: no command the library sends is
     * answered so.
     */
    WRONG_TYPE,
    /** Bytes that are no RESP2 in place of the answer. */
    GARBAGE,
    /** A bulk string's header announcing 512 MiB in place of the answer. */
    OVERSIZE
  }

  /**
   * How long a connection stalled mid-reply lasts at most: then the peer resets it (its output
   * buffer's limit, a TCP user timeout), as a client that sends nothing more would otherwise wait
   * for ever, and a close waits for the replies in flight on the client's clock, which moves only
   * as events do.
   */
  public static final long STALL_RESET_NANOS = 2_000_000_000L;

  private static final byte[] WRONG_TYPE = ascii("*5\r\n" + "$7\r\nhostile\r\n".repeat(5));

  private final Simulation sim;
  private final SimMaster master;
  private final Ticker ticker;
  private final LongSupplier delayNanos;
  private final LongSupplier healsAt;
  private final SimProcess process;
  private final Supplier<Tamper> tamper;
  private final CommandPipeline<Link> pipeline;
  private Link current; // the last connection opened
  private java.util.function.Consumer<List<byte[]>> sent = args -> {};

  /**
   * Makes the client and its first connection, at once (the RedLock's build waits for it).
   *
   * @param sim the simulation whose events carry the bytes
   * @param master the master
   * @param clock the client's clock
   * @param nodeTimeoutNanos the master's node timeout (the pipeline's stall limit derives from it)
   * @param delayNanos each message's delay, one way
   * @param healsAt when a partition between this client and the master heals, on the simulation's
   *     clock (0 or the past: none now); a message sent across it waits for the heal, as TCP's
   *     retransmissions would carry it, and a connection attempt fails
   * @param process the client's process: once it crashed, nothing is sent or received; while it is
   *     paused, what it reads waits
   * @param tamper what happens to each reply on its way (asked once per reply the client reads)
   */
  public SimNodeClient(
      Simulation sim,
      SimMaster master,
      ClientClock clock,
      long nodeTimeoutNanos,
      LongSupplier delayNanos,
      LongSupplier healsAt,
      SimProcess process,
      Supplier<Tamper> tamper) {
    this.sim = sim;
    this.process = process;
    this.tamper = tamper;
    this.master = master;
    this.ticker = clock;
    this.delayNanos = delayNanos;
    this.healsAt = healsAt;
    // A caller waiting for the pipeline (a close's wait for the replies in flight) runs the
    // simulation's events until they came or its deadline, as a caller waiting for its round does.
    this.pipeline =
        new CommandPipeline<>(
            clock,
            CommandPipeline.stallNanos(nodeTimeoutNanos),
            () -> sim.after(0, process.event(sim, this::open)),
            null,
            (done, deadlineNanos) -> sim.runUntil(done, clock.toSimulation(deadlineNanos)));
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
    current = new Link(Incarnation.Facts.of(info, config), master.run());
    pipeline.connected(current, null, 0);
  }

  /** The process this client runs in. */
  public SimProcess process() {
    return process;
  }

  /**
   * Tells {@code observer} of each command of this client's as it reaches the master (for a
   * checker; replaces any earlier observer).
   */
  public void observe(java.util.function.Consumer<List<byte[]>> observer) {
    sent = observer;
  }

  /**
   * The master restarted: its process's end closed every connection to it, and the client reads the
   * end of its own after the FIN's trip (as its selector reads a socket's end of stream), not only
   * when its next command reaches the master.
   */
  public void masterRestarted() {
    Link link = current;
    if (link != null) {
      long arrives = Math.max(sim.now(), healsAt.getAsLong()) + delayNanos.getAsLong();
      sim.after(arrives - sim.now(), process.event(sim, link::reset));
    }
  }

  /**
   * The library's scripts by name (their files' names without {@code .lua}: {@code release}, {@code
   * queue}, ...), each under its SHA-1 (as an {@code EVALSHA} names it) and its text (as an {@code
   * EVAL} sends it), both as ISO-8859-1 strings: for a checker that reads the commands reaching the
   * masters.
   */
  public static final java.util.Map<String, String> SCRIPT_NAMES = scriptNames();

  private static java.util.Map<String, String> scriptNames() {
    java.util.Map<String, String> names = new java.util.HashMap<>();
    java.util.Map<LuaScript, String> scripts =
        java.util.Map.of(
            LuaScript.FENCE, "fence",
            LuaScript.RELEASE, "release",
            LuaScript.EXTEND, "extend",
            LuaScript.ADMIT, "admit",
            LuaScript.SHORTEN, "shorten",
            LuaScript.KEY_SET, "keyset",
            LuaScript.QUEUE, "queue");
    scripts.forEach(
        (script, name) -> {
          names.put(new String(script.sha1(), java.nio.charset.StandardCharsets.ISO_8859_1), name);
          names.put(new String(script.body(), java.nio.charset.StandardCharsets.ISO_8859_1), name);
        });
    return java.util.Map.copyOf(names);
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
    private boolean stalled; // the master stopped mid-reply: nothing more comes on it
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
        sent.accept(args);
        byte[] reply = RespCodec.encode(master.execute(args));
        backAt = arrival(backAt);
        sim.after(backAt - sim.now(), process.event(sim, () -> heard(reply)));
      }
    }

    /**
     * The reply reaches the client, whose pipeline matches it with its command; as {@link
     * SelectorLink} does, a reply that breaks the protocol drops the connection.
     */
    private void heard(byte[] reply) {
      if (reset() || stalled) {
        return;
      }
      Tamper fault = tamper.get();
      byte[] bytes =
          switch (fault) {
            case NONE -> reply;
            case CUT, STALL -> java.util.Arrays.copyOf(reply, reply.length / 2);
            case ERROR -> ascii("-HOSTILE not an answer\r\n");
            case WRONG_TYPE -> WRONG_TYPE;
            case GARBAGE -> new byte[] {'?', 0, (byte) 0xff, 'x', '\r', '\n'};
            case OVERSIZE -> ascii("$536870912\r\n");
          };
      ByteBuffer in = ByteBuffer.wrap(bytes);
      try {
        for (Object value = decoder.next(in); value != Resp.INCOMPLETE; value = decoder.next(in)) {
          if (!pipeline.replied(this, value)) {
            closed = true;
            return;
          }
        }
      } catch (Resp.ProtocolException e) {
        closed = true;
        pipeline.protocolError(this, "protocol error: " + e.getMessage());
        return;
      }
      if (fault == Tamper.CUT) {
        closed = true;
        pipeline.lost(this, "connection reset by peer (mid-reply)");
      } else if (fault == Tamper.STALL) {
        stalled = true;
        sim.after(
            STALL_RESET_NANOS,
            process.event(
                sim,
                () -> {
                  if (!closed) {
                    closed = true;
                    pipeline.lost(this, "connection reset by peer (stalled mid-reply)");
                  }
                }));
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
