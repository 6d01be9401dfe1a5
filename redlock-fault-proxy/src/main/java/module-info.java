/**
 * A Toxiproxy-compatible fault proxy: the Toxiproxy HTTP API served by a JDK, no binary.
 *
 * <p>Exports only {@code dev.redlock.faultproxy}, whose one public type is {@link
 * dev.redlock.faultproxy.FaultProxyServer}; every other type is internal to the module.
 */
module dev.redlock.faultproxy {
  requires jdk.httpserver;
  requires com.google.gson;
  requires org.slf4j;

  exports dev.redlock.faultproxy;
}
