package dev.redlock.internal.transport;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
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
import redis.clients.jedis.util.RedisInputStream;

/**
 * The only class that talks to Jedis: one open connection to one master, with writes and reads
 * driven separately. Jedis connects (TLS, AUTH, HELLO, SELECT), loads the scripts and writes the
 * commands; everything above this class sees only {@link NodeCommand}s and plain reply objects.
 *
 * <p>Replies are not decoded by Jedis, which allocates whatever a bulk string's header declares and
 * reads a line without bound: once open, the link reads raw bytes from Jedis's own input stream (so
 * that nothing Jedis read ahead is lost or read twice) and decodes them with a {@link
 * Resp.Decoder}, within its limits, as the selector transport does. Jedis still decodes the
 * handshake's replies, within the node timeout.
 *
 * <p>A link is single-use by construction. Jedis's {@code Connection.sendCommand} silently calls
 * {@code connect()} when its socket looks closed, which would open a fresh socket without AUTH,
 * SELECT or scripts; here the socket factory creates exactly one socket, so a closed link can only
 * fail. Reconnecting means opening a new link, with the whole handshake.
 */
final class JedisLink implements CommandPipeline.Link {

  private static final Logger log = LoggerFactory.getLogger(JedisLink.class);

  /** The send buffer asked of the kernel; the transport caps unanswered bytes below it. */
  private static final int REQUESTED_SEND_BUFFER = 1 << 20;

  /** The most bytes one raw read takes: Jedis's own input buffer holds 8 KiB. */
  private static final int READ_BYTES = 8 * 1024;

  private final PipelinedConnection connection;
  private final RedisInputStream replies; // Jedis's, read raw by the reading thread
  private final int sendBufferBytes;
  private final boolean scriptsLoaded;
  private final Incarnation.Facts facts;

  // The reading thread's: bytes read from the socket and not decoded yet (read mode), and the
  // decoder, which keeps a reply that arrived in part.
  private final byte[] chunk = new byte[READ_BYTES];
  private final ByteBuffer unread = ByteBuffer.wrap(chunk).limit(0);
  private final Resp.Decoder decoder = new Resp.Decoder();

  private JedisLink(
      PipelinedConnection connection,
      RedisInputStream replies,
      int sendBufferBytes,
      boolean scriptsLoaded,
      Incarnation.Facts facts) {
    this.connection = connection;
    this.replies = replies;
    this.sendBufferBytes = sendBufferBytes;
    this.scriptsLoaded = scriptsLoaded;
    this.facts = facts;
  }

  /**
   * Connects (TCP, TLS, AUTH, SELECT), reads the server's run and persistence ({@code INFO server},
   * {@code CONFIG GET *append*}: {@link Incarnation}) and loads every script, all bounded by the
   * node timeout, then leaves reads unbounded: replies are awaited by callers, each with a deadline
   * of its own.
   *
   * @throws RuntimeException if the master cannot be reached, refuses the handshake, or cannot load
   *     the scripts now (loading its dataset, busy with a script, ...)
   */
  static JedisLink open(NodeAddress address, long timeoutNanos, SSLContext tls) {
    JedisClientConfig config = clientConfig(address, timeoutNanos, tls);
    OneSocket socket =
        new OneSocket(
            new DefaultJedisSocketFactory(new HostAndPort(address.host(), address.port()), config));
    PipelinedConnection connection;
    try {
      connection = new PipelinedConnection(socket, config);
    } catch (JedisDataException e) {
      ServerError error = new ServerError(e.getMessage() == null ? "error" : e.getMessage());
      if (error.wantsPassword()) {
        throw new NodeUnavailableException(error.passwordMissing());
      }
      throw e;
    }
    boolean loaded;
    Incarnation.Facts facts;
    RedisInputStream replies;
    try {
      facts = connection.readFacts();
      loaded = connection.loadScripts();
      // From here on the replies are read raw, from Jedis's buffered stream: bytes it read ahead
      // while decoding the handshake's last reply are there.
      replies = connection.replies();
      connection.setTimeoutInfinite();
    } catch (RuntimeException e) {
      connection.closeNow();
      throw e;
    }
    return new JedisLink(connection, replies, socket.sendBufferBytes, loaded, facts);
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

  /**
   * Whether the master accepted every {@code SCRIPT LOAD}; if it refused for good (an ACL without
   * SCRIPT, say), scripts must be sent whole, by EVAL.
   */
  @Override
  public boolean scriptsLoaded() {
    return scriptsLoaded;
  }

  /** The send buffer the kernel granted, in bytes. */
  @Override
  public int sendBufferBytes() {
    return sendBufferBytes;
  }

  @Override
  public Incarnation.Facts facts() {
    return facts;
  }

  /**
   * Writes every part of one command, then flushes once. Never blocks for long: the transport keeps
   * the unanswered bytes below the send buffer.
   *
   * @throws RuntimeException if the connection is broken or closed
   */
  @Override
  public void write(NodeCommand command) {
    for (int part = 0, parts = command.parts(); part < parts; part++) {
      CommandArguments arguments = new CommandArguments(verb(command.verb(part)));
      for (byte[] word : command.arguments(part)) {
        arguments.add(word);
      }
      connection.sendCommand(arguments);
    }
    connection.flush();
  }

  /**
   * Reads the next reply: a {@link Long}, a {@code byte[]}, a {@link java.util.List}, {@code null},
   * or a {@link ServerError} for an error reply (after which the stream is still in step). Blocks
   * until a reply arrives or the link is closed. One thread reads.
   *
   * @throws Resp.ProtocolException if the master's bytes are no RESP2 or exceed {@link Resp}'s
   *     limits; the link must then be closed
   * @throws RuntimeException if the connection is broken or closed
   */
  Object read() {
    while (true) {
      Object reply = decoder.next(unread);
      if (reply != Resp.INCOMPLETE) {
        return reply;
      }
      int n = replies.read(chunk, 0, chunk.length); // blocks for at least one byte
      unread.position(0).limit(n);
    }
  }

  /** Closes the socket without flushing; callable from any thread, idempotent. */
  @Override
  public void close() {
    connection.closeNow();
  }

  private static Protocol.Command verb(NodeCommand.Verb verb) {
    return switch (verb) {
      case SET -> Protocol.Command.SET;
      case EVALSHA -> Protocol.Command.EVALSHA;
      case EVAL -> Protocol.Command.EVAL;
      case SCRIPT -> Protocol.Command.SCRIPT;
      case INFO -> Protocol.Command.INFO;
      case CONFIG -> Protocol.Command.CONFIG;
      case TIME -> Protocol.Command.TIME;
      case MGET -> Protocol.Command.MGET;
    };
  }

  /**
   * Creates one socket with a large send buffer and records the size the kernel granted; refuses to
   * create a second, so that Jedis cannot reconnect a closed link behind our back.
   */
  static final class OneSocket implements JedisSocketFactory {
    private final JedisSocketFactory delegate;
    private final AtomicBoolean used = new AtomicBoolean();
    int sendBufferBytes = 128 * 1024;
    volatile Socket socket; // set by the opening thread; closed from any

    OneSocket(JedisSocketFactory delegate) {
      this.delegate = delegate;
    }

    @Override
    public Socket createSocket() {
      if (!used.compareAndSet(false, true)) {
        throw new JedisConnectionException("link is closed; a new link must be opened");
      }
      socket = delegate.createSocket();
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

    /**
     * Jedis's input stream, which buffers what it read from the socket. A private field: Jedis has
     * no accessor, and the protected method that sees it changed its signature in Jedis 8, while
     * Spring Boot manages Jedis 6 (Boot 3.5) and 7 (Boot 4.0). Null if this Jedis has no such
     * field.
     */
    private static final VarHandle INPUT_STREAM = inputStreamField();

    private final OneSocket sockets;

    PipelinedConnection(OneSocket sockets, JedisClientConfig config) {
      super(sockets, config);
      this.sockets = sockets;
    }

    private static VarHandle inputStreamField() {
      try {
        return MethodHandles.privateLookupIn(Connection.class, MethodHandles.lookup())
            .findVarHandle(Connection.class, "inputStream", RedisInputStream.class);
      } catch (ReflectiveOperationException | RuntimeException e) {
        log.debug("no Connection.inputStream in this Jedis: {}", e.toString());
        return null;
      }
    }

    /** The stream Jedis decoded the handshake from, with whatever it read ahead. */
    RedisInputStream replies() {
      RedisInputStream in = INPUT_STREAM == null ? null : (RedisInputStream) INPUT_STREAM.get(this);
      if (in == null) {
        throw new IllegalStateException(
            "cannot read replies through this Jedis (no Connection.inputStream):"
                + " rediss:// masters need Jedis 6 to 8");
      }
      return in;
    }

    /** Flushes what {@link #sendCommand} buffered; public here for {@link JedisLink#write}. */
    @Override
    public void flush() {
      super.flush();
    }

    /**
     * Reads {@code INFO server} and {@code CONFIG GET *append*} in one pipelined round; a refusal
     * of either (an ACL) is recorded in the facts, not thrown.
     */
    Incarnation.Facts readFacts() {
      sendCommand(new CommandArguments(Protocol.Command.INFO).add("server"));
      sendCommand(new CommandArguments(Protocol.Command.CONFIG).add("GET").add("*append*"));
      flush();
      Object info = replyOrError();
      Object config = replyOrError();
      if (info instanceof ServerError error && error.wantsPassword()) {
        throw new NodeUnavailableException(error.passwordMissing());
      }
      return Incarnation.Facts.of(info, config);
    }

    private Object replyOrError() {
      try {
        return getUnflushedObject();
      } catch (JedisDataException e) {
        return new ServerError(e.getMessage() == null ? "error" : e.getMessage());
      }
    }

    /**
     * Loads every script in one pipelined round, so that a fresh or restarted master does not cost
     * a NOSCRIPT answer (a round trip more) on first use. Returns false if the master refused any
     * for good ({@code NOPERM}, an unknown command): scripts then go whole.
     *
     * @throws NodeUnavailableException if the master could not load them now ({@code LOADING},
     *     {@code BUSY}, ...): the link is not opened, and a new one is tried after the reconnect
     *     delay
     */
    boolean loadScripts() {
      for (LuaScript script : LuaScript.ALL) {
        sendCommand(
            new CommandArguments(Protocol.Command.SCRIPT)
                .add(Protocol.Keyword.LOAD)
                .add(script.body()));
      }
      flush();
      boolean loaded = true;
      for (int i = 0; i < LuaScript.ALL.size(); i++) {
        try {
          getUnflushedObject();
        } catch (JedisDataException e) {
          ServerError error =
              new ServerError(e.getMessage() == null ? "error reply" : e.getMessage());
          if (!error.refusesScriptLoad()) {
            throw new NodeUnavailableException("SCRIPT LOAD failed: " + error.firstLine());
          }
          log.debug("SCRIPT LOAD refused: {}", error.firstLine());
          loaded = false;
        }
      }
      return loaded;
    }

    /**
     * Closes the socket without flushing, from any thread. Closes the socket itself, not through
     * Jedis: Jedis 6 (the version Spring Boot 3.5 manages) has no forceDisconnect.
     */
    void closeNow() {
      Socket open = sockets.socket;
      if (open == null) {
        return;
      }
      try {
        open.close();
      } catch (IOException | RuntimeException e) {
        log.debug("closing connection: {}", e.toString());
      }
    }
  }
}
