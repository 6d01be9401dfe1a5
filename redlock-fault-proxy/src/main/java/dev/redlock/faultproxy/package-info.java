/**
 * A Toxiproxy-compatible fault proxy written in Java, so faults can be driven through the Toxiproxy
 * clients (for example {@code eu.rekawek.toxiproxy:toxiproxy-java}) on machines without Docker or
 * the Toxiproxy binary.
 *
 * <p>{@link dev.redlock.faultproxy.FaultProxyServer} serves the Toxiproxy v2 HTTP API on loopback;
 * every proxy it creates listens on {@code 127.0.0.1} and forwards to its upstream through two
 * {@code ToxicLink}s per connection. Everything except the server class is package-private
 * machinery.
 *
 * <p>Null policy: parameters and return values are non-null unless a member says otherwise.
 */
package dev.redlock.faultproxy;
