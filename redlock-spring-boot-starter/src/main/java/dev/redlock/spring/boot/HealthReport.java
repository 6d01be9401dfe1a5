package dev.redlock.spring.boot;

import dev.redlock.Inspection;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The health of a RedLock from its preflight ({@link dev.redlock.RedLock#inspect()}), shared by the
 * Boot 3 and Boot 4 indicators: up while the masters that can grant now make a quorum: those the
 * preflight does not FAIL (unreachable, a replica, cluster mode, an evicting policy) and whose vote
 * the restart guard counts (admitted, or up longer than its time). The details say so in words
 * ({@code summary}: how many vote, how many are needed, and which do not), with a {@code verdict}
 * that agrees with the status: FAIL only when DOWN; WARN when UP with some master out or some
 * assumption to check; PASS when every check passed. Down, {@code notVoting} names each master that
 * does not vote and why. Each master appears by {@code host:port} only (never a URI's user or
 * password) with each check's verdict and finding.
 */
final class HealthReport {

  private final boolean up;
  private final Map<String, Object> details;

  private HealthReport(boolean up, Map<String, Object> details) {
    this.up = up;
    this.details = details;
  }

  static HealthReport of(Inspection inspection) {
    int masters = inspection.masters().size();
    int quorum = inspection.quorum();
    int voting = inspection.voting(); // no FAIL, and the restart guard counts their votes
    Map<String, Object> perMaster = new LinkedHashMap<>();
    for (Inspection.Master master : inspection.masters()) {
      Map<String, Object> entry = new LinkedHashMap<>();
      if (!master.datacenter().isEmpty()) {
        entry.put("datacenter", master.datacenter());
      }
      entry.put("verdict", master.verdict().name());
      Map<String, String> checks = new LinkedHashMap<>();
      for (Inspection.Check check : master.checks()) {
        checks.put(check.name(), check.verdict() + ": " + check.detail());
      }
      entry.put("checks", checks);
      perMaster.put(master.node(), entry);
    }
    boolean up = voting >= quorum;
    // A master that FAILs does not vote: while the others make a quorum, that is a WARN, not a
    // FAIL.
    Inspection.Verdict worst = inspection.verdict();
    Inspection.Verdict verdict =
        !up
            ? Inspection.Verdict.FAIL
            : worst == Inspection.Verdict.FAIL ? Inspection.Verdict.WARN : worst;
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("verdict", verdict.name());
    details.put("summary", inspection.summary());
    details.put("masters", masters);
    details.put("voting", voting);
    details.put("quorum", quorum);
    if (!up) {
      Map<String, String> notVoting = new LinkedHashMap<>();
      for (Inspection.Master master : inspection.masters()) {
        if (!master.votes()) {
          notVoting.put(master.node(), master.whyNotVoting());
        }
      }
      details.put("notVoting", notVoting);
    }
    details.put("nodes", perMaster);
    if (!inspection.losses().isEmpty()) {
      List<String> losses = new ArrayList<>();
      for (Inspection.DatacenterLoss loss : inspection.losses()) {
        losses.add(
            "losing "
                + loss.datacenter()
                + " leaves "
                + loss.left()
                + (loss.survives() ? ": a quorum survives" : ": NO QUORUM"));
      }
      details.put("datacenters", losses);
    }
    return new HealthReport(up, details);
  }

  /** Whether the masters that can grant now make a quorum. */
  boolean up() {
    return up;
  }

  /** What the health endpoint shows, in a stable order. */
  Map<String, Object> details() {
    return details;
  }
}
