package dev.redlock.faultproxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class CommandLineTest {
  @Test
  void noArgumentsServeOnToxiproxysDefaultPort() {
    assertEquals(new CommandLine.Options(8474, false), CommandLine.parse(List.of()));
  }

  @Test
  void portNamesTheApiPortAndZeroMeansEphemeral() {
    assertEquals(18474, CommandLine.parse(List.of("--port", "18474")).port());
    assertEquals(0, CommandLine.parse(List.of("--port", "0")).port());
  }

  @Test
  void helpAsksForTheUsageWhateverElseIsGiven() {
    assertTrue(CommandLine.parse(List.of("--help")).help());
    assertTrue(CommandLine.parse(List.of("-h")).help());
    assertTrue(CommandLine.parse(List.of("--port", "1", "--help", "--bogus")).help());
  }

  @Test
  void anUnknownArgumentIsRefusedByName() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> CommandLine.parse(List.of("--host", "0.0.0.0")));

    assertEquals("unknown argument: --host", e.getMessage());
  }

  @Test
  void aPortThatIsMissingNotANumberOrOutOfRangeIsRefused() {
    for (List<String> args :
        List.of(
            List.of("--port"),
            List.of("--port", "http"),
            List.of("--port", "-1"),
            List.of("--port", "65536"))) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> CommandLine.parse(args));
      assertTrue(e.getMessage().startsWith("--port "), e.getMessage());
    }
  }
}
