package dev.redlock.benchmark;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What one run of the benchmark's command line printed, and its exit code, for the tests to read.
 *
 * @param code what {@link Benchmark#run} returned
 * @param text everything it printed
 */
record BenchmarkOutput(int code, String text) {

  /** Runs the benchmark with {@code args} on this thread, its output captured. */
  static BenchmarkOutput run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code = Benchmark.run(args, new PrintStream(out, true, StandardCharsets.UTF_8));
    return new BenchmarkOutput(code, out.toString(StandardCharsets.UTF_8));
  }
}
