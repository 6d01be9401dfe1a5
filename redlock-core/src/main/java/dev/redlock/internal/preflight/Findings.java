package dev.redlock.internal.preflight;

import java.util.List;

/**
 * What the preflight found: for each master, its checks, and for the placement across datacenters,
 * which single-datacenter losses a quorum survives. The preflight's own mirror of the API's {@code
 * Inspection}, with the same shape (the API turns one into the other; a test holds the verdicts
 * together), so that this package needs nothing from the API's.
 *
 * @param masters one entry per master, in configuration order
 * @param losses for each datacenter label, what losing all of its masters leaves; empty when no
 *     master has a label
 */
public record Findings(List<Master> masters, List<Loss> losses) {

  /**
   * How a check came out; later constants are worse. The same constants, in the same order, as the
   * API's {@code Inspection.Verdict}.
   */
  public enum Verdict {
    /** Fit. */
    PASS,
    /** Could not be checked (an ACL forbids the command, or the master did not answer it). */
    UNKNOWN,
    /** Works, but a safety assumption rests on something outside the library's control. */
    WARN,
    /** Unfit for Redlock: locks on it can be lost or shared. */
    FAIL
  }

  /**
   * One check on one master.
   *
   * @param name what was checked: {@code reachable}, {@code role}, {@code cluster}, {@code
   *     eviction}, {@code persistence}, {@code uptime} or {@code clock}
   * @param verdict how it came out
   * @param detail what was found and why it matters; never a password
   */
  public record Check(String name, Verdict verdict, String detail) {}

  /**
   * One master's checks.
   *
   * @param node the master's {@code host:port}
   * @param datacenter its datacenter label, or empty
   * @param checks every check, in a fixed order
   */
  public record Master(String node, String datacenter, List<Check> checks) {}

  /**
   * What losing one whole datacenter leaves.
   *
   * @param datacenter the datacenter's label
   * @param lost how many masters it holds
   * @param left how many masters the others hold
   * @param quorum how many make a majority of all masters
   */
  public record Loss(String datacenter, int lost, int left, int quorum) {}
}
