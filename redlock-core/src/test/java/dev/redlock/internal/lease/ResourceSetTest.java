package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A multi-resource lease's set: checked once, sorted by key bytes, one key set. */
class ResourceSetTest {

  @Test
  void anyOrderGivesTheSameSortedSetAndKey() {
    ResourceSet one = ResourceSet.of(List.of("b", "a", "\uD83D\uDE00", "\uFFFD"));
    ResourceSet two = ResourceSet.of(List.of("\uFFFD", "\uD83D\uDE00", "a", "b"));
    // By UTF-8 bytes (code points): U+FFFD before U+1F600, unlike String's UTF-16 order.
    assertEquals(List.of("a", "b", "\uFFFD", "\uD83D\uDE00"), one.names());
    assertEquals(one.names(), two.names());
    assertEquals(one.key(), two.key(), "one set, one key, whatever the order named");
    assertEquals(
        one.key().keys().stream().map(k -> new String(k, StandardCharsets.UTF_8)).toList(),
        one.names());
    assertEquals("[a, b, \uFFFD, \uD83D\uDE00]", one.shown());
  }

  @Test
  void badSetsAreRefusedWithTheReason() {
    assertEquals(
        "resources must not be empty",
        assertThrows(IllegalArgumentException.class, () -> ResourceSet.of(List.of())).getMessage());
    assertEquals(
        "resources name 'x' twice",
        assertThrows(IllegalArgumentException.class, () -> ResourceSet.of(List.of("x", "y", "x")))
            .getMessage());
    List<String> many = new ArrayList<>();
    for (int i = 0; i <= ResourceSet.MAX_RESOURCES; i++) {
      many.add("r" + i);
    }
    assertThrows(IllegalArgumentException.class, () -> ResourceSet.of(many));
    assertEquals(64, ResourceSet.of(many.subList(0, 64)).names().size());
    assertThrows(IllegalArgumentException.class, () -> ResourceSet.of(List.of("", "a")));
    assertThrows(
        IllegalArgumentException.class, () -> ResourceSet.of(List.of("redlock:fence", "a")));
    assertThrows(NullPointerException.class, () -> ResourceSet.of(null));
  }
}
