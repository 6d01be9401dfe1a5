package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import eu.rekawek.toxiproxy.Proxy;
import eu.rekawek.toxiproxy.model.Toxic;
import eu.rekawek.toxiproxy.model.ToxicDirection;
import eu.rekawek.toxiproxy.model.toxic.Latency;
import eu.rekawek.toxiproxy.model.toxic.Slicer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP API contract, driven through the Toxiproxy Java client where it reaches. */
class FaultProxyApiIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);
  private static final HttpClient HTTP =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private ProxyFixture fixture;

  @BeforeEach
  void start() throws IOException {
    fixture = ProxyFixture.start();
  }

  @AfterEach
  void stop() throws IOException {
    fixture.close();
  }

  @Test
  void versionIsReportedAsToxiproxyJson() throws IOException {
    String body = fixture.client.version();

    JsonObject json = JsonParser.parseString(body).getAsJsonObject();
    assertEquals(FaultProxyServer.TOXIPROXY_VERSION, json.get("version").getAsString());
  }

  @Test
  void createdProxyReportsItsBoundPortAndCanBeFetchedAndListed() throws IOException {
    Proxy created = fixture.echoProxy("redis-a");

    assertTrue(created.getListen().matches("127\\.0\\.0\\.1:[1-9][0-9]*"), created.getListen());
    assertEquals(fixture.echo.address(), created.getUpstream());
    assertTrue(created.isEnabled());
    Proxy fetched = fixture.client.getProxy("redis-a");
    assertEquals(created.getListen(), fetched.getListen());
    Map<String, String> listed =
        fixture.client.getProxies().stream()
            .collect(Collectors.toMap(Proxy::getName, Proxy::getListen));
    assertEquals(Map.of("redis-a", created.getListen()), listed);
    try (TcpClient client = ProxyFixture.connect(created)) {
      client.roundTrip("PING", TIMEOUT);
    }
  }

  @Test
  void anyListenHostBindsLoopbackOnAnEphemeralPort() throws IOException {
    Proxy wildcard = fixture.client.createProxy("wildcard", "0.0.0.0:0", fixture.echo.address());
    Proxy localhost =
        fixture.client.createProxy("localhost", "localhost:0", fixture.echo.address());

    assertTrue(wildcard.getListen().startsWith("127.0.0.1:"), wildcard.getListen());
    assertTrue(localhost.getListen().startsWith("127.0.0.1:"), localhost.getListen());
    assertNotEquals(wildcard.getListen(), localhost.getListen());
    try (TcpClient client = ProxyFixture.connect(localhost)) {
      client.roundTrip("PING", TIMEOUT);
    }
  }

  @Test
  void deletedProxyIsGoneAndItsPortRefusesConnections() throws IOException {
    Proxy proxy = fixture.echoProxy("doomed");

    proxy.delete();

    assertNull(fixture.client.getProxyOrNull("doomed"));
    assertTrue(fixture.client.getProxies().isEmpty());
    assertThrows(ConnectException.class, () -> ProxyFixture.connect(proxy).close());
  }

  @Test
  void duplicateProxyNameIsAConflict() throws IOException {
    fixture.echoProxy("twice");

    IOException e = assertThrows(IOException.class, () -> fixture.echoProxy("twice"));

    assertTrue(e.getMessage().contains("409"), e.getMessage());
    assertTrue(e.getMessage().contains("proxy already exists"), e.getMessage());
  }

  @Test
  void missingProxyIsNotFound() throws IOException {
    IOException get = assertThrows(IOException.class, () -> fixture.client.getProxy("nope"));

    assertEquals("[404] proxy not found", get.getMessage());
    assertNull(fixture.client.getProxyOrNull("nope"));
    assertEquals(404, raw("DELETE", "/proxies/nope", null).statusCode());
    assertEquals(404, raw("GET", "/proxies/nope/toxics", null).statusCode());
  }

  @Test
  void listenPortInUseIsAServerError() throws IOException {
    Proxy first = fixture.echoProxy("first");

    IOException e =
        assertThrows(
            IOException.class,
            () -> fixture.client.createProxy("second", first.getListen(), fixture.echo.address()));

    assertTrue(e.getMessage().startsWith("[500]"), e.getMessage());
    assertTrue(e.getMessage().contains("bind: address already in use"), e.getMessage());
    assertNull(fixture.client.getProxyOrNull("second"));
  }

  @Test
  void missingRequiredFieldsAreBadRequests() throws IOException {
    HttpResponse<String> noName = raw("POST", "/proxies", "{\"upstream\":\"127.0.0.1:1\"}");
    HttpResponse<String> noUpstream = raw("POST", "/proxies", "{\"name\":\"x\"}");
    HttpResponse<String> badJson = raw("POST", "/proxies", "{\"name\":");

    assertError(noName, 400, "missing required field: name");
    assertError(noUpstream, 400, "missing required field: upstream");
    assertEquals(400, badJson.statusCode());
    assertTrue(error(badJson).startsWith("bad request body: "), badJson.body());
  }

  @Test
  void toxicErrorsUseToxiproxyCodesAndMessages() throws IOException {
    Proxy proxy = fixture.echoProxy("toxic-errors");
    proxy.toxics().latency("slow", ToxicDirection.DOWNSTREAM, 10);

    IOException duplicate =
        assertThrows(
            IOException.class, () -> proxy.toxics().latency("slow", ToxicDirection.UPSTREAM, 10));
    IOException missing = assertThrows(IOException.class, () -> proxy.toxics().get("nope"));
    HttpResponse<String> badStream =
        raw(
            "POST",
            "/proxies/toxic-errors/toxics",
            "{\"type\":\"latency\",\"stream\":\"sideways\"}");
    HttpResponse<String> badType =
        raw("POST", "/proxies/toxic-errors/toxics", "{\"type\":\"gremlins\"}");
    HttpResponse<String> badAttribute =
        raw(
            "POST",
            "/proxies/toxic-errors/toxics",
            "{\"type\":\"latency\",\"attributes\":{\"latency\":\"soon\"}}");

    assertEquals("[409] toxic already exists", duplicate.getMessage());
    assertEquals("[404] toxic not found", missing.getMessage());
    assertError(badStream, 400, "stream was invalid, can be either upstream or downstream");
    assertError(badType, 400, "invalid toxic type");
    assertEquals(400, badAttribute.statusCode());
    assertEquals(404, raw("DELETE", "/proxies/toxic-errors/toxics/nope", null).statusCode());
  }

  @Test
  void toxicDefaultsAndEveryAttributeKeyAreRendered() throws IOException {
    raw("POST", "/proxies", proxyJson("defaults"));

    HttpResponse<String> created = raw("POST", "/proxies/defaults/toxics", "{\"type\":\"slicer\"}");
    HttpResponse<String> shouting =
        raw("POST", "/proxies/defaults/toxics", "{\"type\":\"latency\",\"stream\":\"UPSTREAM\"}");

    assertEquals(200, created.statusCode());
    JsonObject slicer = JsonParser.parseString(created.body()).getAsJsonObject();
    assertEquals("slicer_downstream", slicer.get("name").getAsString());
    assertEquals("slicer", slicer.get("type").getAsString());
    assertEquals("downstream", slicer.get("stream").getAsString());
    assertEquals(1.0f, slicer.get("toxicity").getAsFloat());
    assertEquals(
        List.of("average_size", "size_variation", "delay"),
        List.copyOf(slicer.getAsJsonObject("attributes").keySet()));
    JsonObject latency = JsonParser.parseString(shouting.body()).getAsJsonObject();
    assertEquals("latency_upstream", latency.get("name").getAsString());
    assertEquals("upstream", latency.get("stream").getAsString());
    assertEquals(0, latency.getAsJsonObject("attributes").get("jitter").getAsLong());
  }

  @Test
  void toxicUpdatesMergeIntoTheExistingToxic() throws IOException {
    Proxy proxy = fixture.echoProxy("merge");
    Slicer slicer = proxy.toxics().slicer("cut", ToxicDirection.UPSTREAM, 100, 20);
    Latency latency = proxy.toxics().latency("slow", ToxicDirection.DOWNSTREAM, 50);
    latency.setJitter(5);

    slicer.setSizeVariation(30);
    latency.setToxicity(0.5f);

    Slicer slicerNow = proxy.toxics().get("cut", Slicer.class);
    assertEquals(100, slicerNow.getAverageSize());
    assertEquals(30, slicerNow.getSizeVariation());
    assertEquals(20, slicerNow.getDelay());
    Latency latencyNow = proxy.toxics().get("slow", Latency.class);
    assertEquals(50, latencyNow.getLatency());
    assertEquals(5, latencyNow.getJitter());
    assertEquals(0.5f, latencyNow.getToxicity());
    assertEquals(ToxicDirection.DOWNSTREAM, latencyNow.getStream());
  }

  @Test
  void toxicsAreListedUpstreamFirstThenDownstreamInInsertionOrder() throws IOException {
    Proxy proxy = fixture.echoProxy("order");
    proxy.toxics().latency("d1", ToxicDirection.DOWNSTREAM, 1);
    proxy.toxics().bandwidth("u1", ToxicDirection.UPSTREAM, 1000);
    proxy.toxics().slowClose("d2", ToxicDirection.DOWNSTREAM, 1);
    proxy.toxics().limitData("u2", ToxicDirection.UPSTREAM, 1000);
    proxy.toxics().get("d1").remove();

    List<String> names =
        proxy.toxics().getAll().stream().map(Toxic::getName).collect(Collectors.toList());

    assertEquals(List.of("u1", "u2", "d2"), names);
    JsonObject shown =
        JsonParser.parseString(raw("GET", "/proxies/order", null).body()).getAsJsonObject();
    assertEquals(3, shown.getAsJsonArray("toxics").size());
  }

  @Test
  void proxyUpdatesArePartial() throws IOException {
    Proxy proxy = fixture.echoProxy("partial");
    String listen = proxy.getListen();

    proxy.setUpstream("127.0.0.1:1");
    HttpResponse<String> patched = raw("PATCH", "/proxies/partial", "{\"enabled\":false}");

    assertEquals(200, patched.statusCode());
    assertEquals(200, raw("POST", "/proxies/partial", null).statusCode(), "body-less update");
    JsonObject json = JsonParser.parseString(patched.body()).getAsJsonObject();
    assertEquals(listen, json.get("listen").getAsString());
    assertEquals("127.0.0.1:1", json.get("upstream").getAsString());
    assertFalse(json.get("enabled").getAsBoolean());
  }

  @Test
  void resetRemovesEveryToxicAndReenablesEveryProxy() throws IOException {
    Proxy proxy = fixture.echoProxy("reset-me");
    proxy.toxics().timeout("blackhole", ToxicDirection.DOWNSTREAM, 0);
    proxy.toxics().latency("slow", ToxicDirection.UPSTREAM, 1_000);
    proxy.disable();

    fixture.client.reset();

    Proxy after = fixture.client.getProxy("reset-me");
    assertTrue(after.isEnabled());
    assertEquals(proxy.getListen(), after.getListen());
    assertTrue(after.toxics().getAll().isEmpty());
    try (TcpClient client = ProxyFixture.connect(after)) {
      client.roundTrip("PING", TIMEOUT);
    }
    assertEquals(204, raw("POST", "/reset", null).statusCode());
  }

  @Test
  void populateCreatesKeepsIdenticalProxiesAndReportsErrors() throws IOException {
    String both =
        "[{\"name\":\"pop-a\",\"listen\":\"127.0.0.1:0\",\"upstream\":\""
            + fixture.echo.address()
            + "\"},{\"name\":\"pop-b\",\"listen\":\"127.0.0.1:0\",\"upstream\":\""
            + fixture.echo.address()
            + "\",\"enabled\":false}]";

    Posted created = postWithHttpUrlConnection("/populate", both);

    assertEquals(201, created.status());
    JsonArray proxies =
        JsonParser.parseString(created.body()).getAsJsonObject().getAsJsonArray("proxies");
    assertEquals(2, proxies.size());
    JsonObject a = proxies.get(0).getAsJsonObject();
    assertTrue(a.get("enabled").getAsBoolean());
    assertFalse(proxies.get(1).getAsJsonObject().get("enabled").getAsBoolean());
    String aListen = a.get("listen").getAsString();
    String identical =
        "[{\"name\":\"pop-a\",\"listen\":\""
            + aListen
            + "\",\"upstream\":\""
            + fixture.echo.address()
            + "\"}]";
    Posted again = postWithHttpUrlConnection("/populate", identical);
    assertEquals(201, again.status());
    assertEquals(aListen, fixture.client.getProxy("pop-a").getListen());
    assertEquals(2, fixture.client.getProxies().size());
    Posted invalid = postWithHttpUrlConnection("/populate", "[{\"name\":\"pop-c\"}]");
    assertEquals(400, invalid.status());
    assertEquals(
        "missing required field: upstream at proxy 1",
        JsonParser.parseString(invalid.body()).getAsJsonObject().get("error").getAsString());
  }

  @Test
  void browsersAreTurnedAway() throws Exception {
    HttpResponse<String> response =
        HTTP.send(
            HttpRequest.newBuilder(uri("/version")).header("User-Agent", "Mozilla/5.0").build(),
            HttpResponse.BodyHandlers.ofString());

    assertEquals(403, response.statusCode());
  }

  private record Posted(int status, String body) {}

  /** The Java client never calls /populate, so this test speaks HTTP itself. */
  private Posted postWithHttpUrlConnection(String path, String body) throws IOException {
    URL url = uri(path).toURL();
    HttpURLConnection connection = (HttpURLConnection) url.openConnection();
    connection.setRequestMethod("POST");
    connection.setDoOutput(true);
    connection.setConnectTimeout(5_000);
    connection.setReadTimeout(5_000);
    try (OutputStream out = connection.getOutputStream()) {
      out.write(body.getBytes(StandardCharsets.UTF_8));
    }
    int status = connection.getResponseCode();
    InputStream stream = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
    try (stream) {
      return new Posted(status, new String(stream.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  private String proxyJson(String name) {
    return "{\"name\":\""
        + name
        + "\",\"listen\":\"127.0.0.1:0\",\"upstream\":\""
        + fixture.echo.address()
        + "\"}";
  }

  private HttpResponse<String> raw(String method, String path, String body) throws IOException {
    HttpRequest request =
        HttpRequest.newBuilder(uri(path))
            .timeout(TIMEOUT)
            .method(
                method,
                body == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body))
            .build();
    try {
      return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + fixture.server.apiPort() + path);
  }

  private static String error(HttpResponse<String> response) {
    return JsonParser.parseString(response.body()).getAsJsonObject().get("error").getAsString();
  }

  private static void assertError(HttpResponse<String> response, int status, String message) {
    assertEquals(status, response.statusCode(), response.body());
    JsonObject body = JsonParser.parseString(response.body()).getAsJsonObject();
    assertEquals(message, body.get("error").getAsString());
    assertEquals(status, body.get("status").getAsInt());
  }
}
