package dev.redlock;

import static java.util.Objects.requireNonNull;

import dev.redlock.internal.preflight.FitNodeClient;
import java.util.List;

/**
 * What {@link RedLock#inspect()} found: for each master, whether it is fit for Redlock, check by
 * check, and for the placement across datacenters, which single-datacenter losses a quorum
 * survives. Immutable.
 *
 * @param masters one entry per master, in configuration order
 * @param losses for each datacenter label, what losing all of its masters leaves; empty when no
 *     master has a label
 */
public record Inspection(List<Master> masters, List<DatacenterLoss> losses) {

  /** The checks whose FAIL makes a master unfit for Redlock, as opposed to out of reach. */
  private static final java.util.Set<String> UNFIT_CHECKS =
      java.util.Set.of("role", "cluster", "eviction");

  /** How a check, a master or the whole placement came out; later constants are worse. */
  public enum Verdict {
    /** Fit. */
    PASS,
    /** Could not be checked (an ACL forbids the command, or the master did not answer it). */
    UNKNOWN,
    /** Works, but a safety assumption rests on something outside the library's control. */
    WARN,
    /** Unfit for Redlock: locks on it can be lost or shared. */
    FAIL;

    /**
     * Returns the worse of this and {@code other}.
     *
     * @param other another verdict
     * @return the later constant of the two
     */
    public Verdict worse(Verdict other) {
      return compareTo(other) >= 0 ? this : other;
    }
  }

  /**
   * One check on one master.
   *
   * @param name what was checked: {@code reachable}, {@code role}, {@code cluster}, {@code
   *     eviction}, {@code persistence}, {@code uptime}, {@code clock} or {@code admission}
   * @param verdict how it came out
   * @param detail what was found and why it matters; never a password
   */
  public record Check(String name, Verdict verdict, String detail) {
    /**
     * Creates a check.
     *
     * @param name what was checked
     * @param verdict how it came out
     * @param detail what was found
     * @throws NullPointerException if an argument is null
     */
    public Check {
      requireNonNull(name, "name");
      requireNonNull(verdict, "verdict");
      requireNonNull(detail, "detail");
    }
  }

  /**
   * One master's checks.
   *
   * @param node the master's {@code host:port}
   * @param datacenter its datacenter label, or empty
   * @param checks every check, in a fixed order
   */
  public record Master(String node, String datacenter, List<Check> checks) {
    /**
     * Creates a master's entry.
     *
     * @param node the master's {@code host:port}
     * @param datacenter its label, or empty
     * @param checks its checks
     * @throws NullPointerException if an argument is null
     */
    public Master {
      requireNonNull(node, "node");
      requireNonNull(datacenter, "datacenter");
      checks = List.copyOf(checks);
    }

    /**
     * Returns the worst verdict of this master's checks.
     *
     * @return {@link Verdict#FAIL} if any check failed, and so on
     */
    public Verdict verdict() {
      Verdict worst = Verdict.PASS;
      for (Check check : checks) {
        worst = worst.worse(check.verdict());
      }
      return worst;
    }

    /**
     * Returns whether this master can grant now: it answered, no check FAILed, and the restart
     * guard counts its vote (its {@code admission} check passed, if it has one).
     *
     * @return true if its vote counts toward a quorum
     */
    public boolean votes() {
      for (Check check : checks) {
        if (stopsVote(check)) {
          return false;
        }
      }
      return true;
    }

    /** Whether {@code check} keeps its master from voting: a FAIL, or an admission not PASSed. */
    private static boolean stopsVote(Check check) {
      return check.verdict() == Verdict.FAIL
          || (check.name().equals("admission") && check.verdict() != Verdict.PASS);
    }

    /**
     * Returns why this master does not vote: its FAILed checks and a failed admission, each with
     * its finding; empty if it votes.
     *
     * @return e.g. {@code eviction FAIL: maxmemory 67108864 with maxmemory-policy allkeys-lru: ...}
     */
    public String whyNotVoting() {
      StringBuilder why = new StringBuilder();
      for (Check check : checks) {
        if (stopsVote(check)) {
          why.append(why.length() == 0 ? "" : "; ")
              .append(check.name())
              .append(' ')
              .append(check.verdict())
              .append(": ")
              .append(check.detail());
        }
      }
      return why.toString();
    }
  }

  /**
   * What losing one whole datacenter leaves.
   *
   * @param datacenter the datacenter's label
   * @param lost how many masters it holds
   * @param left how many masters the others hold
   * @param quorum how many make a majority of all masters
   */
  public record DatacenterLoss(String datacenter, int lost, int left, int quorum) {
    /**
     * Returns whether a quorum survives the loss.
     *
     * @return true if the other datacenters still hold a majority
     */
    public boolean survives() {
      return left >= quorum;
    }
  }

  /**
   * Creates an inspection.
   *
   * @param masters one entry per master
   * @param losses one entry per datacenter label
   * @throws NullPointerException if an argument is null
   */
  public Inspection {
    masters = List.copyOf(masters);
    losses = List.copyOf(losses);
  }

  /**
   * Returns the worst verdict over every master, and {@link Verdict#WARN} at least if the loss of
   * some single datacenter would leave no quorum.
   *
   * @return the overall verdict
   */
  public Verdict verdict() {
    Verdict worst = Verdict.PASS;
    for (Master master : masters) {
      worst = worst.worse(master.verdict());
    }
    for (DatacenterLoss loss : losses) {
      if (!loss.survives()) {
        worst = worst.worse(Verdict.WARN);
      }
    }
    return worst;
  }

  /**
   * Returns how many masters make a quorum: a majority of all of them.
   *
   * @return {@code N/2+1}
   */
  public int quorum() {
    return masters.size() / 2 + 1;
  }

  /**
   * Returns how many masters can grant now ({@link Master#votes()}).
   *
   * @return zero or more
   */
  public int voting() {
    int voting = 0;
    for (Master master : masters) {
      if (master.votes()) {
        voting++;
      }
    }
    return voting;
  }

  /**
   * Returns the quorum arithmetic in words: how many masters vote ({@link #voting()}), how many are
   * needed ({@link #quorum()}), and whether a lock can be granted; then the masters that do not
   * vote, each with the checks that keep it out, and, for a master unfit for Redlock (a replica,
   * cluster mode, an evicting policy), the remedy.
   *
   * @return e.g. {@code 3 of 5 masters vote, 3 needed: a quorum, locks can be granted; not voting:
   *     10.0.0.4:6379 (reachable FAIL), 10.0.0.5:6379 (eviction FAIL)}
   */
  public String summary() {
    int voting = voting();
    StringBuilder out =
        new StringBuilder()
            .append(voting)
            .append(" of ")
            .append(masters.size())
            .append(masters.size() == 1 ? " master votes, " : " masters vote, ")
            .append(quorum())
            .append(" needed: ")
            .append(
                voting >= quorum()
                    ? "a quorum, locks can be granted"
                    : "NO QUORUM, no lock can be granted");
    boolean unfit = false;
    String separator = "; not voting: ";
    for (Master master : masters) {
      if (master.votes()) {
        continue;
      }
      out.append(separator).append(master.node()).append(" (");
      separator = ", ";
      String checks = "";
      for (Check check : master.checks()) {
        if (check.verdict() == Verdict.FAIL
            || (check.name().equals("admission") && check.verdict() != Verdict.PASS)) {
          out.append(checks).append(check.name()).append(' ').append(check.verdict());
          checks = ", ";
          unfit |= UNFIT_CHECKS.contains(check.name()) && check.verdict() == Verdict.FAIL;
        }
      }
      out.append(')');
    }
    if (unfit) {
      out.append(". Unfit masters: ").append(FitNodeClient.REMEDY);
    }
    return out.toString();
  }

  /**
   * Throws unless a quorum of masters can grant now: for a service that should refuse to start
   * against masters that cannot make a quorum (unreachable, refusing the password or the database,
   * unfit, or not counted yet by the restart guard). Permissions an ACL denies to the lock commands
   * show only when they are sent; see docs/acl.md.
   *
   * <pre>{@code
   * RedLock redlock = RedLock.builder().nodes(uris).build();
   * redlock.inspect().requireQuorum(); // throws IllegalStateException with the reasons
   * }</pre>
   *
   * @return this inspection, when a quorum can grant
   * @throws IllegalStateException if fewer than {@link #quorum()} masters can grant; the message
   *     names each master that cannot and why
   */
  public Inspection requireQuorum() {
    int voting = voting();
    if (voting >= quorum()) {
      return this;
    }
    StringBuilder message =
        new StringBuilder("no quorum: ")
            .append(voting)
            .append(" of ")
            .append(masters.size())
            .append(" masters can grant, ")
            .append(quorum())
            .append(" must");
    boolean unfit = false;
    for (Master master : masters) {
      if (!master.votes()) {
        message.append("\n  ").append(master.node()).append(": ").append(master.whyNotVoting());
        for (Check check : master.checks()) {
          unfit |= UNFIT_CHECKS.contains(check.name()) && check.verdict() == Verdict.FAIL;
        }
      }
    }
    if (unfit) {
      message.append("\n  unfit masters: ").append(FitNodeClient.REMEDY);
    }
    throw new IllegalStateException(message.toString());
  }

  /** A report, one line per check, for logs and the drill. */
  @Override
  public String toString() {
    StringBuilder out = new StringBuilder("preflight: ").append(verdict()).append('\n');
    out.append("quorum: ").append(summary()).append('\n');
    for (Master master : masters) {
      out.append("  ")
          .append(master.node())
          .append(master.datacenter().isEmpty() ? "" : " (" + master.datacenter() + ")")
          .append(": ")
          .append(master.verdict())
          .append('\n');
      for (Check check : master.checks()) {
        out.append(
            String.format("    %-7s %-11s %s%n", check.verdict(), check.name(), check.detail()));
      }
    }
    for (DatacenterLoss loss : losses) {
      out.append(
          String.format(
              "  losing %s (%d of %d masters) leaves %d: %s%n",
              loss.datacenter(),
              loss.lost(),
              loss.lost() + loss.left(),
              loss.left(),
              loss.survives() ? "a quorum survives" : "NO QUORUM (" + loss.quorum() + " needed)"));
    }
    return out.toString();
  }
}
