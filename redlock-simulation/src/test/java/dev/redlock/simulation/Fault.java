package dev.redlock.simulation;

/** The fault families a run can have. */
enum Fault {
  /** A master cut off from one client for up to a second: messages wait for the heal. */
  PARTITION,
  /**
   * A link slowed (as Toxiproxy's latency toxic on one client's proxy of one master): for a second,
   * every message between that client and master, commands, replies and notices, takes 1 to 60 ms
   * more each way, in order; the node timeout is 50 ms, so some rounds pass the master by, and a
   * gate slower than the gate wait is passed by too.
   */
  LATENCY,
  /** A master restarted without its data (a new run, its connections reset): masters 2 to 4. */
  RESTART_EMPTY,
  /**
   * A master restarted from a lossless AOF ({@code appendonly yes}, {@code appendfsync always}, as
   * masters 0 and 1 are configured): its keys kept, a new run.
   */
  RESTART_KEEPING_DATA,
  /**
   * A master (2 to 4) saves a snapshot ({@code BGSAVE}) half the time, and otherwise restarts from
   * its last one (empty if it saved none): the keys it had then, every later write lost (a lock
   * key, a queue, the fence counter gone back), a new run.
   */
  RESTART_FROM_SNAPSHOT,
  /**
   * R10's setting: masters 2 to 4 run {@code appendfsync everysec} (their AOF on disk as of their
   * last fsync, at most a second old); one restarts, losing the writes since, and comes back
   * configured {@code appendfsync always}, as an operator switches it at a restart; a master so
   * switched restarts next with all its data and goes back to {@code everysec}. The restart guard
   * must not take the new run's setting for the old run's: only the run that stopped says what it
   * lost.
   */
  RESTART_FSYNC_SWITCHED,
  /** {@code SCRIPT FLUSH}: the master forgets the scripts (NOSCRIPT, then a reload). */
  SCRIPT_FLUSH,
  /**
   * A master's clock set to run up to 0.5% fast or slow from now on: within the drift the library
   * allows for ({@code driftFactor} 0.01).
   */
  CLOCK_DRIFT,
  /**
   * A master's wall clock stepped back by up to 10 s (an NTP step): its keys live longer, and its
   * TIME goes back, which fencing tokens must survive.
   */
  CLOCK_STEP_BACK,
  /**
   * A client's wake-up connection to a master dropped (as {@code CLIENT KILL TYPE pubsub}): the
   * notices published until it is back are lost to it.
   */
  SUBSCRIBER_RESET,
  /**
   * A client cut off from every master but one for 5 s (one client at a time), which then waits for
   * the lock (async, up to 5 s) and takes no other step until the heal: when the one it reaches is
   * the resource's gate, it is queued first there and cannot win, and the others must still get the
   * lock (the head yields after two stale windows). With it in a family, one wait in eight lasts up
   * to 3 s, long enough to outlast such a head.
   */
  ISOLATED_WAITER,
  /**
   * A client's process killed ({@code kill -9}) and started again: whatever it held stays on the
   * masters until its TTL, a queue entry of its wait until it goes stale, its connections gone.
   */
  CLIENT_CRASH,
  /**
   * A client's program shuts down: it releases what it holds (or, one time in two, leaves a lease
   * to its TTL) and closes its RedLock, its async wait, renewals and releases maybe in flight; a
   * new RedLock takes its place in the same process. The close waits for its replies in flight on
   * the simulation's time: the other clients' events run meanwhile.
   */
  CLIENT_CLOSE,
  /**
   * An assumption broken on purpose: a master's clock set to run twice as fast from now on, far
   * beyond the drift factor, so its keys expire in half their TTL.
   */
  CLOCK_TOO_FAST,
  /**
   * A client's clock set to run up to 0.5% fast or slow from now on (its validity, deadlines and
   * timers measured with it): within the drift factor.
   */
  CLIENT_CLOCK_DRIFT,
  /**
   * An assumption broken on purpose: a client's clock set to run at half speed, so that it believes
   * its lease valid for twice as long as it is.
   */
  CLIENT_CLOCK_TOO_SLOW,
  /**
   * A master restarted without its data (masters 2 to 4), then admitted by an operator ({@code
   * admitFreshNodes}) at the first step when its Javadoc says that is safe: no lease valid then was
   * granted before the restart (its round begun up to two node timeouts earlier), and two TTLs have
   * passed since.
   */
  RESTART_THEN_ADMIT,
  /**
   * A master's process paused ({@code SIGSTOP}) for up to 2 s: every client's messages to it, and
   * its replies and notices, wait for it to go on; its clock (and its keys' expiry) runs on.
   */
  MASTER_PAUSE,
  /**
   * A master made unfit for 1 to 21 s ({@code maxmemory} with {@code allkeys-lru}: it could evict
   * lock keys), then configured back: fitness checks (on by default) keep it from voting within
   * their re-check's interval of its next use, and let it vote again after. No key is evicted here:
   * what is checked is that it stops voting.
   */
  UNFIT_MASTER,
  /**
   * A client's monotonic clock jumps forward by up to 2 s (a suspended VM resumed): its leases end
   * sooner for it, its deadlines come sooner. Safe: no lease is believed valid for longer.
   */
  CLIENT_CLOCK_JUMP,
  /**
   * A client's process paused (a GC's stop of the world) for up to a second, between two of its
   * events: its timers, the replies and notices it reads wait for the pause's end, and its callers
   * go on after it. Its leases' validity runs on meanwhile, as the library measures it.
   */
  CLIENT_GC,
  /**
   * The next reply from a master to a client cut half-way by a reset (the client loses the
   * connection), or half sent and then nothing more on that connection (only the client's stall
   * limit ends it).
   */
  REPLY_CUT,
  /**
   * A master answers a client's next command with what no command the library sends is answered
   * with: an error, an array of five bulk strings, bytes that are no RESP2, a 512 MiB bulk's
   * header. (A master that answers with another command's answer, a lie RESP cannot tell from the
   * truth, is a Byzantine master: outside the fault model.)
   */
  HOSTILE_REPLY,
  /**
   * An assumption broken on purpose: a client that holds a lease checks that it is valid, then its
   * process pauses (a GC) past the lease's validity, then it writes to the fenced store.
   */
  CLIENT_PAUSE,
  /**
   * An assumption broken on purpose: masters 2 to 4 restarted without their data and admitted at
   * once, while a lease they held may still be valid.
   */
  ADMIT_TOO_SOON,
  /**
   * An assumption broken on purpose: a master's wall clock stepped forward by 1 to 10 s (an NTP
   * step, an operator's {@code date -s}): its keys expire at once or early.
   */
  MASTER_CLOCK_JUMP,
  /**
   * Not a fault: a burst of steady contention, drawn as one. While this step's client waits
   * (blocking, up to a second) for a set that includes the first resource, the two other clients
   * take that resource in turn, each holding it 1 to 10 ms and asking again (async) as soon as its
   * release is answered: a set's waiter must get its turn among queued single waiters (R6), within
   * {@link Checker#OVERTAKEN_BOUND} grants to others. Started only when no client holds or waits.
   */
  STEADY_CONTENTION,
  /**
   * An operator's change rolled out to a majority of masters, half a second apart: each made unfit
   * as {@link #UNFIT_MASTER} makes one, for 11 to 31 s (past the fitness re-check's interval), then
   * configured back. While a majority is excluded no lease can be granted: a client's rounds probe
   * the excluded masters, which must still refuse every vote, a waiter's acquire in turn at its
   * gate included (R4). Started only when no master is unfit.
   */
  UNFIT_ROLLOUT
}
