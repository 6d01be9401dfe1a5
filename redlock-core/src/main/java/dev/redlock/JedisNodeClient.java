package dev.redlock;

import dev.redlock.NodeOutcome.Status;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.DefaultJedisSocketFactory;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisSocketFactory;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The only class that talks to Jedis: one pipelined connection to one master.
 *
 * <p>Callers write their command on the connection themselves (under a short lock) and return; a
 * single daemon thread per master, {@code redlock-io-N}, connects, reads replies in order and
 * completes each command's future. So a round costs the caller N socket writes and one wake-up, as
 * in a hand-written multiplexed client, while Jedis still does the protocol, AUTH, SELECT and TLS.
 *
 * <p>Why one pipelined connection rather than a pool: Redis executes one connection's commands in
 * order, so a release queued behind an acquire on the same master can never overtake it, and a late
 * reply is always read and matched to its command. Nothing here blocks without bound:
 *
 * <ul>
 *   <li>connecting (TCP, TLS, AUTH, SELECT) happens on the I/O thread, bounded by the node timeout;
 *       commands issued meanwhile wait in a queue and fail if the attempt fails;
 *   <li>after a failed attempt, commands fail at once for {@link #RECONNECT_DELAY_NANOS}, so a dead
 *       master costs nothing rather than a timeout per round;
 *   <li>a caller's write cannot block: the bytes awaiting replies are capped at half the socket's
 *       send buffer, and beyond that commands fail at once;
 *   <li>a connection whose oldest command has waited longer than the stall limit is dropped and
 *       re-opened (its commands fail). A SET still sitting unread in a paused server's buffer may
 *       then be applied after our release; it holds only our token and expires with its TTL.
 * </ul>
 */
final class JedisNodeClient implements NodeClient {

  private static final Logger log = LoggerFactory.getLogger(JedisNodeClient.class);

  static final long RECONNECT_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
  static final long MIN_STALL_NANOS = TimeUnit.SECONDS.toNanos(2);
  private static final int REQUESTED_SEND_BUFFER = 1 << 20;
  private static final long QUEUE_LIMIT_BYTES = 64 * 1024;

  private enum State {
    IDLE,
    CONNECTING,
    CONNECTED,
    CLOSED
  }

  private static final byte[] NX = Protocol.Keyword.NX.getRaw();
  private static final byte[] PX = Protocol.Keyword.PX.getRaw();

  private enum Kind {
    /** SET key token NX PX ttl: answers OK or nil. */
    SET,
    /** The acquire script: answers {code, fence, time}. */
    ACQUIRE,
    /** Any other script: answers 1, 0 or -1. */
    SCRIPT
  }

  private final String name;
  private final NodeAddress address;
  private final JedisClientConfig config;
  private final Ticker ticker;
  private final long stallNanos;
  private final Thread thread;

  private final Object lock = new Object();
  private final ArrayDeque<Command> waiting = new ArrayDeque<>(); // guarded by lock
  private final ArrayDeque<Command> inFlight = new ArrayDeque<>(); // guarded by lock
  private State state = State.CONNECTING; // guarded by lock
  private Link link; // guarded by lock
  private long queuedBytes; // guarded by lock: waiting + in flight
  private long limitBytes = QUEUE_LIMIT_BYTES; // guarded by lock
  private long retryAtNanos; // guarded by lock
  private String lastError = "not connected"; // guarded by lock
  private boolean attempted; // guarded by lock

  JedisNodeClient(
      NodeAddress address, int index, long nodeTimeoutNanos, Ticker ticker, SSLContext tls) {
    this.address = address;
    this.name = address.toString();
    this.ticker = ticker;
    this.stallNanos = Math.max(MIN_STALL_NANOS, 20 * nodeTimeoutNanos);
    this.config = clientConfig(address, nodeTimeoutNanos, tls);
    this.thread = new Thread(this::run, "redlock-io-" + index + "-" + name);
    thread.setDaemon(true);
    thread.start();
  }

  // ssl/sslSocketFactory/sslParameters: deprecated in Jedis 7.4 for SslOptions, which takes trust
  // stores rather than an SSLContext; they are what lets callers bring their own context.
  @SuppressWarnings("deprecation")
  private static JedisClientConfig clientConfig(
      NodeAddress address, long timeoutNanos, SSLContext tls) {
    int timeoutMillis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutNanos / 1_000_000));
    DefaultJedisClientConfig.Builder config =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(timeoutMillis)
            .socketTimeoutMillis(timeoutMillis)
            .protocol(RedisProtocol.RESP2)
            .user(address.user())
            .password(address.password())
            .database(address.database())
            .clientSetInfoConfig(ClientSetInfoConfig.DISABLED);
    if (address.tls()) {
      SSLParameters parameters = new SSLParameters();
      parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the host
      config.ssl(true).sslSocketFactory(tls.getSocketFactory()).sslParameters(parameters);
    }
    return config.build();
  }

  @Override
  public CompletableFuture<NodeReply> acquire(
      byte[] key, byte[] fenceKey, byte[] token, long ttlMillis, long minDatasetAgeMillis) {
    if (fenceKey == null && minDatasetAgeMillis == 0) {
      // Neither fencing nor the restart guard: the plain Redlock command, no script.
      return submit(
          new Command(
              Kind.SET, null, new byte[][] {key}, token, NX, PX, Protocol.toByteArray(ttlMillis)));
    }
    return submit(
        new Command(
            Kind.ACQUIRE,
            LuaScript.ACQUIRE,
            new byte[][] {key, fenceKey, LuaScript.DATASET_MARKER},
            token,
            Protocol.toByteArray(ttlMillis),
            Protocol.toByteArray(minDatasetAgeMillis)));
  }

  @Override
  public CompletableFuture<NodeReply> fence(byte[] key, byte[] fenceKey, byte[] token, long fence) {
    return submit(
        new Command(
            Kind.SCRIPT,
            LuaScript.FENCE,
            new byte[][] {key, fenceKey},
            token,
            Protocol.toByteArray(fence)));
  }

  @Override
  public CompletableFuture<NodeReply> release(byte[] key, byte[] token) {
    return submit(new Command(Kind.SCRIPT, LuaScript.RELEASE, new byte[][] {key}, token));
  }

  @Override
  public CompletableFuture<NodeReply> extend(byte[] key, byte[] token, long ttlMillis) {
    return submit(
        new Command(
            Kind.SCRIPT,
            LuaScript.EXTEND,
            new byte[][] {key},
            token,
            Protocol.toByteArray(ttlMillis)));
  }

  @Override
  public CompletableFuture<NodeReply> admit(long minDatasetAgeMillis) {
    return submit(
        new Command(
            Kind.SCRIPT,
            LuaScript.ADMIT,
            new byte[][] {LuaScript.DATASET_MARKER},
            Protocol.toByteArray(minDatasetAgeMillis)));
  }

  private CompletableFuture<NodeReply> submit(Command command) {
    List<Command> dropped = List.of();
    Link stalled = null;
    String rejection = null;
    synchronized (lock) {
      long now = ticker.read();
      if (state == State.CONNECTED
          && !inFlight.isEmpty()
          && now - inFlight.peek().writtenAt > stallNanos) {
        stalled = link;
        dropped = detachLocked("no reply for " + TimeUnit.NANOSECONDS.toMillis(stallNanos) + " ms");
        retryAtNanos = now;
      }
      switch (state) {
        case CONNECTED -> {
          if (queuedBytes + command.bytes > limitBytes) {
            rejection = "too many commands awaiting replies";
          } else if (!writeLocked(command)) {
            stalled = link;
            dropped = concat(dropped, detachLocked(lastError));
            rejection = lastError;
          }
        }
        case CONNECTING -> {
          if (queuedBytes + command.bytes > limitBytes) {
            rejection = "too many commands waiting for the connection";
          } else {
            waiting.add(command);
            queuedBytes += command.bytes;
          }
        }
        case IDLE -> {
          if (now - retryAtNanos < 0) {
            rejection = lastError;
          } else {
            state = State.CONNECTING;
            waiting.add(command);
            queuedBytes += command.bytes;
            lock.notifyAll();
          }
        }
        case CLOSED -> rejection = "client is closed";
      }
    }
    if (stalled != null) {
      stalled.close();
    }
    failAll(dropped, "connection dropped: ");
    if (rejection != null) {
      command.reply.completeExceptionally(new NodeUnavailableException(rejection));
    }
    return command.reply;
  }

  /** Writes and flushes one command; on an I/O error records it and returns false. */
  private boolean writeLocked(Command command) {
    try {
      command.writtenAt = ticker.read();
      link.connection.send(command.arguments());
      inFlight.add(command);
      if (!command.counted) {
        command.counted = true;
        queuedBytes += command.bytes;
      }
      return true;
    } catch (RuntimeException e) {
      lastError = describe(e);
      if (!command.counted) {
        command.counted = true;
        queuedBytes += command.bytes;
      }
      inFlight.add(command); // fails with the rest of the connection's commands
      return false;
    }
  }

  /** Detaches the current link; returns the commands that were waiting on it. */
  private List<Command> detachLocked(String reason) {
    List<Command> dropped = new ArrayList<>(inFlight);
    dropped.addAll(waiting);
    inFlight.clear();
    waiting.clear();
    queuedBytes = 0;
    link = null;
    lastError = reason;
    if (state != State.CLOSED) {
      state = State.IDLE;
    }
    return dropped;
  }

  private void run() {
    try {
      while (true) {
        Link current;
        synchronized (lock) {
          while (state == State.IDLE) {
            lock.wait();
          }
          if (state == State.CLOSED) {
            return;
          }
          current = link;
        }
        if (current == null) {
          connect();
        } else {
          readReplies(current);
        }
      }
    } catch (InterruptedException e) {
      // close() interrupts only when it has already failed every command
    } catch (RuntimeException | Error e) {
      log.error("I/O thread for {} failed; the node will count as unavailable", name, e);
      List<Command> dropped;
      synchronized (lock) {
        dropped = detachLocked("I/O thread failed: " + describe(e));
        state = State.CLOSED;
      }
      failAll(dropped, "");
    }
  }

  private void connect() {
    Link fresh = null;
    String error = null;
    try {
      fresh = Link.open(address, config);
    } catch (RuntimeException e) {
      error = describe(e);
      log.debug("cannot connect to {}: {}", name, error);
    }
    List<Command> dropped = List.of();
    Link broken = null;
    synchronized (lock) {
      attempted = true;
      lock.notifyAll();
      if (state == State.CLOSED) {
        broken = fresh;
        dropped = detachLocked("client is closed");
      } else if (error != null) {
        dropped = detachLocked(error);
        retryAtNanos = ticker.read() + RECONNECT_DELAY_NANOS;
      } else {
        link = fresh;
        state = State.CONNECTED;
        limitBytes = Math.max(QUEUE_LIMIT_BYTES, fresh.sendBufferBytes / 2);
        while (!waiting.isEmpty()) {
          Command command = waiting.poll();
          if (!writeLocked(command)) {
            broken = fresh;
            dropped = detachLocked(lastError);
            break;
          }
        }
      }
    }
    if (broken != null) {
      broken.close();
    }
    failAll(dropped, "");
  }

  private void readReplies(Link current) {
    while (true) {
      Object reply;
      try {
        reply = current.connection.getUnflushedObject();
      } catch (JedisDataException e) {
        reply = e; // an error reply: the stream is still in step
      } catch (RuntimeException e) {
        connectionLost(current, describe(e));
        return;
      }
      Command command;
      boolean resent = false;
      synchronized (lock) {
        if (link != current) {
          return; // dropped by a caller (stall) or by close(); its commands have been failed
        }
        command = inFlight.poll();
        if (command != null && reply instanceof JedisNoScriptException && !command.evalFallback) {
          // The master lost its script cache (restart, SCRIPT FLUSH): send the body once by EVAL.
          command.evalFallback = true;
          resent = writeLocked(command); // on failure it fails with the connection's other commands
          if (!resent) {
            command = null;
          }
        } else if (command != null) {
          queuedBytes -= command.bytes;
        }
      }
      if (resent) {
        continue;
      }
      if (command == null) {
        connectionLost(current, "reply without a command, or a failed EVAL fallback");
        return;
      }
      command.complete(reply);
    }
  }

  private void connectionLost(Link current, String reason) {
    List<Command> dropped = List.of();
    synchronized (lock) {
      if (link == current) {
        dropped = detachLocked(reason);
        retryAtNanos = ticker.read(); // reconnect on the next command
      }
    }
    current.close();
    log.debug("connection to {} lost: {}", name, reason);
    failAll(dropped, "connection lost: ");
  }

  private void failAll(List<Command> commands, String prefix) {
    if (commands.isEmpty()) {
      return;
    }
    String reason;
    synchronized (lock) {
      reason = lastError;
    }
    NodeUnavailableException error = new NodeUnavailableException(prefix + reason);
    for (Command command : commands) {
      command.reply.completeExceptionally(error);
    }
  }

  @Override
  public void awaitFirstConnect(long deadlineNanos) {
    synchronized (lock) {
      while (!attempted && state != State.CLOSED) {
        long left = deadlineNanos - ticker.read();
        if (left <= 0) {
          return;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  @Override
  public void close() {
    List<Command> dropped;
    Link current;
    synchronized (lock) {
      if (state == State.CLOSED) {
        return;
      }
      current = link;
      dropped = detachLocked("client is closed");
      state = State.CLOSED;
      lock.notifyAll();
    }
    if (current != null) {
      current.close();
    }
    failAll(dropped, "");
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
    return "JedisNodeClient{" + name + "}";
  }

  private static String describe(Throwable e) {
    Throwable cause = e.getCause() != null && e.getMessage() == null ? e.getCause() : e;
    String message = cause.getMessage();
    return message == null ? cause.getClass().getSimpleName() : message;
  }

  private static <T> List<T> concat(List<T> a, List<T> b) {
    if (a.isEmpty()) {
      return b;
    }
    List<T> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  /** One script call and the future its reply completes. */
  private static final class Command {
    final Kind kind;
    final LuaScript script;
    final byte[][] keys;
    final byte[][] args;
    final int bytes;
    final CompletableFuture<NodeReply> reply = new CompletableFuture<>();
    long writtenAt; // guarded by the client's lock
    boolean evalFallback; // guarded by the client's lock
    boolean counted; // guarded by the client's lock

    Command(Kind kind, LuaScript script, byte[][] keys, byte[]... args) {
      this.kind = kind;
      this.script = script;
      this.keys = keys;
      this.args = args;
      int size = 64 + (script == null ? 0 : script.body().length);
      for (byte[] key : keys) {
        size += key.length + 16;
      }
      for (byte[] arg : args) {
        size += arg.length + 16;
      }
      this.bytes = size;
    }

    CommandArguments arguments() {
      if (kind == Kind.SET) {
        CommandArguments set = new CommandArguments(Protocol.Command.SET).key(keys[0]);
        for (byte[] arg : args) {
          set.add(arg);
        }
        return set;
      }
      CommandArguments arguments =
          evalFallback
              ? new CommandArguments(Protocol.Command.EVAL).add(script.body())
              : new CommandArguments(Protocol.Command.EVALSHA).add(script.sha1());
      arguments.add(keys.length);
      for (byte[] key : keys) {
        arguments.key(key);
      }
      for (byte[] arg : args) {
        arguments.add(arg);
      }
      return arguments;
    }

    void complete(Object reply) {
      if (reply instanceof JedisDataException error) {
        // An error reply from the server: report its first line only.
        this.reply.completeExceptionally(
            new NodeUnavailableException(firstLine(error.getMessage())));
        return;
      }
      NodeReply answer = null;
      if (kind == Kind.SET) {
        answer = NodeReply.of(reply == null ? Status.TAKEN : Status.GRANTED);
      } else if (kind == Kind.SCRIPT && reply instanceof Long code) {
        answer = NodeReply.ofScriptCode(code);
      } else if (kind == Kind.ACQUIRE
          && reply instanceof List<?> values
          && values.size() == 3
          && values.get(0) instanceof Long code
          && values.get(1) instanceof Long fence
          && values.get(2) instanceof Long micros) {
        Status status = code == 1L ? Status.GRANTED : code == 2L ? Status.RESTARTED : Status.TAKEN;
        answer = new NodeReply(status, fence, micros);
      }
      if (answer == null) {
        this.reply.completeExceptionally(
            new NodeUnavailableException("unexpected reply to " + kind));
      } else {
        this.reply.complete(answer);
      }
    }

    private static String firstLine(String message) {
      if (message == null) {
        return "error reply";
      }
      int newline = message.indexOf('\n');
      return newline < 0 ? message : message.substring(0, newline);
    }
  }

  /** An open connection and the send buffer it got. */
  private static final class Link {
    final PipelinedConnection connection;
    final int sendBufferBytes;

    private Link(PipelinedConnection connection, int sendBufferBytes) {
      this.connection = connection;
      this.sendBufferBytes = sendBufferBytes;
    }

    static Link open(NodeAddress address, JedisClientConfig config) {
      SizedSocketFactory sockets =
          new SizedSocketFactory(
              new DefaultJedisSocketFactory(
                  new HostAndPort(address.host(), address.port()), config));
      PipelinedConnection connection = new PipelinedConnection(sockets, config);
      try {
        connection.loadScripts(); // still under the handshake's timeout
        connection.setTimeoutInfinite(); // replies are awaited by callers, each with a deadline
      } catch (RuntimeException e) {
        connection.closeNow();
        throw e;
      }
      return new Link(connection, sockets.sendBufferBytes);
    }

    void close() {
      connection.closeNow();
    }
  }

  /** Opens sockets with a large send buffer and records the size the kernel granted. */
  private static final class SizedSocketFactory implements JedisSocketFactory {
    private final JedisSocketFactory delegate;
    int sendBufferBytes = (int) QUEUE_LIMIT_BYTES * 2;

    SizedSocketFactory(JedisSocketFactory delegate) {
      this.delegate = delegate;
    }

    @Override
    public Socket createSocket() {
      Socket socket = delegate.createSocket();
      try {
        socket.setSendBufferSize(REQUESTED_SEND_BUFFER);
        sendBufferBytes = socket.getSendBufferSize();
      } catch (SocketException e) {
        throw new JedisConnectionException(e);
      }
      return socket;
    }
  }

  /** A Jedis connection whose writes and reads are driven separately. */
  private static final class PipelinedConnection extends Connection {
    PipelinedConnection(JedisSocketFactory sockets, JedisClientConfig config) {
      super(sockets, config);
    }

    void send(CommandArguments arguments) {
      sendCommand(arguments);
      flush();
    }

    /**
     * Loads every script in one pipelined round, so that a fresh or restarted master does not cost
     * a NOSCRIPT round trip (and maybe a lease) on first use. A master that refuses (an ACL without
     * SCRIPT, say) is still usable: EVALSHA falls back to EVAL.
     */
    void loadScripts() {
      for (LuaScript script : LuaScript.ALL) {
        sendCommand(
            new CommandArguments(Protocol.Command.SCRIPT)
                .add(Protocol.Keyword.LOAD)
                .add(script.body()));
      }
      flush();
      for (int i = 0; i < LuaScript.ALL.size(); i++) {
        try {
          getUnflushedObject();
        } catch (JedisDataException e) {
          log.debug("SCRIPT LOAD refused: {}", e.getMessage());
        }
      }
    }

    void closeNow() {
      try {
        forceDisconnect(); // closes the socket without flushing, from any thread
      } catch (java.io.IOException | RuntimeException e) {
        log.debug("closing connection: {}", e.toString());
      }
    }
  }
}
