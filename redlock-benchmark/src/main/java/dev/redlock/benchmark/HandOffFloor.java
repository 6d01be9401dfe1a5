package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.Masters;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The hand-off section's floors: what one hand-off between two clients costs on these masters at
 * the least, written by hand, as {@link BaselineClient} is the uncontended sections' floor. Two
 * protocols, each the least of its kind:
 *
 * <ul>
 *   <li>{@link Rounds#TWO}, the protocol RedLock's default uses: the holder's release deletes the
 *       key on every master (the gate, the first master, last) and, on the gate, publishes a notice
 *       on the first waiter's channel; that waiter then asks every master for the key in a round of
 *       its own and holds the lock on a majority's grants.
 *   <li>{@link Rounds#ONE}, the hand-off inside the release: on every master where the key holds
 *       the holder's token, the release script sets it to the first waiter's token and publishes on
 *       that waiter's channel; the waiter holds the lock once a majority's notices are in, without
 *       a round of its own.
 * </ul>
 *
 * <p>Both leave out what a lock needs and what costs time: the queue of waiters is kept in this JVM
 * (one monitor the contenders share, so queue orders cannot disagree), a token is one per contender
 * instead of one per acquisition, no validity is computed, nothing bounds the masters' replies (the
 * benchmark's masters are its own children), and a waiter reads its notices on its own thread (a
 * {@link Selector} over its subscriber connections: no thread between the socket and the caller).
 * So neither is a lock to use: each is a bound, the fastest its protocol's hand-off can be on the
 * same masters and machine, against which a lock's figures are read.
 *
 * <p>Not thread-safe: one per contender, used from that contender's thread; the queue they share
 * is.
 */
final class HandOffFloor implements HandOffRun.Mutex {

  /** How the lock passes from the holder to the first waiter. */
  enum Rounds {
    /** The release frees the key and notifies the waiter, who asks every master for it. */
    TWO,
    /** The release gives the key to the waiter on every master. */
    ONE
  }

  /** Frees the key if it holds ARGV[1]; on the gate (ARGV[2] non-empty) notifies that channel. */
  private static final String RELEASE =
      "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1])"
          + " if ARGV[2] ~= '' then redis.call('publish', ARGV[2], '1') end return 1 end return 0";

  /**
   * Gives the key to ARGV[2] (for ARGV[3] ms) and notifies channel ARGV[4] if it holds ARGV[1];
   * with no ARGV[2], frees it.
   */
  private static final String HAND =
      "if redis.call('get', KEYS[1]) == ARGV[1] then if ARGV[2] == '' then redis.call('del',"
          + " KEYS[1]) else redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[3])"
          + " redis.call('publish', ARGV[4], '1') end return 1 end return 0";

  /** Sets the key to ARGV[1] for ARGV[2] ms if it is free, and answers 1 if it holds ARGV[1]. */
  private static final String TAKE =
      "if redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2])"
          + " or redis.call('get', KEYS[1]) == ARGV[1] then return 1 end return 0";

  /** The three scripts, loaded on every master, and their digests. */
  private static final List<String> SCRIPTS = List.of(RELEASE, HAND, TAKE);

  private static final String RELEASE_SHA = BaselineClient.sha1Hex(RELEASE);
  private static final String HAND_SHA = BaselineClient.sha1Hex(HAND);
  private static final String TAKE_SHA = BaselineClient.sha1Hex(TAKE);

  private final Rounds rounds;
  private final String key;
  private final String token;
  private final String channel;
  private final String ttlMillis;
  private final Queue queue;
  private final List<Link> links = new ArrayList<>();
  private final Selector selector;
  private final int quorum;
  private final int noticeBytes;
  private final long[] noticeBytesRead;
  private final ByteBuffer scratch = ByteBuffer.allocateDirect(4096);
  private long handedTo; // how many times a release has named this contender

  private HandOffFloor(
      Rounds rounds, List<String> uris, int contender, String resource, Queue queue)
      throws IOException {
    this.rounds = rounds;
    this.key = resource;
    this.token = "floor-" + contender;
    this.channel = resource + ":floor:" + contender;
    this.ttlMillis = Long.toString(Benchmark.TTL.toMillis());
    this.queue = queue;
    this.quorum = uris.size() / 2 + 1;
    this.noticeBytes = Link.command("message", channel, "1").length;
    this.selector = Selector.open();
    // The two-round waiter hears the gate alone; the one-round waiter counts every master's grant.
    int subscribed = rounds == Rounds.TWO ? 1 : uris.size();
    this.noticeBytesRead = new long[subscribed];
    try {
      for (int m = 0; m < uris.size(); m++) {
        Link link = Link.open(uris.get(m));
        links.add(link);
        if (m < subscribed) {
          link.subscribe(channel, selector, m);
        }
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Makes a row's contenders: contender {@code i} of {@code resource} on every master. The
   * contenders of one resource share a queue, kept by this factory (one per table of the row).
   */
  static HandOffRun.MutexFactory factory(List<String> uris, Rounds rounds) {
    requireNonNull(uris, "uris");
    requireNonNull(rounds, "rounds");
    Map<String, Queue> queues = new ConcurrentHashMap<>();
    return (i, resource) -> {
      try {
        return new HandOffFloor(
            rounds, uris, i, resource, queues.computeIfAbsent(resource, name -> new Queue()));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    };
  }

  @Override
  public boolean lock(Duration wait) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    try {
      if (queue.takeIfFree(this)) {
        takeByRounds();
        return true;
      }
      handedTo++;
      while (!handed()) {
        long left = deadline - System.nanoTime();
        if (left <= 0 && queue.leave(this)) {
          handedTo--;
          return false;
        } // else already named by a release in flight: its notices are on their way
        selector.select(Math.max(1, left / 1_000_000));
        if (Thread.interrupted()) {
          throw new InterruptedException();
        }
        for (SelectionKey ready : selector.selectedKeys()) {
          int m = (Integer) ready.attachment();
          scratch.clear();
          int read = ((SocketChannel) ready.channel()).read(scratch);
          if (read < 0) {
            throw new EOFException("a master closed a subscriber connection");
          }
          noticeBytesRead[m] += read;
        }
        selector.selectedKeys().clear();
      }
      if (rounds == Rounds.TWO) {
        takeByRounds();
      }
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Whether the notices this contender waits for are in: the gate's, or a majority's. */
  private boolean handed() {
    int masters = 0;
    for (long bytes : noticeBytesRead) {
      if (bytes / noticeBytes >= handedTo) {
        masters++;
      }
    }
    return masters >= (rounds == Rounds.TWO ? 1 : quorum);
  }

  /** Asks every master for the key until a majority holds this token (a release may be behind). */
  private void takeByRounds() throws IOException {
    byte[] take = Link.command("EVALSHA", TAKE_SHA, "1", key, token, ttlMillis);
    while (true) {
      for (Link link : links) {
        link.write(take);
      }
      int granted = 0;
      for (Link link : links) {
        granted += link.readInteger() == 1 ? 1 : 0;
      }
      if (granted >= quorum) {
        return;
      }
    }
  }

  @Override
  public void unlock() {
    HandOffFloor next = queue.next();
    try {
      if (rounds == Rounds.ONE) {
        byte[] hand =
            next == null
                ? Link.command("EVALSHA", HAND_SHA, "1", key, token, "", "", "")
                : Link.command(
                    "EVALSHA", HAND_SHA, "1", key, token, next.token, ttlMillis, next.channel);
        for (Link link : links) {
          link.write(hand);
        }
      } else {
        byte[] quiet = Link.command("EVALSHA", RELEASE_SHA, "1", key, token, "");
        for (int m = links.size() - 1; m > 0; m--) {
          links.get(m).write(quiet);
        }
        links
            .get(0)
            .write(
                Link.command(
                    "EVALSHA", RELEASE_SHA, "1", key, token, next == null ? "" : next.channel));
      }
      // A take stops at a majority, so a master or two may not have held this token.
      int released = 0;
      for (Link link : links) {
        released += link.readInteger() == 1 ? 1 : 0;
      }
      if (released < quorum) {
        throw new IllegalStateException(
            "a majority's key did not hold " + token + " at its release: the floor's queue broke");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    for (Link link : links) {
      link.close();
    }
    try {
      selector.close();
    } catch (IOException e) {
      // Nothing left to do with a selector that will not close.
    }
  }

  /** The waiters of one row, in the order they asked, and whom the masters' key names. */
  private static final class Queue {
    private final ArrayDeque<HandOffFloor> waiting = new ArrayDeque<>();
    private HandOffFloor owner;

    /** Makes {@code floor} the owner if nobody is, or queues it. */
    synchronized boolean takeIfFree(HandOffFloor floor) {
      if (owner == null) {
        owner = floor;
        return true;
      }
      waiting.add(floor);
      return false;
    }

    /** The holder's release: the first waiter becomes the owner (or nobody, if none waits). */
    synchronized HandOffFloor next() {
      owner = waiting.poll();
      return owner;
    }

    /** Takes {@code floor} out of the queue; false if a release has already named it. */
    synchronized boolean leave(HandOffFloor floor) {
      return waiting.remove(floor);
    }
  }

  /** One blocking connection to one master, and optionally a subscriber connection beside it. */
  private static final class Link {
    private final InetSocketAddress address;
    private final String name;
    private final String[] credentials; // {user or "", password}, or null
    private final String database; // or null
    private final SocketChannel commands;
    private final ByteBuffer replies = ByteBuffer.allocate(512).flip();
    private SocketChannel subscriber;

    private Link(InetSocketAddress address, String[] credentials, String database)
        throws IOException {
      this.address = address;
      this.name = address.getHostString() + ":" + address.getPort();
      this.credentials = credentials;
      this.database = database;
      this.commands = connect(address);
    }

    static Link open(String uri) throws IOException {
      URI parsed = URI.create(uri);
      if (!"redis".equals(parsed.getScheme()) || parsed.getHost() == null) {
        throw new IllegalArgumentException(
            "the hand-off floor speaks plain redis://host[:port] only, not " + Masters.redact(uri));
      }
      String[] credentials = null;
      String userInfo = parsed.getRawUserInfo();
      if (userInfo != null && !userInfo.isEmpty()) {
        int colon = userInfo.indexOf(':');
        credentials =
            new String[] {
              colon < 0 ? "" : decode(userInfo.substring(0, colon)),
              decode(colon < 0 ? userInfo : userInfo.substring(colon + 1))
            };
      }
      String path = parsed.getPath();
      String database = path != null && path.length() > 1 ? path.substring(1) : null;
      InetSocketAddress address =
          new InetSocketAddress(parsed.getHost(), parsed.getPort() < 0 ? 6379 : parsed.getPort());
      Link link = new Link(address, credentials, database);
      try {
        link.prepare(link.commands, link.replies);
        for (String script : SCRIPTS) {
          write(link.commands, command("SCRIPT", "LOAD", script));
          link.readLine(link.commands, link.replies); // $40
          String sha = link.readLine(link.commands, link.replies);
          if (!sha.equals(BaselineClient.sha1Hex(script))) {
            throw new IOException(link.name + " answered SCRIPT LOAD with " + sha);
          }
        }
      } catch (IOException | RuntimeException e) {
        link.close();
        throw e;
      }
      return link;
    }

    private static SocketChannel connect(InetSocketAddress address) throws IOException {
      SocketChannel channel = SocketChannel.open();
      try {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        channel.connect(address);
      } catch (IOException | RuntimeException e) {
        channel.close();
        throw e;
      }
      return channel;
    }

    /** Authenticates and selects the database on {@code channel}, as the URI says. */
    private void prepare(SocketChannel channel, ByteBuffer in) throws IOException {
      if (credentials != null) {
        write(
            channel,
            credentials[0].isEmpty()
                ? command("AUTH", credentials[1])
                : command("AUTH", credentials[0], credentials[1]));
        expectOk(channel, in);
      }
      if (database != null) {
        write(channel, command("SELECT", database));
        expectOk(channel, in);
      }
    }

    /** Opens the subscriber connection, subscribes it and registers it, unblocked, for reads. */
    void subscribe(String channelName, Selector selector, int index) throws IOException {
      subscriber = connect(address);
      // Read up to the confirmation's end, no further: later notices are counted by the selector.
      ByteBuffer setup = ByteBuffer.allocate(1).flip();
      prepare(subscriber, setup);
      write(subscriber, command("SUBSCRIBE", channelName));
      // The confirmation: *3, $9, subscribe, $n, the channel, :1.
      for (int line = 0; line < 6; line++) {
        readLine(subscriber, setup);
      }
      subscriber.configureBlocking(false);
      subscriber.register(selector, SelectionKey.OP_READ, index);
    }

    void write(byte[] command) throws IOException {
      write(commands, command);
    }

    long readInteger() throws IOException {
      String line = readLine(commands, replies);
      if (line.isEmpty() || line.charAt(0) != ':') {
        throw new IOException(name + " answered " + line);
      }
      return Long.parseLong(line.substring(1));
    }

    private void expectOk(SocketChannel channel, ByteBuffer in) throws IOException {
      String line = readLine(channel, in);
      if (!line.equals("+OK")) {
        throw new IOException(name + " answered " + line);
      }
    }

    private static void write(SocketChannel channel, byte[] command) throws IOException {
      ByteBuffer buffer = ByteBuffer.wrap(command);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
    }

    /**
     * Reads one reply line, without its CRLF, from {@code channel} through its buffer {@code in}.
     */
    private String readLine(SocketChannel channel, ByteBuffer in) throws IOException {
      StringBuilder line = new StringBuilder();
      while (true) {
        if (!in.hasRemaining()) {
          in.clear();
          int read = channel.read(in);
          in.flip();
          if (read < 0) {
            throw new EOFException(name + " closed the connection");
          }
          continue;
        }
        char c = (char) in.get();
        if (c == '\n') {
          int end =
              line.length() - (line.length() > 0 && line.charAt(line.length() - 1) == '\r' ? 1 : 0);
          return line.substring(0, end);
        }
        line.append(c);
      }
    }

    static byte[] command(String... arguments) {
      StringBuilder text = new StringBuilder().append('*').append(arguments.length).append("\r\n");
      for (String argument : arguments) {
        text.append('$')
            .append(argument.getBytes(StandardCharsets.UTF_8).length)
            .append("\r\n")
            .append(argument)
            .append("\r\n");
      }
      return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    void close() {
      for (SocketChannel channel : new SocketChannel[] {commands, subscriber}) {
        if (channel != null) {
          try {
            channel.close();
          } catch (IOException e) {
            // Nothing left to do with a socket that will not close.
          }
        }
      }
    }

    private static String decode(String text) {
      return URLDecoder.decode(text.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
  }
}
