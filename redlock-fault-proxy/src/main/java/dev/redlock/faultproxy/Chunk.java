package dev.redlock.faultproxy;

/**
 * A run of bytes read from a link's source, stamped with its arrival time ({@link
 * System#nanoTime()}); slicing shares the array. {@link #END} marks the end of the stream.
 */
record Chunk(byte[] data, int offset, int length, long arrivalNanos) {
  /** The end of the stream: the source closed, or a toxic closed the link. */
  static final Chunk END = new Chunk(new byte[0], 0, 0, 0);

  boolean isEnd() {
    return this == END;
  }

  /** The first {@code count} bytes. */
  Chunk head(int count) {
    return new Chunk(data, offset, count, arrivalNanos);
  }

  /** Everything after the first {@code count} bytes. */
  Chunk tail(int count) {
    return new Chunk(data, offset + count, length - count, arrivalNanos);
  }

  /** The same bytes, restamped (a latency toxic counts later delays from its release time). */
  Chunk stampedAt(long nanos) {
    return new Chunk(data, offset, length, nanos);
  }
}
