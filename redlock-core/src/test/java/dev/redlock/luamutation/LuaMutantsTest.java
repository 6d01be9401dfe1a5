package dev.redlock.luamutation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.luamutation.LuaMutants.Mutant;
import dev.redlock.luamutation.LuaMutants.Operator;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The Lua mutants: each operator's change, and nothing in strings or comments changed. */
class LuaMutantsTest {

  private static final String SCRIPT =
      String.join(
          "\n",
          "-- a comment with if x == 1 then redis.call('DEL', k) PX 1000",
          "local value = redis.call('GET', KEYS[1])",
          "if value == ARGV[1] then",
          "  redis.call('DEL', KEYS[1])",
          "  local heard = redis.pcall('PUBLISH', 'ch', 'if a < b then')",
          "  if heard > 0 then",
          "    return 2",
          "  end",
          "  return 1",
          "elseif redis.call('PTTL', KEYS[1]) < 1000000 then",
          "  redis.call('SET', KEYS[1], 'x', 'PX', 5)",
          "end",
          "return 0");

  private static List<Mutant> of(Operator operator) {
    return LuaMutants.of("t.lua", SCRIPT).stream().filter(m -> m.operator() == operator).toList();
  }

  private static String line(Mutant m, int line) {
    return m.text().split("\n", -1)[line - 1];
  }

  @Test
  void negatesEachConditionOfAnIfOrElseif() {
    List<Mutant> mutants = of(Operator.NEGATE_CONDITION);
    assertEquals(List.of(3, 6, 10), mutants.stream().map(Mutant::line).toList());
    assertEquals("if not (value == ARGV[1]) then", line(mutants.get(0), 3));
    assertEquals(
        "elseif not (redis.call('PTTL', KEYS[1]) < 1000000) then", line(mutants.get(2), 10));
  }

  @Test
  void relaxesEachComparisonAndTurnsEachEqualityOutsideStrings() {
    List<Mutant> mutants = of(Operator.RELAX_COMPARISON);
    assertEquals(
        List.of("if value ~= ARGV[1] then", "  if heard >= 0 then"),
        List.of(line(mutants.get(0), 3), line(mutants.get(1), 6)));
    assertEquals("elseif redis.call('PTTL', KEYS[1]) <= 1000000 then", line(mutants.get(2), 10));
    assertEquals(3, mutants.size());
  }

  @Test
  void deletesEachWriteStatementAndAnswersZeroWhereItsReplyIsUsed() {
    List<Mutant> mutants = of(Operator.DELETE_WRITE);
    assertEquals(List.of(4, 5, 11), mutants.stream().map(Mutant::line).toList());
    assertEquals("  ", line(mutants.get(0), 4));
    assertEquals("  local heard = 0", line(mutants.get(1), 5));
    assertEquals("  ", line(mutants.get(2), 11));
  }

  @Test
  void swapsMillisecondsAndMicrosecondsAndSecondsAndMilliseconds() {
    List<Mutant> us = of(Operator.SWAP_MS_US);
    assertEquals(1, us.size());
    assertEquals("elseif redis.call('PTTL', KEYS[1]) < 1000 then", line(us.get(0), 10));
    List<Mutant> px = of(Operator.SWAP_PX_EX);
    assertEquals(
        List.of(
            "elseif redis.call('TTL', KEYS[1]) < 1000000 then",
            "  redis.call('SET', KEYS[1], 'x', 'EX', 5)"),
        List.of(line(px.get(0), 10), line(px.get(1), 11)));
  }

  @Test
  void movesTheDeleteAfterThePublishAndBeforeEachReturnAfterIt() {
    List<Mutant> mutants = of(Operator.REORDER_DELETE_PUBLISH);
    assertEquals(1, mutants.size());
    String text = mutants.get(0).text();
    assertTrue(
        text.contains(
            "if value == ARGV[1] then\n"
                + "  local heard = redis.pcall('PUBLISH', 'ch', 'if a < b then')\n"
                + "  redis.call('DEL', KEYS[1])\n"
                + "  if heard > 0 then\n"),
        text);
  }
}
