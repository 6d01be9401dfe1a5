package dev.redlock.faultproxy;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Toxiproxy v2 HTTP API: routes, status codes and JSON shapes of Toxiproxy's {@code api.go}.
 * Request Content-Type is ignored and a missing body reads as {@code {}}. Errors are {@code
 * {"error":"<message>","status":<code>}} bodies, as Toxiproxy writes them.
 */
final class ApiHandler implements HttpHandler {
  private static final Logger log = LoggerFactory.getLogger(ApiHandler.class);
  private static final Gson GSON = new Gson();
  private static final String JSON = "application/json";

  private final ProxyRegistry registry;
  private final String version;

  ApiHandler(ProxyRegistry registry, String version) {
    this.registry = registry;
    this.version = version;
  }

  private record Response(int status, String contentType, byte[] body) {
    static Response json(int status, JsonElement body) {
      return new Response(status, JSON, GSON.toJson(body).getBytes(StandardCharsets.UTF_8));
    }

    static Response noContent() {
      return new Response(204, null, new byte[0]);
    }

    /** Go's {@code http.Error}: plain text with a trailing newline. */
    static Response error(int status, String message) {
      JsonObject body = new JsonObject();
      body.addProperty("error", message);
      body.addProperty("status", status);
      return new Response(
          status,
          "text/plain; charset=utf-8",
          (GSON.toJson(body) + "\n").getBytes(StandardCharsets.UTF_8));
    }
  }

  @FunctionalInterface
  private interface Action {
    Response run() throws ApiException;
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    try {
      byte[] body = exchange.getRequestBody().readAllBytes();
      String method = exchange.getRequestMethod();
      String path = exchange.getRequestURI().getPath();
      Response response;
      String userAgent = exchange.getRequestHeaders().getFirst("User-Agent");
      if (userAgent != null && userAgent.startsWith("Mozilla/")) {
        response =
            new Response(
                403,
                "text/plain; charset=utf-8",
                "User agent not allowed\n".getBytes(StandardCharsets.UTF_8));
      } else {
        response = respond(method, path, body);
      }
      log.debug("{} {} -> {}", method, path, response.status());
      send(exchange, response);
    } finally {
      exchange.close();
    }
  }

  private Response respond(String method, String path, byte[] body) {
    try {
      return route(method, path, body);
    } catch (ApiException e) {
      return Response.error(e.status(), e.getMessage());
    } catch (RuntimeException e) {
      log.warn("{} {} failed", method, path, e);
      return Response.error(500, e.toString());
    }
  }

  private Response route(String method, String path, byte[] body) throws ApiException {
    List<String> segments =
        path.startsWith("/") ? Arrays.asList(path.substring(1).split("/", -1)) : List.of();
    if (segments.isEmpty() || segments.contains("")) {
      return pageNotFound();
    }
    String first = segments.get(0);
    switch (segments.size()) {
      case 1:
        switch (first) {
          case "version":
            return on(method, Set.of("GET"), this::version);
          case "reset":
            return on(method, Set.of("POST"), this::reset);
          case "populate":
            return on(method, Set.of("POST"), () -> populate(body));
          case "proxies":
            return "GET".equals(method)
                ? listProxies()
                : on(method, Set.of("POST"), () -> createProxy(body));
          default:
            return pageNotFound();
        }
      case 2:
        if (!first.equals("proxies")) {
          return pageNotFound();
        }
        return proxyRoute(method, segments.get(1), body);
      case 3:
        if (!first.equals("proxies") || !segments.get(2).equals("toxics")) {
          return pageNotFound();
        }
        return toxicsRoute(method, segments.get(1), body);
      case 4:
        if (!first.equals("proxies") || !segments.get(2).equals("toxics")) {
          return pageNotFound();
        }
        return toxicRoute(method, segments.get(1), segments.get(3), body);
      default:
        return pageNotFound();
    }
  }

  private Response proxyRoute(String method, String name, byte[] body) throws ApiException {
    switch (method) {
      case "GET":
        return Response.json(200, registry.get(name).toJson());
      case "POST":
      case "PATCH":
        {
          FaultProxy proxy = registry.get(name);
          JsonObject input = JsonFields.object(body);
          String listen = JsonFields.string(input, "listen");
          String upstream = JsonFields.string(input, "upstream");
          Boolean enabled = JsonFields.bool(input, "enabled");
          proxy.update(listen, upstream, enabled);
          return Response.json(200, proxy.toJson());
        }
      case "DELETE":
        registry.delete(name);
        return Response.noContent();
      default:
        return methodNotAllowed();
    }
  }

  private Response toxicsRoute(String method, String proxyName, byte[] body) throws ApiException {
    switch (method) {
      case "GET":
        {
          JsonArray toxics = new JsonArray();
          registry.get(proxyName).toxics().forEach(toxic -> toxics.add(toxic.toJson()));
          return Response.json(200, toxics);
        }
      case "POST":
        {
          FaultProxy proxy = registry.get(proxyName);
          return Response.json(200, proxy.addToxic(JsonFields.object(body)).toJson());
        }
      default:
        return methodNotAllowed();
    }
  }

  private Response toxicRoute(String method, String proxyName, String toxicName, byte[] body)
      throws ApiException {
    switch (method) {
      case "GET":
        return Response.json(200, registry.get(proxyName).toxic(toxicName).toJson());
      case "POST":
      case "PATCH":
        {
          FaultProxy proxy = registry.get(proxyName);
          proxy.toxic(toxicName);
          return Response.json(200, proxy.updateToxic(toxicName, JsonFields.object(body)).toJson());
        }
      case "DELETE":
        registry.get(proxyName).removeToxic(toxicName);
        return Response.noContent();
      default:
        return methodNotAllowed();
    }
  }

  private Response version() {
    String text = "{\"version\": \"" + version + "\"}\n";
    return new Response(
        200, "application/json;charset=utf-8", text.getBytes(StandardCharsets.UTF_8));
  }

  private Response reset() throws ApiException {
    registry.reset();
    return Response.noContent();
  }

  private Response listProxies() {
    JsonObject proxies = new JsonObject();
    for (FaultProxy proxy : registry.all()) {
      proxies.add(proxy.name(), proxy.toJson());
    }
    return Response.json(200, proxies);
  }

  private Response createProxy(byte[] body) throws ApiException {
    ProxyRegistry.ProxySpec spec = spec(JsonFields.object(body), "");
    return Response.json(201, registry.create(spec).toJson());
  }

  private Response populate(byte[] body) throws ApiException {
    JsonElement input = JsonFields.element(body);
    if (!input.isJsonArray()) {
      throw ApiException.badRequestBody("expected a JSON array of proxies");
    }
    List<ProxyRegistry.ProxySpec> specs = new ArrayList<>();
    int index = 0;
    for (JsonElement element : input.getAsJsonArray()) {
      index++;
      if (!element.isJsonObject()) {
        throw ApiException.badRequestBody("expected a JSON object at proxy " + index);
      }
      specs.add(spec(element.getAsJsonObject(), " at proxy " + index));
    }
    ProxyRegistry.PopulateResult result = registry.populate(specs);
    JsonObject json = new JsonObject();
    int status = 201;
    if (result.error() != null) {
      status = result.error().status();
      json.addProperty("error", result.error().getMessage());
      json.addProperty("status", status);
    }
    JsonArray proxies = new JsonArray();
    result.proxies().forEach(proxy -> proxies.add(proxy.toJson()));
    json.add("proxies", proxies);
    return Response.json(status, json);
  }

  /** Reads a proxy definition, checking required fields as Toxiproxy does. */
  private static ProxyRegistry.ProxySpec spec(JsonObject input, String where) throws ApiException {
    String name = JsonFields.string(input, "name");
    String listen = JsonFields.string(input, "listen");
    String upstream = JsonFields.string(input, "upstream");
    Boolean enabled = JsonFields.bool(input, "enabled");
    if (name == null || name.isEmpty()) {
      throw ApiException.missingField("name" + where);
    }
    if (upstream == null || upstream.isEmpty()) {
      throw ApiException.missingField("upstream" + where);
    }
    return new ProxyRegistry.ProxySpec(
        name, listen == null ? "" : listen, upstream, enabled == null || enabled);
  }

  private static Response on(String method, Set<String> allowed, Action action)
      throws ApiException {
    return allowed.contains(method) ? action.run() : methodNotAllowed();
  }

  private static Response pageNotFound() {
    return Response.error(404, "404 page not found");
  }

  private static Response methodNotAllowed() {
    return Response.error(405, "method not allowed");
  }

  private static void send(HttpExchange exchange, Response response) throws IOException {
    if (response.contentType() != null) {
      exchange.getResponseHeaders().set("Content-Type", response.contentType());
    }
    if (response.status() >= 400) {
      exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
    }
    if (response.body().length == 0) {
      exchange.sendResponseHeaders(response.status(), -1);
      return;
    }
    exchange.sendResponseHeaders(response.status(), response.body().length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(response.body());
    }
  }
}
