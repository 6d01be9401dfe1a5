package dev.redlock.faultproxy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One toxic's per-connection state on one {@link ToxicLink}: an input queue plus a small state
 * machine that moves chunks from that queue to the next stage's queue when the toxic allows. See
 * {@link ToxicLink} for how stages are driven; everything here runs under the link's lock.
 */
abstract sealed class Stage {
  /** "No timer": the stage waits for new input or a chain change. */
  static final long NEVER = Long.MAX_VALUE;

  /** Bounds every configured delay so deadline arithmetic cannot overflow. */
  private static final long MAX_DELAY_NANOS = TimeUnit.DAYS.toNanos(365);

  /** Chunks that reached this stage and have not moved on. */
  final ChunkQueue input = new ChunkQueue();

  private Toxic toxic;
  private boolean affected;
  private boolean finished;

  Stage(Toxic toxic) {
    this.toxic = toxic;
    this.affected = draw(toxic);
  }

  /** Creates the stage for a toxic that starts on a link at {@code now}. */
  static Stage create(Toxic toxic, long now) {
    return switch (toxic.type()) {
      case LATENCY -> new Latency(toxic);
      case BANDWIDTH -> new Bandwidth(toxic);
      case SLOW_CLOSE -> new SlowClose(toxic);
      case TIMEOUT -> new Timeout(toxic, now);
      case RESET_PEER -> new ResetPeer(toxic);
      case SLICER -> new Slicer(toxic);
      case LIMIT_DATA -> new LimitData(toxic);
    };
  }

  final Toxic toxic() {
    return toxic;
  }

  /**
   * Moves what may move now into {@code output} and returns when this stage next needs to run
   * ({@link System#nanoTime()} value, always later than {@code now}), or {@link #NEVER}.
   */
  final long pass(long now, ChunkQueue output) {
    if (finished) {
      input.clear();
      return NEVER;
    }
    if (!affected) {
      input.moveTo(output);
      return NEVER;
    }
    return process(now, output);
  }

  /** Takes a toxic update: new settings and a fresh toxicity draw, as a restarted toxic gets. */
  final void reconfigure(Toxic updated, long now) {
    toxic = updated;
    affected = draw(updated);
    restart(now);
  }

  /** Called when the toxic is removed: hands whatever it holds to the stage that followed it. */
  void remove(ChunkQueue next) {
    if (!finished) {
      input.moveTo(next);
    }
  }

  final boolean affected() {
    return affected;
  }

  final boolean finished() {
    return finished;
  }

  /** Ends the link from this stage: drops held data and sends the end of stream onwards. */
  final void finish(ChunkQueue output) {
    input.clear();
    output.add(Chunk.END);
    finished = true;
  }

  final long attribute(String key) {
    return toxic.attribute(key);
  }

  /** Moves chunks while the toxic is in effect on this connection. */
  abstract long process(long now, ChunkQueue output);

  /** Resets timers after an update; per-connection counters survive. */
  void restart(long now) {}

  static long millisToNanos(long millis) {
    return clamp(TimeUnit.MILLISECONDS.toNanos(millis));
  }

  static long microsToNanos(long micros) {
    return clamp(TimeUnit.MICROSECONDS.toNanos(micros));
  }

  private static long clamp(long nanos) {
    return Math.max(-MAX_DELAY_NANOS, Math.min(MAX_DELAY_NANOS, nanos));
  }

  private static boolean draw(Toxic toxic) {
    return ThreadLocalRandom.current().nextFloat() < toxic.toxicity();
  }

  /** {@code latency}: each chunk leaves at its arrival time plus latency ± jitter. */
  static final class Latency extends Stage {
    private boolean scheduled;
    private long due;

    Latency(Toxic toxic) {
      super(toxic);
    }

    @Override
    long process(long now, ChunkQueue output) {
      while (!input.isEmpty()) {
        Chunk head = input.peek();
        if (head.isEnd()) {
          output.add(input.poll());
          continue;
        }
        if (!scheduled) {
          due = head.arrivalNanos() + millisToNanos(delayMillis());
          scheduled = true;
        }
        if (now < due) {
          return due;
        }
        output.add(input.poll().stampedAt(due));
        scheduled = false;
      }
      return NEVER;
    }

    private long delayMillis() {
      long latency = attribute("latency");
      long jitter = attribute("jitter");
      if (jitter <= 0 || jitter > Long.MAX_VALUE / 2) {
        return latency;
      }
      return latency + ThreadLocalRandom.current().nextLong(jitter * 2) - jitter;
    }

    @Override
    void restart(long now) {
      scheduled = false;
    }
  }

  /**
   * {@code bandwidth}: paces data at {@code rate} KB/s (1 KB = 1000 bytes) in slices of at most
   * rate × 100 bytes, each released once its transmission time has passed. A rate of zero or less
   * holds everything until the rate changes or the toxic is removed.
   */
  static final class Bandwidth extends Stage {
    private boolean scheduled;
    private long due;
    private long lastDue =
        Long.MIN_VALUE; // no credit for idle time: slices start no earlier than now

    Bandwidth(Toxic toxic) {
      super(toxic);
    }

    @Override
    long process(long now, ChunkQueue output) {
      while (!input.isEmpty()) {
        Chunk head = input.peek();
        if (head.isEnd()) {
          output.add(input.poll());
          continue;
        }
        long rate = attribute("rate");
        if (rate <= 0) {
          scheduled = false;
          return NEVER;
        }
        int slice = (int) Math.min(head.length(), Math.min(rate, Integer.MAX_VALUE) * 100L);
        if (!scheduled) {
          due = Math.max(now, lastDue) + slice * 1_000_000L / rate;
          scheduled = true;
        }
        if (now < due) {
          return due;
        }
        input.poll();
        output.add(head.head(slice));
        if (slice < head.length()) {
          input.pushFront(head.tail(slice));
        }
        lastDue = due;
        scheduled = false;
      }
      return NEVER;
    }

    @Override
    void restart(long now) {
      scheduled = false;
    }
  }

  /** {@code slow_close}: data passes untouched; the end of stream is held for {@code delay} ms. */
  static final class SlowClose extends Stage {
    private boolean endSeen;
    private long endSeenAt;

    SlowClose(Toxic toxic) {
      super(toxic);
    }

    @Override
    long process(long now, ChunkQueue output) {
      while (!input.isEmpty()) {
        Chunk head = input.peek();
        if (!head.isEnd()) {
          output.add(input.poll());
          continue;
        }
        if (!endSeen) {
          endSeen = true;
          endSeenAt = now;
        }
        long due = endSeenAt + millisToNanos(attribute("delay"));
        if (now < due) {
          return due;
        }
        output.add(input.poll());
      }
      return NEVER;
    }
  }

  /**
   * {@code timeout}: drops all data. With a positive {@code timeout} (ms) it ends the link once
   * nothing has arrived for that long; every arriving chunk and every update restarts the timer.
   * Removing it ends the links it affected.
   */
  static final class Timeout extends Stage {
    private long lastInputAt;

    Timeout(Toxic toxic, long now) {
      super(toxic);
      this.lastInputAt = now;
    }

    @Override
    long process(long now, ChunkQueue output) {
      while (!input.isEmpty()) {
        if (input.poll().isEnd()) {
          finish(output);
          return NEVER;
        }
        lastInputAt = now;
      }
      long timeout = attribute("timeout");
      if (timeout <= 0) {
        return NEVER;
      }
      long due = lastInputAt + millisToNanos(timeout);
      if (now < due) {
        return due;
      }
      finish(output);
      return NEVER;
    }

    @Override
    void restart(long now) {
      lastInputAt = now;
    }

    @Override
    void remove(ChunkQueue next) {
      if (affected() && !finished()) {
        finish(next);
      } else {
        super.remove(next);
      }
    }
  }

  /**
   * {@code reset_peer}: once anything arrives, waits {@code timeout} ms and ends the link,
   * discarding what it holds. The RST itself comes from SO_LINGER 0, which {@link
   * ProxiedConnection} sets on connections opened while a reset_peer toxic exists.
   */
  static final class ResetPeer extends Stage {
    private boolean triggered;
    private long triggeredAt;

    ResetPeer(Toxic toxic) {
      super(toxic);
    }

    @Override
    long process(long now, ChunkQueue output) {
      if (!triggered) {
        if (input.isEmpty()) {
          return NEVER;
        }
        triggered = true;
        triggeredAt = now;
      }
      long due = triggeredAt + millisToNanos(attribute("timeout"));
      if (now < due) {
        return due;
      }
      finish(output);
      return NEVER;
    }
  }

  /**
   * {@code slicer}: cuts each chunk into pieces of about {@code average_size} ± {@code
   * size_variation} bytes (Toxiproxy's halving algorithm) with {@code delay} µs after each piece.
   */
  static final class Slicer extends Stage {
    private int[] pieces;
    private int nextPiece;
    private boolean waiting;
    private long waitUntil;

    Slicer(Toxic toxic) {
      super(toxic);
    }

    @Override
    long process(long now, ChunkQueue output) {
      while (!input.isEmpty()) {
        if (waiting && now < waitUntil) {
          return waitUntil;
        }
        waiting = false;
        Chunk head = input.peek();
        if (head.isEnd()) {
          output.add(input.poll());
          continue;
        }
        if (pieces == null) {
          pieces = cut(head.length());
          nextPiece = 0;
        }
        int size = Math.min(pieces[nextPiece++], head.length());
        input.poll();
        output.add(head.head(size));
        if (size < head.length()) {
          input.pushFront(head.tail(size));
        }
        if (nextPiece == pieces.length || size == head.length()) {
          pieces = null;
        }
        long delay = microsToNanos(attribute("delay"));
        if (delay > 0) {
          waiting = true;
          waitUntil = now + delay;
        }
      }
      return NEVER;
    }

    @Override
    void restart(long now) {
      pieces = null; // re-cut the rest of the current chunk with the new settings
    }

    private int[] cut(int length) {
      long average = Math.max(1, attribute("average_size"));
      long variation = Math.max(0, Math.min(attribute("size_variation"), Integer.MAX_VALUE / 2));
      List<Integer> sizes = new ArrayList<>();
      cut(0, length, average, (int) variation, sizes);
      return sizes.stream().mapToInt(Integer::intValue).toArray();
    }

    private static void cut(int start, int end, long average, int variation, List<Integer> out) {
      if ((end - start) - average <= variation) {
        out.add(end - start);
        return;
      }
      int mid = start + (end - start) / 2;
      if (variation > 0) {
        mid += ThreadLocalRandom.current().nextInt(variation * 2) - variation;
      }
      mid = Math.max(start + 1, Math.min(end - 1, mid));
      cut(start, mid, average, variation, out);
      cut(mid, end, average, variation, out);
    }
  }

  /**
   * {@code limit_data}: lets {@code bytes} bytes through on this link, then ends it. The count
   * survives updates.
   */
  static final class LimitData extends Stage {
    private long transmitted;

    LimitData(Toxic toxic) {
      super(toxic);
    }

    @Override
    long process(long now, ChunkQueue output) {
      while (!input.isEmpty()) {
        Chunk head = input.poll();
        if (head.isEnd()) {
          output.add(head);
          return NEVER;
        }
        long remaining = attribute("bytes") - transmitted;
        if (remaining <= 0) {
          finish(output);
          return NEVER;
        }
        int take = (int) Math.min(head.length(), remaining);
        output.add(head.head(take));
        transmitted += take;
        if (transmitted >= attribute("bytes")) {
          finish(output);
          return NEVER;
        }
      }
      return NEVER;
    }
  }
}
