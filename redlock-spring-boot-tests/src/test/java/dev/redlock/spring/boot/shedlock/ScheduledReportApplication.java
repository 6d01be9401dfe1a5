package dev.redlock.spring.boot.shedlock;

// README: Spring Boot with ShedLock
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

@SpringBootApplication
@EnableScheduling
@EnableSchedulerLock(defaultLockAtMostFor = "PT10M")
public class ScheduledReportApplication {
  public static void main(String[] args) {
    SpringApplication.run(ScheduledReportApplication.class, args);
  }
}

@Component
class DailyReport {
  private final AtomicInteger runs = new AtomicInteger();

  @Scheduled(cron = "${report.cron:0 0 6 * * *}")
  @SchedulerLock(name = "daily-report", lockAtMostFor = "PT10M")
  public void run() {
    LockAssert.assertLocked(); // throws unless a quorum lock is held
    runs.incrementAndGet(); // the report would be written here
  }

  public int runs() {
    return runs.get();
  }
}
// end README: Spring Boot with ShedLock
