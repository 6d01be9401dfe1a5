package dev.redlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The health's quorum arithmetic with only {@code redlock.nodes} set: how many masters vote and how
 * many are needed, a verdict that agrees with the status, and, down for want of fit masters, the
 * masters kept from voting (unfit masters are, by default), why, and the remedy.
 */
class UnfitMastersHealthIT {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static RedisCluster masters;

  @BeforeAll
  static void startMasters() {
    masters = RedisCluster.start(3);
    try (RedLock operator = RedLock.builder().nodes(masters.uris()).build()) {
      operator.admitFreshNodes();
    }
  }

  @AfterAll
  static void stopMasters() {
    masters.close();
  }

  private static ApplicationContextRunner runner(List<String> uris) {
    return new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(RedLockAutoConfiguration.class, RedLockHealthConfiguration.class))
        .withPropertyValues("redlock.nodes=" + String.join(",", uris));
  }

  @Test
  void twoOfFiveMastersDownIsUpWithAVerdictThatAgreesAndTheCounts() throws Exception {
    List<String> uris = new ArrayList<>(masters.uris());
    for (int i = 0; i < 2; i++) {
      try (java.net.ServerSocket closed = new java.net.ServerSocket(0)) {
        uris.add("redis://127.0.0.1:" + closed.getLocalPort());
      }
    }
    runner(uris)
        .run(
            context -> {
              HealthReport report = HealthReport.of(context.getBean(RedLock.class).inspect());
              assertThat(report.up()).isTrue();
              assertThat(report.details())
                  .containsEntry("voting", 3)
                  .containsEntry("quorum", 3)
                  .containsEntry("verdict", "WARN");
              assertThat((String) report.details().get("summary"))
                  .startsWith("3 of 5 masters vote, 3 needed: a quorum, locks can be granted");
            });
  }

  @Test
  void unfitMastersAreKeptFromVotingByDefaultAndTheHealthNamesThemWhyAndTheRemedy() {
    RedisProcess fit = masters.node(0);
    try (RedisProcess replica = RedisProcess.start();
        RedisProcess evicting = RedisProcess.start()) {
      replica.admin().command("REPLICAOF", fit.host(), Integer.toString(fit.port()));
      evicting.admin().command("CONFIG", "SET", "maxmemory", "64mb");
      evicting.admin().command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
      try (RedLock operator = RedLock.builder().node(evicting.uri()).build()) {
        operator.admitFreshNodes();
      }
      String replicaName = replica.host() + ":" + replica.port();
      String evictingName = evicting.host() + ":" + evicting.port();
      runner(List.of(fit.uri(), replica.uri(), evicting.uri()))
          .run(
              context -> {
                RedLock redlock = context.getBean(RedLock.class);
                QuorumUnavailableException refused =
                    assertThrows(
                        QuorumUnavailableException.class,
                        () -> redlock.tryAcquire("boot:unfit", TTL));
                assertThat(refused.getMessage())
                    .contains("1 of 3 masters can vote, 2 needed")
                    .contains(evictingName + ": maxmemory");
                assertThat(evicting.admin().exists("boot:unfit")).isFalse();

                HealthReport report = HealthReport.of(redlock.inspect());
                assertThat(report.up()).isFalse();
                assertThat(report.details())
                    .containsEntry("voting", 1)
                    .containsEntry("quorum", 2)
                    .containsEntry("verdict", "FAIL");
                String summary = (String) report.details().get("summary");
                assertThat(summary)
                    .startsWith("1 of 3 masters vote, 2 needed: NO QUORUM")
                    .contains(replicaName + " (role FAIL")
                    .contains(evictingName + " (eviction FAIL)")
                    .contains("noeviction");
                @SuppressWarnings("unchecked")
                Map<String, String> notVoting =
                    (Map<String, String>) report.details().get("notVoting");
                assertThat(notVoting).containsOnlyKeys(replicaName, evictingName);
                assertThat(notVoting.get(replicaName)).contains("a replica of");
                assertThat(notVoting.get(evictingName)).contains("allkeys-lru");
              });
      // Turned off, the evicting master votes again (and is still named in the log).
      runner(List.of(fit.uri(), replica.uri(), evicting.uri()))
          .withPropertyValues("redlock.exclude-unfit-masters=false")
          .run(
              context ->
                  assertThat(context.getBean(RedLock.class).tryAcquire("boot:unfit-off", TTL))
                      .isPresent());
    }
  }
}
