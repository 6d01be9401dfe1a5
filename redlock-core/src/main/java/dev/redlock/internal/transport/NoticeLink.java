package dev.redlock.internal.transport;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One master's subscriber connection for wake-up notices: the release script publishes on {@code
 * redlock:wake:<key>} when it deletes a key, and this connection is subscribed to the channel of
 * every key some waiter of its RedLock waits on, so one connection per master serves every waited
 * resource (Redisson's model).
 *
 * <p>The connection, its reading thread ({@code redlock-wake-N}) and its writing thread ({@code
 * redlock-wake-N-writer}) start with the first subscription, and are kept while the RedLock is
 * open; channels are unsubscribed as soon as no one waits on them. A master whose ACL refuses the
 * channels ({@code NOPERM}) is logged at WARN once and not subscribed to again: its waiters retry
 * on their timers. Plain sockets or TLS (with the same context and host check as the Jedis
 * transport), AUTH as the master's URI says.
 *
 * <p><b>Reconnecting.</b> A connection that drops, or stays silent past a PING, is reported at once
 * ({@link Listener#lost}: the waiters it carried may have missed a notice, so they ask again), and
 * opened again at once if it had been up at least 100 ms (a proxy's idle timeout, a {@code CLIENT
 * KILL}, a failover), else after 100 ms, doubling to 1 s for as long as each new connection fails
 * or drops sooner. Every wanted channel is subscribed again: the confirmations then tell {@link
 * Listener#subscribed} {@code afterReset}, for notices published during the gap are lost (pub/sub
 * is at most once).
 *
 * <p><b>Writing.</b> No caller writes: {@link #subscribe} and {@link #unsubscribe} only note the
 * change (one per channel, the latest), and the writing thread sends the changes, never under this
 * link's lock, so a master that stops reading holds up no one but that thread (the callers hold the
 * wake-ups' lock, which every waiter, the async timer and the selector's release callback also
 * take). A write that makes no progress for {@link #stallNanos} (the connect timeout, at least 1
 * s), found at the next change or the next silence of the connection, or more than {@value
 * #MAX_PENDING} changes waiting, drops the connection; the next one subscribes every wanted channel
 * afresh, and the waiters meanwhile retry on their timers.
 *
 * <p>Thread-safe. The listener is called on the reading thread: it must be short and not block.
 */
public final class NoticeLink implements Subscriber {

  private static final Logger log = LoggerFactory.getLogger(NoticeLink.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** What every wake-up channel starts with, followed by the resource's key. */
  public static final String CHANNEL_PREFIX = "redlock:wake:";

  private static final byte[] PREFIX = CHANNEL_PREFIX.getBytes(StandardCharsets.US_ASCII);
  private static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** How long a silent connection is read before a PING is sent; a second silence drops it. */
  static final int SILENCE_MILLIS = 5_000;

  /** The most channels named in one SUBSCRIBE or UNSUBSCRIBE. */
  private static final int CHANNELS_PER_COMMAND = 256;

  /** The most subscription changes waiting to be written before the connection is dropped. */
  static final int MAX_PENDING = 4 * 1024;

  /** About how many bytes of channel names the writing thread takes for one write. */
  private static final int BATCH_BYTES = 64 * 1024;

  /** The most bytes handed to one socket write: progress is seen between two of them. */
  private static final int CHUNK_BYTES = 8 * 1024;

  /** The shortest time a write may go without progress before the connection is dropped. */
  private static final long MIN_STALL_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** Hears the notices; called on the reading thread, never under this link's lock. */
  public interface Listener {
    /**
     * A release of {@code key} was published.
     *
     * @param key the resource's key, one char per byte (ISO-8859-1)
     * @param release names the release: the same on every master that published it
     */
    void notice(String key, String release);

    /**
     * The master confirmed the subscription of {@code key}.
     *
     * @param key the resource's key, one char per byte
     * @param afterReset whether on a connection that replaced a lost one (notices may have been
     *     missed)
     */
    void subscribed(String key, boolean afterReset);

    /**
     * The connection that carried the subscriptions of {@code link} dropped: notices published
     * until it is back are lost (its confirmations then say {@code afterReset}).
     *
     * @param link the link whose connection dropped
     */
    void lost(Subscriber link);
  }

  private final NodeAddress address;
  private final long timeoutNanos;
  private final SSLContext tls;
  private final Listener listener;
  private final long stallNanos;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition(); // closed, for the reading thread's pause
  private final Condition writable = lock.newCondition(); // something to write, or closed
  private final Set<String> channels = new HashSet<>(); // guarded by lock: the keys wanted
  // guarded by lock: the changes not yet written, in order, the latest per key: true to subscribe
  private final Map<String, Boolean> pending = new LinkedHashMap<>();
  private boolean ping; // guarded by lock: a PING not yet written
  private Socket socket; // guarded by lock: null while not connected
  private Socket plain; // guarded by lock: its TCP socket, closed to drop it (that never waits)
  private OutputStream out; // guarded by lock: null while not connected
  private long connection; // guarded by lock: counts the connections opened
  private Thread thread; // guarded by lock: started by the first subscription
  private Thread writer; // guarded by lock: started with the reading thread
  private boolean closed; // guarded by lock
  private boolean refused; // guarded by lock: the ACL refused the channels
  private volatile boolean writing; // a write of the writing thread is in progress
  private volatile long progressAt; // System.nanoTime() when that write last made progress

  /**
   * A link to {@code address}, not connected until the first {@link #subscribe}.
   *
   * @param address the master
   * @param timeoutNanos the connect and handshake timeout
   * @param tls the TLS context for {@code rediss://}, or null if the master is plaintext
   * @param listener hears the notices
   */
  public NoticeLink(NodeAddress address, long timeoutNanos, SSLContext tls, Listener listener) {
    this.address = address;
    this.timeoutNanos = timeoutNanos;
    this.tls = tls;
    this.listener = listener;
    this.stallNanos = stallNanos(timeoutNanos);
  }

  /**
   * How long a write may go without progress before the connection is dropped: the connect and
   * handshake timeout, at least 1 s.
   *
   * @param timeoutNanos the connect and handshake timeout
   * @return nanoseconds
   */
  static long stallNanos(long timeoutNanos) {
    return Math.max(MIN_STALL_NANOS, timeoutNanos);
  }

  /**
   * Subscribes to {@code key}'s channel, connecting first if needed; returns at once.
   *
   * @param key the resource's key, one char per byte
   */
  @Override
  public void subscribe(String key) {
    lock.lock();
    try {
      if (closed || refused || !channels.add(key)) {
        return;
      }
      if (thread == null) {
        String name = "redlock-wake-" + THREADS.incrementAndGet();
        thread = new Thread(this::run, name);
        thread.setDaemon(true);
        writer = new Thread(this::write, name + "-writer");
        writer.setDaemon(true);
        thread.start();
        writer.start();
      }
      changeLocked(key, true);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Unsubscribes from {@code key}'s channel; returns at once.
   *
   * @param key the resource's key, one char per byte
   */
  @Override
  public void unsubscribe(String key) {
    lock.lock();
    try {
      if (channels.remove(key)) {
        changeLocked(key, false);
      }
    } finally {
      lock.unlock();
    }
  }

  /** The keys whose channels this link is asked to subscribe: for tests. */
  Set<String> wanted() {
    lock.lock();
    try {
      return Set.copyOf(channels);
    } finally {
      lock.unlock();
    }
  }

  /** Closes the connection and waits up to {@code graceNanos} for the link's threads. */
  @Override
  public void close(long graceNanos) {
    List<Thread> threads = new ArrayList<>();
    lock.lock();
    try {
      closed = true;
      dropLocked();
      changed.signalAll();
      writable.signalAll();
      if (thread != null) {
        threads.add(thread);
        threads.add(writer);
      }
    } finally {
      lock.unlock();
    }
    long deadline = System.nanoTime() + graceNanos;
    for (Thread t : threads) {
      long left = deadline - System.nanoTime();
      if (t == Thread.currentThread() || left <= 0) {
        continue;
      }
      try {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  @Override
  public void close() {
    close(TimeUnit.SECONDS.toNanos(1));
  }

  /**
   * Notes a change of {@code key}'s subscription for the writing thread, if connected (a new
   * connection subscribes every wanted channel), replacing any change of it not yet written. No
   * I/O: the caller may hold other locks. Drops a connection whose writes have stalled, or that has
   * too many changes waiting.
   */
  private void changeLocked(String key, boolean subscribe) {
    if (out == null) {
      return;
    }
    pending.remove(key);
    pending.put(key, subscribe);
    if (pending.size() > MAX_PENDING) {
      log.debug("wake-up connection to {}: {} changes not written, dropped", address, MAX_PENDING);
      dropLocked();
    } else if (!dropIfStalledLocked()) {
      writable.signal();
    }
  }

  /** Drops the connection if a write has made no progress for {@link #stallNanos}. */
  private boolean dropIfStalledLocked() {
    if (out == null || !writing || System.nanoTime() - progressAt < stallNanos) {
      return false;
    }
    log.debug(
        "wake-up connection to {}: no write progress in {} ms, dropped",
        address,
        TimeUnit.NANOSECONDS.toMillis(stallNanos));
    dropLocked();
    return true;
  }

  /** The writing thread: sends the changes noted, a batch at a time, outside the lock. */
  private void write() {
    while (true) {
      List<String> subscribes = new ArrayList<>();
      List<String> unsubscribes = new ArrayList<>();
      boolean pinging;
      OutputStream to;
      long writingTo;
      lock.lock();
      try {
        while (!closed && (out == null || (pending.isEmpty() && !ping))) {
          writable.await();
        }
        if (closed) {
          return;
        }
        int bytes = 0;
        Iterator<Map.Entry<String, Boolean>> changes = pending.entrySet().iterator();
        while (changes.hasNext() && bytes < BATCH_BYTES) {
          Map.Entry<String, Boolean> change = changes.next();
          (change.getValue() ? subscribes : unsubscribes).add(change.getKey());
          bytes += change.getKey().length();
          changes.remove();
        }
        pinging = ping;
        ping = false;
        to = out;
        writingTo = connection;
        progressAt = System.nanoTime();
        writing = true;
      } catch (InterruptedException e) {
        return;
      } finally {
        lock.unlock();
      }
      try {
        byte[] commands = commands(subscribes, unsubscribes, pinging);
        for (int from = 0; from < commands.length; from += CHUNK_BYTES) {
          to.write(commands, from, Math.min(CHUNK_BYTES, commands.length - from));
          progressAt = System.nanoTime();
        }
        to.flush();
      } catch (IOException e) {
        lock.lock();
        try {
          if (connection == writingTo && out != null) {
            log.debug("wake-up connection to {} failed: {}", address, e.toString());
            dropLocked(); // the reading thread opens it again
          }
        } finally {
          lock.unlock();
        }
      } finally {
        writing = false;
      }
    }
  }

  /** The commands of a batch of changes, then a PING if asked. */
  private static byte[] commands(List<String> subscribes, List<String> unsubscribes, boolean ping) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    command(bytes, "SUBSCRIBE", subscribes);
    command(bytes, "UNSUBSCRIBE", unsubscribes);
    if (ping) {
      encode(bytes, "PING", List.of());
    }
    return bytes.toByteArray();
  }

  private static void command(ByteArrayOutputStream bytes, String verb, List<String> keys) {
    for (int from = 0; from < keys.size(); from += CHANNELS_PER_COMMAND) {
      encode(bytes, verb, keys.subList(from, Math.min(keys.size(), from + CHANNELS_PER_COMMAND)));
    }
  }

  private static void encode(ByteArrayOutputStream bytes, String verb, List<String> keys) {
    byte[][] words = new byte[keys.size()][];
    for (int i = 0; i < words.length; i++) {
      words[i] = channel(keys.get(i));
    }
    byte[] name = verb.getBytes(StandardCharsets.US_ASCII);
    ByteBuffer buffer = ByteBuffer.allocate(Resp.length(name, words));
    Resp.write(buffer, name, words);
    bytes.write(buffer.array(), 0, buffer.position());
  }

  private static byte[] channel(String key) {
    byte[] channel = new byte[PREFIX.length + key.length()];
    System.arraycopy(PREFIX, 0, channel, 0, PREFIX.length);
    for (int i = 0; i < key.length(); i++) {
      channel[PREFIX.length + i] = (byte) key.charAt(i);
    }
    return channel;
  }

  /**
   * Drops the connection, if any: closes its TCP socket (which never waits, even with a write
   * blocked on it; the reading thread then closes the TLS layer), and forgets the changes not
   * written: the next connection subscribes every wanted channel.
   */
  private void dropLocked() {
    if (plain != null) {
      try {
        plain.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
    socket = null;
    plain = null;
    out = null;
    pending.clear();
    ping = false;
  }

  private void run() {
    long backoff = FIRST_BACKOFF_NANOS;
    boolean reset = false;
    while (true) {
      Socket opened;
      lock.lock();
      try {
        if (closed || refused) {
          return;
        }
      } finally {
        lock.unlock();
      }
      try {
        opened = open();
      } catch (IOException | RuntimeException e) {
        log.debug("wake-up connection to {} not opened: {}", address, e.toString());
        if (!pause(backoff)) {
          return;
        }
        backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
        reset = true;
        continue;
      }
      long openedAt = System.nanoTime();
      try {
        read(opened, reset);
      } catch (IOException | RuntimeException e) {
        log.debug("wake-up connection to {} lost: {}", address, e.toString());
      }
      boolean over;
      lock.lock();
      try {
        if (socket == opened) {
          dropLocked();
        }
        over = closed || refused;
      } finally {
        lock.unlock();
      }
      try {
        opened.close();
      } catch (IOException ignored) {
        // closing anyway
      }
      if (over) {
        return;
      }
      reset = true;
      listener.lost(this); // the waiters it carried ask again: a notice may have been lost
      if (System.nanoTime() - openedAt >= FIRST_BACKOFF_NANOS) {
        backoff = FIRST_BACKOFF_NANOS; // it was up: open it again at once
      } else {
        if (!pause(backoff)) {
          return;
        }
        backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
      }
    }
  }

  /** Waits {@code nanos} unless closed first; returns whether still open. */
  private boolean pause(long nanos) {
    lock.lock();
    try {
      long left = nanos;
      while (!closed && left > 0) {
        left = changed.awaitNanos(left);
      }
      return !closed;
    } catch (InterruptedException e) {
      return false;
    } finally {
      lock.unlock();
    }
  }

  /** Connects, authenticates and subscribes every wanted channel; the socket is then current. */
  private Socket open() throws IOException {
    int timeoutMillis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutNanos / 1_000_000));
    Socket tcp = new Socket();
    Socket opened = tcp;
    try {
      tcp.connect(new InetSocketAddress(address.host(), address.port()), timeoutMillis);
      tcp.setTcpNoDelay(true);
      tcp.setSoTimeout(timeoutMillis);
      if (address.tls()) {
        SSLSocket secure =
            (SSLSocket)
                tls.getSocketFactory().createSocket(tcp, address.host(), address.port(), true);
        SSLParameters parameters = secure.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm(
            "HTTPS"); // the certificate must name the host
        secure.setSSLParameters(parameters);
        secure.startHandshake();
        opened = secure;
      }
      if (address.password() != null) {
        List<byte[]> words = new ArrayList<>();
        if (address.user() != null) {
          words.add(address.user().getBytes(StandardCharsets.UTF_8));
        }
        words.add(address.password().getBytes(StandardCharsets.UTF_8));
        byte[] auth = "AUTH".getBytes(StandardCharsets.US_ASCII);
        byte[][] args = words.toArray(new byte[0][]);
        ByteBuffer buffer = ByteBuffer.allocate(Resp.length(auth, args));
        Resp.write(buffer, auth, args);
        opened.getOutputStream().write(buffer.array(), 0, buffer.position());
        opened.getOutputStream().flush();
        Object answer = new Reader(opened.getInputStream()).next();
        if (answer instanceof ServerError error) {
          throw new IOException("AUTH refused: " + error.firstLine()); // never the password
        }
      }
      opened.setSoTimeout(SILENCE_MILLIS);
      lock.lock();
      try {
        if (closed) {
          throw new IOException("closed");
        }
        socket = opened;
        plain = tcp;
        out = opened.getOutputStream();
        connection++;
        for (String key : channels) {
          pending.put(key, true); // the writing thread subscribes every wanted channel
        }
        writable.signal();
      } finally {
        lock.unlock();
      }
      return opened;
    } catch (IOException | RuntimeException e) {
      opened.close();
      throw e;
    }
  }

  /** Reads the pushes of one connection until it fails or closes. */
  private void read(Socket opened, boolean afterReset) throws IOException {
    Reader reader = new Reader(opened.getInputStream());
    boolean pinged = false;
    while (true) {
      Object push;
      try {
        push = reader.next();
      } catch (SocketTimeoutException e) {
        if (pinged) {
          throw new IOException("no answer to PING in " + 2 * SILENCE_MILLIS + " ms");
        }
        pinged = true;
        lock.lock();
        try {
          if (socket != opened || dropIfStalledLocked()) {
            return;
          }
          ping = true;
          writable.signal();
        } finally {
          lock.unlock();
        }
        continue;
      }
      pinged = false;
      if (push instanceof ServerError error) {
        // An ACL without PING refuses the liveness probe: an answer all the same.
        if (error.message().startsWith("NOPERM") && !error.message().contains("'ping'")) {
          lock.lock();
          try {
            refused = true;
            channels.clear();
          } finally {
            lock.unlock();
          }
          log.warn(
              "master {} refused the wake-up channels ({}): its waiters retry on their timers;"
                  + " docs/acl.md lists the permissions wake-ups need",
              address,
              error.firstLine());
          return;
        }
        log.debug("wake-up connection to {}: {}", address, error.firstLine());
        continue;
      }
      if (push instanceof List<?> parts
          && parts.size() == 3
          && parts.get(0) instanceof byte[] kind
          && parts.get(1) instanceof byte[] channel
          && channel.length >= PREFIX.length) {
        String key =
            new String(
                channel,
                PREFIX.length,
                channel.length - PREFIX.length,
                StandardCharsets.ISO_8859_1);
        String what = new String(kind, StandardCharsets.US_ASCII);
        if (what.equals("message")) {
          Object payload = parts.get(2);
          listener.notice(
              key,
              payload instanceof byte[] bytes
                  ? new String(bytes, StandardCharsets.ISO_8859_1)
                  : "");
        } else if (what.equals("subscribe")) {
          listener.subscribed(key, afterReset);
        }
      }
    }
  }

  /** Decodes RESP2 from a blocking stream, within {@link Resp}'s limits. */
  private static final class Reader {
    private final InputStream in;
    private final byte[] chunk = new byte[8 * 1024];
    private final ByteBuffer unread = ByteBuffer.wrap(chunk).limit(0);
    private final Resp.Decoder decoder = new Resp.Decoder();

    Reader(InputStream in) {
      this.in = in;
    }

    Object next() throws IOException {
      while (true) {
        Object reply = decoder.next(unread);
        if (reply != Resp.INCOMPLETE) {
          return reply;
        }
        int n = in.read(chunk, 0, chunk.length);
        if (n < 0) {
          throw new IOException("closed by the master");
        }
        unread.position(0).limit(n);
      }
    }
  }
}
