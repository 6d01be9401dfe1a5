package dev.redlock.internal.transport;

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
import java.util.List;
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
 * <p>The connection and its one reading thread ({@code redlock-wake-N}) start with the first
 * subscription, and are kept while the RedLock is open; channels are unsubscribed as soon as no one
 * waits on them. A connection that drops, or stays silent past a PING, is opened again after 100
 * ms, doubling to 1 s, and every wanted channel is subscribed again: the confirmations then tell
 * {@link Listener#subscribed} {@code afterReset}, for notices published during the gap are lost
 * (pub/sub is at most once). A master whose ACL refuses the channels ({@code NOPERM}) is logged at
 * WARN once and not subscribed to again: its waiters retry on their timers. Plain sockets or TLS
 * (with the same context and host check as the Jedis transport), AUTH as the master's URI says.
 *
 * <p>Thread-safe. The listener is called on the reading thread: it must be short and not block.
 */
public final class NoticeLink implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(NoticeLink.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** What every wake-up channel starts with, followed by the resource's key. */
  public static final String CHANNEL_PREFIX = "redlock:wake:";

  private static final byte[] PREFIX = CHANNEL_PREFIX.getBytes(StandardCharsets.US_ASCII);
  private static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** How long a silent connection is read before a PING is sent; a second silence drops it. */
  static final int SILENCE_MILLIS = 5_000;

  /** The most channels named in one SUBSCRIBE when a connection opens. */
  private static final int CHANNELS_PER_COMMAND = 256;

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
  }

  private final NodeAddress address;
  private final long timeoutNanos;
  private final SSLContext tls;
  private final Listener listener;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Set<String> channels = new HashSet<>(); // guarded by lock: the keys wanted
  private Socket socket; // guarded by lock: null while not connected
  private OutputStream out; // guarded by lock: null while not connected
  private Thread thread; // guarded by lock: started by the first subscription
  private boolean closed; // guarded by lock
  private boolean refused; // guarded by lock: the ACL refused the channels

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
  }

  /**
   * Subscribes to {@code key}'s channel, connecting first if needed; returns at once.
   *
   * @param key the resource's key, one char per byte
   */
  public void subscribe(String key) {
    lock.lock();
    try {
      if (closed || refused || !channels.add(key)) {
        return;
      }
      if (thread == null) {
        thread = new Thread(this::run, "redlock-wake-" + THREADS.incrementAndGet());
        thread.setDaemon(true);
        thread.start();
      }
      send("SUBSCRIBE", List.of(key));
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Unsubscribes from {@code key}'s channel; returns at once.
   *
   * @param key the resource's key, one char per byte
   */
  public void unsubscribe(String key) {
    lock.lock();
    try {
      if (channels.remove(key)) {
        send("UNSUBSCRIBE", List.of(key));
      }
    } finally {
      lock.unlock();
    }
  }

  /** Closes the connection and waits up to {@code graceNanos} for the reading thread. */
  public void close(long graceNanos) {
    Thread reader;
    lock.lock();
    try {
      closed = true;
      dropLocked();
      changed.signalAll();
      reader = thread;
    } finally {
      lock.unlock();
    }
    if (reader != null && reader != Thread.currentThread()) {
      try {
        reader.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(graceNanos)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public void close() {
    close(TimeUnit.SECONDS.toNanos(1));
  }

  /**
   * Writes one command naming {@code keys}' channels, if connected. The commands are a few dozen
   * bytes and the master reads them, so the write does not wait in practice; a failed write drops
   * the connection, which the reading thread opens again (subscribing every wanted channel).
   */
  private void send(String verb, List<String> keys) {
    if (out == null) {
      return; // the reading thread subscribes every wanted channel when it connects
    }
    byte[][] words = new byte[keys.size()][];
    for (int i = 0; i < words.length; i++) {
      words[i] = channel(keys.get(i));
    }
    byte[] name = verb.getBytes(StandardCharsets.US_ASCII);
    ByteBuffer buffer = ByteBuffer.allocate(Resp.length(name, words));
    Resp.write(buffer, name, words);
    try {
      out.write(buffer.array(), 0, buffer.position());
      out.flush();
    } catch (IOException e) {
      log.debug("wake-up connection to {} failed: {}", address, e.toString());
      dropLocked();
    }
  }

  private static byte[] channel(String key) {
    byte[] channel = new byte[PREFIX.length + key.length()];
    System.arraycopy(PREFIX, 0, channel, 0, PREFIX.length);
    for (int i = 0; i < key.length(); i++) {
      channel[PREFIX.length + i] = (byte) key.charAt(i);
    }
    return channel;
  }

  private void dropLocked() {
    if (socket != null) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
    socket = null;
    out = null;
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
      backoff = FIRST_BACKOFF_NANOS;
      try {
        read(opened, reset);
      } catch (IOException | RuntimeException e) {
        log.debug("wake-up connection to {} lost: {}", address, e.toString());
      }
      lock.lock();
      try {
        if (socket == opened) {
          dropLocked();
        }
      } finally {
        lock.unlock();
      }
      try {
        opened.close();
      } catch (IOException ignored) {
        // closing anyway
      }
      reset = true;
      if (!pause(backoff)) {
        return;
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
    Socket plain = new Socket();
    Socket opened = plain;
    try {
      plain.connect(new InetSocketAddress(address.host(), address.port()), timeoutMillis);
      plain.setTcpNoDelay(true);
      plain.setSoTimeout(timeoutMillis);
      if (address.tls()) {
        SSLSocket secure =
            (SSLSocket)
                tls.getSocketFactory().createSocket(plain, address.host(), address.port(), true);
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
        out = opened.getOutputStream();
        List<String> wanted = new ArrayList<>(channels);
        for (int from = 0; from < wanted.size(); from += CHANNELS_PER_COMMAND) {
          send(
              "SUBSCRIBE",
              wanted.subList(from, Math.min(wanted.size(), from + CHANNELS_PER_COMMAND)));
        }
        if (out == null) {
          throw new IOException("write failed");
        }
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
          if (socket != opened) {
            return;
          }
          send("PING", List.of());
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
