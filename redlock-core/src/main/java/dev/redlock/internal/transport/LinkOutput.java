package dev.redlock.internal.transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The output side of one {@link SelectorLink}: the buffer callers append their commands to, who
 * sends it and when, and what the socket does not take at once, left to the loop's thread.
 *
 * <p>Threads: {@link #write}, {@link #kick} and {@link #close} are called from any thread. A write
 * only appends the command to the output buffer (under {@link #out}, called under the pipeline's
 * lock, so bytes go out in the pipeline's order); the kick that follows it, outside the pipeline's
 * lock, sends the buffer unless another thread is sending already ({@link #writer}): that thread
 * sends whatever was appended meanwhile too, so callers in numbers share system calls. Whatever the
 * socket does not take at once is left to the loop's thread ({@code OP_WRITE}). Everything else
 * runs on the loop's thread.
 *
 * <p>Reply clocking. While replies are due on a link and other callers are about ({@link
 * SelectorLoop#busy}), a kick sends nothing: the thread that reads those replies sends everything
 * appended meanwhile, in one system call, right after it read them. Under load the master's own
 * replies thus pace the writes, one per batch rather than one per caller: on loopback at 32 threads
 * this halved the client's CPU per lock. The reader always reads before it looks at the buffer and
 * a kick counts replies due only after it appended, so either the kick sees none due and sends, or
 * a read still to come sends them. Replies that are late (a distant or paused master, replies lost
 * on the way back) hold nothing for long: the loop's leader watches a link that holds bytes back
 * ({@link #check}) and sends them once the oldest reply due is {@link SelectorLink#HOLD_NANOS}
 * late, so a master whose replies are lost still gets our release, and a command waits at most
 * about that long for a slow master's earlier replies.
 */
final class LinkOutput {

  /**
   * What the output asks of its link and the link's loop ({@link SelectorLink} and {@link
   * SelectorLoop}): the seam through which a test drives the output's threads alone
   * (LinkOutputLincheckIT).
   */
  interface Owner {
    /** Whether other callers are about: {@link SelectorLoop#busy}. */
    boolean busy();

    /** Has the loop's leader look at this link for bytes held back ({@link #check}). */
    void watch();

    /** Makes the loop's select return: the socket is full, {@code OP_WRITE} was set. */
    void wakeup();

    /**
     * A write failed on a caller's thread: the link is broken, told on the loop's thread.
     *
     * @param reason why
     * @return false if the loop has stopped and will not tell it
     */
    boolean brokenLater(String reason);

    /**
     * A write failed on the loop's thread: the link is broken.
     *
     * @param reason why
     */
    void broken(String reason);
  }

  private static final Logger log = LoggerFactory.getLogger(LinkOutput.class);

  private static final int INITIAL_OUTPUT_BYTES = 8 * 1024;

  private static final byte[][] VERBS = verbs();

  private final Owner owner;
  private final long holdNanos;
  private final NodeAddress address;

  /** Guards the output side, which callers and the loop's thread share. */
  private final ReentrantLock out = new ReentrantLock();

  // Guarded by out; in write mode.
  private ByteBuffer output = ByteBuffer.allocate(INITIAL_OUTPUT_BYTES);
  private boolean flushing; // guarded by out: OP_WRITE is set, the loop flushes what is left
  private boolean closed; // guarded by out

  // Reply clocking (see kick): the commands sent and the replies read, counting each part.
  private long appendedParts; // guarded by out: appended and not yet taken to send
  private volatile long sentParts; // written under out
  private volatile long readReplies; // written by the thread reading the link

  // When the oldest batch with replies due was sent (0: none due), and the count of replies read
  // that answers it. When it is answered while later ones are due, they count from then. Written
  // under out.
  private volatile long dueSince;
  private long dueUntil;

  /** Whether the loop's leader watches this link for bytes held back ({@link #check}). */
  private final AtomicBoolean watched = new AtomicBoolean();

  /** Held by the one thread that may write to the socket now. */
  private final AtomicBoolean writer = new AtomicBoolean();

  // The writer's only: the bytes taken from output and not all written yet (read mode), and a
  // buffer to give output next.
  private ByteBuffer sending;
  private ByteBuffer spare;

  /** The socket of the current address; written on the loop's thread, under out. */
  private SocketChannel channel;

  /** The socket's key; written on the loop's thread before anything is sent. */
  private SelectionKey key;

  LinkOutput(Owner owner, long holdNanos, NodeAddress address) {
    this.owner = owner;
    this.holdNanos = holdNanos;
    this.address = address;
  }

  /**
   * Makes {@code opened} the socket, closing the one before; on the loop's thread. Returns false,
   * and closes {@code opened}, if this side was closed meanwhile.
   */
  boolean attach(SocketChannel opened) throws IOException {
    out.lock();
    try {
      if (closed) {
        opened.close();
        return false;
      }
      SocketChannel previous = channel;
      channel = opened;
      if (previous != null) {
        previous.close();
      }
      return true;
    } finally {
      out.unlock();
    }
  }

  /** The socket's key, once registered; on the loop's thread. */
  void registered(SelectionKey key) {
    this.key = key;
  }

  /** The socket of the current address; for the loop's thread. */
  SocketChannel channel() {
    return channel;
  }

  /** The reader read one more reply; one thread reads at a time. */
  void replyRead() {
    readReplies++;
  }

  /** Appends one command of the link's own (the handshake's). */
  void append(byte[] verb, byte[][] words) {
    out.lock();
    try {
      put(verb, words);
    } finally {
      out.unlock();
    }
  }

  /** The bytes of {@code verb} as written. */
  static byte[] verb(NodeCommand.Verb verb) {
    return VERBS[verb.ordinal()];
  }

  /** Appends {@code command} (each of its parts); under the pipeline's lock, so in its order. */
  void write(NodeCommand command) {
    out.lock();
    try {
      if (closed) {
        throw new IllegalStateException("connection is closed");
      }
      for (int part = 0, parts = command.parts(); part < parts; part++) {
        put(VERBS[command.verb(part).ordinal()], command.arguments(part));
      }
    } finally {
      out.unlock();
    }
  }

  /**
   * Sends what was appended, unless replies are due on this link and other callers are about
   * ({@link SelectorLoop#busy}; a caller alone would only wait): then the thread that reads them
   * sends it, with whatever else was appended meanwhile, in one system call ({@link
   * #sendDeferred}), or the loop's leader does once they are late ({@link #check}). Otherwise as
   * {@link #send()}. Reads the sent count before the read count, so a reply it counts as due was
   * due when it looked: the reader's look at the buffer comes later.
   */
  void kick() {
    long sent = sentParts;
    if (sent - readReplies > 0 && owner.busy()) {
      if (!watched.get() && watched.compareAndSet(false, true)) {
        owner.watch(); // in case the replies do not come: check sends what is held then
      }
      return;
    }
    send();
  }

  /**
   * The leader's look at a link that held bytes back, right after it read what had arrived: once
   * the oldest reply due is {@link SelectorLink#HOLD_NANOS} late (or none is due, or the link
   * closed) it sends whatever is held and is done. Bytes are thus never held back for long by
   * replies that do not come (a paused master, replies lost on the way back): the master still gets
   * the release that followed an acquire whose reply it cannot send.
   */
  boolean check(long nowNanos) {
    long since = dueSince;
    if (sentParts - readReplies > 0 && since != 0 && nowNanos - since < holdNanos && !closed()) {
      return false;
    }
    watched.set(false); // before sending: a kick that holds bytes back from now on watches again
    send();
    return true;
  }

  private boolean closed() {
    out.lock();
    try {
      return closed;
    } finally {
      out.unlock();
    }
  }

  /** After a read: notes whether replies are still due, and sends what callers left. */
  void sendDeferred() {
    boolean pending;
    out.lock();
    try {
      long read = readReplies;
      if (dueSince != 0 && read - dueUntil >= 0) {
        // Replies still due are of batches sent since: counted from now, they may be held a little
        // longer than HOLD_NANOS, never less.
        dueSince = sentParts - read > 0 ? System.nanoTime() : 0;
        dueUntil = sentParts;
      }
      pending = unsent();
    } finally {
      out.unlock();
    }
    if (pending) {
      send();
    }
  }

  /**
   * Sends what was appended, unless another thread is sending (it re-checks after it stops, so
   * nothing appended is left behind). Never blocks: what the socket does not take is left to the
   * loop's thread. A failed write breaks the link, told on the loop's thread.
   */
  private void send() {
    while (writer.compareAndSet(false, true)) {
      try {
        send(false);
      } catch (IOException | RuntimeException e) {
        failedWrite(e);
        return;
      } finally {
        writer.set(false);
      }
      if (!pending()) {
        return;
      }
    }
  }

  /** Whether bytes wait in the output buffer with no one to send them. */
  private boolean pending() {
    out.lock();
    try {
      return unsent();
    } finally {
      out.unlock();
    }
  }

  /** Whether bytes wait in the output buffer with no one to send them; under {@link #out}. */
  private boolean unsent() {
    return !closed && !flushing && output.position() > 0;
  }

  /**
   * As the writer: sends the bytes taken and then whatever was appended, until none is left or the
   * socket is full. From a kick ({@code fromLoop} false) it stops when the loop's thread flushes
   * ({@code OP_WRITE} set), and sets that when the socket is full; from the loop's thread it clears
   * it once everything went out.
   */
  private void send(boolean fromLoop) throws IOException {
    while (true) {
      if (sending == null) {
        out.lock();
        try {
          if (closed || (flushing && !fromLoop)) {
            return;
          }
          if (output.position() == 0) {
            if (fromLoop && flushing) {
              flushing = false;
              key.interestOpsAnd(~SelectionKey.OP_WRITE);
            }
            return;
          }
          sending = output.flip();
          output = spare != null ? spare : ByteBuffer.allocate(INITIAL_OUTPUT_BYTES);
          spare = null;
          long sent = sentParts + appendedParts;
          appendedParts = 0;
          if (dueSince == 0) {
            dueSince = System.nanoTime();
            dueUntil = sent;
          }
          sentParts = sent;
        } finally {
          out.unlock();
        }
      }
      channel.write(sending);
      if (sending.hasRemaining()) {
        if (!fromLoop) {
          out.lock();
          try {
            if (!closed && !flushing) {
              flushing = true;
              key.interestOpsOr(SelectionKey.OP_WRITE);
            }
          } finally {
            out.unlock();
          }
          owner.wakeup();
        }
        return;
      }
      if (sending.capacity() <= INITIAL_OUTPUT_BYTES * 8) {
        spare = sending.clear(); // a burst is over: a big buffer is given back
      }
      sending = null;
    }
  }

  /** A write to the socket failed: the link is broken, which the loop's thread tells. */
  private void failedWrite(Exception e) {
    String reason = CommandPipeline.describe(e);
    if (!owner.brokenLater(reason)) {
      close();
    }
  }

  /** Appends one command to the output buffer, growing it as needed. */
  private void put(byte[] verb, byte[][] words) {
    int length = Resp.length(verb, words);
    if (output.remaining() < length) {
      int capacity = Math.max(output.capacity() * 2, output.position() + length);
      output = ByteBuffer.allocate(capacity).put(output.flip());
    }
    Resp.write(output, verb, words);
    appendedParts++;
  }

  /** The socket is writable again: sends the rest (on the loop's thread). */
  void flushLater() {
    if (!writer.compareAndSet(false, true)) {
      return; // a kick is sending; OP_WRITE stays set, so the selector comes back
    }
    try {
      send(true);
    } catch (IOException | RuntimeException e) {
      writer.set(false);
      owner.broken(CommandPipeline.describe(e));
      return;
    }
    writer.set(false);
    if (pending()) {
      send(); // appended after the last look, while this thread was the writer
    }
  }

  /** Closes the connection without flushing; any thread, idempotent. */
  void close() {
    SocketChannel current;
    out.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      current = channel;
    } finally {
      out.unlock();
    }
    if (current == null) {
      return; // not connecting yet: no socket will be opened now
    }
    try {
      current.close(); // also cancels the key
    } catch (IOException e) {
      log.debug("closing connection to {}: {}", address, e.toString());
    }
  }

  private static byte[][] verbs() {
    NodeCommand.Verb[] verbs = NodeCommand.Verb.values();
    byte[][] names = new byte[verbs.length][];
    for (NodeCommand.Verb verb : verbs) {
      names[verb.ordinal()] = verb.name().getBytes(StandardCharsets.US_ASCII);
    }
    return names;
  }
}
