package dev.redlock.faultproxy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One direction of a proxied connection: bytes read from a source socket pass through a chain of
 * toxics and are written to a destination socket.
 *
 * <p><b>Design.</b> Toxiproxy gives each toxic on each link a goroutine, joined by channels, and
 * interrupts goroutines to change the chain. In Java that would be a thread per toxic per link and
 * a delicate hand-over, so a link here has two threads and one lock instead. The <em>reader</em>
 * blocks on the source, stamps each read with its arrival time and queues it at the head of the
 * chain. The <em>pump</em> owns the chain: one {@link Stage} per toxic, each a small state machine
 * with its own input queue, followed by an output queue. A pass runs the stages first to last; each
 * moves what it may into the next queue (now, in pieces, later or never) and names the instant it
 * next needs to run, so a chunk nothing holds back crosses the whole chain in one pass. The pump
 * then writes what reached the output, or waits on the lock's condition until the earliest named
 * instant; new data, chain changes and close all signal that condition.
 *
 * <p>Because all state sits under one lock, a live change is a diff by toxic name: a new toxic gets
 * a fresh stage at the end (as in Toxiproxy); an updated one keeps its stage, which takes the new
 * settings, draws toxicity again and restarts its timers but keeps its counters; a removed one
 * hands what it holds to its successor, behind that successor's older chunks, so nothing is lost or
 * reordered (this is how a rate-0 bandwidth releases its backlog), except that a removed timeout
 * ends the links it affected. The end of the source is a chunk too ({@link Chunk#END}), so it
 * queues behind data and can be delayed (slow_close); toxics that close the link drop what they
 * hold and send END on. END or a write error at the pump closes the whole connection, both sockets.
 * The reader pauses while the link buffers more than {@value #MAX_BUFFERED_BYTES} bytes, so a
 * held-back link pushes back on its sender through TCP.
 */
final class ToxicLink {
  static final int READ_BUFFER_BYTES = 32 * 1024;
  static final long MAX_BUFFERED_BYTES = 4L * 1024 * 1024;

  private static final Logger log = LoggerFactory.getLogger(ToxicLink.class);

  private final String name;
  private final InputStream source;
  private final OutputStream destination;
  private final Runnable onEnd;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final ChunkQueue output = new ChunkQueue();
  private List<Stage> stages = new ArrayList<>();
  private boolean closed;
  private boolean readerBlocked;

  /**
   * @param name for thread names and logs
   * @param chain the toxics of this link's direction when the connection starts
   * @param onEnd closes the whole connection; both link threads may call it, so it must be
   *     idempotent
   */
  ToxicLink(
      String name,
      InputStream source,
      OutputStream destination,
      List<Toxic> chain,
      Runnable onEnd) {
    this.name = name;
    this.source = source;
    this.destination = destination;
    this.onEnd = onEnd;
    long now = System.nanoTime();
    for (Toxic toxic : chain) {
      stages.add(Stage.create(toxic, now));
    }
  }

  /** Starts the reader and pump threads. */
  void start(DaemonThreads threads) {
    threads.start(name + "-read", this::readLoop);
    threads.start(name + "-pump", this::pumpLoop);
  }

  /** Replaces the chain, keeping the stages of toxics that stay (see the class comment). */
  void applyChain(List<Toxic> chain) {
    lock.lock();
    try {
      long now = System.nanoTime();
      Map<String, Stage> kept = new HashMap<>();
      for (Toxic toxic : chain) {
        kept.put(toxic.name(), null);
      }
      for (int i = 0; i < stages.size(); i++) {
        Stage stage = stages.get(i);
        if (kept.containsKey(stage.toxic().name())) {
          kept.put(stage.toxic().name(), stage);
        } else {
          stage.remove(i + 1 < stages.size() ? stages.get(i + 1).input : output);
        }
      }
      List<Stage> next = new ArrayList<>(chain.size());
      for (Toxic toxic : chain) {
        Stage stage = kept.get(toxic.name());
        if (stage == null) {
          stage = Stage.create(toxic, now);
        } else if (stage.toxic() != toxic) {
          stage.reconfigure(toxic, now);
        }
        next.add(stage);
      }
      stages = next;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Stops both threads' work; the owner closes the sockets, which unblocks them. */
  void close() {
    lock.lock();
    try {
      closed = true;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void readLoop() {
    byte[] buffer = new byte[READ_BUFFER_BYTES];
    try {
      int count;
      while ((count = source.read(buffer)) >= 0) {
        Chunk chunk = new Chunk(Arrays.copyOf(buffer, count), 0, count, System.nanoTime());
        if (!offer(chunk)) {
          return;
        }
      }
    } catch (IOException e) {
      log.debug("{}: source ended: {}", name, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    try {
      offer(Chunk.END);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Queues a chunk at the head of the chain; false once the link is closed. */
  private boolean offer(Chunk chunk) throws InterruptedException {
    lock.lock();
    try {
      while (!closed && !chunk.isEnd() && bufferedBytes() >= MAX_BUFFERED_BYTES) {
        readerBlocked = true;
        changed.await();
      }
      readerBlocked = false;
      if (closed) {
        return false;
      }
      (stages.isEmpty() ? output : stages.get(0).input).add(chunk);
      changed.signalAll();
      return true;
    } finally {
      lock.unlock();
    }
  }

  private void pumpLoop() {
    try {
      while (true) {
        List<Chunk> ready = awaitOutput();
        if (ready == null) {
          return;
        }
        for (Chunk chunk : ready) {
          if (chunk.isEnd()) {
            onEnd.run();
            return;
          }
          destination.write(chunk.data(), chunk.offset(), chunk.length());
        }
      }
    } catch (IOException e) {
      log.debug("{}: destination failed: {}", name, e.toString());
      onEnd.run();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      onEnd.run();
    }
  }

  /** Runs passes until something reaches the output queue; null once the link is closed. */
  private List<Chunk> awaitOutput() throws InterruptedException {
    lock.lock();
    try {
      while (!closed) {
        long now = System.nanoTime();
        long wakeAt = Stage.NEVER;
        for (int i = 0; i < stages.size(); i++) {
          ChunkQueue next = i + 1 < stages.size() ? stages.get(i + 1).input : output;
          wakeAt = Math.min(wakeAt, stages.get(i).pass(now, next));
        }
        List<Chunk> ready = output.isEmpty() ? null : output.drain();
        if (readerBlocked && bufferedBytes() < MAX_BUFFERED_BYTES) {
          changed.signalAll();
        }
        if (ready != null) {
          return ready;
        }
        if (wakeAt == Stage.NEVER) {
          changed.await();
        } else {
          changed.awaitNanos(wakeAt - now);
        }
      }
      return null;
    } finally {
      lock.unlock();
    }
  }

  private long bufferedBytes() {
    long total = output.bytes();
    for (Stage stage : stages) {
      total += stage.input.bytes();
    }
    return total;
  }
}
