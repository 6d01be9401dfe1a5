package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * A fault plan: which masters the drill harms, how, when and for how long, in order of time. Made
 * by {@link FaultPlanParser} from a file or the command line, checked against a run by {@link
 * FaultPlanCheck}, run by {@link FaultSchedule}. Besides the faults it answers the questions of
 * timing the others ask: when a fault ends in a run of a given length, which faults are active at
 * an instant, when more than a minority of the masters is faulted. Immutable.
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

  /** Every problem's message, ordered by line (stable). */
  static List<String> messages(List<Problem> problems) {
    List<Problem> sorted = new ArrayList<>(problems);
    sorted.sort(Comparator.comparingInt(Problem::line));
    return sorted.stream().map(Problem::message).toList();
  }

  /** A plan with no faults: the drill as it always was. */
  static final FaultPlan NONE = new FaultPlan("no plan", "line", List.of());

  private final String source;
  private final String unit;
  private final List<Fault> faults;

  FaultPlan(String source, String unit, List<Fault> faults) {
    this.source = source;
    this.unit = unit;
    List<Fault> sorted = new ArrayList<>(faults);
    sorted.sort(Comparator.comparing(Fault::at).thenComparingInt(Fault::line));
    this.faults = List.copyOf(sorted);
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

  /** The masters under some fault at {@code instant} (faults are {@code [at, end)}). */
  Set<Integer> faultedAt(Duration instant, Duration runLength) {
    Set<Integer> faulted = new TreeSet<>();
    for (Fault fault : activeAt(instant, runLength)) {
      faulted.addAll(fault.masters());
    }
    return faulted;
  }

  /** The faults active at {@code instant} (faults are {@code [at, end)}). */
  List<Fault> activeAt(Duration instant, Duration runLength) {
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
}
