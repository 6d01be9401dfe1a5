package dev.redlock.spring.boot.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.redlock.NodeOutcome;
import dev.redlock.RedLock;
import dev.redlock.testkit.Poll;
import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The example application as a user runs it: a web server, the actuator, and only {@code
 * redlock.nodes} set (besides the server port), against real masters an operator admitted.
 */
@ExtendWith(OutputCaptureExtension.class)
class ExampleApplicationIT {

  private static final HttpClient http = HttpClient.newHttpClient();

  private static void admit(List<String> uris) {
    try (RedLock operator = RedLock.builder().nodes(uris).build()) {
      assertThat(operator.admitFreshNodes())
          .extracting(NodeOutcome::status)
          .containsOnly(NodeOutcome.Status.GRANTED);
    }
  }

  private static ConfigurableApplicationContext start(List<String> uris) {
    return SpringApplication.run(
        ExampleApplication.class, "--server.port=0", "--redlock.nodes=" + String.join(",", uris));
  }

  private static HttpResponse<String> health(ConfigurableApplicationContext app) throws Exception {
    // local.server.port: set on Boot 3 and 4 alike (the web server's class moved in Boot 4).
    String port = app.getEnvironment().getProperty("local.server.port");
    return http.send(
        HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/health")).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static Map<String, Object> redlock(HttpResponse<String> health) {
    return map(
        map(JsonParserFactory.getJsonParser().parseMap(health.body()).get("components"))
            .get("redlock"));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object json) {
    return (Map<String, Object>) json;
  }

  @Test
  void startsWithOnlyTheNodesAndItsHealthShowsEachMaster(CapturedOutput output) throws Exception {
    try (RedisCluster masters = RedisCluster.start(3)) {
      admit(masters.uris());
      try (ConfigurableApplicationContext app = start(masters.uris())) {
        assertThat(app.getBean(InvoiceJob.class).runOnce()).isTrue();
        HttpResponse<String> up = health(app);
        assertThat(up.statusCode()).isEqualTo(200);
        Map<String, Object> redlock = redlock(up);
        assertThat(redlock).containsEntry("status", "UP");
        Map<String, Object> details = map(redlock.get("details"));
        assertThat(details).containsEntry("masters", 3).containsEntry("voting", 3);
        assertThat(details).containsEntry("quorum", 2);
        assertThat(map(details.get("nodes")))
            .containsOnlyKeys(
                masters.nodes().stream().map(m -> m.host() + ":" + m.port()).toList());

        // Two of three masters down: the masters that can grant no longer make a quorum.
        masters.node(0).kill();
        masters.node(1).kill();
        HttpResponse<String> down = health(app);
        assertThat(down.statusCode()).isEqualTo(503);
        assertThat(redlock(down)).containsEntry("status", "DOWN");
        assertThat(map(redlock(down).get("details"))).containsEntry("voting", 1);
      }
    }
    assertThat(output).doesNotContain(" ERROR ");
  }

  /**
   * A master with an ACL user {@code app}; the default user, which the testkit uses, stays open.
   */
  private static RedisProcess withUser(String password) {
    return RedisProcess.builder()
        .arguments("--user", "app", "on", ">" + password, "~*", "&*", "+@all")
        .start();
  }

  @Test
  void theHealthDetailsNeverShowAPassword() throws Exception {
    String password = "s3cret-for-the-health-test";
    List<RedisProcess> masters =
        List.of(withUser(password), withUser(password), withUser(password));
    try {
      List<String> uris =
          masters.stream()
              .map(m -> "redis://app:" + password + "@" + m.host() + ":" + m.port())
              .toList();
      admit(uris);
      try (ConfigurableApplicationContext app = start(uris)) {
        Poll.until(
            Duration.ofSeconds(10),
            () -> {
              try {
                return "UP".equals(redlock(health(app)).get("status"));
              } catch (Exception e) {
                return false;
              }
            },
            () -> "redlock health not UP");
        String body = health(app).body();
        assertThat(body).contains(masters.get(0).host() + ":" + masters.get(0).port());
        assertThat(body).doesNotContain(password);
      }
    } finally {
      masters.forEach(RedisProcess::close);
    }
  }
}
