package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.redlock.internal.transport.Command;
import dev.redlock.internal.transport.NodeClient;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The shape issue 32 asks of the contention wing, checked beside {@link LayersTest}: state that
 * threads share is a value (a record replaced by compare-and-set), not bits packed into an integer
 * that each reader must decode; the node port sends commands as values through one method.
 */
class ShapeTest {

  /** The classes whose shared state was bit-packed: an acquisition's turn, a release's fallback. */
  private static final List<String> STATEFUL =
      List.of("dev.redlock.internal.lease.Turn", "dev.redlock.internal.lease.Leases$Fallback");

  @Test
  void theTurnAndTheFallbackKeepTheirStateAsValuesNotBits() throws ClassNotFoundException {
    List<String> packed = new ArrayList<>();
    for (String name : STATEFUL) {
      for (Field field : Class.forName(name).getDeclaredFields()) {
        Class<?> type = field.getType();
        if (type == AtomicInteger.class || type == AtomicLong.class) {
          packed.add(name + "." + field.getName());
        }
      }
    }
    assertEquals(List.of(), packed, "atomic integers as state");
  }

  /**
   * The node port has one command method, {@link NodeClient#send}: a decorator overrides it once,
   * so no decorator can forget a command (an unfit gate once voted through a command its fitness
   * check did not override).
   */
  @Test
  void theNodePortHasOneCommandMethod() {
    List<String> commands = new ArrayList<>();
    for (Method method : NodeClient.class.getMethods()) {
      if (method.getReturnType() == CompletableFuture.class) {
        commands.add(method.getName() + List.of(method.getParameterTypes()));
      }
    }
    assertEquals(List.of("send[" + Command.class + "]"), commands);
  }

  /**
   * The codec (the command encodings and their replies' decoding) decides no vote: the restart
   * guard's decision is the quorum layer's ({@code RestartGuardRule.judge}, applied by the
   * coordinator), so the codec neither names the rule nor answers RESTARTED.
   */
  @Test
  void theCodecDecidesNoVote() throws IOException {
    List<String> found = new ArrayList<>();
    for (String codec : List.of("NodeCommand", "KeySetCommands", "Resp")) {
      Path file = Path.of("src/main/java/dev/redlock/internal/transport/" + codec + ".java");
      String source = Files.readString(file);
      for (String decision : List.of("RestartGuardRule.", "Vote.RESTARTED")) {
        if (source.contains(decision)) {
          found.add(codec + " names " + decision);
        }
      }
    }
    assertEquals(List.of(), found);
  }

  /**
   * The blocking and the asynchronous acquires run one wait engine ({@code Wait}): the contention
   * rules it owns (the hand-off pause, queuing at the gate at once, the split back-off, entering
   * the wake-up group, a named round) are called from no other class of the lease layer than the
   * engine and the classes that define them, so no rule can be written, or fixed, twice.
   */
  @Test
  void theBlockingAndAsyncAcquiresRunOneWaitEngine() throws IOException {
    Path lease = Path.of("src/main/java/dev/redlock/internal/lease");
    List<String> rules =
        List.of(
            "spreadNanos(",
            ".handOff(",
            "queueAtOnce(",
            "wakeups.enter(",
            "contention.enter(",
            "wasNamed(");
    List<String> found = new ArrayList<>();
    try (var files = Files.list(lease)) {
      for (Path file : files.sorted().toList()) {
        String name = file.getFileName().toString();
        if (List.of(
                "Wait.java",
                "Contention.java",
                "Polling.java",
                "Wakeups.java",
                "RoundTime.java",
                "Turn.java")
            .contains(name)) {
          continue;
        }
        String source = Files.readString(file);
        for (String rule : rules) {
          if (source.contains(rule)) {
            found.add(name + " calls " + rule);
          }
        }
      }
    }
    assertEquals(List.of(), found, "a contention rule outside the wait engine");
  }

  /**
   * Contention sits behind a port ({@code Contention}) with two implementations, plain polling and
   * wake-ups with turns: the wait engine and the coordinator name the port only, so either
   * implementation runs the same engine and can be measured alone.
   */
  @Test
  void theWaitEngineAsksTheContentionPortNotAnImplementation() throws IOException {
    List<String> found = new ArrayList<>();
    for (String engine : List.of("Wait", "Coordinator", "AsyncLeases", "Leases")) {
      Path file = Path.of("src/main/java/dev/redlock/internal/lease/" + engine + ".java");
      for (String line : Files.readAllLines(file)) {
        String code = line.strip();
        if (code.startsWith("*") || code.startsWith("/*") || code.startsWith("//")) {
          continue; // the Javadoc may name them
        }
        for (String implementation : List.of("Wakeups", "Polling")) {
          if (code.matches(".*\\b" + implementation + "\\b.*")) {
            found.add(engine + ": " + code);
          }
        }
      }
    }
    assertEquals(List.of(), found, "the engine names a contention implementation");
  }

  /**
   * A multi-resource lease's key is a typed value ({@code LockKey.Set}, beside {@code
   * LockKey.One}), not an encoding that layers parse to tell a set from one resource: no source of
   * the library asks {@code isKeySet}, and the encoding's class can only encode.
   */
  @Test
  void aSetOfResourcesIsATypedKeyNotAnEncodingToParse() throws Exception {
    List<String> found = new ArrayList<>();
    try (var files = Files.walk(Path.of("src/main/java"))) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
        if (Files.readString(file).contains("isKeySet")) {
          found.add(file.getFileName().toString());
        }
      }
    }
    assertEquals(List.of(), found, "sources that parse a key to tell a set");
    List<String> methods = new ArrayList<>();
    for (Method method :
        Class.forName("dev.redlock.internal.transport.KeySet").getDeclaredMethods()) {
      methods.add(method.getName());
    }
    assertEquals(List.of("encode"), methods, "what the encoding's class can do");
  }
}
