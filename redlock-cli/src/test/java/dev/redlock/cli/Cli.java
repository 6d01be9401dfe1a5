package dev.redlock.cli;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.Charset;
import java.util.Map;

/** Runs the CLI in this JVM, as {@code main} would, with its input given and its output kept. */
record Cli(int code, String out, String err) {

  static Cli answering(String input, String... args) {
    return answering(input, Map.of(), args);
  }

  /** Runs with {@code environment} as the process's environment variables. */
  static Cli withEnvironment(Map<String, String> environment, String... args) {
    return answering("", environment, args);
  }

  private static Cli answering(String input, Map<String, String> environment, String... args) {
    Charset charset = Charset.defaultCharset();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code;
    try (PrintStream outStream = new PrintStream(out, true, charset);
        PrintStream errStream = new PrintStream(err, true, charset)) {
      code =
          RedLockCli.commandLine(
                  new ByteArrayInputStream(input.getBytes(charset)),
                  outStream,
                  errStream,
                  environment)
              .execute(args);
    }
    return new Cli(code, out.toString(charset), err.toString(charset));
  }

  static Cli run(String... args) {
    return answering("", args);
  }

  /** Both streams, for assertion messages. */
  String text() {
    return "exit " + code + "\n--- out:\n" + out + "--- err:\n" + err;
  }
}
