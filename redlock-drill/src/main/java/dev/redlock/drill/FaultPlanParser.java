package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.FaultPlan.Fault;
import dev.redlock.drill.FaultPlan.Kind;
import dev.redlock.drill.FaultPlan.Problem;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a fault plan: which masters the drill harms, how, when and for how long. One fault per
 * line, {@code #} starts a comment, blank lines are ignored; masters are numbered from 1 in the
 * order of {@code --nodes} (or of the local masters), times are relative to the start of the
 * workers:
 *
 * <pre>
 * at 10s pause master 2 for 5s                  # SIGSTOP, SIGCONT after 5 s (local only)
 * at 20s partition masters 1 and 2 for 10s      # unreachable: the master's proxy is disabled
 * at 25s blackhole master 4 for 3s              # connects, nothing gets through (timeout toxic)
 * at 30s latency 80ms on master 5 for 5s        # every reply 80 ms late (latency toxic)
 * at 40s kill master 3 and restart it after 2s  # SIGKILL; restarted empty 2 s later (local only)
 * </pre>
 *
 * <p>The grammar, case-insensitive, words separated by blanks:
 *
 * <pre>
 * line    = [ fault ] [ "#" comment ]
 * fault   = "at" time action
 * action  = ( "pause" | "partition" | "blackhole" ) masters [ "for" time ]
 *         | "latency" time [ "on" ] masters [ "for" time ]
 *         | "kill" masters [ "," ] [ "and" ] [ "restart" [ "it" | "them" ] "after" time ]
 * masters = ( "master" | "masters" ) index { ( "," | "and" ) index }
 * time    = number unit          e.g. 10s, 1.5 s, 500ms, 2m ("ms", "s" or "m"; blank optional)
 * </pre>
 *
 * A fault without {@code for} (or a kill without a restart) lasts until the end of the run. The
 * same plan may be given on the command line with {@code ;} between faults.
 *
 * <p>{@link #parse} checks the syntax and reports every line it cannot read as {@code "<source>
 * line N: reason"}; {@link FaultPlanCheck} then checks the plan against a run. Stateless.
 */
final class FaultPlanParser {

  private static final Pattern TOKEN =
      Pattern.compile("-?[0-9]+(?:\\.[0-9]+)?[a-z]*|[a-z]+|,|[^\\s,]+");
  private static final Pattern TIME = Pattern.compile("(-?[0-9]+(?:\\.[0-9]+)?)(ms|s|m)?");

  private FaultPlanParser() {}

  /** Lines of a plan that cannot be read, and the plan of the lines that could. */
  static final class PlanException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient List<Problem> problems;
    private final transient FaultPlan readable;

    PlanException(List<Problem> problems, FaultPlan readable) {
      super(String.join("\n", problems.stream().map(Problem::message).toList()));
      this.problems = List.copyOf(problems);
      this.readable = readable;
    }

    /** The lines that cannot be read, in order. */
    List<Problem> problems() {
      return problems;
    }

    /** The plan of the lines that could be read, so that they can be checked too. */
    FaultPlan readable() {
      return readable;
    }
  }

  /**
   * Parses a plan file: one fault per line.
   *
   * @param text the file's content
   * @param source the file's name, for messages ({@code "plan.txt line 3: ..."})
   * @return the plan, its faults in order of time
   * @throws PlanException listing every line that cannot be read
   */
  static FaultPlan parse(String text, String source) throws PlanException {
    requireNonNull(text, "text");
    requireNonNull(source, "source");
    return parse(List.of(text.split("\\R", -1)), source, "line");
  }

  /**
   * Parses a plan given on the command line: faults separated by {@code ;}, numbered from 1 in
   * messages ({@code "--faults fault 2: ..."}).
   *
   * @param text the faults
   * @param source the option, for messages
   * @return the plan, its faults in order of time
   * @throws PlanException listing every fault that cannot be read
   */
  static FaultPlan parseList(String text, String source) throws PlanException {
    requireNonNull(text, "text");
    requireNonNull(source, "source");
    return parse(List.of(text.split(";", -1)), source, "fault");
  }

  private static FaultPlan parse(List<String> lines, String source, String unit)
      throws PlanException {
    List<Fault> faults = new ArrayList<>();
    List<Problem> problems = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      int hash = line.indexOf('#');
      String body = (hash >= 0 ? line.substring(0, hash) : line).strip();
      if (body.isEmpty()) {
        continue;
      }
      try {
        faults.add(new LineParser(i + 1, body).fault());
      } catch (BadLine e) {
        problems.add(
            new Problem(i + 1, source + " " + unit + " " + (i + 1) + ": " + e.getMessage()));
      }
    }
    FaultPlan plan = new FaultPlan(source, unit, faults);
    if (!problems.isEmpty()) {
      throw new PlanException(problems, plan);
    }
    return plan;
  }

  /** A line the parser cannot read; the message says why. */
  private static final class BadLine extends Exception {
    private static final long serialVersionUID = 1L;

    BadLine(String message) {
      super(message);
    }
  }

  /** Reads one line (its comment removed) token by token. */
  private static final class LineParser {
    private final int line;
    private final String text;
    private final List<String> tokens = new ArrayList<>();
    private int next;

    LineParser(int line, String text) {
      this.line = line;
      this.text = text;
      Matcher m = TOKEN.matcher(text.toLowerCase(Locale.ROOT));
      while (m.find()) {
        tokens.add(m.group());
      }
    }

    Fault fault() throws BadLine {
      expect("at", "a fault begins with 'at <time>'");
      Duration at = time("the time after 'at'");
      String word =
          take("a fault after the time (" + Kind.words(false) + ", " + Kind.words(true) + ")");
      Kind kind =
          Kind.of(word)
              .orElseThrow(
                  () ->
                      new BadLine(
                          "unknown fault '"
                              + word
                              + "'; known: pause, partition, blackhole, latency, kill"));
      Duration latency = Duration.ZERO;
      if (kind == Kind.LATENCY) {
        latency = time("the latency after 'latency' (e.g. 'latency 80ms on master 2')");
        if (latency.isZero()) {
          throw new BadLine("the latency must be more than 0 ms");
        }
        skip("on");
      }
      List<Integer> masters = masters();
      Optional<Duration> length = Optional.empty();
      if (kind == Kind.KILL) {
        skip(",");
        skip("and");
        if (peek().equals("for")) {
          throw new BadLine("kill takes 'restart after <time>', not 'for'");
        }
        if (skip("restart")) {
          if (!skip("it")) {
            skip("them");
          }
          expect("after", "'restart' is followed by 'after <time>'");
          length = Optional.of(positive(time("the time after 'restart after'"), "restart after"));
        }
      } else if (skip("for")) {
        length = Optional.of(positive(time("the time after 'for'"), "for"));
      }
      if (next < tokens.size()) {
        throw new BadLine("unexpected '" + tokens.get(next) + "' after the fault");
      }
      return new Fault(line, at, kind, masters, length, latency, text);
    }

    private List<Integer> masters() throws BadLine {
      String word = take("'master N' or 'masters N and M'");
      if (!word.equals("master") && !word.equals("masters")) {
        throw new BadLine("expected 'master N' or 'masters N and M', found '" + word + "'");
      }
      LinkedHashSet<Integer> masters = new LinkedHashSet<>();
      masters.add(index());
      while ((peek().equals(",") || peek().equals("and")) && isNumber(peek(1))) {
        next++;
        int master = index();
        if (!masters.add(master)) {
          throw new BadLine("master " + master + " is named twice");
        }
      }
      List<Integer> sorted = new ArrayList<>(masters);
      sorted.sort(Comparator.naturalOrder());
      return sorted;
    }

    private int index() throws BadLine {
      String token = take("a master number");
      if (!token.matches("-?[0-9]+")) {
        throw new BadLine("'" + token + "' is not a master number (masters count from 1)");
      }
      try {
        return Integer.parseInt(token);
      } catch (NumberFormatException e) {
        throw new BadLine("'" + token + "' is not a master number (masters count from 1)");
      }
    }

    private Duration time(String what) throws BadLine {
      String token = take(what);
      Matcher m = TIME.matcher(token);
      if (!m.matches()) {
        throw new BadLine("expected " + what + ", found '" + token + "'");
      }
      String unit = m.group(2);
      String shown = token;
      if (unit == null && (peek().equals("ms") || peek().equals("s") || peek().equals("m"))) {
        unit = tokens.get(next++);
        shown = token + " " + unit;
      }
      if (unit == null) {
        throw new BadLine("time '" + token + "' needs a unit: ms, s or m (e.g. " + token + "s)");
      }
      BigDecimal number = new BigDecimal(m.group(1));
      if (number.signum() < 0) {
        throw new BadLine("negative time '" + shown + "'");
      }
      BigDecimal millis =
          switch (unit) {
            case "ms" -> number;
            case "s" -> number.movePointRight(3);
            default -> number.multiply(BigDecimal.valueOf(60_000));
          };
      try {
        return Duration.ofNanos(millis.movePointRight(6).longValueExact());
      } catch (ArithmeticException e) {
        throw new BadLine("time " + token + " is not a whole number of nanoseconds, or too long");
      }
    }

    private static Duration positive(Duration d, String what) throws BadLine {
      if (d.isZero()) {
        throw new BadLine("'" + what + "' needs a time above 0");
      }
      return d;
    }

    private String take(String what) throws BadLine {
      if (next >= tokens.size()) {
        throw new BadLine("the line ends where " + what + " should be: '" + text + "'");
      }
      return tokens.get(next++);
    }

    private void expect(String word, String why) throws BadLine {
      String token = next < tokens.size() ? tokens.get(next) : "";
      if (!token.equals(word)) {
        throw new BadLine(why + (token.isEmpty() ? "" : ", found '" + token + "'"));
      }
      next++;
    }

    private boolean skip(String word) {
      if (peek().equals(word)) {
        next++;
        return true;
      }
      return false;
    }

    private String peek() {
      return peek(0);
    }

    private String peek(int ahead) {
      int i = next + ahead;
      return i < tokens.size() ? tokens.get(i) : "";
    }

    private static boolean isNumber(String token) {
      return token.matches("-?[0-9]+");
    }
  }
}
