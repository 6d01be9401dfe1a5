package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
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

  /** The connect and read timeout of every connection (the masters are the benchmark's own). */
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

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
  private final List<BaselineClient.Connection> links = new ArrayList<>(); // one per master
  private final List<BaselineClient.Connection> subscribers = new ArrayList<>();
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
    this.noticeBytes = respLength("message", channel, "1");
    this.selector = Selector.open();
    // The two-round waiter hears the gate alone; the one-round waiter counts every master's grant.
    int subscribed = rounds == Rounds.TWO ? 1 : uris.size();
    this.noticeBytesRead = new long[subscribed];
    int timeoutMillis = (int) TIMEOUT.toMillis();
    try {
      for (int m = 0; m < uris.size(); m++) {
        BaselineClient.Connection link = BaselineClient.Connection.open(uris.get(m), timeoutMillis);
        links.add(link);
        for (String script : SCRIPTS) {
          String sha = link.call("SCRIPT", "LOAD", script);
          if (!sha.equals(BaselineClient.sha1Hex(script))) {
            throw new IOException(link.name + " answered SCRIPT LOAD with " + sha);
          }
        }
        if (m < subscribed) {
          subscribe(uris.get(m), timeoutMillis, m);
        }
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Subscribes this contender's channel on master {@code m} over a connection of a {@link
   * SocketChannel} of its own, then hands that channel, unblocked, to the selector.
   */
  private void subscribe(String uri, int timeoutMillis, int m) throws IOException {
    BaselineClient.Connection subscriber =
        BaselineClient.Connection.open(uri, timeoutMillis, SocketChannel.open().socket());
    subscribers.add(subscriber);
    subscriber.send("SUBSCRIBE", channel);
    subscriber.skipLines(6); // the confirmation: *3, $9, subscribe, $n, the channel, :1
    noticeBytesRead[m] = subscriber.unread(); // a notice the confirmation's read brought along
    SocketChannel notices = subscriber.socket.getChannel();
    notices.configureBlocking(false);
    notices.register(selector, SelectionKey.OP_READ, m);
  }

  /** The length of the RESP array of bulk strings {@code arguments}, as a notice arrives. */
  private static int respLength(String... arguments) {
    int length = 3 + Integer.toString(arguments.length).length();
    for (String argument : arguments) {
      int bytes = argument.getBytes(StandardCharsets.UTF_8).length;
      length += 1 + Integer.toString(bytes).length() + 2 + bytes + 2;
    }
    return length;
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
    while (true) {
      for (BaselineClient.Connection link : links) {
        link.send("EVALSHA", TAKE_SHA, "1", key, token, ttlMillis);
      }
      int granted = 0;
      for (BaselineClient.Connection link : links) {
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
        for (BaselineClient.Connection link : links) {
          if (next == null) {
            link.send("EVALSHA", HAND_SHA, "1", key, token, "", "", "");
          } else {
            link.send("EVALSHA", HAND_SHA, "1", key, token, next.token, ttlMillis, next.channel);
          }
        }
      } else {
        for (int m = links.size() - 1; m > 0; m--) {
          links.get(m).send("EVALSHA", RELEASE_SHA, "1", key, token, "");
        }
        links
            .get(0)
            .send("EVALSHA", RELEASE_SHA, "1", key, token, next == null ? "" : next.channel);
      }
      // A take stops at a majority, so a master or two may not have held this token.
      int released = 0;
      for (BaselineClient.Connection link : links) {
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
    links.forEach(BaselineClient.Connection::close);
    subscribers.forEach(BaselineClient.Connection::close);
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
}
