package dev.redlock.drill;

import java.util.Arrays;

/**
 * A growable list of {@code long} samples (durations in nanoseconds, or instants on {@link
 * System#nanoTime()}) that one thread fills without boxing. Not thread-safe: each thread keeps its
 * own and hands it over after a join.
 */
public final class Samples {

  private long[] values = new long[1024];
  private int size;

  /** Appends one sample. */
  public void add(long value) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = value;
  }

  /** Appends every sample of {@code other}. */
  public void addAll(Samples other) {
    if (size + other.size > values.length) {
      values = Arrays.copyOf(values, Math.max(size + other.size, size * 2));
    }
    System.arraycopy(other.values, 0, values, size, other.size);
    size += other.size;
  }

  /** Returns the number of samples. */
  public int size() {
    return size;
  }

  /** Returns the sample at {@code index}, in insertion order. */
  public long get(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException(index);
    }
    return values[index];
  }

  /** Returns a sorted copy of the samples. */
  public long[] sorted() {
    long[] copy = Arrays.copyOf(values, size);
    Arrays.sort(copy);
    return copy;
  }

  /** Returns count, p50, p99 and max of the samples; all zero when there are none. */
  public Percentiles.Summary summary() {
    return Percentiles.summarize(sorted());
  }
}
