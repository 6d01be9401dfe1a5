package dev.redlock.simulation;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Item 6 of issue 33: bugs this project's code has had, or could have, put back by a switch of the
 * harness ({@link PatchedCore}: an edited copy of one core source file, in a class loader of its
 * own; never in the product), each found by the simulation within a fixed budget of seeds, and the
 * seeds on the real core (1 to the one that found it) finding nothing. Prints each bug's seed and
 * first failure. The hunts share nothing (each patched core has a class loader of its own), so they
 * run side by side ({@code junit-platform.properties}).
 */
class ReintroducedBugsTest {

  /** Seeds per hunt; steps per seed. */
  private static final int SEEDS = 20;

  private static final int STEPS = 500;

  private static String hunt(
      String bug, List<PatchedCore.JavaBug> edits, String faults, int faultEvery) throws Exception {
    String found = PatchedCore.hunt(edits, faults, SEEDS, STEPS, faultEvery);
    System.out.printf("| %s | %s | %s |%n", bug, faults.isEmpty() ? "none" : faults, found);
    return found;
  }

  private static void found(
      String bug, List<PatchedCore.JavaBug> edits, String faults, int faultEvery) throws Exception {
    found(bug, edits, faults, SEEDS, STEPS, faultEvery);
  }

  /** As {@link #found(String, List, String, int)}, over {@code seeds} seeds of {@code steps}. */
  private static void found(
      String bug,
      List<PatchedCore.JavaBug> edits,
      String faults,
      int seeds,
      int steps,
      int faultEvery)
      throws Exception {
    String found = PatchedCore.hunt(edits, faults, seeds, steps, faultEvery);
    System.out.printf("| %s | %s | %s |%n", bug, faults.isEmpty() ? "none" : faults, found);
    assertNotNull(found, bug + ": no seed of " + seeds + " found it");
    assertNull(
        Hunt.hunt(faults, seedOf(found), steps, faultEvery), "the real core failed the same seeds");
  }

  /**
   * The seed that a hunt's failure names ({@code "seed 6 step 2: ..."}). The real core's control
   * runs the same seeds as the hunt that found the bug, 1 to this one: it passes the seed that
   * failed with the bug put back, and every seed before it. (The budget's campaign runs the real
   * core over more seeds of every family.)
   */
  static int seedOf(String found) {
    java.util.regex.Matcher seed = java.util.regex.Pattern.compile("^seed (\\d+)").matcher(found);
    if (!seed.find()) {
      throw new IllegalArgumentException("a failure that names no seed: " + found);
    }
    return Integer.parseInt(seed.group(1));
  }

  /**
   * The drift allowance added to the validity instead of subtracted: a client believes its lease
   * valid a few milliseconds after the masters' keys expire, and another client is granted then.
   */
  @Test
  void driftAddedInsteadOfSubtracted() throws Exception {
    found(
        "drift added to the validity",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/Validity.java",
                "return ttlNanos - elapsedNanos - driftNanos(ttlNanos, driftFactor);",
                "return ttlNanos - elapsedNanos + driftNanos(ttlNanos, driftFactor);")),
        "CLOCK_DRIFT",
        10);
  }

  /** The master's clock ({@code TIME}, in microseconds) read as milliseconds by the guard. */
  private static final PatchedCore.JavaBug MICROS_AS_MILLIS =
      new PatchedCore.JavaBug(
          "dev/redlock/internal/transport/RestartGuardRule.java",
          "reply.timeMicros() / 1000,",
          "reply.timeMicros(),");

  /** The guard's time (ms) read as nanoseconds where it judges a server run's age. */
  private static final PatchedCore.JavaBug MILLIS_AS_NANOS =
      new PatchedCore.JavaBug(
          "dev/redlock/internal/transport/RestartGuardRule.java",
          "incarnation.refusal(writtenAtNanos, TimeUnit.MILLISECONDS.toNanos(guardMillis))",
          "incarnation.refusal(writtenAtNanos, guardMillis)");

  /**
   * The restart guard checks a restarted master twice: the dataset's age by the master's clock (its
   * birth marker) and the server run's age by the client's. A unit bug in either alone is masked by
   * the other, and the simulation shows it (no seed fails); with both, every dataset looks
   * thousands of years old and every run old enough, so a master restarted empty votes at once, and
   * a second client is granted.
   */
  @Test
  void unitBugsInBothOfTheRestartGuardsChecks() throws Exception {
    assertNull(
        hunt(
            "TIME's µs read as ms (dataset age) alone",
            List.of(MICROS_AS_MILLIS),
            "RESTART_EMPTY",
            1),
        "the run's age should still keep the restarted master out");
    assertNull(
        hunt(
            "the guard's ms read as ns (run age) alone",
            List.of(MILLIS_AS_NANOS),
            "RESTART_EMPTY",
            1),
        "the dataset's age should still keep the restarted master out");
    found(
        "both unit bugs of the restart guard",
        List.of(MICROS_AS_MILLIS, MILLIS_AS_NANOS),
        "RESTART_EMPTY",
        1);
  }

  /**
   * R10: the restart guard's shortcut ("a restart of a run that loses nothing keeps its date")
   * reading the new run's persistence instead of the old run's: a master with {@code appendfsync
   * everysec} that lost its last writes in a restart, and came back switched to {@code always},
   * votes at once. Its dataset's birth marker survived in the older file, so the dataset's age does
   * not keep it out either, and a second client is granted.
   */
  @Test
  void aSwitchToAppendfsyncAlwaysMadeAtTheRestartIsTrusted() throws Exception {
    found(
        "R10: the guard trusts the new run's appendfsync",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/transport/Incarnation.java",
                "if (!replaced && seen && previous.lossless()) {",
                "if (!replaced && seen && facts.lossless()) {")),
        "RESTART_FSYNC_SWITCHED",
        1);
  }

  /**
   * Fitness checks that never keep an unfit master from voting ({@code excludeUnfitMasters}
   * ignored): a master configured to evict keys goes on voting after its re-check.
   */
  @Test
  void anUnfitMasterNeverExcluded() throws Exception {
    found(
        "an unfit master never excluded",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/preflight/FitNodeClient.java",
                "    return exclude ? unfit : null;\n  }\n\n  /**\n   * Returns why",
                "    return null;\n  }\n\n  /**\n   * Returns why")),
        "UNFIT_MASTER",
        10);
  }

  /**
   * R4: an excluded unfit master votes through a waiter's acquire in turn ({@code FitNodeClient}
   * forwarding {@code AcquireInTurn} while it refuses every other vote, as before {@code da81fdb}).
   * A gated round skips an excluded gate, so the acquire in turn reaches it only as the probe of a
   * named waiter's round at once when the masters it lets vote cannot make a quorum: a fitness
   * rollout to a majority, while another client, whose re-checks come later, still takes the lock
   * and its release at the gate names the waiter. Found by the checker of votes sent past a
   * client's own exclusion. Since {@code Abstentions}, a round whose client excludes a majority
   * asks no master, so R4's scenario sends nothing: the hunt puts that back too. (R4 alone was
   * found in none of 20 seeds of this hunt, nor of 40 seeds, one step in 2, with paused masters or
   * partitions and latency added: the acquire in turn would now reach an excluded gate only as the
   * probe of a round whose other masters' breakers are open.)
   */
  @Test
  void anExcludedGateVotesThroughAnAcquireInTurn() throws Exception {
    found(
        "R4: an excluded gate votes through an acquire in turn (rounds that cannot win sent)",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/preflight/FitNodeClient.java",
                "yield reason != null ? CompletableFuture.failedFuture(reason) :",
                "yield reason != null && command.kind() != Command.Kind.ACQUIRE_IN_TURN"
                    + " ? CompletableFuture.failedFuture(reason) :"),
            ROUNDS_THAT_CANNOT_WIN_SENT),
        "UNFIT_ROLLOUT,STEADY_CONTENTION",
        20,
        1_000,
        3);
  }

  /**
   * A named waiter's retries end at its first refusal at its gate, as before {@code
   * Turn.NAMED_RETRIES}: a named waiter refused there by a failed round's key, whose cleanup names
   * no one, sleeps its timer. Since that fix a named waiter refused at its gate asks again a few
   * times, which also outlasts two bugs put back below (a notice dropped during a round; a client
   * that cannot win asking all the same): their hunts put this one back too.
   */
  private static final PatchedCore.JavaBug NAMED_RETRIES_END_AT_THE_GATE =
      new PatchedCore.JavaBug(
          "dev/redlock/internal/lease/Turn.java",
          "boolean again = left > 0 || !set && !queued;",
          "boolean again = set ? left > 0 : !queued;");

  /**
   * {@code Abstentions.known} knowing nothing: every master is asked, also in a round that too few
   * masters can win.
   */
  private static final PatchedCore.JavaBug ROUNDS_THAT_CANNOT_WIN_SENT =
      new PatchedCore.JavaBug(
          "dev/redlock/internal/lease/Abstentions.java",
          "  NodeReply[] known() {\n",
          "  NodeReply[] known() {\n    if (true) return null;\n");

  /**
   * A fitness re-check that reaches nothing (sent on a connection the master's restart had just
   * ended) taken as a verdict of fit, and the next one made a whole interval later, as before
   * {@code FitNodeClient} kept the last verdict and checked again soon: an evicting master votes
   * for that client for another interval. Found by the calm faults together (seeds 59 and 73 of 80
   * on the commit before the fix); the hunt is the two of them that make it, a master made unfit
   * and a restart that keeps its data, 80 seeds of 1,000 steps (the eight calm faults of then found
   * it at seed 73, four times the CPU).
   */
  @Test
  void aRecheckCutOffByARestartClearsTheVerdict() throws Exception {
    found(
        "a re-check that reaches nothing taken as fit for an interval",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/preflight/FitNodeClient.java",
                "        if (check.verdict() == Verdict.FAIL) {\n          return false;",
                "        if (check.verdict() == Verdict.FAIL) {\n          unfit = null;\n"
                    + "          failing = null;\n          return true;")),
        "RESTART_KEEPING_DATA,UNFIT_MASTER",
        80,
        1_000,
        10);
  }

  /**
   * R8: a waiter past the bound on subscribed resources ({@code Wakeups.MAX_GROUPS}, set to 0 here
   * so that every waiter is past it) queues at its gate all the same ({@code Turn}'s two {@code
   * unheard} checks removed): the release names it first in the queue, and it hears nothing until
   * its timer while the resource is free. The same bound with the fix (such a waiter does not
   * queue) passes the seeds the hunt ran.
   */
  @Test
  void aWaiterThatHearsNothingQueuesAtTheGate() throws Exception {
    String bug = "R8: a waiter that hears nothing queues at the gate";
    PatchedCore.JavaBug noGroups =
        new PatchedCore.JavaBug(
            "dev/redlock/internal/lease/Wakeups.java",
            "static final int MAX_GROUPS = 1024;",
            "static final int MAX_GROUPS = 0;");
    String found =
        PatchedCore.hunt(
            List.of(
                noGroups,
                new PatchedCore.JavaBug(
                    "dev/redlock/internal/lease/Turn.java",
                    "return waiter != null && !set && !unheard && queuedAs == null",
                    "return waiter != null && !set && queuedAs == null"),
                new PatchedCore.JavaBug(
                    "dev/redlock/internal/lease/Turn.java",
                    "return gated && gating && !unheard ? masters.gateOf(key) : -1;",
                    "return gated && gating ? masters.gateOf(key) : -1;")),
            "",
            SEEDS,
            STEPS,
            1);
    System.out.printf("| %s | none | %s |%n", bug, found);
    assertNotNull(found, bug + ": no seed of " + SEEDS + " found it");
    assertNull(
        PatchedCore.hunt(List.of(noGroups), "", seedOf(found), STEPS, 1),
        "the real core with the same bound failed the same seeds");
  }

  /**
   * R5: {@code queue.lua} judging every waiter's staleness, and the queue's life, by the asking
   * client's window, and {@code release.lua} naming the first waiter without dropping stale ones
   * (the scripts before {@code 2e87985}, as Lua edits). Client 2 runs a retry delay of 5 ms and a
   * node timeout of 10 ms (a stale window of 30 ms) beside two clients on the defaults (200 ms,
   * asking every 25 to 75 ms): its asks drop their live waiters, and a waiter that asked later is
   * named first (the order checker, runs without faults). The real scripts pass the seeds the hunt
   * ran.
   */
  @Test
  void aShortWindowDropsOtherClientsLiveWaiters() throws Exception {
    String bug = "R5: staleness judged by the asking client's window";
    java.util.function.UnaryOperator<String> askersWindow =
        source ->
            source
                .replace(
                    "redis.pcall('ZADD', seen, us + window, waiter)",
                    "redis.pcall('ZADD', seen, us, waiter)")
                .replace(
                    "local gone = redis.pcall('ZRANGEBYSCORE', seen, 0, us, 'LIMIT', 0, 16)",
                    "local gone = redis.pcall('ZRANGEBYSCORE', seen, 0, us - window, 'LIMIT', 0,"
                        + " 16)")
                .replace(
                    "local gone = redis.pcall('ZRANGEBYSCORE', KEYS[3], 0, us, 'LIMIT', 0, 16)",
                    "local gone = false");
    java.util.function.IntFunction<java.util.function.UnaryOperator<dev.redlock.RedLockBuilder>>
        settings =
            c ->
                c == 2
                    ? b ->
                        b.retryDelay(java.time.Duration.ofMillis(5))
                            .nodeTimeout(java.time.Duration.ofMillis(10))
                    : b -> b;
    java.util.Set<Fault> none = java.util.EnumSet.noneOf(Fault.class);
    String found =
        Hunt.firstFailure(
            SEEDS,
            seed ->
                SimHarness.runEach(
                        seed, Workload.schedule(seed, STEPS, none, 1), settings, askersWindow)
                    .failure());
    System.out.printf("| %s | none, client 2's window 30 ms | %s |%n", bug, found);
    assertNotNull(found, bug + ": no seed of " + SEEDS + " found it");
    assertNull(
        Hunt.firstFailure(
            seedOf(found),
            seed ->
                SimHarness.runEach(seed, Workload.schedule(seed, STEPS, none, 1), settings, x -> x)
                    .failure()),
        "the real scripts failed the same seeds");
  }

  /**
   * R6: a set's waiter never queues at its resources' gates ({@code Turn}'s join after a refused
   * round removed, as before {@code e19dd4f}): among single waiters that keep the resource asked
   * for ({@link Fault#STEADY_CONTENTION}), every release names a queued single waiter, and the
   * set's rounds, at its timer, find the resource taken again and again (the overtaking checker).
   */
  @Test
  void aSetsWaiterNeverQueues() throws Exception {
    found(
        "R6: a set's waiter never queues",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/Turn.java",
                "    } else if (set) {\n      join();\n    }\n",
                "    }\n")),
        "STEADY_CONTENTION",
        10);
  }

  /**
   * A notice dropped while a waiter runs its round: the wake that ends the waiter's next pause
   * armed after the round ({@code Wait.decided} taking a fresh {@code next()}) instead of before
   * it, so a release that names the waiter while its round runs wakes nothing, and the named waiter
   * sleeps until its timer. The bug of {@code f11a410} was this loss by a race of two threads; on
   * one thread it is this order. Among single waiters that keep the resource asked for ({@link
   * Fault#STEADY_CONTENTION}, one step in 5, 1,000 steps), notices land during rounds often enough
   * (the named-waiter checker). With the named waiter's retries after a refusal at its gate put
   * back too: they outlast the lost notice.
   */
  @Test
  void aNoticeDuringTheRoundIsDropped() throws Exception {
    found(
        "a notice dropped while a waiter runs its round",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/Wait.java",
                "    CompletableFuture<Void> woken = wake;\n",
                "    CompletableFuture<Void> woken = entered == null ? null : entered.next();\n"),
            NAMED_RETRIES_END_AT_THE_GATE),
        "STEADY_CONTENTION",
        SEEDS,
        1_000,
        5);
  }

  /**
   * R7: a gate that answers after the acquisition was cancelled still opens the round to the other
   * masters ({@code QuorumRound}'s {@code wanted} check gone, as before {@code ef93fd1}): they
   * grant a lock no one wants, which the failed round's cleanup releases about a round later, so no
   * bound on waits sees it. Found by the checker of acquires a cancelled acquisition sends to
   * masters it had not asked before its cancel, when a cancel lands while a waiter's round waits
   * for its gate: async waiters that keep the resource asked for ({@link Fault#STEADY_CONTENTION}).
   */
  @Test
  void aGateAnsweringAfterTheCancelOpensTheRound() throws Exception {
    found(
        "R7: a gate answering after the cancel still opens the round",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/QuorumRound.java",
                "} else if (!wanted.getAsBoolean()) {",
                "} else if (false) {")),
        "STEADY_CONTENTION",
        SEEDS,
        1_000,
        5);
  }

  /**
   * A waiter that stops (granted, out of time, cancelled) never leaves its queue at the gate: the
   * next release names it, and the waiters behind it wait for it to go stale while the resource is
   * free.
   */
  @Test
  void aWaiterThatStopsNeverLeavesTheQueue() throws Exception {
    found(
        "a waiter that stops never leaves the queue at the gate",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/Turn.java",
                "    queuedAt = -1;\n    masters.leave(gate, key, waiter);\n  }\n}",
                "    queuedAt = -1;\n  }\n}")),
        "",
        1);
  }

  /**
   * The last waiter of a resource to leave never unsubscribes its channel: a subscription per
   * resource ever waited on, kept for the RedLock's life (state that grows with the names).
   */
  @Test
  void theLastWaiterToLeaveNeverUnsubscribes() throws Exception {
    found(
        "the last waiter to leave never unsubscribes",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/Wakeups.java",
                "            link.unsubscribe(group.name);\n",
                "")),
        "",
        1);
  }

  /**
   * {@code extend.lua} without its compare: an extend extends whatever key it finds. Its effect
   * needs a message held up by a partition (a renewal reaching a master late), so the hunt is 40
   * seeds of 1,000 steps with a partition one step in three; the real script passes the seeds the
   * hunt ran.
   */
  @Test
  void anExtendThatDoesNotCompareItsToken() throws Exception {
    String bug = "extend.lua extends whatever key it finds";
    java.util.Set<Fault> partitions = java.util.EnumSet.of(Fault.PARTITION);
    java.util.function.UnaryOperator<String> noCompare =
        source ->
            source.replace(
                "if value == ARGV[1] then\n  local ttl = tonumber(ARGV[2])\n  if",
                "if value then\n  local ttl = tonumber(ARGV[2])\n  if");
    String found =
        Hunt.firstFailure(
            40, seed -> SimHarness.run(seed, 1_000, partitions, 3, b -> b, noCompare).failure());
    System.out.printf("| %s | PARTITION | %s |%n", bug, found);
    assertNotNull(found, bug + ": no seed of 40 found it");
    assertNull(
        Hunt.firstFailure(
            seedOf(found),
            seed -> SimHarness.run(seed, 1_000, partitions, 3, b -> b, s -> s).failure()),
        "the real script failed the same seeds");
  }

  /**
   * R2: {@code queue.lua} without its yield: a waiter granted at its gate for two stale windows
   * without leaving stays first. A waiter cut off from every master but the gate ({@link
   * Fault#ISOLATED_WAITER}) is such a head: it is granted there and loses everywhere else, and the
   * waiters behind it are refused at the gate until its wait ends. The hunt: seeds of 1,000 steps
   * with an isolated waiter one step in ten; the real script passes the seeds the hunt ran.
   */
  @Test
  void aQueueHeadThatNeverYields() throws Exception {
    String bug = "queue.lua: a head that never yields (R2)";
    String yieldWhen =
        "and redis.pcall('ZADD', seen, 'XX', 'LT', 'CH', 2 * window - us, mark) == 1 then";
    java.util.function.UnaryOperator<String> neverYields =
        source -> source.replace(yieldWhen, "and false then");
    java.util.Set<Fault> isolated = java.util.EnumSet.of(Fault.ISOLATED_WAITER);
    String found =
        Hunt.firstFailure(
            SEEDS,
            seed -> SimHarness.run(seed, 1_000, isolated, 10, b -> b, neverYields).failure());
    System.out.printf("| %s | ISOLATED_WAITER | %s |%n", bug, found);
    assertNotNull(found, bug + ": no seed of " + SEEDS + " found it");
    assertNull(
        Hunt.firstFailure(
            seedOf(found),
            seed -> SimHarness.run(seed, 1_000, isolated, 10, b -> b, s -> s).failure()),
        "the real script failed the same seeds");
  }

  /**
   * R3: the queue script's token read from its first argument (the word {@code acquire}, as {@code
   * NodeCommand} did before {@code 0c63960}): a gate's acquire answered NOSCRIPT and kept to be
   * sent again never matches its own lease's release, which ran meanwhile once another client's
   * reload made the scripts ready, so it is sent again after that release and sets a key no one
   * will release. It needs a slow link to the gate (the gate passed by, the round refused elsewhere
   * and its releases sent before the gate's NOSCRIPT came back) and a {@code SCRIPT FLUSH}: the
   * hunt is both, 20 seeds of 1,000 steps, one step in three; the real core passes the seeds the
   * hunt ran.
   */
  @Test
  void aQueuedAcquireSentAgainAfterItsOwnRelease() throws Exception {
    String bug = "R3: the queue acquire's token read from its first argument";
    String faults = "LATENCY,SCRIPT_FLUSH";
    String found =
        PatchedCore.hunt(
            List.of(
                new PatchedCore.JavaBug(
                    "dev/redlock/internal/transport/NodeCommand.java",
                    "return script == LuaScript.KEY_SET || script == LuaScript.QUEUE ? args[1] :"
                        + " args[0];",
                    "return script == LuaScript.KEY_SET ? args[1] : args[0];")),
            faults,
            SEEDS,
            1_000,
            3);
    System.out.printf("| %s | %s | %s |%n", bug, faults, found);
    assertNotNull(found, bug + ": no seed of " + SEEDS + " found it");
    assertNull(Hunt.hunt(faults, seedOf(found), 1_000, 3), "the real core failed the same seeds");
  }

  /**
   * A close that does not wait for the commands in flight ({@code 49c7443}'s fix undone): a program
   * that releases its lease and closes its RedLock at once drops the releases the slower masters
   * had not read yet (its links close with {@code SO_LINGER 0}), and their keys stay for a TTL.
   */
  @Test
  void aCloseThatDropsTheReleasesInFlight() throws Exception {
    found(
        "a close that drops the releases in flight",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/Masters.java",
                "      node.awaitDrained(drainedBy);",
                "      // node.awaitDrained(drainedBy);")),
        "CLIENT_CLOSE",
        10);
  }

  /**
   * A close that leaves the pending async acquisitions pending: a caller waiting on its future
   * waits for ever (the close fails them, since the async API's first version).
   */
  @Test
  void aCloseThatLeavesAnAsyncWaitPending() throws Exception {
    found(
        "a close that leaves an async wait pending",
        List.of(
            new PatchedCore.JavaBug(
                "dev/redlock/internal/lease/AsyncLeases.java",
                "      acquisition.future.completeExceptionally(closedWhileWaiting);",
                "      // acquisition.future.completeExceptionally(closedWhileWaiting);")),
        "CLIENT_CLOSE",
        10);
  }

  /**
   * A client that cannot win asking all the same: a client whose restart guard refused two
   * restarted masters ("votes in 55 s"), with a third master unfit, set its key on every master it
   * asked, at its retry rate, and kept out the others, who needed those masters: a named waiter
   * went without the resource for longer than its bound (found by the campaign before {@code
   * Abstentions}; seeds 20 and 30 of the ten calm families, one step in three). The bug put back:
   * {@code Abstentions.known} knows nothing, so every master is asked; and the named waiter's
   * retries after a refusal at its gate, which let it take the lock between that client's rounds.
   */
  @Test
  void aClientThatCannotWinAsksAllTheSame() throws Exception {
    found(
        "a client that cannot win asks all the same",
        List.of(ROUNDS_THAT_CANNOT_WIN_SENT, NAMED_RETRIES_END_AT_THE_GATE),
        "RESTART_KEEPING_DATA,SCRIPT_FLUSH,CLOCK_DRIFT,SUBSCRIBER_RESET,CLIENT_CRASH,CLIENT_CLOSE,"
            + "CLIENT_CLOCK_DRIFT,UNFIT_MASTER,CLIENT_CLOCK_JUMP,STEADY_CONTENTION",
        30,
        1_000,
        3);
  }

  /**
   * A named waiter refused at its gate waits to be named again, though the key that refused it
   * there was a failed round's (a client not waiting, or a set's waiter, asks the gate past the
   * queue), whose cleanup is quiet and names no one: the waiter, first in the queue, sleeps its
   * timer while the resource is free (found by the campaign, 7 seeds of 1,400 of the ten calm
   * families, one step in 10). The bug put back: {@code Turn} stops a named waiter's retries at its
   * first refusal at the gate, as before {@code Turn.NAMED_RETRIES}.
   */
  @Test
  void aNamedWaiterRefusedAtItsGateWaitsForANamingThatNeverComes() throws Exception {
    found(
        "a named waiter refused at its gate waits for a naming",
        List.of(NAMED_RETRIES_END_AT_THE_GATE),
        "RESTART_KEEPING_DATA,SCRIPT_FLUSH,CLOCK_DRIFT,SUBSCRIBER_RESET,CLIENT_CRASH,CLIENT_CLOSE,"
            + "CLIENT_CLOCK_DRIFT,UNFIT_MASTER,CLIENT_CLOCK_JUMP,STEADY_CONTENTION",
        150,
        1_000,
        10);
  }
}
