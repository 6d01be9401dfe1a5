package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.benchmark.Flags.UsageException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FlagsTest {

  private static final Set<String> KNOWN = Set.of("workers", "duration", "ttl", "nodes");

  @Test
  void valuesFollowTheFlagOrAnEqualsSign() throws Exception {
    Flags flags = Flags.parse(new String[] {"--workers", "3", "--duration=0.5"}, KNOWN);
    assertEquals(3, flags.intValue("workers", 8, 1, 100));
    assertEquals(
        Duration.ofMillis(500), flags.seconds("duration", null, Duration.ZERO, Duration.ofDays(1)));
    assertFalse(flags.help());
  }

  @Test
  void absentFlagsTakeTheirDefaults() throws Exception {
    Flags flags = Flags.parse(new String[] {"-h"}, KNOWN);
    assertTrue(flags.help());
    assertEquals(8, flags.intValue("workers", 8, 1, 100));
    assertEquals(
        Duration.ofSeconds(2),
        flags.millis("ttl", Duration.ofSeconds(2), Duration.ZERO, Duration.ofDays(1)));
    assertEquals(List.of(), flags.list("nodes"));
  }

  @Test
  void aListIsSplitAtCommas() throws Exception {
    Flags flags = Flags.parse(new String[] {"--nodes", "redis://a:1, redis://b:2,"}, KNOWN);
    assertEquals(List.of("redis://a:1", "redis://b:2"), flags.list("nodes"));
  }

  @Test
  void aSwitchTakesNoValueAndIsOffUnlessGiven() throws Exception {
    Set<String> switches = Set.of("admit-fresh-nodes");
    Flags on = Flags.parse(new String[] {"--admit-fresh-nodes", "--workers", "3"}, KNOWN, switches);
    assertTrue(on.isSet("admit-fresh-nodes"));
    assertEquals(3, on.intValue("workers", 8, 1, 100));
    assertFalse(
        Flags.parse(new String[] {"--workers", "3"}, KNOWN, switches).isSet("admit-fresh-nodes"));
  }

  @Test
  void aSwitchWithAValueOrGivenTwiceIsAUsageError() {
    Set<String> switches = Set.of("admit-fresh-nodes");
    assertThrows(
        UsageException.class,
        () -> Flags.parse(new String[] {"--admit-fresh-nodes=yes"}, KNOWN, switches));
    assertThrows(
        UsageException.class,
        () ->
            Flags.parse(
                new String[] {"--admit-fresh-nodes", "--admit-fresh-nodes"}, KNOWN, switches));
    assertThrows(
        UsageException.class,
        () -> Flags.parse(new String[] {"--admit-fresh-nodes", "yes"}, KNOWN, switches));
    assertThrows(
        UsageException.class, () -> Flags.parse(new String[] {"--admit-fresh-nodes"}, KNOWN));
  }

  @Test
  void mistakesAreUsageErrors() {
    assertThrows(UsageException.class, () -> Flags.parse(new String[] {"--wrkers", "3"}, KNOWN));
    assertThrows(UsageException.class, () -> Flags.parse(new String[] {"--workers"}, KNOWN));
    assertThrows(UsageException.class, () -> Flags.parse(new String[] {"3"}, KNOWN));
    assertThrows(
        UsageException.class, () -> Flags.parse(new String[] {"--ttl", "1", "--ttl", "2"}, KNOWN));
    assertThrows(
        UsageException.class,
        () -> Flags.parse(new String[] {"--workers", "0"}, KNOWN).intValue("workers", 8, 1, 100));
    assertThrows(
        UsageException.class,
        () -> Flags.parse(new String[] {"--workers", "x"}, KNOWN).intValue("workers", 8, 1, 100));
    assertThrows(
        UsageException.class,
        () ->
            Flags.parse(new String[] {"--duration", "1e999"}, KNOWN)
                .seconds("duration", null, Duration.ZERO, Duration.ofDays(1)));
  }
}
