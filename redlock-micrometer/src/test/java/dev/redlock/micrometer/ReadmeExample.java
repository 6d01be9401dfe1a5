package dev.redlock.micrometer;

import dev.redlock.RedLock;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.List;

/**
 * The README's Micrometer snippet: the code between the markers is in the README word for word
 * (redlock-core's {@code ReadmeSnippetsTest} checks every marked snippet), and {@code
 * ReadmeExampleIT} runs it against real masters.
 */
final class ReadmeExample {

  private ReadmeExample() {}

  // README: Metrics
  static RedLock instrumented(List<String> uris, MeterRegistry registry) {
    RedLockMetrics metrics = RedLockMetrics.create();
    RedLock redlock = metrics.build(RedLock.builder().nodes(uris)); // sets the listener, builds
    metrics.bindTo(registry); // before or after build(); Spring Boot binds MeterBinder beans itself
    return redlock; // one per process; close() at shutdown
  }

  static RedLockMetrics withResourceTags() {
    return RedLockMetrics.builder()
        .tags(Tags.of("cluster", "orders")) // on every meter: tells two RedLocks apart
        .resourceTag(resource -> resource.split(":", 2)[0]) // "orders:42" -> resource=orders
        .build();
  }
  // end README: Metrics
}
