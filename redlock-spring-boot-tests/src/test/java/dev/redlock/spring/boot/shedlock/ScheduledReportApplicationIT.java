package dev.redlock.spring.boot.shedlock;

import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The ShedLock example application as docs/spring-boot.md shows it, on Boot 4 and again on Boot 3.5
 * (-Pboot3): ShedLock's {@code lockAtMostFor = "PT10M"}, the starter, and only {@code
 * redlock.nodes} set, against masters an operator admitted. The job runs under its quorum lock and
 * the health is UP; the startup line says all three masters vote, and no run fails but for a quorum
 * timeout on a loaded machine.
 */
@ExtendWith(OutputCaptureExtension.class)
class ScheduledReportApplicationIT {

  private static final HttpClient http = HttpClient.newHttpClient();

  @Test
  void theJobRunsWithOnlyTheNodesSetAndTheHealthIsUp(CapturedOutput output) throws Exception {
    try (RedisCluster masters = RedisCluster.start(3)) {
      // The operator's step, redlock admit, with the CLI's default max-lease-time (60 s): the
      // admission holds for the application's derived 10 min too.
      admit(masters.uris());
      try (ConfigurableApplicationContext app =
          SpringApplication.run(
              ScheduledReportApplication.class,
              "--server.port=0",
              "--redlock.nodes=" + String.join(",", masters.uris()),
              "--report.cron=* * * * * *")) { // the application's own: every second, not at 6
        DailyReport report = app.getBean(DailyReport.class);
        Poll.until(
            Duration.ofSeconds(20),
            () -> report.runs() >= 2,
            () -> "the scheduled job ran " + report.runs() + " times under its lock:\n" + output);

        String port = app.getEnvironment().getProperty("local.server.port");
        HttpResponse<String> health =
            http.send(
                HttpRequest.newBuilder(
                        URI.create("http://localhost:" + port + "/actuator/health/redlock"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
        Map<String, Object> redlock = JsonParserFactory.getJsonParser().parseMap(health.body());
        assertThat(redlock).containsEntry("status", "UP");

        // One master restarts empty and is not admitted again: the two admitted masters keep
        // voting for the 10 min client (health UP, 2 voting); the restarted one waits the
        // application's own guard time, 10 min stretched by the drift, not the admitter's 60 s.
        RedisProcess restarted = masters.node(2);
        restarted.restart();
        String node = restarted.host() + ":" + restarted.port();
        AtomicReference<String> admission = new AtomicReference<>();
        Poll.until(
            Duration.ofSeconds(10),
            () -> {
              Map<String, Object> details = details(port);
              Object checks =
                  ((Map<?, ?>) ((Map<?, ?>) details.get("nodes")).get(node)).get("checks");
              admission.set(String.valueOf(((Map<?, ?>) checks).get("admission")));
              return Integer.valueOf(2).equals(((Number) details.get("voting")).intValue());
            },
            () -> "the restarted master out of the vote, the other two in: " + admission.get());
        Matcher wait = Pattern.compile("votes (?:in )?(\\d+) s").matcher(admission.get());
        assertThat(wait.find()).as(admission.get()).isTrue();
        assertThat(Long.parseLong(wait.group(1)))
            .as(admission.get())
            .isGreaterThan(Duration.ofMinutes(9).toSeconds());
        int before = report.runs();
        Poll.until(
            Duration.ofSeconds(20),
            () -> report.runs() >= before + 2,
            () -> "the job ran " + report.runs() + " times with 2 of 3 masters voting:\n" + output);
      }
    }
    String log = output.toString();
    assertThat(log)
        .doesNotContain("maxLeaseTime") // the runs' error before the starter derived it
        .doesNotContain("NoSuchBeanDefinitionException");
    assertThat(log.lines().filter(l -> l.contains("RedLock ready")))
        .singleElement(as(InstanceOfAssertFactories.STRING))
        .contains(" INFO ")
        .contains("3 voting")
        .contains("redlock.max-lease-time PT10M");
    // A run may fail on a loaded machine when masters miss the 50 ms node timeout (a LockException
    // from a QuorumUnavailableException, logged at ERROR by the scheduler); nothing else may.
    assertThat(count(log, " ERROR "))
        .as(log)
        .isEqualTo(count(log, "LockException: could not lock 'daily-report': could not acquire"));
  }

  /** The health's details of the redlock indicator. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> details(String port) {
    HttpResponse<String> health;
    try {
      health =
          http.send(
              HttpRequest.newBuilder(
                      URI.create("http://localhost:" + port + "/actuator/health/redlock"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    Map<String, Object> body = JsonParserFactory.getJsonParser().parseMap(health.body());
    return (Map<String, Object>) body.get("details");
  }

  private static int count(String text, String part) {
    return text.split(java.util.regex.Pattern.quote(part), -1).length - 1;
  }

  private static void admit(List<String> uris) {
    try (RedLock operator = RedLock.builder().nodes(uris).build()) {
      assertThat(operator.admitFreshNodes())
          .extracting(NodeOutcome::status)
          .containsOnly(NodeOutcome.Status.GRANTED);
    }
  }
}
