package dev.redlock.faultproxy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The proxies of one server by name, with Toxiproxy's collection semantics (unique names, populate
 * that replaces only what differs, reset). Thread-safe: every method holds the registry's monitor,
 * so API calls apply one at a time, as they do in Toxiproxy.
 */
final class ProxyRegistry {
  private final DaemonThreads threads;
  private final Map<String, FaultProxy> proxies = new TreeMap<>();
  private boolean closed;

  ProxyRegistry(DaemonThreads threads) {
    this.threads = threads;
  }

  /** A proxy as a create or populate request describes it. */
  record ProxySpec(String name, String listen, String upstream, boolean enabled) {}

  /**
   * The proxies a populate call created or kept, in request order, and the error that stopped it.
   *
   * @param error {@code null} when every entry was applied
   */
  record PopulateResult(List<FaultProxy> proxies, ApiException error) {}

  /**
   * Creates a proxy, started if {@code spec.enabled()}.
   *
   * @throws ApiException 409 for a taken name; 500 when the listener cannot be opened
   */
  synchronized FaultProxy create(ProxySpec spec) throws ApiException {
    checkOpen();
    if (proxies.containsKey(spec.name())) {
      throw new ApiException(409, "proxy already exists");
    }
    FaultProxy proxy = start(spec);
    proxies.put(spec.name(), proxy);
    return proxy;
  }

  /**
   * Returns a proxy by name.
   *
   * @throws ApiException 404 when there is none
   */
  synchronized FaultProxy get(String name) throws ApiException {
    FaultProxy proxy = proxies.get(name);
    if (proxy == null) {
      throw ApiException.proxyNotFound();
    }
    return proxy;
  }

  /** Every proxy, ordered by name. */
  synchronized List<FaultProxy> all() {
    return List.copyOf(proxies.values());
  }

  /**
   * Stops a proxy, closes its connections and forgets it.
   *
   * @throws ApiException 404 when there is none
   */
  synchronized void delete(String name) throws ApiException {
    get(name).disable();
    proxies.remove(name);
  }

  /**
   * Creates each proxy, or replaces an existing one when its listen address or upstream differs;
   * identical ones are left alone. Stops at the first failure.
   */
  synchronized PopulateResult populate(List<ProxySpec> specs) {
    List<FaultProxy> applied = new ArrayList<>();
    try {
      checkOpen();
      for (ProxySpec spec : specs) {
        FaultProxy existing = proxies.get(spec.name());
        if (existing != null) {
          if (!existing.differs(spec.listen(), spec.upstream())) {
            applied.add(existing);
            continue;
          }
          existing.disable();
        }
        FaultProxy proxy = start(spec);
        proxies.put(spec.name(), proxy);
        applied.add(proxy);
      }
      return new PopulateResult(applied, null);
    } catch (ApiException e) {
      return new PopulateResult(applied, e);
    }
  }

  /**
   * Enables every proxy and removes every toxic.
   *
   * @throws ApiException 500 when a proxy cannot be restarted
   */
  synchronized void reset() throws ApiException {
    checkOpen();
    for (FaultProxy proxy : proxies.values()) {
      proxy.enable();
      proxy.removeAllToxics();
    }
  }

  /** Stops every proxy and refuses further changes. */
  synchronized void close() {
    closed = true;
    proxies.values().forEach(FaultProxy::disable);
    proxies.clear();
  }

  private FaultProxy start(ProxySpec spec) throws ApiException {
    FaultProxy proxy = new FaultProxy(spec.name(), spec.listen(), spec.upstream(), threads);
    if (spec.enabled()) {
      proxy.enable();
    }
    return proxy;
  }

  private void checkOpen() throws ApiException {
    if (closed) {
      throw ApiException.internal("server is shutting down");
    }
  }
}
