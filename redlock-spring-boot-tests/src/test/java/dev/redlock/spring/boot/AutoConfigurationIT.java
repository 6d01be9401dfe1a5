package dev.redlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.redlock.Lease;
import dev.redlock.NodeOutcome;
import dev.redlock.QuorumUnavailableException;
import dev.redlock.RedLock;
import dev.redlock.micrometer.RedLockMetrics;
import dev.redlock.shedlock.RedLockProvider;
import dev.redlock.spring.RedLockRegistry;
import dev.redlock.testkit.RedisCluster;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * The auto-configuration under Spring Boot's dependency management (Boot 4, or 3.5 with -Pboot3),
 * against real masters: the properties reach the builder, the beans appear with what they need, and
 * the RedLock is closed with the context.
 */
@ExtendWith(OutputCaptureExtension.class)
class AutoConfigurationIT {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static RedisCluster admitted;

  @BeforeAll
  static void startMasters() {
    admitted = RedisCluster.start(3);
    try (RedLock operator = RedLock.builder().nodes(admitted.uris()).build()) {
      assertThat(operator.admitFreshNodes())
          .extracting(NodeOutcome::status)
          .containsOnly(NodeOutcome.Status.GRANTED);
    }
  }

  @AfterAll
  static void stopMasters() {
    admitted.close();
  }

  private static ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(RedLockAutoConfiguration.class, RedLockHealthConfiguration.class))
        .withPropertyValues("redlock.nodes=" + String.join(",", admitted.uris()));
  }

  /** A runner of the RedLock's auto-configuration alone, on {@code cluster}'s masters. */
  private static ApplicationContextRunner runnerOn(RedisCluster cluster) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RedLockAutoConfiguration.class))
        .withPropertyValues("redlock.nodes=" + String.join(",", cluster.uris()));
  }

  /** What made the context's startup fail; an assertion error if it started. */
  private static AbstractThrowableAssert<?, ? extends Throwable> startupFailure(
      AssertableApplicationContext context) {
    return assertThat(context).hasFailed().getFailure();
  }

  private static boolean boot3() {
    return System.getProperty("redlock.boot.version", "4").startsWith("3.");
  }

  @Test
  void onlyNodesSetGivesAWorkingRedLockAndEveryBeanItsLibraryIsPresentFor(CapturedOutput output) {
    runner()
        .run(
            context -> {
              assertThat(context).hasNotFailed().hasSingleBean(RedLock.class);
              RedLock redlock = context.getBean(RedLock.class);
              Optional<Lease> lease = redlock.tryAcquire("boot:defaults", TTL);
              assertThat(lease).isPresent();
              assertThat(lease.get().fencingToken()).isPositive(); // fencing on by default
              lease.get().close();

              assertThat(context).hasSingleBean(LockProvider.class);
              assertThat(context.getBean(LockProvider.class)).isInstanceOf(RedLockProvider.class);
              // No MeterRegistry in this context: nothing to bind the metrics to.
              assertThat(context).doesNotHaveBean(RedLockMetrics.class);
              assertThat(context).hasBean("redlockHealthIndicator");
              assertThat(context.getBean("redlockHealthIndicator").getClass())
                  .isEqualTo(
                      boot3() ? RedLockBoot3HealthIndicator.class : RedLockHealthIndicator.class);
              // On both lines: Spring Integration 6.5 (Boot 3.5) and 7.x (Boot 4).
              assertThat(context).hasSingleBean(LockRegistry.class);
              // Raw: LockRegistry is generic in Spring Integration 7 only.
              @SuppressWarnings("rawtypes")
              LockRegistry registry = context.getBean(LockRegistry.class);
              Lock lock = registry.obtain("registry");
              assertThat(lock.tryLock()).isTrue();
              lock.unlock();
              assertThat(
                      Arrays.stream(lock.getClass().getInterfaces())
                          .map(Class::getSimpleName)
                          .anyMatch("DistributedLock"::equals))
                  .as("a DistributedLock exactly on Spring Integration 7")
                  .isEqualTo(!boot3());
            });
    assertThat(output).doesNotContain("WARN").doesNotContain("ERROR");
  }

  @Test
  void theRedLockIsClosedWithTheContext() {
    RedLock[] built = new RedLock[1];
    runner().run(context -> built[0] = context.getBean(RedLock.class));
    assertThrows(IllegalStateException.class, () -> built[0].tryAcquire("boot:closed", TTL));
  }

  @Test
  void thePropertiesReachTheBuilder() {
    runner()
        .withPropertyValues(
            "redlock.fencing=false",
            "redlock.max-lease-time=3s",
            "redlock.registry.ttl=2s", // the registry's default TTL (10 s) would be refused
            "redlock.node-timeout=200ms",
            "redlock.retry-delay=10ms")
        .run(
            context -> {
              RedLock redlock = context.getBean(RedLock.class);
              // max-lease-time: a longer TTL is refused before anything is sent.
              assertThrows(
                  IllegalArgumentException.class,
                  () -> redlock.tryAcquire("boot:long", Duration.ofSeconds(4)));
              try (Lease lease = redlock.tryAcquire("boot:short", Duration.ofSeconds(2)).get()) {
                // fencing off
                assertThrows(IllegalStateException.class, lease::fencingToken);
              }
            });
  }

  @Test
  void minValidityReachesTheBuilder() {
    // A 1 s lease keeps at most 1 s - 12 ms of drift allowance: a round cannot leave 995 ms, so
    // the masters' grants count as a failed round.
    runner()
        .withPropertyValues("redlock.min-validity=995ms")
        .run(
            context -> {
              RedLock redlock = context.getBean(RedLock.class);
              assertThrows(
                  QuorumUnavailableException.class,
                  () -> redlock.tryAcquire("boot:min-validity", Duration.ofSeconds(1)),
                  "a lease left with less than redlock.min-validity");
              // A 5 s lease leaves more than that: only the short one is refused.
              try (Lease lease = redlock.tryAcquire("boot:min-validity", TTL).orElseThrow()) {
                assertThat(lease.remainingValidity()).isGreaterThan(Duration.ofMillis(995));
              }
            });
  }

  @Test
  void restartGuardOffLetsMastersThatWereNeverAdmittedVote() {
    try (RedisCluster fresh = RedisCluster.start(3)) {
      ApplicationContextRunner onFresh = runnerOn(fresh);
      onFresh
          .withPropertyValues("redlock.restart-guard=false")
          .run(
              context ->
                  assertThat(context.getBean(RedLock.class).tryAcquire("boot:unguarded", TTL))
                      .as("granted by masters never admitted, the guard off")
                      .isPresent());
      // The control: the guard on (the default), the same masters refuse.
      onFresh.run(
          context ->
              assertThrows(
                  QuorumUnavailableException.class,
                  () -> context.getBean(RedLock.class).tryAcquire("boot:guarded", TTL)));
    }
  }

  @Test
  void excludeUnfitMastersOffLetsEvictingMastersVote() {
    try (RedisCluster evicting = RedisCluster.start(3)) {
      try (RedLock operator = RedLock.builder().nodes(evicting.uris()).build()) {
        assertThat(operator.admitFreshNodes())
            .extracting(NodeOutcome::status)
            .containsOnly(NodeOutcome.Status.GRANTED);
      }
      // Two of three masters may evict keys: unfit, so without them there is no quorum.
      for (int i = 0; i < 2; i++) {
        evicting.node(i).admin().command("CONFIG", "SET", "maxmemory", "64mb");
        evicting.node(i).admin().command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
      }
      ApplicationContextRunner onEvicting = runnerOn(evicting);
      onEvicting
          .withPropertyValues("redlock.exclude-unfit-masters=false")
          .run(
              context ->
                  assertThat(context.getBean(RedLock.class).tryAcquire("boot:unfit", TTL))
                      .as("granted with the evicting masters' votes counted")
                      .isPresent());
      // The control: excluded (the default), the same masters cannot make a quorum.
      onEvicting.run(
          context ->
              assertThrows(
                  QuorumUnavailableException.class,
                  () -> context.getBean(RedLock.class).tryAcquire("boot:fit", TTL)));
    }
  }

  @Test
  void theRegistrysSafetyMarginReachesTheRegistry() {
    runner()
        .withPropertyValues("redlock.registry.ttl=3s", "redlock.registry.safety-margin=700ms")
        .run(
            context ->
                assertThat(context.getBean(RedLockRegistry.class).toString())
                    .contains("ttl=3000 ms, safetyMargin=700 ms"));
    // A margin the registry refuses (not below a third of the TTL) fails startup: it was passed.
    runner()
        .withPropertyValues("redlock.registry.ttl=3s", "redlock.registry.safety-margin=1s")
        .run(
            context ->
                startupFailure(context)
                    .rootCause()
                    .hasMessageContaining("must be less than a third of the ttl (3000 ms)"));
  }

  @Test
  void datacentersAreLabelledMasters() {
    var uris = admitted.uris();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RedLockAutoConfiguration.class))
        .withPropertyValues(
            "redlock.datacenters.east.node-timeout=100ms",
            "redlock.datacenters.east.nodes=" + uris.get(0) + "," + uris.get(1),
            "redlock.datacenters.west.nodes=" + uris.get(2))
        .run(
            context -> {
              var inspection = context.getBean(RedLock.class).inspect();
              assertThat(inspection.masters())
                  .extracting(m -> m.datacenter())
                  .containsExactly("east", "east", "west");
              assertThat(inspection.losses())
                  .extracting(l -> l.datacenter() + ":" + l.survives())
                  .containsExactly("east:false", "west:true");
            });
  }

  @Test
  void aSettingOutOfRangeFailsStartupNamingIt() {
    runner()
        .withPropertyValues("redlock.drift-factor=0.5")
        .run(
            context ->
                startupFailure(context)
                    .rootCause()
                    .hasMessageContaining("redlock.drift-factor must be in [0, 0.1)"));
  }

  @Test
  void settingsThatFailTogetherAreNamedByTheirProperties() {
    runner()
        .withPropertyValues("redlock.max-lease-time=1m", "redlock.node-timeout=2m")
        .run(
            context ->
                startupFailure(context)
                    .rootCause()
                    .hasMessageContaining("redlock.node-timeout (PT2M) must be less than")
                    .hasMessageContaining("redlock.max-lease-time (PT1M)")
                    .message()
                    .doesNotContain("maxLeaseTime"));
  }

  @Test
  void maxLeaseTimeUnsetIsTheLongestLockAtMostForOfTheShedLockTasks(CapturedOutput output) {
    runner()
        .withUserConfiguration(ShedLockTasks.class)
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              RedLock redlock = context.getBean(RedLock.class);
              // Nothing is sent: newLock checks the TTL against max-lease-time.
              redlock.newLock("boot:twenty", Duration.ofMinutes(20));
              IllegalArgumentException longer =
                  assertThrows(
                      IllegalArgumentException.class,
                      () -> redlock.newLock("boot:longer", Duration.ofMinutes(21)));
              assertThat(longer.getMessage()).contains("redlock.max-lease-time");
            });
    // The masters were admitted under a 1 min max-lease-time: before issue 30's admission fix they
    // do not vote for a 20 min client, and the startup line says so at WARN; either way it names
    // the derived max-lease-time and the task it comes from.
    assertThat(output).contains("redlock.max-lease-time PT20M").contains("'by-default'");
  }

  @Test
  void aMaxLeaseTimeBelowALockAtMostForFailsStartupNamingThePropertyAndTheValueNeeded() {
    runner()
        .withUserConfiguration(ShedLockTasks.class)
        .withPropertyValues("redlock.max-lease-time=5m")
        .run(
            context ->
                startupFailure(context)
                    .hasMessageContaining("redlock.max-lease-time (PT5M)")
                    .hasMessageContaining("'ten-minutes'")
                    .hasMessageContaining("'by-default'")
                    .hasMessageContaining("at least PT20M"));
  }

  @Test
  void theRegistryTtlCountsTowardsAnUnsetMaxLeaseTimeAndIsCheckedAgainstASetOne() {
    runner()
        .withPropertyValues("redlock.registry.ttl=5m")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              context.getBean(RedLock.class).newLock("boot:five", Duration.ofMinutes(5));
            });
    runner()
        .withPropertyValues("redlock.registry.ttl=5m", "redlock.max-lease-time=1m")
        .run(
            context ->
                startupFailure(context)
                    .rootCause()
                    .hasMessageContaining("redlock.registry (ttl PT5M")
                    .hasMessageContaining("redlock.max-lease-time"));
  }

  @Test
  void aLockAtMostForNotAboveTheNodeTimeoutFailsStartupNamingIt() {
    runner()
        .withUserConfiguration(BlinkTask.class)
        .run(
            context ->
                startupFailure(context)
                    .hasMessageContaining("'blink'")
                    .hasMessageContaining("lockAtMostFor PT0.02S")
                    .hasMessageContaining("redlock.node-timeout"));
  }

  /** A task whose lockAtMostFor (20 ms) is below the default node timeout (50 ms). */
  @Configuration(proxyBeanMethods = false)
  @EnableSchedulerLock(defaultLockAtMostFor = "PT1M")
  static class BlinkTask {
    @Bean
    Blink blink() {
      return new Blink();
    }
  }

  public static class Blink {
    @SchedulerLock(name = "blink", lockAtMostFor = "20ms")
    public void run() {}
  }

  @Test
  void shedLockWithoutRedlockShedlockFailsStartupNamingTheDependency() {
    runner()
        .withClassLoader(new FilteredClassLoader(RedLockProvider.class))
        .withUserConfiguration(ShedLockTasks.class)
        .run(
            context ->
                startupFailure(context)
                    .hasMessageContaining("no ShedLock LockProvider")
                    .hasMessageContaining("dev.redlock:redlock-shedlock"));
  }

  @Test
  void shedLockWithItsOwnLockProviderNeedsNoRedlockShedlock() {
    runner()
        .withClassLoader(new FilteredClassLoader(RedLockProvider.class))
        .withUserConfiguration(ShedLockTasks.class, OwnBeans.class)
        .run(context -> assertThat(context).hasNotFailed());
  }

  @Test
  void theStartupLineNamesTheMastersTheQuorumAndHowManyVote(CapturedOutput output) {
    runner().run(context -> assertThat(context).hasNotFailed());
    String line =
        output
            .toString()
            .lines()
            .filter(l -> l.contains("RedLock ready"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no startup line in:\n" + output));
    assertThat(line).contains(" INFO ").contains("3 masters").contains("quorum 2");
    assertThat(line).contains("3 voting").contains("redlock.max-lease-time PT1M");
    for (String uri : admitted.uris()) {
      assertThat(line).contains(uri.substring("redis://".length()));
    }
  }

  @Test
  void theStartupLineSaysWhyAMasterDoesNotVote(CapturedOutput output) {
    try (RedisCluster fresh = RedisCluster.start(3)) {
      runnerOn(fresh).run(context -> assertThat(context).hasNotFailed());
    }
    String line =
        output
            .toString()
            .lines()
            .filter(l -> l.contains("RedLock ready"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no startup line in:\n" + output));
    assertThat(line).contains(" WARN ").contains("0 voting").contains("quorum 2");
    assertThat(line).contains("admission").contains("redlock admit");
  }

  /** ShedLock tasks, as an application declares them; nothing schedules them here. */
  @Configuration(proxyBeanMethods = false)
  @EnableSchedulerLock(defaultLockAtMostFor = "PT20M")
  static class ShedLockTasks {
    @Bean
    Tasks tasks() {
      return new Tasks();
    }
  }

  public static class Tasks {
    @SchedulerLock(name = "ten-minutes", lockAtMostFor = "PT10M")
    public void tenMinutes() {}

    @SchedulerLock(name = "by-default")
    public void byDefault() {}
  }

  @Test
  void noMasterFailsStartupNamingTheProperty() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RedLockAutoConfiguration.class))
        .run(context -> startupFailure(context).rootCause().hasMessageContaining("redlock.nodes"));
  }

  @Test
  void theApplicationsOwnBeansWin() {
    runner()
        .withUserConfiguration(OwnBeans.class)
        .run(
            context -> {
              assertThat(context.getBean(RedLock.class)).isSameAs(OwnBeans.redlock);
              assertThat(context.getBean(LockProvider.class)).isSameAs(OwnBeans.provider);
            });
    assertThrows(IllegalStateException.class, () -> OwnBeans.redlock.inspect());
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnBeans {
    static RedLock redlock;
    static LockProvider provider;

    @Bean(destroyMethod = "close")
    RedLock ownRedLock() {
      redlock = RedLock.builder().nodes(admitted.uris()).build();
      return redlock;
    }

    @Bean
    LockProvider ownProvider() {
      provider = config -> Optional.empty();
      return provider;
    }
  }

  @Test
  void theIntegrationsCanBeTurnedOff() {
    runner()
        .withPropertyValues("redlock.registry.enabled=false", "redlock.shedlock.enabled=false")
        .run(
            context -> {
              assertThat(context).doesNotHaveBean(LockRegistry.class);
              assertThat(context).doesNotHaveBean(LockProvider.class);
            });
  }

  @Test
  void theMetricsRecordTheRedLocksLeasesInTheApplicationsMeterRegistry() {
    runner()
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .run(
            context -> {
              assertThat(context).hasSingleBean(RedLockMetrics.class);
              MeterRegistry meters = context.getBean(MeterRegistry.class);
              context.getBean(RedLockMetrics.class).bindTo(meters);
              context.getBean(RedLock.class).tryAcquire("boot:metrics", TTL).get().close();
              // Recorded by the listener the metrics gave the RedLock when they built it.
              assertThat(meters.find("redlock.acquire").meters()).isNotEmpty();
            });
  }

  @Test
  void bootsOwnMeterRegistryGetsTheMetricsBoundWithoutHelp() throws ClassNotFoundException {
    String base =
        boot3()
            ? "org.springframework.boot.actuate.autoconfigure.metrics."
            : "org.springframework.boot.micrometer.metrics.autoconfigure.";
    new ApplicationContextRunner()
        // Listed after the RedLock's own: the ordering comes from the annotations, not this list.
        .withConfiguration(
            AutoConfigurations.of(
                RedLockAutoConfiguration.class,
                Class.forName(base + "MetricsAutoConfiguration"),
                Class.forName(base + "CompositeMeterRegistryAutoConfiguration"),
                Class.forName(base + "export.simple.SimpleMetricsExportAutoConfiguration")))
        .withPropertyValues("redlock.nodes=" + String.join(",", admitted.uris()))
        .run(
            context -> {
              assertThat(context).hasNotFailed().hasSingleBean(RedLockMetrics.class);
              context.getBean(RedLock.class).tryAcquire("boot:bound", TTL).get().close();
              assertThat(context.getBean(MeterRegistry.class).find("redlock.acquire").meters())
                  .as("the meters in Boot's registry, bound by Boot")
                  .isNotEmpty();
            });
  }

  @Test
  void admitFreshMastersAdmitsBrandNewMastersAndSaysSoAtWarn(CapturedOutput output) {
    try (RedisCluster fresh = RedisCluster.start(3)) {
      runnerOn(fresh)
          .withPropertyValues("redlock.admit-fresh-masters=true")
          .run(
              context ->
                  assertThat(context.getBean(RedLock.class).tryAcquire("boot:fresh", TTL))
                      .isPresent());
    }
    assertThat(output)
        .contains("WARN")
        .contains("redlock.admit-fresh-masters=true")
        .contains("for development only")
        .contains("3 of 3 masters admitted")
        .doesNotContain("GRANTED");
  }

  @Test
  void brandNewMastersWithoutAdmissionRefuseAndSayWhy() {
    try (RedisCluster fresh = RedisCluster.start(3)) {
      runnerOn(fresh)
          .run(
              context -> {
                RedLock redlock = context.getBean(RedLock.class);
                QuorumUnavailableException refused =
                    assertThrows(
                        QuorumUnavailableException.class,
                        () -> redlock.acquire("boot:unadmitted", TTL, Duration.ofMillis(300)));
                assertThat(refused.getMessage())
                    .contains("restart guard")
                    .contains("admitFreshNodes()")
                    .contains("redlock admit");
                // The health indicator says the same: no quorum can be granted yet.
                HealthReport unadmitted = HealthReport.of(redlock.inspect());
                assertThat(unadmitted.up()).isFalse();
                assertThat(unadmitted.details()).containsEntry("voting", 0);
                assertThat(unadmitted.details().toString()).contains("admission=WARN");
                redlock.admitFreshNodes();
                HealthReport admitted = HealthReport.of(redlock.inspect());
                assertThat(admitted.up()).isTrue();
                assertThat(admitted.details()).containsEntry("voting", 3);
              });
    }
  }
}
