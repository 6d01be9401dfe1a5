package dev.redlock;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The log of each test, captured: slf4j-simple writes it to {@code System.err}, which this
 * extension replaces before each test and puts back after it. Register it on an instance field
 * ({@code @RegisterExtension final CapturedLog log = new CapturedLog();}) so that each test reads
 * only what was logged while it ran.
 */
public final class CapturedLog implements BeforeEachCallback, AfterEachCallback {

  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
  private final boolean echoed;
  private PrintStream original;

  /** Captures the log; what was captured is not printed. */
  public CapturedLog() {
    this(false);
  }

  private CapturedLog(boolean echoed) {
    this.echoed = echoed;
  }

  /**
   * Captures the log and prints it to the real {@code System.err} after each test, so the test's
   * report still shows it.
   *
   * @return the extension
   */
  public static CapturedLog echoed() {
    return new CapturedLog(true);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    original = System.err;
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
  }

  @Override
  public void afterEach(ExtensionContext context) {
    System.setErr(original);
    if (echoed) {
      original.print(text());
    }
  }

  /**
   * Everything logged so far in this test.
   *
   * @return the log's text
   */
  public String text() {
    return captured.toString(StandardCharsets.UTF_8);
  }

  /**
   * The lines logged at {@code level} (for example {@code "WARN"}) that contain {@code about}.
   *
   * @param level the level, as slf4j-simple prints it
   * @param about text the line must contain
   * @return the lines, in order
   */
  public List<String> lines(String level, String about) {
    return text()
        .lines()
        .filter(line -> line.contains(" " + level + " ") && line.contains(about))
        .toList();
  }

  @Override
  public String toString() {
    return text();
  }
}
