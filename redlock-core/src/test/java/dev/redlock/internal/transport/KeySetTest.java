package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A key set's encoding: one key that only {@link NodeCommand} opens. */
class KeySetTest {

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aSetKeepsItsKeysInTheirOrderWhateverBytesTheyHold() {
    List<byte[]> keys =
        List.of(bytes("a"), bytes("a\u0000b"), bytes("b"), new byte[] {(byte) 0xff});
    LockKey.Set set = LockKey.of(keys);
    assertEquals(keys.size(), set.keys().size());
    for (int i = 0; i < keys.size(); i++) {
      assertArrayEquals(keys.get(i), set.keys().get(i));
      assertArrayEquals(keys.get(i), set.members().get(i).bytes());
    }
    assertEquals(LockKey.of(List.copyOf(keys)), set, "one set, one value");
  }

  /**
   * Whether a key is a set is its type, decided where it is made: no layer parses bytes to tell.
   * Bytes that look like a set's encoding are one resource's key (the API refuses such a name, as
   * it is in the library's reserved space), and a set's encoding is in that space too.
   */
  @Test
  void whetherAKeyIsASetIsItsTypeNotItsBytes() {
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b")));
    assertInstanceOf(LockKey.One.class, LockKey.of(set.bytes()));
    assertTrue(
        new String(set.bytes(), StandardCharsets.US_ASCII).startsWith(LuaScript.RESERVED_PREFIX),
        "a set's encoding is in the reserved space");
    assertNotEquals(LockKey.of(set.bytes()), set);
  }

  @Test
  void keysMustBeDistinctSortedAndSome() {
    assertThrows(IllegalArgumentException.class, () -> LockKey.of(List.of()));
    assertThrows(IllegalArgumentException.class, () -> LockKey.of(List.of(bytes("b"), bytes("a"))));
    assertThrows(IllegalArgumentException.class, () -> LockKey.of(List.of(bytes("a"), bytes("a"))));
  }

  @Test
  void everyCommandOnAKeySetCallsTheKeySetScriptWithEveryKey() {
    LockKey.Set set = LockKey.of(List.of(bytes("a"), bytes("b")));
    byte[] token = bytes("t");
    for (NodeCommand command :
        List.of(
            NodeCommand.of(new Command.Acquire(set, token, 1000, false, 0)),
            NodeCommand.of(Command.release(set, token)),
            NodeCommand.of(new Command.Extend(set, token, 1000)),
            NodeCommand.of(new Command.Shorten(set, token, 1000)),
            NodeCommand.of(new Command.Fence(set, token, 7)))) {
      assertTrue(command.callsScript());
      assertEquals(1, command.parts());
      byte[][] words = command.arguments();
      assertArrayEquals(LuaScript.KEY_SET.sha1(), words[0]);
      assertArrayEquals(bytes("a"), words[2]);
      assertArrayEquals(bytes("b"), words[3]);
    }
    // The acquire's keys: the lock keys, then the fence counter, the marker and the admitted run.
    byte[][] acquire = NodeCommand.of(new Command.Acquire(set, token, 1000, false, 0)).arguments();
    assertEquals("5", new String(acquire[1], StandardCharsets.US_ASCII), "2 keys, then 3");
    assertTrue(
        NodeCommand.of(Command.release(set, token))
            .sameLease(NodeCommand.of(new Command.Extend(set, token, 5))));
    assertFalse(
        NodeCommand.of(Command.release(set, token))
            .sameLease(NodeCommand.of(Command.release(set, bytes("u")))));
  }
}
