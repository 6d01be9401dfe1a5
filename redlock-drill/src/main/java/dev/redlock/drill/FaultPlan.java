package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A fault plan: which masters the drill harms, how, when and for how long. One fault per line,
 * {@code #} starts a comment, blank lines are ignored; masters are numbered from 1 in the order of
 * {@code --nodes} (or of the local masters), times are relative to the start of the workers:
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
 * <p>{@link #parse} checks the syntax; {@link #check} checks the plan against a run (number of
 * masters, duration, local or remote masters, the quorum). Both report every problem as {@code
 * "<source> line N: reason"} before anything runs. Immutable.
 */
final class FaultPlan {

  /** What a fault does to a master. */
  enum Kind {
    /** SIGSTOP, then SIGCONT: the process keeps its sockets but answers nothing. */
    PAUSE("pause", false),
    /** The master's proxy is disabled: its connections are closed and new ones refused. */
    PARTITION("partition", true),
    /** Timeout toxics both ways: connections open, but nothing gets through. */
    BLACKHOLE("blackhole", true),
    /** A latency toxic on the replies. */
    LATENCY("latency", true),
    /** SIGKILL, then (optionally) a restart on the same port, with an empty dataset. */
    KILL("kill", false);

    private final String word;
    private final boolean network;

    Kind(String word, boolean network) {
      this.word = word;
      this.network = network;
    }

    /** The word a plan uses. */
    String word() {
      return word;
    }

    /** Whether the fault is made in the network (a proxy) rather than on the process. */
    boolean network() {
      return network;
    }

    static Optional<Kind> of(String word) {
      for (Kind kind : values()) {
        if (kind.word.equals(word)) {
          return Optional.of(kind);
        }
      }
      return Optional.empty();
    }

    static String words(boolean network) {
      List<String> words = new ArrayList<>();
      for (Kind kind : values()) {
        if (kind.network == network) {
          words.add(kind.word);
        }
      }
      return String.join(", ", words);
    }
  }

  /**
   * One line of a plan.
   *
   * @param line the line number in its source, from 1
   * @param at when the fault begins, from the start of the workers
   * @param kind what it does
   * @param masters the masters it harms, numbered from 1, ascending
   * @param length how long it lasts (for a kill: until the restart); empty: until the end of the
   *     run
   * @param latency the added latency of a {@link Kind#LATENCY} fault; zero for the others
   * @param text the line as written, without its comment
   */
  record Fault(
      int line,
      Duration at,
      Kind kind,
      List<Integer> masters,
      Optional<Duration> length,
      Duration latency,
      String text) {

    Fault {
      requireNonNull(at, "at");
      requireNonNull(kind, "kind");
      masters = List.copyOf(masters);
      requireNonNull(length, "length");
      requireNonNull(latency, "latency");
      requireNonNull(text, "text");
    }

    /** When the fault ends in a run of {@code runLength}: its own end, or the end of the run. */
    Duration end(Duration runLength) {
      Duration end = length.map(at::plus).orElse(runLength);
      return end.compareTo(runLength) < 0 ? end : runLength;
    }

    /** Whether it lasts until the end of the run. */
    boolean open() {
      return length.isEmpty();
    }

    /** A short description for reports: {@code "pause master 2"}, {@code "latency 80 ms ..."}. */
    String summary() {
      String who = (masters.size() == 1 ? "master " : "masters ") + joinAnd(masters);
      return switch (kind) {
        case LATENCY -> "latency " + latency.toMillis() + " ms on " + who;
        case KILL ->
            "kill " + who + length.map(d -> ", restart after " + format(d)).orElse(" (no restart)");
        default -> kind.word() + " " + who;
      };
    }
  }

  /**
   * One thing wrong with a plan.
   *
   * @param line the line (or fault) it is about
   * @param message the whole message, {@code "<source> line N: reason"}
   */
  record Problem(int line, String message) {
    Problem {
      requireNonNull(message, "message");
    }
  }

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

  /** Every problem's message, ordered by line (stable). */
  static List<String> messages(List<Problem> problems) {
    List<Problem> sorted = new ArrayList<>(problems);
    sorted.sort(Comparator.comparingInt(Problem::line));
    return sorted.stream().map(Problem::message).toList();
  }

  /** A plan with no faults: the drill as it always was. */
  static final FaultPlan NONE = new FaultPlan("no plan", "line", List.of());

  private static final Pattern TOKEN =
      Pattern.compile("-?[0-9]+(?:\\.[0-9]+)?[a-z]*|[a-z]+|,|[^\\s,]+");
  private static final Pattern TIME = Pattern.compile("(-?[0-9]+(?:\\.[0-9]+)?)(ms|s|m)?");

  private final String source;
  private final String unit;
  private final List<Fault> faults;

  private FaultPlan(String source, String unit, List<Fault> faults) {
    this.source = source;
    this.unit = unit;
    List<Fault> sorted = new ArrayList<>(faults);
    sorted.sort(Comparator.comparing(Fault::at).thenComparingInt(Fault::line));
    this.faults = List.copyOf(sorted);
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

  /** Where a fault is in the plan, for messages: {@code "plan.txt line 3"}. */
  String where(Fault fault) {
    return source + " " + unit + " " + fault.line();
  }

  /** What the plan numbers: {@code "line"} for a file, {@code "fault"} on the command line. */
  String unit() {
    return unit;
  }

  /** Where the plan came from: a file name, {@code "--faults"}, or {@code "no plan"}. */
  String source() {
    return source;
  }

  /** The faults, in order of time (then of line). */
  List<Fault> faults() {
    return faults;
  }

  boolean isEmpty() {
    return faults.isEmpty();
  }

  /** Whether some fault is made in the network, so the masters need proxies. */
  boolean hasNetworkFaults() {
    return faults.stream().anyMatch(f -> f.kind().network());
  }

  /** The masters a kill leaves to restart empty, from 1, ascending. */
  Set<Integer> killedMasters() {
    return faults.stream()
        .filter(f -> f.kind() == Kind.KILL)
        .flatMap(f -> f.masters().stream())
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /** When the last fault with a length ends (zero for an empty plan). */
  Duration lastEnd() {
    Duration last = Duration.ZERO;
    for (Fault fault : faults) {
      Duration end = fault.length().map(fault.at()::plus).orElse(fault.at());
      if (end.compareTo(last) > 0) {
        last = end;
      }
    }
    return last;
  }

  /**
   * The most masters faulted at one instant of a run of {@code runLength} (every kind counts).
   *
   * @param runLength how long the run lasts
   * @return the largest number of masters under some fault at once
   */
  int mostFaultedAtOnce(Duration runLength) {
    int most = 0;
    for (Fault fault : faults) {
      most = Math.max(most, faultedAt(fault.at(), runLength).size());
    }
    return most;
  }

  /**
   * The intervals in which more than a minority of {@code masters} is faulted: where a quorum would
   * need a faulted master.
   */
  List<Interval> breakingIntervals(int masters, Duration runLength) {
    int minority = masters - quorum(masters);
    TreeSet<Duration> instants = new TreeSet<>();
    for (Fault fault : faults) {
      instants.add(fault.at());
      instants.add(fault.end(runLength));
    }
    List<Interval> intervals = new ArrayList<>();
    Duration openSince = null;
    for (Duration instant : instants) {
      boolean breaking = faultedAt(instant, runLength).size() > minority;
      if (breaking && openSince == null) {
        openSince = instant;
      } else if (!breaking && openSince != null) {
        intervals.add(new Interval(openSince, instant));
        openSince = null;
      }
    }
    if (openSince != null) {
      intervals.add(new Interval(openSince, runLength));
    }
    return intervals;
  }

  /** An interval of a run, {@code [from, to)}. */
  record Interval(Duration from, Duration to) {}

  /**
   * Checks the plan against a run, before anything runs: every master exists, every fault begins
   * before the end, process faults only on local masters, one fault at a time per master, and
   * (unless {@code allowBreaking}) never more than a minority of the masters faulted at once.
   *
   * @param masters how many masters the run has
   * @param runLength how long the workers run
   * @param local whether the masters are local processes (else only network faults work)
   * @param allowBreaking whether more than a minority may be faulted at once
   * @return the problems; empty if the plan fits the run
   */
  List<Problem> check(int masters, Duration runLength, boolean local, boolean allowBreaking) {
    List<Problem> problems = new ArrayList<>();
    for (Fault fault : faults) {
      String where = where(fault) + ": ";
      for (int master : fault.masters()) {
        if (master < 1 || master > masters) {
          problems.add(
              problem(
                  fault,
                  where
                      + "no master "
                      + master
                      + ": the drill has "
                      + masters
                      + (masters == 1 ? " master (1)" : " masters (1 to " + masters + ")")));
        }
      }
      if (fault.at().compareTo(runLength) >= 0) {
        problems.add(
            problem(
                fault,
                where
                    + "begins at "
                    + format(fault.at())
                    + ", but the workers run for "
                    + format(runLength)
                    + " (--duration)"));
      }
      if (!local && !fault.kind().network()) {
        problems.add(
            problem(
                fault,
                where
                    + fault.kind().word()
                    + " needs a local redis-server process; with --toxiproxy only network faults"
                    + " work ("
                    + Kind.words(true)
                    + ")"));
      }
    }
    problems.addAll(overlapsOnOneMaster(runLength));
    if (!allowBreaking) {
      problems.addAll(breaking(masters, runLength));
    }
    return problems;
  }

  private static Problem problem(Fault fault, String message) {
    return new Problem(fault.line(), message);
  }

  private List<Problem> overlapsOnOneMaster(Duration runLength) {
    List<Problem> problems = new ArrayList<>();
    for (int i = 0; i < faults.size(); i++) {
      Fault later = faults.get(i);
      for (int j = 0; j < i; j++) {
        Fault earlier = faults.get(j);
        if (earlier.end(runLength).compareTo(later.at()) <= 0) {
          continue;
        }
        for (int master : later.masters()) {
          if (earlier.masters().contains(master)) {
            problems.add(
                problem(
                    later,
                    where(later)
                        + ": master "
                        + master
                        + " is already faulted from "
                        + format(earlier.at())
                        + (earlier.open()
                            ? " to the end of the run"
                            : " to " + format(earlier.end(runLength)))
                        + " ("
                        + unit
                        + " "
                        + earlier.line()
                        + "); one fault per master at a time"));
          }
        }
      }
    }
    return problems;
  }

  /** One problem per fault that, when it begins, takes the faulted masters past a minority. */
  private List<Problem> breaking(int masters, Duration runLength) {
    int quorum = quorum(masters);
    int minority = masters - quorum;
    List<Problem> problems = new ArrayList<>();
    for (Fault fault : faults) {
      List<Fault> active = activeAt(fault.at(), runLength);
      Set<Integer> faulted = new TreeSet<>();
      active.forEach(f -> faulted.addAll(f.masters()));
      Set<Integer> others = new TreeSet<>();
      active.stream().filter(f -> f != fault).forEach(f -> others.addAll(f.masters()));
      boolean addsMaster = !others.containsAll(fault.masters());
      if (faulted.size() > minority && active.contains(fault) && addsMaster) {
        Set<Integer> lines = new TreeSet<>();
        active.forEach(f -> lines.add(f.line()));
        problems.add(
            problem(
                fault,
                String.format(
                    Locale.ROOT,
                    "%s: from %s, masters %s are faulted at once (%s %s): more than a"
                        + " minority of %d (at most %d, so that a quorum of %d never needs a faulted"
                        + " master); pass --allow-breaking to run it anyway",
                    where(fault),
                    format(fault.at()),
                    joinAnd(faulted),
                    lines.size() == 1 ? unit : unit + "s",
                    joinAnd(lines),
                    masters,
                    minority,
                    quorum)));
      }
    }
    return problems;
  }

  /** The masters under some fault at {@code instant} (faults are {@code [at, end)}). */
  private Set<Integer> faultedAt(Duration instant, Duration runLength) {
    Set<Integer> faulted = new TreeSet<>();
    for (Fault fault : activeAt(instant, runLength)) {
      faulted.addAll(fault.masters());
    }
    return faulted;
  }

  private List<Fault> activeAt(Duration instant, Duration runLength) {
    List<Fault> active = new ArrayList<>();
    for (Fault fault : faults) {
      if (fault.at().compareTo(instant) <= 0 && instant.compareTo(fault.end(runLength)) < 0) {
        active.add(fault);
      }
    }
    return active;
  }

  static int quorum(int masters) {
    return masters / 2 + 1;
  }

  /** Formats a plan time: {@code "10 s"}, {@code "1.5 s"}, {@code "0.25 s"}. */
  static String format(Duration d) {
    return BigDecimal.valueOf(d.toMillis()).movePointLeft(3).stripTrailingZeros().toPlainString()
        + " s";
  }

  /** {@code "1"}, {@code "1 and 2"}, {@code "1, 2 and 3"}. */
  static String joinAnd(Iterable<Integer> numbers) {
    List<String> items = new ArrayList<>();
    numbers.forEach(n -> items.add(Integer.toString(n)));
    if (items.size() <= 1) {
      return String.join("", items);
    }
    return String.join(", ", items.subList(0, items.size() - 1))
        + " and "
        + items.get(items.size() - 1);
  }

  @Override
  public String toString() {
    return "FaultPlan{" + source + ", " + faults.size() + " faults}";
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
