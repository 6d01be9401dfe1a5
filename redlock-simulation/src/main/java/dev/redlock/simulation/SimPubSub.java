package dev.redlock.simulation;

import dev.redlock.internal.transport.NoticeLink;
import dev.redlock.internal.transport.Subscriber;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * One simulated master's pub/sub: the clients' wake-up links ({@link Subscriber}s) to it, each a
 * connection of its own on the simulated network (in order, each message delayed, waiting for a
 * partition's heal, as TCP), what each has subscribed on the master, and the messages its scripts
 * publish. As Redis's, a message reaches the connections subscribed when it is published and is
 * lost to a connection that drops ({@link #restarted}, {@link #reset}): the link hears that it was
 * lost, connects again after a pause and subscribes every channel it wants again. Not thread-safe:
 * the simulation's one thread drives it.
 */
public final class SimPubSub {

  /** The pause before a dropped link connects again, as {@link NoticeLink}'s first back-off. */
  static final long RECONNECT_NANOS = 100_000_000;

  private final Simulation sim;
  private final SimMaster master;
  private final Map<String, Integer> counts = new TreeMap<>(); // what PUBSUB NUMSUB reads
  private final List<Link> links = new ArrayList<>();
  private long delivered; // notices that reached a client
  private Publishes publishes = (channel, message, down) -> {};

  /** Hears each message the master publishes. */
  @FunctionalInterface
  public interface Publishes {
    /**
     * A message published.
     *
     * @param channel its channel
     * @param message the message
     * @param down the processes whose links to this master wanted channels but were not connected
     *     then (dropped, and connecting again)
     */
    void published(String channel, String message, Set<SimProcess> down);
  }

  /**
   * The pub/sub of {@code master}, which publishes through it from now on.
   *
   * @param sim the simulation
   * @param master the master
   */
  public SimPubSub(Simulation sim, SimMaster master) {
    this.sim = sim;
    this.master = master;
    master.subscribers(this::publish, counts);
  }

  /**
   * A client's link to this master.
   *
   * @param listener hears the notices
   * @param delayNanos each message's delay on the network
   * @param healsAt when a partition between the client and the master heals (0 or the past: none)
   * @param process the client's process: once it crashed, its connection is gone
   * @return the link, not connected until its first subscription
   */
  public Subscriber link(
      NoticeLink.Listener listener,
      LongSupplier delayNanos,
      LongSupplier healsAt,
      SimProcess process) {
    Link link = new Link(listener, delayNanos, healsAt, process);
    links.add(link);
    return link;
  }

  /** The master restarted: every connection to it dropped. */
  public void restarted() {
    for (Link link : links) {
      link.drop();
    }
  }

  /** The links of crashed processes are gone: their subscriptions leave the master. */
  public void crashed() {
    for (Link link : links) {
      if (link.process.dead()) {
        link.closed = true;
        link.drop();
      }
    }
  }

  /** Drops the connection of {@code process}'s link, as CLIENT KILL: its notices are lost. */
  public void reset(SimProcess process) {
    for (Link link : links) {
      if (link.process == process) {
        link.drop();
      }
    }
  }

  /** The channels subscribed on the master, with how many connections subscribe each. */
  public Map<String, Integer> channels() {
    return new TreeMap<>(counts);
  }

  /** How many channels are subscribed on the master, over every connection: for bounded state. */
  public int subscriptions() {
    int count = 0;
    for (int n : counts.values()) {
      count += n;
    }
    return count;
  }

  /**
   * Tells {@code observer} of every message the master publishes, as it publishes it (for a
   * checker; replaces any earlier observer).
   */
  public void observe(Publishes observer) {
    publishes = observer;
  }

  /** How many notices reached a client's listener. */
  public long delivered() {
    return delivered;
  }

  private int publish(String channel, String message) {
    Set<SimProcess> down = new HashSet<>();
    for (Link link : links) {
      if (!link.open && !link.wanted.isEmpty()) {
        down.add(link.process);
      }
    }
    publishes.published(channel, message, down);
    int receivers = 0;
    for (Link link : links) {
      if (link.heard(channel, message)) {
        receivers++;
      }
    }
    return receivers;
  }

  private void count(String channel, int change) {
    int now = counts.getOrDefault(channel, 0) + change;
    if (now == 0) {
      counts.remove(channel);
    } else {
      counts.put(channel, now);
    }
  }

  /**
   * One client's link: what it wants, and its connection (0: none) with what is subscribed on it.
   */
  private final class Link implements Subscriber {
    private final NoticeLink.Listener listener;
    private final LongSupplier delayNanos;
    private final LongSupplier healsAt;
    private final SimProcess process;
    private final Set<String> wanted = new LinkedHashSet<>();
    private final Set<String> onMaster = new HashSet<>(); // channels of the open connection
    private int connection; // counts connections; the open one's number, or none if !open
    private boolean open;
    private boolean connecting;
    private boolean closed;
    private long toMasterAt;
    private long backAt;

    Link(
        NoticeLink.Listener listener,
        LongSupplier delayNanos,
        LongSupplier healsAt,
        SimProcess process) {
      this.listener = listener;
      this.delayNanos = delayNanos;
      this.healsAt = healsAt;
      this.process = process;
    }

    private long arrival(long last) {
      return Math.max(last, Math.max(sim.now(), healsAt.getAsLong()) + delayNanos.getAsLong());
    }

    /** Sends toward the master: runs {@code atMaster} there if this connection still stands. */
    private void toMaster(Runnable atMaster) {
      int on = connection;
      toMasterAt = arrival(toMasterAt);
      sim.after(
          toMasterAt - sim.now(),
          () -> {
            if (open && connection == on) {
              atMaster.run();
            }
          });
    }

    /** Sends back to the client: runs {@code atClient} there if this connection still stands. */
    private void toClient(Runnable atClient) {
      int on = connection;
      backAt = arrival(backAt);
      sim.after(
          backAt - sim.now(),
          process.event(
              sim,
              () -> {
                if (open && connection == on && !closed) {
                  atClient.run();
                }
              }));
    }

    @Override
    public void subscribe(String key) {
      if (closed || !wanted.add(key)) {
        return;
      }
      if (open) {
        toMaster(() -> registered(key));
      } else {
        connect(0);
      }
    }

    @Override
    public void unsubscribe(String key) {
      if (wanted.remove(key) && open) {
        toMaster(
            () -> {
              if (onMaster.remove(NoticeLink.CHANNEL_PREFIX + key)) {
                count(NoticeLink.CHANNEL_PREFIX + key, -1);
              }
            });
      }
    }

    /** At the master: the channel subscribed on this connection, confirmed to the client. */
    private void registered(String key) {
      String channel = NoticeLink.CHANNEL_PREFIX + key;
      if (onMaster.add(channel)) {
        count(channel, 1);
      }
      boolean afterReset = connection > 1;
      toClient(() -> listener.subscribed(key, afterReset));
    }

    /** A connection, after {@code pauseNanos}: refused while partitioned (then tried again). */
    private void connect(long pauseNanos) {
      if (connecting || open || closed) {
        return;
      }
      connecting = true;
      sim.after(
          pauseNanos + delayNanos.getAsLong(),
          process.event(
              sim,
              () -> {
                connecting = false;
                if (closed || open) {
                  return;
                }
                if (healsAt.getAsLong() > sim.now()) {
                  connect(RECONNECT_NANOS);
                  return;
                }
                open = true;
                connection++;
                toMasterAt = sim.now();
                backAt = sim.now();
                for (String key : List.copyOf(wanted)) {
                  registered(key);
                }
              }));
    }

    /** The connection dropped: its subscriptions gone from the master; the client told. */
    void drop() {
      if (!open) {
        return;
      }
      open = false;
      for (String channel : onMaster) {
        count(channel, -1);
      }
      onMaster.clear();
      if (closed) {
        return;
      }
      sim.after(
          delayNanos.getAsLong(),
          process.event(
              sim,
              () -> {
                if (!closed) {
                  listener.lost(this);
                  if (!wanted.isEmpty()) {
                    connect(RECONNECT_NANOS);
                  }
                }
              }));
    }

    /** At the master, on a publish: whether this connection receives it; sent if so. */
    boolean heard(String channel, String message) {
      if (!open || !onMaster.contains(channel)) {
        return false;
      }
      String key = channel.substring(NoticeLink.CHANNEL_PREFIX.length());
      toClient(
          () -> {
            delivered++;
            listener.notice(key, message);
          });
      return true;
    }

    @Override
    public void close(long graceNanos) {
      closed = true;
      drop();
      wanted.clear();
    }

    @Override
    public void close() {
      close(0);
    }
  }
}
