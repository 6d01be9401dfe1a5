package dev.redlock.internal.lease;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeCommand;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.RestartGuardRule;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Trouble;
import dev.redlock.internal.transport.Vote;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * When an acquire round asks no master at all: when this client already knows that too few masters
 * can vote for it. Such a client cannot win, yet each round of it set its key on every master it
 * asked, at its retry rate, and kept out the clients that could win, who needed those masters
 * (found by the simulation; docs/robustness.md).
 *
 * <ul>
 *   <li><b>Held by the restart guard.</b> A master whose acquire the guard refused with a time
 *       ({@code votes in 57 s, or once admitted}) is held until that time or {@link
 *       #RECHECK_NANOS}, whichever comes first; any other answer of it ends the hold.
 *   <li><b>Too few left.</b> When the held masters and those kept out as unfit ({@link
 *       NodeClient#excluded}) leave fewer than a quorum, the round asks no master: the held count
 *       as their refusal, the unfit as their exclusion, the others unasked (PENDING); it is decided
 *       at once and leaves nothing to release. Meanwhile a held master is only read, for an
 *       admission ({@code MGET redlock:admitted}, one read at a time): a record other than the one
 *       its refusal read ends the hold at once.
 * </ul>
 *
 * Otherwise every master is asked, as without holds, and the guard judges each answer: a hold
 * spares only rounds that cannot win. (Not asking the held masters in a round that can still win
 * would hide a restarted master's misjudged vote for the hold's second: the simulation then found
 * neither of the guard's unit bugs put back.)
 *
 * <p>Thread-safe: a hold is one immutable value per master, replaced whole.
 */
final class Abstentions {

  /**
   * The longest a master is held without being asked again: how soon what the hold does not foresee
   * (a master clock faster than this client's) is seen.
   */
  static final long RECHECK_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * A master held until {@code untilNanos}, counted as {@code refusal} meanwhile; {@code reading}
   * is set while its admission record is being read.
   */
  private record Hold(long untilNanos, NodeReply refusal, AtomicBoolean reading) {}

  private final List<NodeClient> nodes;
  private final int quorum;
  private final Ticker ticker;
  private final AtomicReferenceArray<Hold> holds;

  Abstentions(List<NodeClient> nodes, int quorum, Ticker ticker) {
    this.nodes = nodes;
    this.quorum = quorum;
    this.ticker = ticker;
    this.holds = new AtomicReferenceArray<>(nodes.size());
  }

  /**
   * The answer each master is known to give to this round's acquire without being asked ({@link
   * QuorumRound.Verdict#known}) when too few are left to win; null, as on nearly every round, when
   * every master is asked. Taken once per round, so that the round sees one answer per master.
   *
   * @return null, or per master: its hold's refusal, its exclusion, or {@link
   *     QuorumRound#NOT_ASKED}
   */
  NodeReply[] known() {
    int n = nodes.size();
    int out = 0;
    long now = ticker.read();
    for (int i = 0; i < n; i++) {
      Hold hold = holds.get(i);
      if (hold != null && now - hold.untilNanos() >= 0) {
        holds.compareAndSet(i, hold, null);
        hold = null;
      }
      if (hold != null || nodes.get(i).excluded() != null) {
        out++;
      }
    }
    if (out <= n - quorum) {
      return null; // enough may vote: every master is asked, and the guard judges each answer
    }
    NodeReply[] known = new NodeReply[n];
    for (int i = 0; i < n; i++) {
      Hold hold = holds.get(i);
      NodeUnavailableException excluded;
      if (hold != null) {
        known[i] = hold.refusal();
        readAdmission(i, hold);
      } else if ((excluded = nodes.get(i).excluded()) != null) {
        known[i] = new NodeReply(Vote.FAILED, 0, 0, excluded.getMessage());
      } else {
        known[i] = QuorumRound.NOT_ASKED;
      }
    }
    return known;
  }

  /**
   * Notes what the guard made of master {@code node}'s answer to an acquire: a refusal with a time
   * holds the master; a vote that counts (or any answer but the guard's refusal) ends its hold.
   *
   * @param node the master's index
   * @param judged the answer as the guard judged it ({@link RestartGuardRule#judge})
   * @return {@code judged}
   */
  NodeReply judged(int node, NodeReply judged) {
    if (judged.status() == Vote.RESTARTED) {
      long seconds = RestartGuardRule.votesInSeconds(judged.detail());
      if (seconds >= 0 && judged.reading() != null) {
        long forNanos = Math.min(TimeUnit.SECONDS.toNanos(seconds), RECHECK_NANOS);
        holds.set(node, new Hold(ticker.read() + forNanos, judged, new AtomicBoolean()));
      }
    } else if (holds.get(node) != null) {
      holds.set(node, null);
    }
    return judged;
  }

  /** Ends every hold: this client admitted the masters. */
  void clear() {
    for (int i = 0; i < holds.length(); i++) {
      holds.set(i, null);
    }
  }

  /**
   * Reads master {@code node}'s admission record, unless a read is under way: a record other than
   * the one its refusal read ends the hold.
   */
  private void readAdmission(int node, Hold hold) {
    if (!hold.reading().compareAndSet(false, true)) {
      return;
    }
    byte[] before = hold.refusal().reading().admitted();
    try {
      nodes
          .get(node)
          .send(new Command.Query(NodeCommand.Verb.MGET, Trouble.ADMITTED_KEY))
          .whenComplete(
              (answer, error) -> {
                if (error == null && !Arrays.equals(before, admitted(answer))) {
                  holds.compareAndSet(node, hold, null);
                }
                hold.reading().set(false);
              });
    } catch (RuntimeException e) {
      hold.reading().set(false); // closing: the hold ends at its time
    }
  }

  /** The record in an {@code MGET} answer of one key, or null. */
  private static byte[] admitted(Object answer) {
    return answer instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof byte[] record
        ? record
        : null;
  }
}
