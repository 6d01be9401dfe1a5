package dev.redlock.internal.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
  void keysComeBackInTheirOrderWhateverBytesTheyHold() {
    List<byte[]> keys =
        List.of(bytes("a"), bytes("a\u0000b"), bytes("b"), new byte[] {(byte) 0xff});
    byte[] set = KeySet.encode(keys);
    assertTrue(KeySet.isKeySet(set));
    List<byte[]> back = KeySet.keys(set);
    assertEquals(keys.size(), back.size());
    for (int i = 0; i < keys.size(); i++) {
      assertArrayEquals(keys.get(i), back.get(i));
    }
  }

  @Test
  void aResourcesOwnKeyIsNeverAKeySet() {
    assertFalse(KeySet.isKeySet(bytes("orders:42")));
    assertFalse(KeySet.isKeySet(bytes("redlock:keyset:"))); // the prefix alone
    assertThrows(IllegalArgumentException.class, () -> KeySet.keys(bytes("orders:42")));
  }

  @Test
  void keysMustBeDistinctSortedAndSome() {
    assertThrows(IllegalArgumentException.class, () -> KeySet.encode(List.of()));
    assertThrows(
        IllegalArgumentException.class, () -> KeySet.encode(List.of(bytes("b"), bytes("a"))));
    assertThrows(
        IllegalArgumentException.class, () -> KeySet.encode(List.of(bytes("a"), bytes("a"))));
  }

  @Test
  void everyCommandOnAKeySetCallsTheKeySetScriptWithEveryKey() {
    byte[] set = KeySet.encode(List.of(bytes("a"), bytes("b")));
    byte[] token = bytes("t");
    for (NodeCommand command :
        List.of(
            NodeCommand.acquire(set, null, token, 1000, 0),
            NodeCommand.release(set, token),
            NodeCommand.extend(set, token, 1000),
            NodeCommand.shorten(set, token, 1000),
            NodeCommand.fence(set, token, 7))) {
      assertTrue(command.callsScript());
      assertEquals(1, command.parts());
      byte[][] words = command.arguments();
      assertArrayEquals(LuaScript.KEY_SET.sha1(), words[0]);
      assertArrayEquals(bytes("a"), words[2]);
      assertArrayEquals(bytes("b"), words[3]);
    }
    // The acquire reads each resource's legacy counter, the fence counter, marker and admitted run.
    byte[][] acquire = NodeCommand.acquire(set, null, token, 1000, 0).arguments();
    assertEquals("7", new String(acquire[1], StandardCharsets.US_ASCII), "2 keys, 2 legacy, 3");
    assertTrue(NodeCommand.release(set, token).sameLease(NodeCommand.extend(set, token, 5)));
    assertFalse(NodeCommand.release(set, token).sameLease(NodeCommand.release(set, bytes("u"))));
  }
}
