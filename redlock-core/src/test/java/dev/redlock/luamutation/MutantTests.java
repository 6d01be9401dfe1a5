package dev.redlock.luamutation;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.ClassSelector;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * The JVM of one mutant (started by {@link LuaMutationRun} with the mutant first on its class
 * path): runs the given test classes in order, and stops at the first failure, since one is enough
 * to kill the mutant. Writes its verdict to the file named by the first argument: {@code passed
 * <tests>}, or {@code failed <test>: <message>}; exits 0 if every test passed, 1 if one failed. The
 * redis-servers the tests started are stopped by the testkit's shutdown hook.
 */
final class MutantTests {

  private MutantTests() {}

  public static void main(String[] args) throws IOException {
    Path verdict = Path.of(args[0]);
    List<ClassSelector> classes = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      classes.add(selectClass(args[i]));
    }
    Launcher launcher = LauncherFactory.create();
    int[] passed = {0};
    TestExecutionListener listener =
        new TestExecutionListener() {
          @Override
          public void executionFinished(TestIdentifier test, TestExecutionResult result) {
            if (result.getStatus() == TestExecutionResult.Status.SUCCESSFUL) {
              if (test.isTest()) {
                passed[0]++;
              }
              return;
            }
            if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
              return; // an assumption not met: the test did not run, it did not fail
            }
            String message =
                result.getThrowable().map(t -> String.valueOf(t.getMessage())).orElse("");
            write(
                verdict,
                "failed "
                    + test.getSource()
                        .filter(MethodSource.class::isInstance)
                        .map(MethodSource.class::cast)
                        .map(m -> simpleName(m.getClassName()) + "." + m.getMethodName())
                        .orElse(test.getDisplayName())
                    + ": "
                    + message.replaceAll("\\s+", " "));
            System.exit(1);
          }
        };
    // One request per class, in the given order: the fast contract test first.
    for (ClassSelector selector : classes) {
      launcher.execute(
          LauncherDiscoveryRequestBuilder.request().selectors(selector).build(), listener);
    }
    write(verdict, "passed " + passed[0]);
    System.exit(0);
  }

  private static String simpleName(String className) {
    return className.substring(className.lastIndexOf('.') + 1);
  }

  private static void write(Path verdict, String text) {
    try {
      Files.writeString(verdict, text, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
