package dev.redlock.internal.transport;

import java.util.Objects;

/**
 * A command to one master, as a value: what the lease layer asks of a master, which {@link
 * NodeClient#send} carries through every decorator (breaker, diagnosis, fitness, hand-off) to the
 * codec ({@link NodeCommand}), which only encodes it. A decorator that cares which command passes
 * switches on its {@link #kind()}, exhaustively, so a command added later is a compile error there
 * until each one decides.
 *
 * <p>The records hold the caller's arrays without copying them (they are the lease's key and token,
 * never written after the lease is made); their {@code equals} is the records' default, by identity
 * of the arrays.
 *
 * @param <R> the reply: a {@link NodeReply} for every command but a {@link Query}'s raw answer
 */
public sealed interface Command<R>
    permits Command.Acquire,
        Command.AcquireInTurn,
        Command.Join,
        Command.Leave,
        Command.Fence,
        Command.Release,
        Command.Notice,
        Command.Extend,
        Command.Shorten,
        Command.Admit,
        Command.Query {

  /** Which command this is, for a decorator's exhaustive switch. */
  enum Kind {
    /** {@link Acquire}. */
    ACQUIRE(Role.VOTE),
    /** {@link AcquireInTurn}. */
    ACQUIRE_IN_TURN(Role.VOTE),
    /** {@link Fence}. */
    FENCE(Role.VOTE),
    /** {@link Extend}. */
    EXTEND(Role.VOTE),
    /** {@link Release}, in any of its flavours. */
    RELEASE(Role.ENDING),
    /** {@link Shorten}. */
    SHORTEN(Role.ENDING),
    /** {@link Notice}. */
    NOTICE(Role.ENDING),
    /** {@link Join}. */
    JOIN(Role.OTHER),
    /** {@link Leave}. */
    LEAVE(Role.OTHER),
    /** {@link Admit}. */
    ADMIT(Role.OTHER),
    /** {@link Query}. */
    QUERY(Role.OTHER);

    private final Role role;

    Kind(Role role) {
      this.role = role;
    }

    /**
     * What the command does to a lease, which is what the breaker and the fitness check look at.
     *
     * @return its role
     */
    public Role role() {
      return role;
    }
  }

  /** What a command does to a lease. */
  enum Role {
    /**
     * Carries a vote (acquire, acquire in turn, fence, extend): an unfit master refuses it, an open
     * breaker skips it, and its outcome is the breaker's evidence.
     */
    VOTE,
    /**
     * Ends or shortens a lease, or tells its waiters (every release, shorten, notice): sent
     * whatever a breaker says, since nothing else cleans up a live master's key.
     */
    ENDING,
    /** Neither (joining or leaving a queue, an admit, a diagnostic): goes straight through. */
    OTHER
  }

  /**
   * Which command this is.
   *
   * @return its kind
   */
  Kind kind();

  /**
   * The acquire ({@code SET key token NX PX ttl}; fenced or guarded, with {@code TIME} and the
   * reads of the fence counter, the dataset's birth marker and the admitted run): GRANTED if the
   * key was set, TAKEN if it exists, RESTARTED if the master is too young to vote ({@code
   * guardMillis}), whatever the {@code SET} did; with the master's fence counter and time. Neither
   * fenced nor guarded: a plain {@code SET} that reports neither.
   *
   * @param key the lease's key: one resource's, or a set's
   * @param token the round's token
   * @param ttlMillis the TTL
   * @param fenced whether the master's fence counter is read
   * @param guardMillis the restart guard's age, or 0 for no guard
   */
  record Acquire(LockKey key, byte[] token, long ttlMillis, boolean fenced, long guardMillis)
      implements Command<NodeReply> {
    /** Checks the arrays are there. */
    public Acquire {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(token, "token");
    }

    @Override
    public Kind kind() {
      return Kind.ACQUIRE;
    }
  }

  /**
   * A waiter's acquire of one resource at its gate master, in turn ({@code queue.lua}): as a fenced
   * and guarded {@link Acquire}, but the key is set only for the waiter first in the master's queue
   * of the resource's waiters; any other is queued and answered TAKEN. A client that keeps no queue
   * answers it as the plain acquire.
   *
   * @param key the resource's key (not a key set)
   * @param token the round's token
   * @param ttlMillis the TTL
   * @param guardMillis the restart guard's age, or 0
   * @param waiter names the waiter, the same in each of its rounds
   * @param staleMillis how long a waiter that stopped asking stays queued
   */
  record AcquireInTurn(
      byte[] key, byte[] token, long ttlMillis, long guardMillis, byte[] waiter, long staleMillis)
      implements Command<NodeReply> {
    /** Checks the arrays are there. */
    public AcquireInTurn {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(token, "token");
      Objects.requireNonNull(waiter, "waiter");
    }

    /**
     * The same acquire without the turn, for a client that keeps no queue.
     *
     * @return the plain fenced acquire
     */
    public Acquire plain() {
      return new Acquire(LockKey.of(key), token, ttlMillis, true, guardMillis);
    }

    @Override
    public Kind kind() {
      return Kind.ACQUIRE_IN_TURN;
    }
  }

  /**
   * Queues {@code waiter}, a waiter on a set of resources, among {@code key}'s waiters at this
   * master, its resource's gate ({@code queue.lua}'s join): while it is first, the waiters behind
   * it are refused and a release names it, but the key is not set here (the set's own rounds take
   * every key of the set on every master at once). First with the key free for the first time since
   * it queued, it is told its turn at once, as a release would tell it. Answers GRANTED if it is
   * first, else TAKEN; a client that keeps no queue answers GRANTED.
   *
   * @param key the resource's key (one of the set's)
   * @param waiter the waiter, the same in each of its rounds
   * @param staleMillis how long a waiter that stopped asking stays queued
   */
  record Join(byte[] key, byte[] waiter, long staleMillis) implements Command<NodeReply> {
    /** Checks the arrays are there. */
    public Join {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(waiter, "waiter");
    }

    @Override
    public Kind kind() {
      return Kind.JOIN;
    }
  }

  /**
   * Takes {@code waiter} out of the queue of {@code key}'s waiters at this master: it stopped
   * waiting without being granted here. A client that keeps no queue answers GRANTED.
   *
   * @param key the resource's key
   * @param waiter the waiter
   */
  record Leave(byte[] key, byte[] waiter) implements Command<NodeReply> {
    @Override
    public Kind kind() {
      return Kind.LEAVE;
    }
  }

  /**
   * The fence script: GRANTED if {@code fence} was stored in the master's fence counter while the
   * key holds {@code token}, TAKEN, or GONE.
   *
   * @param key the lease's key: one resource's, or a set's
   * @param token the lease's token
   * @param fence the fencing token to store
   */
  record Fence(LockKey key, byte[] token, long fence) implements Command<NodeReply> {
    @Override
    public Kind kind() {
      return Kind.FENCE;
    }
  }

  /** Where a release is sent, which decides what its notice says and who hears of it. */
  enum Flavour {
    /** A release with its notice to the resource's waiters ({@code redlock:wake:<key>}). */
    PLAIN,
    /**
     * At the resource's gate master, where its waiters queue: the notice names the first queued
     * waiter. A client that keeps no queue sends the plain release.
     */
    AT_GATE,
    /**
     * At the master after the gate, the other master the waiters hear: tells no one, and answers
     * whether some client waits there ({@link NodeReply#waitersListening()}). A client that keeps
     * no queue sends the quiet release.
     */
    AT_NEXT,
    /**
     * Without the notice: the cleanup of an acquire that failed or of a lost lease, whose
     * competitors retry on their own.
     */
    QUIET
  }

  /**
   * The release script, compare-and-delete: GRANTED if deleted, TAKEN if another token holds the
   * key, GONE if it is absent.
   *
   * @param key the lease's key: one resource's, or a set's
   * @param token the lease's token
   * @param flavour where it is sent, and so what its notice does
   */
  record Release(LockKey key, byte[] token, Flavour flavour) implements Command<NodeReply> {
    /** Checks the flavour is there. */
    public Release {
      Objects.requireNonNull(flavour, "flavour");
    }

    @Override
    public Kind kind() {
      return Kind.RELEASE;
    }
  }

  /**
   * Tells the clients waiting on {@code key} that it was released, deleting nothing: the releaser's
   * fallback on the next master by name when the gate did not take the release. Answers GRANTED,
   * and {@link NodeReply#waitersTold()} if some client heard it; a client that keeps no queue tells
   * no one.
   *
   * @param key the resource's key
   * @param token the released lease's token, which the notice names by its SHA-1
   */
  record Notice(byte[] key, byte[] token) implements Command<NodeReply> {
    @Override
    public Kind kind() {
      return Kind.NOTICE;
    }
  }

  /**
   * The extend script: GRANTED if extended to {@code ttlMillis}, TAKEN if another token holds the
   * key, GONE if absent.
   *
   * @param key the lease's key: one resource's, or a set's
   * @param token the lease's token
   * @param ttlMillis the new TTL
   */
  record Extend(LockKey key, byte[] token, long ttlMillis) implements Command<NodeReply> {
    @Override
    public Kind kind() {
      return Kind.EXTEND;
    }
  }

  /**
   * The shorten script: GRANTED if the key holds {@code token} (its expiry is now at most {@code
   * ttlMillis}), TAKEN if another token holds it, GONE if absent.
   *
   * @param key the lease's key: one resource's, or a set's
   * @param token the lease's token
   * @param ttlMillis the most the key may still live
   */
  record Shorten(LockKey key, byte[] token, long ttlMillis) implements Command<NodeReply> {
    @Override
    public Kind kind() {
      return Kind.SHORTEN;
    }
  }

  /**
   * The admit script: admits the master's current server run with its dataset, so that it votes at
   * once for every client whatever its {@code maxLeaseTime} ({@link RestartGuardRule}): GRANTED if
   * that changed anything, TAKEN if it was already admitted; fails if the connection could not read
   * the server's run.
   */
  record Admit() implements Command<NodeReply> {
    @Override
    public Kind kind() {
      return Kind.ADMIT;
    }
  }

  /**
   * A read-only diagnostic for the preflight ({@code INFO}, {@code CONFIG GET}, {@code TIME},
   * {@code MGET}): completes with the raw answer, or exceptionally with the server's error (an ACL
   * that forbids it, say) or the failure. Never guarded by a circuit breaker.
   *
   * @param verb the command
   * @param args its arguments
   */
  record Query(NodeCommand.Verb verb, String... args) implements Command<Object> {
    /** Copies the arguments. */
    public Query {
      Objects.requireNonNull(verb, "verb");
      args = args.clone();
    }

    @Override
    public String[] args() {
      return args.clone();
    }

    @Override
    public Kind kind() {
      return Kind.QUERY;
    }
  }

  // ---- the commands by name, for call sites that read as the protocol does

  /**
   * The release with its notice.
   *
   * @param key the key
   * @param token the token
   * @return the command
   */
  static Release release(LockKey key, byte[] token) {
    return new Release(key, token, Flavour.PLAIN);
  }

  /**
   * The release without its notice.
   *
   * @param key the key
   * @param token the token
   * @return the command
   */
  static Release releaseQuietly(LockKey key, byte[] token) {
    return new Release(key, token, Flavour.QUIET);
  }

  /**
   * The release at the resource's gate.
   *
   * @param key the key
   * @param token the token
   * @return the command
   */
  static Release releaseAtGate(LockKey key, byte[] token) {
    return new Release(key, token, Flavour.AT_GATE);
  }

  /**
   * The release at the master after the gate.
   *
   * @param key the key
   * @param token the token
   * @return the command
   */
  static Release releaseAtNext(LockKey key, byte[] token) {
    return new Release(key, token, Flavour.AT_NEXT);
  }
}
