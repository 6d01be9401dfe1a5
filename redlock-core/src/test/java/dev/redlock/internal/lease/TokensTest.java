package dev.redlock.internal.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TokensTest {

  @Test
  void everyHexDigitOfATokenCarriesFourRandomBits() {
    Tokens tokens = new Tokens();
    Set<Character> high = new HashSet<>(); // digits seen for each byte's high nibble
    Set<Character> low = new HashSet<>();
    Set<String> seen = new HashSet<>();
    for (int n = 0; n < 200; n++) {
      String token = new String(tokens.next(), StandardCharsets.US_ASCII);
      assertEquals(32, token.length());
      assertTrue(token.matches("[0-9a-f]{32}"), token);
      assertTrue(seen.add(token), "fresh every time");
      for (int i = 0; i < 32; i += 2) {
        high.add(token.charAt(i));
        low.add(token.charAt(i + 1));
      }
    }
    // 3200 random nibbles each: all 16 digits turn up in both halves of a byte (a miss is
    // under 1e-80 likely), so neither half is constant.
    assertEquals(16, high.size(), high::toString);
    assertEquals(16, low.size(), low::toString);
  }
}
