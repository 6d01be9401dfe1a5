package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A small command-line parser: {@code --name value}, {@code --name=value}, switches such as {@code
 * --admit-fresh-nodes} that take no value, and {@code --help} / {@code -h}. Each flag may be given
 * once. Errors are {@link UsageException}s whose message a program prints above a pointer to {@code
 * --help}.
 */
final class Flags {

  private final Map<String, String> values;
  private final Set<String> switches;
  private final boolean help;

  private Flags(Map<String, String> values, Set<String> switches, boolean help) {
    this.values = values;
    this.switches = switches;
    this.help = help;
  }

  /**
   * Parses {@code args} against the flags a program knows (names without the leading dashes), every
   * one of which takes a value.
   *
   * @throws UsageException for an unknown flag, a flag without a value, a repeated flag or a stray
   *     argument
   */
  static Flags parse(String[] args, Set<String> known) throws UsageException {
    return parse(args, known, Set.of());
  }

  /**
   * Parses {@code args} against the flags a program knows: {@code known} take a value, {@code
   * switches} take none (names without the leading dashes).
   *
   * @throws UsageException for an unknown flag, a flag without a value, a switch with one, a
   *     repeated flag or a stray argument
   */
  static Flags parse(String[] args, Set<String> known, Set<String> switches) throws UsageException {
    requireNonNull(args, "args");
    requireNonNull(known, "known");
    requireNonNull(switches, "switches");
    Map<String, String> values = new HashMap<>();
    Set<String> given = new HashSet<>();
    boolean help = false;
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("--help") || arg.equals("-h")) {
        help = true;
        continue;
      }
      if (!arg.startsWith("--") || arg.length() == 2) {
        throw new UsageException("unexpected argument '" + arg + "'");
      }
      String name = arg.substring(2);
      int equals = name.indexOf('=');
      if (switches.contains(equals >= 0 ? name.substring(0, equals) : name)) {
        if (equals >= 0) {
          throw new UsageException("--" + name.substring(0, equals) + " takes no value");
        }
        if (!given.add(name)) {
          throw new UsageException("--" + name + " is given twice");
        }
        continue;
      }
      String value;
      if (equals >= 0) {
        value = name.substring(equals + 1);
        name = name.substring(0, equals);
      } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
        value = args[++i];
      } else {
        value = null;
      }
      if (!known.contains(name)) {
        throw new UsageException("unknown option --" + name);
      }
      if (value == null || value.isBlank()) {
        throw new UsageException("--" + name + " needs a value");
      }
      if (values.putIfAbsent(name, value.strip()) != null) {
        throw new UsageException("--" + name + " is given twice");
      }
    }
    return new Flags(values, Set.copyOf(given), help);
  }

  /** Whether {@code --help} or {@code -h} was given. */
  boolean help() {
    return help;
  }

  /** Whether the option {@code --name} was given with a value. */
  boolean has(String name) {
    return values.containsKey(name);
  }

  /**
   * Returns the value of {@code --name} as given (stripped).
   *
   * @throws IllegalStateException if it was not given; see {@link #has}
   */
  String value(String name) {
    String value = values.get(name);
    if (value == null) {
      throw new IllegalStateException("--" + name + " was not given");
    }
    return value;
  }

  /** Whether the switch {@code --name} was given. */
  boolean isSet(String name) {
    return switches.contains(name);
  }

  /** Returns {@code --name} as an int in [min, max], or {@code fallback} if absent. */
  int intValue(String name, int fallback, int min, int max) throws UsageException {
    return (int) longValue(name, fallback, min, max);
  }

  /**
   * Returns {@code --name} as a long in [min, max], or {@code fallback} if absent. Underscores are
   * allowed as digit separators ({@code 1_000_000}).
   */
  long longValue(String name, long fallback, long min, long max) throws UsageException {
    String text = values.get(name);
    if (text == null) {
      return fallback;
    }
    long value;
    try {
      value = Long.parseLong(text.replace("_", ""));
    } catch (NumberFormatException e) {
      throw new UsageException("--" + name + " must be a whole number, was '" + text + "'");
    }
    if (value < min || value > max) {
      throw new UsageException(
          "--" + name + " must be between " + min + " and " + max + ", was " + value);
    }
    return value;
  }

  /** Returns {@code --name}, a whole number of milliseconds in [min, max], or {@code fallback}. */
  Duration millis(String name, Duration fallback, Duration min, Duration max)
      throws UsageException {
    if (!values.containsKey(name)) {
      return fallback;
    }
    return Duration.ofMillis(longValue(name, 0, min.toMillis(), max.toMillis()));
  }

  /**
   * Returns {@code --name}, a number of seconds with an optional fraction ({@code 2}, {@code 0.5}),
   * in [min, max], or {@code fallback} if absent.
   */
  Duration seconds(String name, Duration fallback, Duration min, Duration max)
      throws UsageException {
    String text = values.get(name);
    if (text == null) {
      return fallback;
    }
    Duration value;
    try {
      BigDecimal nanos = new BigDecimal(text).movePointRight(9);
      value = Duration.ofNanos(nanos.longValueExact());
    } catch (NumberFormatException | ArithmeticException e) {
      throw new UsageException("--" + name + " must be a number of seconds, was '" + text + "'");
    }
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new UsageException(
          "--"
              + name
              + " must be between "
              + seconds(min)
              + " and "
              + seconds(max)
              + " seconds, was "
              + text);
    }
    return value;
  }

  /** Returns {@code --name} split at commas, without blanks; empty if absent. */
  List<String> list(String name) throws UsageException {
    String text = values.get(name);
    List<String> items = new ArrayList<>();
    if (text == null) {
      return items;
    }
    for (String item : text.split(",")) {
      if (!item.isBlank()) {
        items.add(item.strip());
      }
    }
    if (items.isEmpty()) {
      throw new UsageException("--" + name + " lists nothing");
    }
    return items;
  }

  private static String seconds(Duration d) {
    return BigDecimal.valueOf(d.toNanos()).movePointLeft(9).stripTrailingZeros().toPlainString();
  }

  /** A command line the program cannot run with; the message says why, for the user. */
  static final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }
}
