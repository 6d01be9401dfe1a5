package dev.redlock.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;

/** The round timers and the lost-lease counter for one set of tags, registered together. */
final class EventMeters {

  final Timer acquired;
  final Timer taken;
  final Timer unavailable;
  final Timer extended;
  final Timer notExtended;
  final Timer extendLost;
  final Timer released;
  final Counter lost;

  EventMeters(MeterRegistry registry, Tags tags) {
    String acquire = "Acquire rounds, by result: acquired, or denied as taken or unavailable";
    acquired = timer(registry, Meters.ACQUIRE, acquire, tags.and(Meters.RESULT, "acquired"));
    taken = timer(registry, Meters.ACQUIRE, acquire, tags.and(Meters.RESULT, "taken"));
    unavailable = timer(registry, Meters.ACQUIRE, acquire, tags.and(Meters.RESULT, "unavailable"));
    String extend = "Extend rounds, manual or automatic, by result";
    extended = timer(registry, Meters.EXTEND, extend, tags.and(Meters.RESULT, "extended"));
    notExtended = timer(registry, Meters.EXTEND, extend, tags.and(Meters.RESULT, "not_extended"));
    extendLost = timer(registry, Meters.EXTEND, extend, tags.and(Meters.RESULT, "lost"));
    released = timer(registry, Meters.RELEASE, "Release rounds", tags);
    lost =
        Counter.builder(Meters.LEASE_LOST)
            .description(
                "Leases lost: a majority refused an extend, or the lease ran out before a renewal")
            .tags(tags)
            .register(registry);
  }

  private static Timer timer(MeterRegistry registry, String name, String description, Tags tags) {
    return Timer.builder(name).description(description).tags(tags).register(registry);
  }
}
