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
 * the restart guard counts (admitted, or up longer than its time). The details name each master by
 * {@code host:port} only (never a URI's user or password) with each check's verdict and finding.
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
    int quorum = masters / 2 + 1;
    int voting = 0;
    Map<String, Object> perMaster = new LinkedHashMap<>();
    for (Inspection.Master master : inspection.masters()) {
      if (master.votes()) { // no FAIL, and the restart guard counts its vote
        voting++;
      }
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
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("verdict", inspection.verdict().name());
    details.put("masters", masters);
    details.put("voting", voting);
    details.put("quorum", quorum);
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
    return new HealthReport(voting >= quorum, details);
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
