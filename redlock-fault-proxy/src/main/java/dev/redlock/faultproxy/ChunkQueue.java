package dev.redlock.faultproxy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A FIFO of chunks that counts its bytes and accepts nothing after {@link Chunk#END}. Not
 * thread-safe: only used under its link's lock.
 */
final class ChunkQueue {
  private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
  private long bytes;
  private boolean ended;

  /** Appends a chunk, or drops it if the stream already ended. */
  void add(Chunk chunk) {
    if (ended) {
      return;
    }
    ended = chunk.isEnd();
    chunks.addLast(chunk);
    bytes += chunk.length();
  }

  /** Puts back the unsent rest of the chunk just polled. */
  void pushFront(Chunk chunk) {
    chunks.addFirst(chunk);
    bytes += chunk.length();
  }

  Chunk peek() {
    return chunks.peekFirst();
  }

  Chunk poll() {
    Chunk chunk = chunks.pollFirst();
    if (chunk != null) {
      bytes -= chunk.length();
    }
    return chunk;
  }

  boolean isEmpty() {
    return chunks.isEmpty();
  }

  long bytes() {
    return bytes;
  }

  /** Discards every queued chunk; once ended, the queue stays ended. */
  void clear() {
    chunks.clear();
    bytes = 0;
  }

  /** Appends all of this queue's chunks, in order, to {@code other}. */
  void moveTo(ChunkQueue other) {
    while (!chunks.isEmpty()) {
      other.add(poll());
    }
  }

  /** Removes and returns every queued chunk. */
  List<Chunk> drain() {
    List<Chunk> drained = new ArrayList<>(chunks);
    clear();
    return drained;
  }
}
