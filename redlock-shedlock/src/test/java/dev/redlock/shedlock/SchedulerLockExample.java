package dev.redlock.shedlock;

// docs/shedlock.md shows this file from here on; SchedulerLockExampleIT runs it.
// README: ShedLock
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

@Configuration
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT10M")
class SchedulerLockExample {

  @Bean(destroyMethod = "close")
  RedLock redLock(
      @Value("${redlock.nodes}") String[] nodes, // redis://host:port, comma-separated
      @Value("${redlock.node-timeout-ms:50}") long nodeTimeoutMs) {
    return RedLock.builder()
        .nodes(List.of(nodes))
        .nodeTimeout(Duration.ofMillis(nodeTimeoutMs)) // per master; below every TTL
        .maxLeaseTime(Duration.ofMinutes(10)) // at least every lockAtMostFor
        .build();
  }

  @Bean
  LockProvider lockProvider(RedLock redLock) {
    return new RedLockProvider(redLock); // locks "shedlock:<name>"; never closes the RedLock
  }

  @Bean
  DailyReport dailyReport() {
    return new DailyReport();
  }

  static class DailyReport {
    private final AtomicInteger runs = new AtomicInteger();

    @Scheduled(cron = "0 0 6 * * *")
    @SchedulerLock(name = "daily-report", lockAtMostFor = "PT10M", lockAtLeastFor = "PT1M")
    public void run() {
      LockAssert.assertLocked(); // throws unless a quorum lock is held
      runs.incrementAndGet(); // the report would be written here
    }

    public int runs() {
      return runs.get();
    }
  }
}
// end README: ShedLock
