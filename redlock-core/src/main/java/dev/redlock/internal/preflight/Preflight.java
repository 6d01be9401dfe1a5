package dev.redlock.internal.preflight;

import dev.redlock.internal.preflight.Findings.Check;
import dev.redlock.internal.preflight.Findings.Loss;
import dev.redlock.internal.preflight.Findings.Master;
import dev.redlock.internal.preflight.Findings.Verdict;
import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeCommand.Verb;
import dev.redlock.internal.transport.RestartGuardRule;
import dev.redlock.internal.transport.Ticker;
import dev.redlock.internal.transport.Trouble;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * The deployment preflight: whether a master is fit for Redlock, from read-only commands ({@code
 * INFO}, {@code CONFIG GET}, {@code TIME}) sent on its own connection. The rules:
 *
 * <ul>
 *   <li><b>role</b>: a replica FAILs (it is not a master); a master with replicas WARNs (a failover
 *       promotes a replica that may not have the lock);
 *   <li><b>cluster</b>: cluster mode FAILs (the keys of one lock hash to one node, not N
 *       independent ones);
 *   <li><b>eviction</b>: an evicting {@code maxmemory-policy} with a {@code maxmemory} limit FAILs
 *       (it can evict lock keys and fence counters);
 *   <li><b>persistence</b>: {@code appendonly yes} with {@code appendfsync always} and {@code
 *       no-appendfsync-on-rewrite no} keeps every lock through a restart (PASS); anything else
 *       (snapshots, {@code everysec}, no fsync during rewrites, none) loses locks in a restart,
 *       which the restart guard covers, with what it cannot cover named (WARN either way);
 *   <li><b>uptime</b> below the restart guard's time WARNs: the master restarted recently, and with
 *       the guard on does not vote yet;
 *   <li><b>clock</b>: the master's {@code TIME} against this client's, bounded by the round trip;
 *       more than a second off WARNs (fencing tokens and the restart guard read masters' clocks);
 *   <li><b>admission</b>: whether the restart guard counts the master's vote now (its server run
 *       admitted with its dataset, or its dataset-birth marker and server run old enough, read with
 *       {@code MGET}), by the acquire's own rule ({@code RestartGuardRule}); WARNs, in the words of
 *       the acquire's {@code RESTARTED} outcomes, with the remedy, when it does not; says nothing
 *       of admission for a replica, which never votes.
 * </ul>
 *
 * A command that an ACL forbids gives UNKNOWN for its check, never a failure of the preflight.
 */
public final class Preflight {

  /** Clock offsets beyond this WARN. */
  static final long CLOCK_WARN_MILLIS = 1000;

  /** Policies that never evict. */
  private static final Set<String> NOT_EVICTING = Set.of("noeviction");

  private final boolean restartGuard;
  private final long guardMillis;

  /**
   * A preflight for a RedLock whose restart guard is on or off, and keeps restarted masters out for
   * {@code guardMillis} (the longest lease, stretched for drift).
   *
   * @param restartGuard whether the restart guard is on
   * @param guardMillis how long the guard keeps a restarted master from voting; 0 without it
   */
  public Preflight(boolean restartGuard, long guardMillis) {
    this.restartGuard = restartGuard;
    this.guardMillis = guardMillis;
  }

  /**
   * Sends the preflight's commands to one master; nothing blocks.
   *
   * @param node the master's client
   * @param name the master's {@code host:port}
   * @param datacenter its datacenter label, or empty
   * @return the commands in flight, to await
   */
  public Probe start(NodeClient node, String name, String datacenter) {
    return new Probe(node, name, datacenter);
  }

  /**
   * Returns what losing each labelled datacenter leaves.
   *
   * @param datacenters each master's datacenter label, or empty, in configuration order
   * @return one entry per label; empty when no master has a label
   */
  public static List<Loss> losses(List<String> datacenters) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (String datacenter : datacenters) {
      if (!datacenter.isEmpty()) {
        counts.merge(datacenter, 1, Integer::sum);
      }
    }
    int quorum = datacenters.size() / 2 + 1;
    List<Loss> losses = new ArrayList<>();
    counts.forEach(
        (datacenter, lost) ->
            losses.add(new Loss(datacenter, lost, datacenters.size() - lost, quorum)));
    return losses;
  }

  /** The preflight of one master: its commands in flight, and the rules applied to the answers. */
  public final class Probe {
    private final String name;
    private final String datacenter;
    private final long sentAtMillis = System.currentTimeMillis();
    private final CompletableFuture<Long> timeAnsweredAt;
    private final CompletableFuture<Object> time;
    private final CompletableFuture<Object> server;
    private final CompletableFuture<Object> replication;
    private final CompletableFuture<Object> cluster;
    private final CompletableFuture<Object> maxmemory;
    private final CompletableFuture<Object> policy;
    private final CompletableFuture<Object> appendonly;
    private final CompletableFuture<Object> appendfsync;
    private final CompletableFuture<Object> rewriteFsync; // no-appendfsync-on-rewrite
    private final CompletableFuture<Object> guardKeys; // null without the restart guard
    private final CompletableFuture<Void> done;

    private Probe(NodeClient node, String name, String datacenter) {
      this.name = name;
      this.datacenter = datacenter;
      time =
          node.send(
              new Command.Query(
                  Verb.TIME)); // first, so its round trip bounds the clock offset tightly
      timeAnsweredAt = time.handle((v, e) -> System.currentTimeMillis());
      server = node.send(new Command.Query(Verb.INFO, "server"));
      replication = node.send(new Command.Query(Verb.INFO, "replication"));
      cluster = node.send(new Command.Query(Verb.INFO, "cluster"));
      maxmemory = node.send(new Command.Query(Verb.CONFIG, "GET", "maxmemory"));
      policy = node.send(new Command.Query(Verb.CONFIG, "GET", "maxmemory-policy"));
      appendonly = node.send(new Command.Query(Verb.CONFIG, "GET", "appendonly"));
      appendfsync = node.send(new Command.Query(Verb.CONFIG, "GET", "appendfsync"));
      rewriteFsync = node.send(new Command.Query(Verb.CONFIG, "GET", "no-appendfsync-on-rewrite"));
      guardKeys =
          restartGuard
              ? node.send(
                  new Command.Query(Verb.MGET, Trouble.DATASET_MARKER_KEY, Trouble.ADMITTED_KEY))
              : CompletableFuture.completedFuture(null);
      done =
          CompletableFuture.allOf(
                  guardKeys,
                  timeAnsweredAt,
                  server,
                  replication,
                  cluster,
                  maxmemory,
                  policy,
                  appendonly,
                  appendfsync,
                  rewriteFsync)
              .handle((v, e) -> null);
    }

    /** Completes when every answer is in (or failed). */
    CompletableFuture<Void> done() {
      return done;
    }

    /**
     * Waits until every answer is in or the deadline passes, then applies the rules.
     *
     * @param deadlineNanos when to stop waiting, on {@code ticker}
     * @param ticker the clock of the deadline
     * @return the master's checks; a command not answered in time is UNKNOWN
     */
    public Master await(long deadlineNanos, Ticker ticker) {
      long left = deadlineNanos - ticker.read();
      try {
        if (left > 0) {
          done.get(left, TimeUnit.NANOSECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        // judged on what has arrived
      }
      return result();
    }

    /** Applies the rules to the answers that have arrived; a missing one counts as unanswered. */
    Master result() {
      List<Check> checks = new ArrayList<>();
      Answer serverInfo = answer(server);
      boolean reached =
          serverInfo.ok()
              || serverInfo.refused()
              || answer(time).ok()
              || answer(replication).ok()
              || answer(maxmemory).ok();
      if (!reached) {
        Trouble trouble = Trouble.ofError(serverInfo.error());
        checks.add(
            new Check(
                "reachable",
                Verdict.FAIL,
                (trouble == null ? "no answer: " : trouble.label() + ": ")
                    + serverInfo.error()
                    + (trouble == null ? "" : "; " + trouble.remedy())));
        for (String check :
            List.of("role", "cluster", "eviction", "persistence", "uptime", "clock", "admission")) {
          checks.add(new Check(check, Verdict.UNKNOWN, "not reached"));
        }
        return new Master(name, datacenter, checks);
      }
      checks.add(
          serverInfo.ok()
              ? new Check("reachable", Verdict.PASS, "Redis " + info(serverInfo, "redis_version"))
              : new Check("reachable", Verdict.PASS, "answers (INFO: " + serverInfo.error() + ")"));
      checks.add(role(answer(replication)));
      checks.add(cluster(answer(cluster)));
      checks.add(eviction(answer(maxmemory), answer(policy)));
      checks.add(persistence(answer(appendonly), answer(appendfsync), answer(rewriteFsync)));
      String admitted = admitted(serverInfo);
      boolean replica = replica(answer(replication));
      checks.add(replica ? neverVotes("uptime") : uptime(serverInfo, admitted != null));
      checks.add(clock());
      checks.add(replica ? neverVotes("admission") : admission(serverInfo, admitted));
      return new Master(name, datacenter, checks);
    }

    /** Whether the master is a replica (the role check FAILs it). */
    private boolean replica(Answer replication) {
      String role = replication.ok() ? info(replication, "role") : null;
      return "slave".equals(role) || "replica".equals(role);
    }

    /**
     * The restart guard's check of a replica: not made, since a replica never votes, admitted or
     * not, whatever its uptime; no advice to wait or admit.
     */
    private Check neverVotes(String check) {
      return new Check(
          check,
          Verdict.UNKNOWN,
          "not checked: a replica never votes, however long it is up or whether it is admitted"
              + " (see the role check)");
    }

    private Check role(Answer replication) {
      if (!replication.ok()) {
        return unknown("role", replication);
      }
      String role = info(replication, "role");
      if ("slave".equals(role) || "replica".equals(role)) {
        return new Check(
            "role",
            Verdict.FAIL,
            "a replica of "
                + info(replication, "master_host")
                + ":"
                + info(replication, "master_port")
                + ", not a master: it cannot take locks");
      }
      String replicas = info(replication, "connected_slaves");
      if (replicas != null && !replicas.equals("0")) {
        return new Check(
            "role",
            Verdict.WARN,
            "a master with "
                + replicas
                + " replica(s): a failover promotes a replica that may not have every lock"
                + " (replication is asynchronous)");
      }
      return new Check("role", Verdict.PASS, "a master without replicas");
    }

    private Check cluster(Answer cluster) {
      if (!cluster.ok()) {
        return unknown("cluster", cluster);
      }
      return "1".equals(info(cluster, "cluster_enabled"))
          ? new Check(
              "cluster",
              Verdict.FAIL,
              "cluster mode: a lock's key lives on one shard, not on N independent masters")
          : new Check("cluster", Verdict.PASS, "standalone");
    }

    private Check eviction(Answer maxmemory, Answer policy) {
      if (!maxmemory.ok() || !policy.ok()) {
        return unknown("eviction", maxmemory.ok() ? policy : maxmemory);
      }
      String limit = config(maxmemory);
      String evicts = config(policy);
      if (limit == null || evicts == null) {
        return new Check("eviction", Verdict.UNKNOWN, "CONFIG GET answered nothing");
      }
      if (limit.equals("0")) {
        return new Check("eviction", Verdict.PASS, "no maxmemory limit (policy " + evicts + ")");
      }
      if (NOT_EVICTING.contains(evicts.toLowerCase(Locale.ROOT))) {
        return new Check(
            "eviction",
            Verdict.PASS,
            "maxmemory " + limit + " with noeviction: full means refused writes, not lost locks");
      }
      return new Check(
          "eviction",
          Verdict.FAIL,
          "maxmemory "
              + limit
              + " with maxmemory-policy "
              + evicts
              + ": under memory pressure lock keys"
              + (evicts.startsWith("volatile") ? "" : " and fence counters")
              + " can be evicted, and a second client granted");
    }

    private Check persistence(Answer appendonly, Answer appendfsync, Answer rewriteFsync) {
      for (Answer answer : List.of(appendonly, appendfsync, rewriteFsync)) {
        if (!answer.ok()) {
          return unknown("persistence", answer);
        }
      }
      boolean aof = "yes".equals(config(appendonly));
      String fsync = config(appendfsync);
      boolean fsyncsDuringRewrites = "no".equals(config(rewriteFsync));
      if (aof && "always".equals(fsync) && fsyncsDuringRewrites) {
        return new Check(
            "persistence",
            Verdict.PASS,
            "appendonly yes, appendfsync always, no-appendfsync-on-rewrite no: locks survive"
                + " restarts");
      }
      String found =
          !aof
              ? "appendonly no: a restart comes back empty or reloads an older snapshot, without"
                  + " the locks written since"
              : "always".equals(fsync)
                  ? "appendonly yes, appendfsync always, but no-appendfsync-on-rewrite "
                      + config(rewriteFsync)
                      + ": a restart during an AOF rewrite loses the writes not yet fsynced"
                  : "appendonly yes, appendfsync " + fsync + ": a restart loses the last writes";
      return restartGuard
          ? new Check(
              "persistence",
              Verdict.WARN,
              found
                  + "; the restart guard keeps a restarted master from voting for "
                  + Duration.ofMillis(guardMillis).toSeconds()
                  + " s (it reads the server's run_id and uptime on every connection), so each"
                  + " restart costs its vote that long. Still at risk: a restart the client cannot"
                  + " see, behind a proxy that keeps the client's connection open across it;"
                  + " appendfsync always with no-appendfsync-on-rewrite no removes it")
          : new Check(
              "persistence",
              Verdict.WARN,
              found
                  + "; the restart guard is off, so a restart inside a TTL can let a second client"
                  + " be granted");
    }

    private Check uptime(Answer server, boolean admitted) {
      if (!server.ok()) {
        return unknown("uptime", server);
      }
      String seconds = info(server, "uptime_in_seconds");
      if (seconds == null) {
        return new Check("uptime", Verdict.UNKNOWN, "INFO server has no uptime_in_seconds");
      }
      long uptimeMillis = TimeUnit.SECONDS.toMillis(Long.parseLong(seconds));
      if (admitted) {
        return new Check(
            "uptime", Verdict.PASS, "up " + seconds + " s; this server run was admitted");
      }
      return uptimeMillis < guardMillis
          ? new Check(
              "uptime",
              Verdict.WARN,
              "up "
                  + seconds
                  + " s, less than the restart guard's "
                  + Duration.ofMillis(guardMillis).toSeconds()
                  + " s: "
                  + (restartGuard
                      ? "it does not vote for another "
                          + TimeUnit.MILLISECONDS.toSeconds(guardMillis - uptimeMillis + 999)
                          + " s unless admitted (see the admission check)"
                      : "if it restarted without its data, locks it held are lost, and the"
                          + " restart guard is off"))
          : new Check("uptime", Verdict.PASS, "up " + seconds + " s");
    }

    /**
     * The server run running on this master, if an operator admitted it (as the acquire's restart
     * guard decides it, {@link RestartGuardRule#admitsRun}); else null.
     */
    private String admitted(Answer server) {
      Answer keys = answer(guardKeys);
      if (!restartGuard || !server.ok() || !keys.ok() || !(keys.value() instanceof List<?> read)) {
        return null;
      }
      String runId = info(server, "run_id");
      return read.size() == 2
              && RestartGuardRule.admitsRun(
                  read.get(1) instanceof byte[] record ? record : null, runId)
          ? runId
          : null;
    }

    /**
     * Whether the restart guard counts this master's vote now, in the words of the exceptions'
     * {@code RESTARTED} outcomes, and the remedy: admission on a brand-new cluster.
     */
    private Check admission(Answer server, String admitted) {
      if (!restartGuard) {
        return new Check(
            "admission", Verdict.PASS, "the restart guard is off: every vote counts at once");
      }
      if (!server.ok()) {
        return server.refused()
            ? new Check(
                "admission",
                Verdict.WARN,
                "the restart guard does not count its vote: it cannot see this master's restarts"
                    + " (INFO refused: "
                    + server.error()
                    + "); grant the user +info (docs/acl.md)")
            : unknown("admission", server);
      }
      Answer keys = answer(guardKeys);
      if (!keys.ok()) {
        return unknown("admission", keys);
      }
      if (!(keys.value() instanceof List<?> read) || read.size() != 2) {
        return new Check("admission", Verdict.UNKNOWN, "unexpected MGET answer");
      }
      String refusal = null;
      Answer clock = answer(time);
      byte[] marker = read.get(0) instanceof byte[] bytes ? bytes : null;
      Long born = marker == null ? null : number(text(marker));
      boolean datasetAdmitted =
          RestartGuardRule.admitsDataset(
              read.get(1) instanceof byte[] record ? record : null, marker);
      if (born == null) {
        refusal =
            "no dataset-birth marker (a new, flushed or emptied dataset): votes "
                + Duration.ofMillis(guardMillis).toSeconds()
                + " s after its first acquire stores one, or once admitted";
      } else if (!datasetAdmitted
          && clock.ok()
          && clock.value() instanceof List<?> parts
          && parts.size() == 2) {
        long masterMillis =
            Long.parseLong(text(parts.get(0))) * 1000 + Long.parseLong(text(parts.get(1))) / 1000;
        refusal = RestartGuardRule.youngDataset(masterMillis - born, guardMillis);
      }
      // A young run votes no sooner for its persistence: whether the run before it lost
      // anything, its configuration does not say (Incarnation), and this probe saw no run before.
      String seconds = info(server, "uptime_in_seconds");
      if (refusal == null && admitted != null) {
        return new Check(
            "admission",
            Verdict.PASS,
            "this server run ("
                + admitted
                + (datasetAdmitted
                    ? ") was admitted with its dataset: it votes, whatever the client's"
                        + " maxLeaseTime"
                    : ") was admitted: it votes"));
      }
      if (refusal == null && seconds != null) {
        refusal =
            RestartGuardRule.youngRun(
                TimeUnit.SECONDS.toNanos(Long.parseLong(seconds)),
                TimeUnit.MILLISECONDS.toNanos(guardMillis),
                false);
      }
      return refusal == null
          ? new Check("admission", Verdict.PASS, "the restart guard counts its vote")
          : new Check(
              "admission",
              Verdict.WARN,
              "the restart guard does not count its vote ("
                  + refusal
                  + "). "
                  + Trouble.ADMISSION_REMEDY.replace("them", "it"));
    }

    private Check clock() {
      Answer answer = answer(time);
      if (!answer.ok()) {
        return unknown("clock", answer);
      }
      if (!(answer.value() instanceof List<?> parts) || parts.size() != 2) {
        return new Check("clock", Verdict.UNKNOWN, "unexpected TIME answer");
      }
      long serverMillis =
          Long.parseLong(text(parts.get(0))) * 1000 + Long.parseLong(text(parts.get(1))) / 1000;
      long answeredAt = timeAnsweredAt.getNow(sentAtMillis);
      long bound = (answeredAt - sentAtMillis + 1) / 2;
      long offset = serverMillis - (sentAtMillis + answeredAt) / 2;
      String found = "offset " + offset + " ms (± " + bound + " ms) from this client";
      return Math.abs(offset) - bound > CLOCK_WARN_MILLIS
          ? new Check(
              "clock",
              Verdict.WARN,
              found
                  + ": fencing tokens never go below a master's clock, and the restart guard reads"
                  + " it")
          : new Check("clock", Verdict.PASS, found);
    }

    private Check unknown(String check, Answer answer) {
      return new Check(check, Verdict.UNKNOWN, "not checked: " + answer.error());
    }
  }

  /** One command's answer, or why there is none. */
  private record Answer(Object value, String error, boolean refused) {
    boolean ok() {
      return error == null;
    }
  }

  private static Answer answer(CompletableFuture<Object> future) {
    if (!future.isDone()) {
      return new Answer(null, "no answer in time", false);
    }
    try {
      return new Answer(future.join(), null, false);
    } catch (CompletionException | java.util.concurrent.CancellationException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      String message = cause.getMessage() == null ? cause.toString() : cause.getMessage();
      // The server answered with an error (an ACL refusal, an unknown command): it is reachable.
      boolean refused =
          message.startsWith("NOPERM")
              || message.startsWith("ERR")
              || message.startsWith("NOAUTH")
              || message.startsWith("WRONGPASS");
      return new Answer(null, message, refused);
    }
  }

  private static String info(Answer answer, String key) {
    String prefix = key + ":";
    for (String line : text(answer.value()).split("\r?\n")) {
      if (line.startsWith(prefix)) {
        return line.substring(prefix.length()).trim();
      }
    }
    return null;
  }

  /** The value of a {@code CONFIG GET name} answer, or null if the server knows no such setting. */
  private static String config(Answer answer) {
    return answer.value() instanceof List<?> pair && pair.size() == 2 ? text(pair.get(1)) : null;
  }

  private static Long number(String text) {
    try {
      return (long) Double.parseDouble(text.trim()); // a number Lua stored, e.g. 1.7e+12
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static String text(Object value) {
    return value instanceof byte[] bytes
        ? new String(bytes, StandardCharsets.UTF_8)
        : String.valueOf(value);
  }
}
