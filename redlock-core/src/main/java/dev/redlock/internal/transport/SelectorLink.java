package dev.redlock.internal.transport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection to one plaintext master over a non-blocking {@link SocketChannel}, driven by a
 * {@link SelectorLoop}: the selector transport's {@link CommandPipeline.Link}.
 *
 * <p>{@link #open} starts an attempt on the loop's thread: resolve (IP literals at once, names on a
 * resolver thread), connect, then the handshake written in one batch: {@code AUTH} (with the user,
 * if any, and the password), {@code SELECT} (unless database 0), {@code INFO server} and {@code
 * CONFIG GET *append*} (the server's run and persistence, for the restart guard: {@link
 * Incarnation}; a refusal is recorded, not fatal), and {@code SCRIPT LOAD} of every script. The
 * whole attempt is bounded by the node timeout. It ends in exactly one of {@link Events#opened} and
 * {@link Events#failed}; an open link then reports each reply ({@link Events#replied}) and at most
 * one {@link Events#lost}.
 *
 * <p>A link is single-use: it opens once (trying each address the host resolves to in turn, as
 * Jedis does) and, once closed or broken, only fails. Reconnecting means a new link, with the whole
 * handshake.
 *
 * <p>Threads: {@link #write}, {@link #kick} and {@link #close} are called from any thread and go to
 * the link's {@link LinkOutput}, which owns what callers append, who sends it and when (reply
 * clocking, holding bytes back at most {@link #HOLD_NANOS}). Everything else runs on the loop's
 * thread.
 *
 * <p>One master's bytes never hold up the others'. Replies are decoded as they arrive ({@link
 * Resp.Decoder}: each byte looked at once, a reply beyond the limits refused at once), and one
 * readiness event reads at most {@link #READ_BUDGET_BYTES}: a master that streams as fast as
 * loopback allows gets that much, then every other ready socket has its turn. The figure was
 * measured with four healthy masters and one that answers every lock command with a 1 MiB bulk
 * string (within the limits, so never cut off), 1000 acquire-and-release cycles on one thread,
 * three runs on a loaded 2-core machine: one event of 16, 32, 64, 128, 256 KiB and 1 MiB took
 * 15-24, 26-39, 54-87, 100-119, 180-324 and 760-1420 us; the cycle's p50 was 315-576, 461-495,
 * 489-677, 645-742, 861-1051 and 688-1951 us (345-392 us with the healthy masters alone). Read
 * without a budget, as long as the buffer filled, the p99 reached 19 to 50 ms, and in two runs of
 * three 3 rounds in 1000 failed, every healthy master timed out at 100 ms. 32 KiB keeps one
 * master's turn to tens of microseconds, a tenth of a round, at two reads per turn.
 */
final class SelectorLink implements CommandPipeline.Link, SelectorLoop.Handler, SelectorLoop.Watch {

  private static final Logger log = LoggerFactory.getLogger(SelectorLink.class);

  /** What the link tells its owner, on the loop's thread. */
  interface Events {

    /** The attempt succeeded: the link is connected and handshaken. */
    void opened(SelectorLink link);

    /** The attempt failed with {@code error} (never showing a password). */
    void failed(String error);

    /** A reply arrived; returning false drops the link (its owner no longer uses it). */
    boolean replied(SelectorLink link, Object reply);

    /** The open link broke: {@code reason}. Told at most once, and then nothing else. */
    void lost(SelectorLink link, String reason);

    /**
     * The open link broke because the master broke the protocol (bytes that are no RESP2, a reply
     * beyond {@link Resp}'s limits): {@code reason}. Told instead of {@link #lost}; an owner that
     * does not tell the two apart takes it as any loss.
     */
    default void protocolError(SelectorLink link, String reason) {
      lost(link, reason);
    }
  }

  /** The send buffer asked of the kernel, as {@link JedisLink} asks. */
  private static final int REQUESTED_SEND_BUFFER = 1 << 20;

  /** The input buffer: replies are decoded as they arrive, so it never grows. */
  private static final int INPUT_BYTES = 16 * 1024;

  /**
   * The most bytes one readiness event of one link reads (two reads of {@link #INPUT_BYTES}) before
   * the reader moves on to the other masters' sockets; the selector reports the rest at its next
   * select. See the class comment for how the figure was chosen.
   */
  static final int READ_BUDGET_BYTES = 32 * 1024;

  private static final int INITIAL_OUTPUT_BYTES = 8 * 1024;

  /**
   * How late the oldest reply due may be, from when its batch was sent, before the loop's leader
   * sends what its link holds back (see {@link #check}). Loopback replies under load take about 0.4
   * ms (p50) to 1.3 ms (p99) from send to read.
   */
  static final long HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

  private static final String STOPPED = "I/O thread stopped";

  private static final byte[] AUTH = ascii("AUTH");
  private static final byte[] SELECT = ascii("SELECT");

  private enum Phase {
    STARTING,
    CONNECTING,
    HANDSHAKE,
    OPEN,
    /** Told its owner it failed or was lost; tells nothing more. */
    DONE
  }

  /** What a handshake reply answers. */
  private enum Step {
    AUTH,
    SELECT,
    INFO,
    CONFIG,
    SCRIPT_LOAD
  }

  private final SelectorLoop loop;
  private final NodeAddress address;
  private final long timeoutNanos;
  private final Events events;

  // Loop thread only.
  private Phase phase = Phase.STARTING;
  private InetAddress[] candidates; // what the host resolved to
  private int tried; // how many of the candidates were tried
  private SelectionKey key;
  private final ByteBuffer input = ByteBuffer.allocate(INPUT_BYTES);
  private final Resp.Decoder decoder = new Resp.Decoder();
  private int mostReadAtOnce; // in one readiness event, for the test of the budget
  private final ArrayDeque<Step> handshake = new ArrayDeque<>();
  private boolean allScriptsLoaded = true;
  private Object serverInfo; // the answer to INFO server
  private Object persistence; // the answer to CONFIG GET *append*

  // Set on the loop's thread before opened(); read by the pipeline after.
  private volatile int sendBufferBytes = 128 * 1024;
  private volatile boolean scriptsLoaded;
  private volatile Incarnation.Facts facts;

  /** What callers append, and its sending; see {@link LinkOutput}. */
  private final LinkOutput output;

  private SelectorLink(
      SelectorLoop loop, NodeAddress address, long timeoutNanos, long holdNanos, Events events) {
    this.loop = loop;
    this.address = address;
    this.timeoutNanos = timeoutNanos;
    this.events = events;
    this.output = new LinkOutput(new Output(), holdNanos, address);
  }

  /**
   * Starts a connection attempt on {@code loop}; its end is told to {@code events} on the loop's
   * thread (or on this thread, at once, if the loop has stopped). Returns at once.
   */
  static void open(SelectorLoop loop, NodeAddress address, long timeoutNanos, Events events) {
    open(loop, address, timeoutNanos, HOLD_NANOS, events);
  }

  /**
   * As {@link #open(SelectorLoop, NodeAddress, long, Events)}, holding bytes back at most so long.
   */
  static void open(
      SelectorLoop loop, NodeAddress address, long timeoutNanos, long holdNanos, Events events) {
    SelectorLink link = new SelectorLink(loop, address, timeoutNanos, holdNanos, events);
    if (!loop.execute(link, link::start)) {
      events.failed(STOPPED);
    }
  }

  // ---- connecting: the loop's thread

  private void start() {
    if (loop.stopping()) {
      fail(STOPPED);
      return;
    }
    loop.schedule(this, timeoutNanos, this::expire);
    String host = address.host();
    if (host.indexOf(':') >= 0 || IPV4.matcher(host).matches()) {
      try {
        candidates = new InetAddress[] {InetAddress.getByName(host)}; // a literal: no lookup
      } catch (IOException e) {
        fail(CommandPipeline.describe(e));
        return;
      }
      connectNext(null);
    } else if (!loop.resolve(host, this, this::resolved)) {
      fail(STOPPED);
    }
  }

  private void resolved(Object result) {
    if (phase != Phase.STARTING) {
      return; // timed out or stopped meanwhile
    }
    if (result instanceof InetAddress[] all && all.length > 0) {
      candidates = all;
      connectNext(null);
    } else {
      fail(String.valueOf(result));
    }
  }

  /**
   * Connects to the next address the host resolved to, as Jedis tries each in turn; after the last
   * one failed, fails the attempt with {@code lastError}. All within the one node timeout.
   */
  private void connectNext(String lastError) {
    if (tried == candidates.length) {
      fail(lastError);
      return;
    }
    InetAddress ip = candidates[tried++];
    phase = Phase.CONNECTING;
    try {
      SocketChannel opened = SocketChannel.open();
      if (!output.attach(opened)) {
        fail("connection is closed");
        return;
      }
      opened.configureBlocking(false);
      opened.setOption(StandardSocketOptions.TCP_NODELAY, true);
      opened.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
      opened.setOption(
          StandardSocketOptions.SO_LINGER, 0); // a dropped link ends at once, as Jedis's
      opened.setOption(StandardSocketOptions.SO_SNDBUF, REQUESTED_SEND_BUFFER);
      sendBufferBytes = opened.getOption(StandardSocketOptions.SO_SNDBUF);
      key = loop.register(opened, this);
      output.registered(key);
      if (opened.connect(new InetSocketAddress(ip, address.port()))) {
        handshake();
      } else {
        key.interestOps(SelectionKey.OP_CONNECT);
      }
    } catch (IOException e) {
      connectNext(CommandPipeline.describe(e));
    } catch (RuntimeException e) {
      fail(CommandPipeline.describe(e));
    }
  }

  private void connected() {
    try {
      if (output.channel().finishConnect()) {
        handshake();
      }
    } catch (IOException e) {
      connectNext(CommandPipeline.describe(e));
    }
  }

  private void expire() {
    if (phase.compareTo(Phase.OPEN) < 0) {
      long millis = TimeUnit.NANOSECONDS.toMillis(timeoutNanos);
      if (phase == Phase.STARTING) {
        loop.forgetLookup(this); // the lookup goes on, for the next attempt to join
        fail("lookup of " + address.host() + " timed out after " + millis + " ms");
        return;
      }
      fail(
          (phase == Phase.HANDSHAKE ? "handshake" : "connect")
              + " timed out after "
              + millis
              + " ms");
    }
  }

  /** Writes AUTH, SELECT and SCRIPT LOAD in one batch; their replies come to {@link #ready}. */
  private void handshake() {
    phase = Phase.HANDSHAKE;
    key.interestOps(SelectionKey.OP_READ);
    // No caller appends before the link is opened: the batch goes out whole.
    if (address.password() != null) {
      byte[] password = address.password().getBytes(StandardCharsets.UTF_8);
      output.append(
          AUTH,
          address.user() == null
              ? new byte[][] {password}
              : new byte[][] {address.user().getBytes(StandardCharsets.UTF_8), password});
      handshake.add(Step.AUTH);
    }
    if (address.database() != 0) {
      output.append(SELECT, new byte[][] {ascii(Integer.toString(address.database()))});
      handshake.add(Step.SELECT);
    }
    output.append(LinkOutput.verb(NodeCommand.Verb.INFO), new byte[][] {ascii("server")});
    handshake.add(Step.INFO);
    output.append(
        LinkOutput.verb(NodeCommand.Verb.CONFIG), new byte[][] {ascii("GET"), ascii("*append*")});
    handshake.add(Step.CONFIG);
    for (LuaScript script : LuaScript.ALL) {
      NodeCommand load = NodeCommand.load(script);
      output.append(LinkOutput.verb(load.verb()), load.arguments());
      handshake.add(Step.SCRIPT_LOAD);
    }
    kick();
  }

  private void handshakeReply(Object reply) {
    Step step = handshake.poll();
    if (reply instanceof ServerError error && error.wantsPassword()) {
      fail(error.passwordMissing()); // every command after it would be refused the same way
      return;
    }
    if (step == Step.INFO) {
      serverInfo = reply; // a refusal leaves the guard unable to vouch for this master: recorded
    } else if (step == Step.CONFIG) {
      persistence = reply;
    } else if (reply instanceof ServerError error) {
      if (step != Step.SCRIPT_LOAD) {
        fail(step + " refused: " + error.firstLine());
        return;
      }
      if (!error.refusesScriptLoad()) {
        // LOADING, BUSY and the like pass: a new link after the reconnect delay loads them.
        fail("SCRIPT LOAD failed: " + error.firstLine());
        return;
      }
      log.debug("SCRIPT LOAD refused by {}: {}", address, error.firstLine());
      allScriptsLoaded = false;
    }
    if (handshake.isEmpty()) {
      scriptsLoaded = allScriptsLoaded;
      facts = Incarnation.Facts.of(serverInfo, persistence);
      phase = Phase.OPEN;
      events.opened(this);
    }
  }

  // ---- the selector's events: the loop's thread

  @Override
  public void ready(int readyOps) {
    try {
      if ((readyOps & SelectionKey.OP_CONNECT) != 0) {
        connected();
      }
      if ((readyOps & SelectionKey.OP_WRITE) != 0) {
        output.flushLater();
      }
      if ((readyOps & SelectionKey.OP_READ) != 0) {
        read();
        if (phase == Phase.OPEN) {
          output.sendDeferred();
        }
      }
    } catch (IOException | UncheckedIOException | CancelledKeyException e) {
      broken(CommandPipeline.describe(e));
    }
  }

  @Override
  public void stopped(String reason) {
    broken(reason);
  }

  /**
   * Reads what arrived and hands every whole reply on, reading again while the buffer filled, up to
   * {@link #READ_BUDGET_BYTES}: then the other masters' sockets have their turn.
   */
  private void read() throws IOException {
    int budget = READ_BUDGET_BYTES;
    while (phase == Phase.HANDSHAKE || phase == Phase.OPEN) {
      input.clear(); // the decoder took every byte of the last read
      int n = output.channel().read(input);
      if (n < 0) {
        broken("connection closed by the master");
        return;
      }
      input.flip();
      try {
        while (phase == Phase.HANDSHAKE || phase == Phase.OPEN) {
          Object reply = decoder.next(input);
          if (reply == Resp.INCOMPLETE) {
            break;
          }
          output.replyRead(); // before the look at what callers left
          if (phase == Phase.HANDSHAKE) {
            handshakeReply(reply);
          } else if (!events.replied(this, reply)) {
            phase = Phase.DONE; // its owner dropped it, and closed it or will
            close();
            return;
          }
        }
      } catch (Resp.ProtocolException e) {
        brokenProtocol("protocol error: " + e.getMessage());
        return;
      }
      budget -= n;
      mostReadAtOnce = Math.max(mostReadAtOnce, READ_BUDGET_BYTES - budget);
      if (n < INPUT_BYTES || budget <= 0) {
        return; // the socket had no more, or this master had its turn: the selector says when
      }
    }
  }

  /** Ends the attempt, or the open link, telling the owner once. */
  void broken(String reason) {
    if (phase == Phase.OPEN) {
      phase = Phase.DONE;
      close();
      events.lost(this, reason);
    } else if (phase != Phase.DONE) {
      fail(reason);
    }
  }

  /** As {@link #broken}, for a master that broke the protocol: its owner backs off. */
  private void brokenProtocol(String reason) {
    if (phase == Phase.OPEN) {
      phase = Phase.DONE;
      close();
      events.protocolError(this, reason);
    } else {
      broken(reason);
    }
  }

  private void fail(String error) {
    if (phase == Phase.DONE || phase == Phase.OPEN) {
      return;
    }
    phase = Phase.DONE;
    close();
    events.failed(error);
  }

  /**
   * The most bytes one readiness event read, so far: at most {@link #READ_BUDGET_BYTES}. Read it
   * once the loop's thread has stopped, or on it.
   */
  int mostReadAtOnce() {
    return mostReadAtOnce;
  }

  @Override
  public void write(NodeCommand command) {
    output.write(command);
  }

  @Override
  public void kick() {
    output.kick();
  }

  /** The loop's leader looks at bytes held back for replies due: {@link LinkOutput#check}. */
  @Override
  public boolean check(long nowNanos) {
    return output.check(nowNanos);
  }

  /** Closes the connection without flushing; any thread, idempotent. */
  @Override
  public void close() {
    output.close();
  }

  @Override
  public boolean scriptsLoaded() {
    return scriptsLoaded;
  }

  @Override
  public int sendBufferBytes() {
    return sendBufferBytes;
  }

  @Override
  public Incarnation.Facts facts() {
    return facts;
  }

  @Override
  public String toString() {
    return "SelectorLink{" + address + "}";
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  /** The output's view of this link and its loop. */
  private final class Output implements LinkOutput.Owner {
    @Override
    public boolean busy() {
      return loop.busy();
    }

    @Override
    public void watch() {
      loop.watch(SelectorLink.this);
    }

    @Override
    public void wakeup() {
      loop.wakeup();
    }

    @Override
    public boolean brokenLater(String reason) {
      return loop.execute(SelectorLink.this, () -> broken(reason));
    }

    @Override
    public void broken(String reason) {
      SelectorLink.this.broken(reason);
    }
  }
}
