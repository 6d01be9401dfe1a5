package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import java.io.PrintStream;

/**
 * The label-and-value rows of a report header, the label padded to a fixed width: {@code " masters
 * 5 (local ...)"}. An empty label continues the value above. Not thread-safe.
 */
public final class Rows {

  private final PrintStream out;
  private final String format;

  /** Rows on {@code out} whose labels are padded to {@code labelWidth} characters. */
  public Rows(PrintStream out, int labelWidth) {
    this.out = requireNonNull(out, "out");
    if (labelWidth < 1) {
      throw new IllegalArgumentException("labelWidth must be at least 1: " + labelWidth);
    }
    this.format = "  %-" + labelWidth + "s %s%n";
  }

  /** Prints one row. */
  public void row(String label, String value) {
    out.printf(format, requireNonNull(label, "label"), requireNonNull(value, "value"));
  }
}
