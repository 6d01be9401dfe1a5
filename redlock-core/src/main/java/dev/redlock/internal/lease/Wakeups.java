package dev.redlock.internal.lease;

import dev.redlock.internal.transport.LockKey;
import dev.redlock.internal.transport.NoticeLink;
import dev.redlock.internal.transport.Subscriber;
import dev.redlock.internal.transport.Ticker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * Wake-ups and hand-offs: waiters woken by a release instead of polling, and a releaser that does
 * not take the lock straight back ahead of them.
 *
 * <p><b>Waking.</b> The release script publishes on the resource's channel where it deleted the
 * key, on the masters the resource's waiters hear (all of them for a key with no gate, see below).
 * A waiter {@link #enter enters} the resource's group (the first one subscribes the channel on the
 * {@link NoticeLink}s of the masters it hears, see below; one connection per master for every
 * resource), and before each round arms a future ({@link Waiter#next}) that the first notice that
 * concerns it completes; between rounds it waits on that future, bounded by its retry timer, so a
 * lost notice costs latency, never a hang. A round that fails before the subscription is confirmed
 * could miss a release that came between: the first confirmation (and any after a reconnect, when
 * notices may have been lost) wakes the group too, and so does a link whose connection drops (every
 * group it carried: notices are lost until it is back), queued waiters included, armed or not: each
 * asks again at once rather than at its timer. The last waiter to leave unsubscribes: nothing is
 * kept for a resource no one waits on, and at most {@value #MAX_GROUPS} resources are subscribed at
 * once (the waiters of any more wait on their timers, and do not queue at a gate, where only a
 * notice naming them would wake them).
 *
 * <p><b>Sets.</b> A waiter on a multi-resource lease (a {@link LockKey.Set}) enters the group of
 * each of its resources: groups are named by a resource's key, and a release of the set, or of any
 * single resource in it, publishes on that resource's channel. The first notice of any of them
 * wakes it.
 *
 * <p><b>In turn.</b> A resource with a gate master ({@code Masters#gateOf}) is subscribed on two
 * links only ({@link #hearFrom}): the gate, whose release names the first waiter queued there
 * ({@link Turn}), and the next master by name. The release at the gate tells only that waiter's
 * client, on the client's own channel ({@code redlock:wake:@<client>}, subscribed on a link while
 * this RedLock waits on any resource there): one release costs one notice, however many clients
 * wait. The next master's release is quiet unless the gate did not take the release (the lease
 * layer's {@code Leases}): its plain notice then wakes every waiter, which passes a silent gate by.
 * A queued waiter sleeps through a notice that names another waiter; any other notice wakes it;
 * waiters that are not queued wake at any notice; confirmations wake everyone.
 *
 * <p><b>Handing off.</b> A release answered 2 by a master was heard there by some waiting client
 * ({@link dev.redlock.internal.transport.HandOffNodeClient}). For a short while after such a
 * release, a round of this RedLock's own waits for the same resource starts only after a pause
 * ({@link #handOffNanos}): four rounds' time (at least 2 ms, at most half the retry delay), so a
 * woken waiter elsewhere, which needs one round, gets the lock first. For as long again as the
 * retry delay after that pause, its first round still goes through the gate, behind the waiters
 * queued there, rather than to every master at once: a client that comes back a little later would
 * otherwise take the lock past them on the other masters, again and again, while the waiter the
 * release named retried against it and the others queued behind that waiter slept (measured: waits
 * of 70 to 150 ms for everyone in one hand-off run of three, with holds of 1 ms). Without waiters
 * the release answers 1 and nothing waits: an uncontended lock is taken again at once. At most
 * {@value #MAX_HAND_OFFS} such releases are remembered, each for one round.
 *
 * <p>The futures are completed on the notice links' threads; blocking callers wait on them with a
 * bound, and an asynchronous caller can chain on them with a timer: no thread waits per waiter
 * here. Thread-safe.
 */
public final class Wakeups implements Contention {

  /** The most resources subscribed at once per RedLock. */
  static final int MAX_GROUPS = 1024;

  /** What {@link #handOffNanos} says when no waiter heard this RedLock's last release lately. */
  static final long NO_WAITERS = -1;

  /** The most releases to waiters remembered for a hand-off. */
  static final int MAX_HAND_OFFS = 256;

  /** What a notice that names the waiter whose turn it is starts with. */
  static final String TURN = "turn:";

  /** What a client's own channel's key starts with (release.lua publishes to it). */
  static final String CLIENT = "@";

  /** How long a waiter's name is: its client's 16 hex digits and 16 of its own. */
  static final int WAITER_LENGTH = 32;

  /** The shortest hand-off pause. */
  static final long MIN_HAND_OFF_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private final Ticker ticker;
  private final long maxHandOffNanos;
  private final boolean handOff;
  // after the hand-off pause, how long a release to waiters still sends the next round behind them
  private final long behindNanos;
  private final List<Subscriber> links;
  private final ReentrantLock lock = new ReentrantLock();
  private final Map<String, Group> groups = new HashMap<>(); // guarded by lock
  // guarded by lock: key -> when the hand-off pause of its last release to waiters ends
  private final LinkedHashMap<String, Long> handOffs = new LinkedHashMap<>();
  private volatile Function<byte[], int[]> heard = key -> null; // null: every link
  // This RedLock's name among waiting clients, and its channel's key, "@" and the name; the
  // randomness its waiters' names are drawn from.
  private final String client;
  private final String clientChannel;
  private final Jitter names;
  // guarded by lock: each link's number of groups; its client channel is subscribed while > 0
  private final Map<Subscriber, Integer> linkGroups = new HashMap<>();
  private final RoundTime rounds = new RoundTime();
  private boolean closed; // guarded by lock

  /**
   * Wake-ups over the links {@code links} makes, one per master.
   *
   * @param ticker the clock
   * @param retryDelayNanos the retry delay: the longest hand-off pause is half of it
   * @param handOff whether a releaser pauses for waiters
   * @param links makes one link per master, each telling the given listener; returns an empty list
   *     for no wake-ups
   */
  public Wakeups(
      Ticker ticker,
      long retryDelayNanos,
      boolean handOff,
      Function<NoticeLink.Listener, List<Subscriber>> links) {
    this(
        ticker,
        retryDelayNanos,
        handOff,
        links,
        bound -> ThreadLocalRandom.current().nextLong(bound));
  }

  /**
   * Wake-ups whose client's and waiters' names are drawn from {@code names} (a simulation's seeded
   * randomness, so that a run's queues order alike every time).
   *
   * @param ticker the clock
   * @param retryDelayNanos the retry delay: the longest hand-off pause is half of it
   * @param handOff whether a releaser pauses for waiters
   * @param links makes one link per master, each telling the given listener; returns an empty list
   *     for no wake-ups
   * @param names the randomness of the names
   */
  public Wakeups(
      Ticker ticker,
      long retryDelayNanos,
      boolean handOff,
      Function<NoticeLink.Listener, List<Subscriber>> links,
      Jitter names) {
    this.names = names;
    this.client = Turn.hex16(names);
    this.clientChannel = CLIENT + client;
    this.ticker = ticker;
    this.maxHandOffNanos = Math.max(MIN_HAND_OFF_NANOS, retryDelayNanos / 2);
    this.behindNanos = retryDelayNanos;
    this.handOff = handOff;
    this.links = List.copyOf(links.apply(new Heard()));
  }

  /**
   * Says which masters' notices each resource's waiters hear ({@code Masters#heardFor}): its gate,
   * whose release names the waiter whose turn it is, and one more, whose plain notices still wake
   * the waiters when the gate falls silent. The other masters' notices would only wake the threads
   * of links to ignore them.
   *
   * @param heard the indexes of the links for a key, or null for every link
   */
  @Override
  public void hearFrom(Function<byte[], int[]> heard) {
    this.heard = heard;
  }

  /**
   * A new acquisition's turn, queued under a name that starts with this client's.
   *
   * @param masters the masters
   * @param key the resource's key
   * @param retryDelayNanos the retry delay
   * @return its turn
   */
  @Override
  public Turn turn(Masters masters, LockKey key, long retryDelayNanos) {
    return new Turn(masters, key, retryDelayNanos, on(), client, names);
  }

  /**
   * Whether notices wake waiters: false if wake-ups are off.
   *
   * @return whether there are links
   */
  boolean on() {
    return !links.isEmpty();
  }

  /**
   * Starts waiting on {@code key}: subscribes its channel if no one waits on it yet. The waiter
   * must be closed.
   *
   * @param key the resource's key
   * @return the waiter
   */
  @Override
  public Waiter enter(LockKey key) {
    if (key instanceof LockKey.Set set) {
      List<Waiter> members = new ArrayList<>();
      for (LockKey member : set.members()) {
        members.add(enter(member));
      }
      return new Waiter(members);
    }
    String name = new String(key.bytes(), StandardCharsets.ISO_8859_1);
    lock.lock();
    try {
      if (closed || links.isEmpty()) {
        return new Waiter((Group) null);
      }
      Group group = groups.get(name);
      if (group == null) {
        if (groups.size() >= MAX_GROUPS) {
          return new Waiter((Group) null); // bounded: this one waits on its timer
        }
        group = new Group(name, linksFor(key.bytes()));
        groups.put(name, group);
        for (Subscriber link : group.links) {
          link.subscribe(name);
          if (linkGroups.merge(link, 1, Integer::sum) == 1) {
            link.subscribe(clientChannel);
          }
        }
      }
      group.waiters++;
      Waiter waiter = new Waiter(group);
      waiter.seen = group.wakes;
      waiter.seenChecks = group.checks;
      return waiter;
    } finally {
      lock.unlock();
    }
  }

  private List<Subscriber> linksFor(byte[] key) {
    int[] indexes = heard.apply(key);
    if (indexes == null) {
      return links;
    }
    List<Subscriber> chosen = new ArrayList<>();
    for (int index : indexes) {
      if (index >= 0 && index < links.size()) {
        chosen.add(links.get(index));
      }
    }
    return chosen.isEmpty() ? links : List.copyOf(chosen);
  }

  /**
   * A release of {@code key} that some waiting client heard: this RedLock's next round of it
   * pauses. Short and non-blocking: called on the thread that completed the release.
   *
   * @param key the resource's key
   */
  public void releasedToWaiters(byte[] key) {
    if (!handOff) {
      return;
    }
    String name = new String(key, StandardCharsets.ISO_8859_1);
    long until = ticker.read() + pauseNanos();
    lock.lock();
    try {
      handOffs.remove(name);
      handOffs.put(name, until);
      if (handOffs.size() > MAX_HAND_OFFS) {
        Iterator<String> oldest = handOffs.keySet().iterator();
        oldest.next();
        oldest.remove();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Before the first round of an acquisition of {@code key}: if waiters heard this RedLock's last
   * release of it lately, {@code turn} goes behind them (its first round through the gate, {@link
   * Turn#behindOthers}). Returns how long that round waits first ({@link #handOffNanos}), 0 if not.
   */
  @Override
  public long handOff(byte[] key, Turn turn) {
    long pause = handOffNanos(key);
    if (pause == NO_WAITERS) {
      return 0;
    }
    turn.behindOthers();
    return pause;
  }

  /**
   * How long a round of {@code key} should wait to let a waiter that heard this RedLock's last
   * release take the lock: more than 0 within the hand-off pause; 0 after it, for as long again as
   * the retry delay, waiters having been queued then (the round goes through the gate, behind them,
   * but at once); {@link #NO_WAITERS} if no release of this RedLock was heard by waiters lately.
   * Each release is answered once.
   */
  long handOffNanos(byte[] key) {
    String name = new String(key, StandardCharsets.ISO_8859_1);
    lock.lock();
    try {
      if (handOffs.isEmpty()) {
        return NO_WAITERS;
      }
      Long until = handOffs.remove(name);
      if (until == null) {
        return NO_WAITERS;
      }
      long left = until - ticker.read();
      return left > 0 ? left : left > -behindNanos ? 0 : NO_WAITERS;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public RoundTime rounds() {
    return rounds;
  }

  private long pauseNanos() {
    return Math.min(maxHandOffNanos, Math.max(MIN_HAND_OFF_NANOS, 4 * rounds.nanos()));
  }

  /**
   * Returns how many resources are subscribed: for tests.
   *
   * @return a snapshot
   */
  public int subscribed() {
    lock.lock();
    try {
      return groups.size();
    } finally {
      lock.unlock();
    }
  }

  /** Closes the links, waiting up to {@code graceNanos} for each; the waiters time out. */
  @Override
  public void close(long graceNanos) {
    lock.lock();
    try {
      closed = true;
      groups.clear();
      linkGroups.clear();
      handOffs.clear();
    } finally {
      lock.unlock();
    }
    for (Subscriber link : links) {
      link.close(graceNanos);
    }
  }

  @Override
  public void close() {
    close(TimeUnit.SECONDS.toNanos(1));
  }

  /**
   * Wakes the waiters of {@code name} for a release ({@code release}, as each master tells of it)
   * or for a confirmed subscription ({@code release} null: the first, or any after a reset).
   */
  private void wake(String name, String release, boolean afterReset) {
    wake(name, release, release == null, afterReset);
  }

  /**
   * Wakes the waiters of {@code name} as {@link #wake(String, String, boolean)} does; with {@code
   * release} null and not {@code confirmed}, because a link that carried it dropped.
   */
  private void wake(String name, String release, boolean confirmed, boolean afterReset) {
    boolean subscribed = release == null;
    List<CompletableFuture<Void>> woken;
    lock.lock();
    try {
      Group group = groups.get(name);
      if (group == null) {
        return;
      }
      // Every master's notice wakes: the first may come before the release ran on the others,
      // and the round it starts be refused there. Notices that come while a round runs make one
      // more round, not one each (the waiter finds them when it arms next).
      if (confirmed) {
        if (group.confirmed && !afterReset) {
          return; // another master's confirmation: the first one woke the group already
        }
        group.confirmed = true;
      }
      // Counted even with no one armed: a waiter between two rounds finds it when it arms next.
      group.wakes++;
      if (subscribed) {
        group.checks++; // a release may have been missed: queued waiters too ask again
      }
      String turn =
          release != null && release.startsWith(TURN) ? release.substring(TURN.length()) : null;
      if (turn != null) {
        group.turns++;
        group.lastTurn = turn;
      }
      woken = new ArrayList<>();
      for (Iterator<Waiter> armed = group.armed.iterator(); armed.hasNext(); ) {
        Waiter waiter = armed.next();
        String queuedAs = waiter.queuedAs();
        if (turn != null && queuedAs != null && !queuedAs.equals(turn)) {
          continue; // queued: a notice naming another waiter is not its turn
        }
        waiter.heard(turn, turn == null && !subscribed); // a plain release: the lock may be free
        waiter.seen = group.wakes;
        waiter.seenTurns = group.turns;
        waiter.seenChecks = group.checks;
        woken.add(waiter.armed);
        waiter.armed = null;
        armed.remove();
      }
    } finally {
      lock.unlock();
    }
    for (CompletableFuture<Void> future : woken) {
      future.complete(null);
    }
  }

  /** Hears the links, on their threads. */
  private final class Heard implements NoticeLink.Listener {
    @Override
    public void notice(String key, String release) {
      if (!key.equals(clientChannel)) {
        wake(key, release, false);
      } else if (release.startsWith(TURN) && release.length() > TURN.length() + WAITER_LENGTH) {
        // On this client's channel: "turn:", the waiter, then the resource's key.
        int end = TURN.length() + WAITER_LENGTH;
        wake(release.substring(end), release.substring(0, end), false);
      }
    }

    @Override
    public void lost(Subscriber link) {
      // Its notices are lost until it is back: every group it carried asks again at once.
      List<String> names = new ArrayList<>();
      lock.lock();
      try {
        for (Group group : groups.values()) {
          if (group.links.contains(link)) {
            names.add(group.name);
          }
        }
      } finally {
        lock.unlock();
      }
      for (String name : names) {
        wake(name, null, false, true);
      }
    }

    @Override
    public void subscribed(String key, boolean afterReset) {
      if (!key.equals(clientChannel)) {
        wake(key, null, afterReset);
      } else if (afterReset) {
        // Turns named on this link while it was down are lost: every group tries again.
        List<String> names;
        lock.lock();
        try {
          names = new ArrayList<>(groups.keySet());
        } finally {
          lock.unlock();
        }
        for (String name : names) {
          wake(name, null, true);
        }
      }
    }
  }

  /** The waiters on one resource. */
  private static final class Group {
    final String name;
    final List<Subscriber> links; // the links it is subscribed on
    final Set<Waiter> armed = new HashSet<>(); // guarded by the Wakeups' lock
    long wakes; // guarded by the Wakeups' lock: how many times the group was woken
    long turns; // guarded by the Wakeups' lock: how many notices named a waiter's turn
    // guarded by the Wakeups' lock: how many wake-ups after which a release may have been missed
    // (a confirmation, a link dropped): queued waiters heed them too
    long checks;
    String lastTurn; // guarded by the Wakeups' lock: the waiter the last of them named
    int waiters; // guarded by the Wakeups' lock
    boolean confirmed; // guarded by the Wakeups' lock: some master confirmed the subscription

    Group(String name, List<Subscriber> links) {
      this.name = name;
      this.links = links;
    }
  }

  /**
   * One caller waiting on one resource: arms a future before each round, and leaves when closed.
   * Used by one thread (or one asynchronous chain) at a time.
   */
  final class Waiter implements Contention.Waiting {
    private final Group group; // null: no wake-ups, timers only (or a set's waiter)
    private final List<Waiter> members; // a set's: one waiter per resource; else empty
    private CompletableFuture<Void> armed; // guarded by the Wakeups' lock
    private long seen; // guarded by the Wakeups' lock: the group's wakes this waiter has had
    private long seenTurns; // guarded by the Wakeups' lock: the group's turns likewise
    private long seenChecks; // guarded by the Wakeups' lock: the group's checks likewise
    private volatile Turn turn; // its acquisition's place in the queue, if it has one
    private boolean left; // guarded by the Wakeups' lock

    private Waiter(Group group) {
      this.group = group;
      this.members = List.of();
    }

    private Waiter(List<Waiter> members) {
      this.group = null;
      this.members = List.copyOf(members);
    }

    /**
     * Follows {@code turn}: while it is queued at its gate, only a notice naming it wakes this
     * waiter. A waiter subscribed to nothing tells the turn it is {@link Turn#unheard}.
     */
    @Override
    public void follow(Turn turn) {
      this.turn = turn;
      for (Waiter member : members) {
        member.follow(turn);
      }
      if (group == null && members.isEmpty()) {
        turn.unheard(); // not subscribed (past the bound, or closing): it must not queue
      }
    }

    /**
     * Tells its acquisition's turn of a wake-up: named if {@code turn} names it, else noticed if
     * the wake-up may have been a plain release ({@code plain}).
     */
    private void heard(String turn, boolean plain) {
      Turn followed = this.turn;
      if (followed == null) {
        return;
      }
      if (turn != null && followed.isNamedBy(turn)) {
        followed.named();
      } else if (plain) {
        followed.noticed();
      }
    }

    /** The name its acquisition is queued under at the gate, or null. */
    private String queuedAs() {
      Turn followed = turn;
      return followed == null ? null : followed.queuedAs();
    }

    /** Whether notices wake this waiter: false without wake-ups, or beyond the bound. */
    @Override
    public boolean woken() {
      if (group != null) {
        return true;
      }
      for (Waiter member : members) {
        if (member.woken()) {
          return true;
        }
      }
      return false;
    }

    /**
     * Returns a future that the next notice of the resource completes (or the subscription's first
     * confirmation), completed already if one came since this waiter's last future was armed or
     * completed; never completed without wake-ups. Disarms the one returned before.
     */
    @Override
    public CompletableFuture<Void> next() {
      CompletableFuture<Void> future = new CompletableFuture<>();
      if (!members.isEmpty()) {
        // A set's: the first notice of any of its resources.
        for (Waiter member : members) {
          member.next().thenRun(() -> future.complete(null));
        }
        return future;
      }
      if (group == null) {
        return future;
      }
      lock.lock();
      try {
        if (left) {
          return future; // closed: never woken again
        }
        String queuedAs = queuedAs();
        boolean missed =
            queuedAs == null
                ? seen != group.wakes
                : seenChecks != group.checks
                    || seenTurns != group.turns && queuedAs.equals(group.lastTurn);
        if (missed) {
          // Perhaps a confirmation or another waiter's turn too: a set then retries as after a
          // plain notice, a bounded number of rounds.
          heard(seenTurns != group.turns ? group.lastTurn : null, true);
          // Woken while not armed (its round was running): a release it may have missed.
          seen = group.wakes;
          seenTurns = group.turns;
          seenChecks = group.checks;
          group.armed.remove(this);
          armed = null;
          future.complete(null);
          return future;
        }
        armed = future;
        group.armed.add(this);
      } finally {
        lock.unlock();
      }
      return future;
    }

    /** Leaves the group; the last to leave unsubscribes the resource. Idempotent. */
    @Override
    public void close() {
      for (Waiter member : members) {
        member.close();
      }
      if (group == null) {
        return;
      }
      lock.lock();
      try {
        if (left) {
          return;
        }
        left = true;
        group.armed.remove(this);
        armed = null;
        if (--group.waiters == 0 && groups.get(group.name) == group) {
          groups.remove(group.name);
          for (Subscriber link : group.links) {
            link.unsubscribe(group.name);
            if (linkGroups.merge(link, -1, Integer::sum) == 0) {
              linkGroups.remove(link);
              link.unsubscribe(clientChannel);
            }
          }
        }
      } finally {
        lock.unlock();
      }
    }
  }
}
