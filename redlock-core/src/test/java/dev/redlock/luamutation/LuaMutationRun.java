package dev.redlock.luamutation;

import dev.redlock.luamutation.LuaMutants.Mutant;
import dev.redlock.luamutation.LuaMutants.Operator;
import dev.redlock.testkit.RedisAdmin;
import dev.redlock.testkit.RedisProcess;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Mutation testing of the library's Lua scripts: makes each script's mutants ({@link LuaMutants}),
 * and runs the real-Redis tests that cover the script against each, in a JVM of its own whose class
 * path starts with a directory holding the mutant where the script's resource is; the library loads
 * it from there as it would the real one, so no production code knows of this. A mutant is killed
 * when a covering test fails, or when its tests outrun the time limit (a hung mutant). Writes
 * {@code report.md} to the output directory.
 *
 * <p>The covering tests of {@code name.lua}: {@code dev.redlock.internal.transport.NameScriptIT}
 * (the script's contract on Redis), then the classes listed for it in {@code covering.properties}.
 * A class that does not exist is reported and left out. Each script's tests first run against the
 * unmutated script: if they fail there, its mutants are not run (they would all look killed).
 *
 * <p>System properties: {@code luamutation.scripts} (names, comma-separated; default all), {@code
 * luamutation.sample} (n: run only n mutants of each operator on each script, evenly spaced, none
 * of the known survivors of {@code survivors.tsv}; 0, the default, runs all), {@code
 * luamutation.out} (default {@code target/lua-mutation}), {@code luamutation.mutants} (a regular
 * expression: run only the mutants whose description, as the report's progress lines write it, it
 * finds), {@code luamutation.threshold} (the least percentage of mutants killed, of those run and
 * valid, below which it exits 1; default 0), {@code luamutation.strict} (exits 1 on a survivor
 * {@code survivors.tsv} does not explain, a script whose tests fail unmutated, or a missing
 * covering class: what CI runs with), {@code luamutation.threads} (how many of a script's mutants
 * run at once; default one per processor).
 */
final class LuaMutationRun {

  private static final String PACKAGE = "dev/redlock/internal/transport/";
  private static final String CONTRACT_PACKAGE = "dev.redlock.internal.transport.";

  /** Each script's tests' own time, times this, plus {@link #TIMEOUT_SLACK_SECONDS}. */
  private static final int TIMEOUT_FACTOR = 3;

  /**
   * How many mutants of a script run at once ({@code luamutation.threads}; default one per
   * processor).
   */
  private static final int THREADS =
      Math.max(
          1, Integer.getInteger("luamutation.threads", Runtime.getRuntime().availableProcessors()));

  /**
   * Whether a kill is confirmed by running the killing class again ({@code luamutation.confirm}).
   */
  private static final boolean CONFIRM =
      Boolean.parseBoolean(System.getProperty("luamutation.confirm", "true"));

  private static final String FLAKY = "a test failed once: ";

  /** How many times the tests run on the unmutated script before it counts as red. */
  private static final int BASELINE_ATTEMPTS = 3;

  /** A JVM's start, the redis-servers' start, and a loaded machine's pauses. */
  private static final int TIMEOUT_SLACK_SECONDS = 30;

  enum Outcome {
    KILLED,
    TIMED_OUT,
    SURVIVED,
    INVALID,
    ERROR
  }

  record Result(Mutant mutant, Outcome outcome, String detail, long millis) {}

  private LuaMutationRun() {}

  public static void main(String[] args) throws Exception {
    Path out = Path.of(System.getProperty("luamutation.out", "target/lua-mutation"));
    int sample = Integer.getInteger("luamutation.sample", 0);
    int threshold = Integer.getInteger("luamutation.threshold", 0);
    String only = System.getProperty("luamutation.scripts", "").trim();
    Files.createDirectories(out);
    Properties covering = resource("covering.properties");

    List<String> scripts = new ArrayList<>();
    List<String> asked = only.isEmpty() ? List.of() : List.of(only.split("\\s*,\\s*"));
    for (String script : scriptNames()) {
      String name = script.substring(0, script.length() - ".lua".length());
      if (asked.isEmpty() || asked.contains(name) || asked.contains(script)) {
        scripts.add(script);
      }
    }
    if (scripts.isEmpty()) {
      throw new IllegalArgumentException("no script is named " + only + ": " + scriptNames());
    }
    long started = System.nanoTime();
    Report report = new Report(sample);
    report.explained.putAll(explanations());
    try (RedisProcess redis = RedisProcess.start();
        RedisAdmin admin = redis.admin()) {
      for (String script : scripts) {
        runScript(script, covering, admin, sample, out, report);
      }
    }
    report.elapsedSeconds = (System.nanoTime() - started) / 1_000_000_000L;
    String text = report.markdown();
    Files.writeString(out.resolve("report.md"), text, StandardCharsets.UTF_8);
    System.out.println(text);
    System.out.println("Report: " + out.resolve("report.md").toAbsolutePath());
    if (report.score() < threshold) {
      System.out.printf(
          Locale.ROOT, "%.1f%% killed, below the threshold %d%%%n", report.score(), threshold);
      System.exit(1);
    }
    if (Boolean.getBoolean("luamutation.strict")) {
      List<String> problems = report.problems();
      if (!problems.isEmpty()) {
        System.out.println("luamutation.strict: " + String.join("; ", problems));
        System.exit(1);
      }
    }
  }

  private static void runScript(
      String script, Properties covering, RedisAdmin admin, int sample, Path out, Report report)
      throws IOException, InterruptedException {
    String name = script.substring(0, script.length() - ".lua".length());
    String text = new String(readResource(PACKAGE + script), StandardCharsets.UTF_8);
    ScriptReport sr = report.script(script);
    List<String> tests = new ArrayList<>();
    List<String> wanted = new ArrayList<>();
    wanted.add(CONTRACT_PACKAGE + testName(name) + "ScriptIT");
    for (String extra : covering.getProperty(name, "").split(",")) {
      if (!extra.isBlank()) {
        wanted.add(extra.trim());
      }
    }
    for (String test : wanted) {
      try {
        Class.forName(test, false, LuaMutationRun.class.getClassLoader());
        tests.add(test);
      } catch (ClassNotFoundException e) {
        sr.missing.add(test);
      }
    }
    sr.tests.addAll(tests);
    List<Mutant> mutants = LuaMutants.of(script, text);
    sr.generated = mutants.size();
    if (sample > 0) {
      mutants = sample(mutants, sample, report.explained.keySet());
    }
    String pick = System.getProperty("luamutation.mutants", "");
    if (!pick.isEmpty()) {
      java.util.regex.Pattern p = java.util.regex.Pattern.compile(pick);
      mutants = mutants.stream().filter(m -> p.matcher(m.toString()).find()).toList();
    }
    if (tests.isEmpty()) {
      sr.notRun = "no covering test class exists";
      for (Mutant m : mutants) {
        sr.unrun.add(m);
      }
      return;
    }
    Path work = out.resolve("work").resolve(name);
    // The unmutated script, through the same path: its tests must pass, and they time the mutants.
    // A test that flakes on a loaded machine gets two more chances here (and none on a mutant).
    Result baseline = null;
    for (int attempt = 1; attempt <= BASELINE_ATTEMPTS; attempt++) {
      baseline =
          run(new Mutant(script, null, 0, "none", "", text), tests, work.resolve("baseline"), 0);
      if (baseline.outcome == Outcome.SURVIVED) {
        break;
      }
      sr.baselineFailures.add(baseline.detail);
    }
    sr.baselineMillis = baseline.millis;
    if (baseline.outcome != Outcome.SURVIVED) {
      sr.notRun = "the tests fail on the unmutated script: " + baseline.detail;
      sr.unrun.addAll(mutants);
      return;
    }
    long timeoutSeconds = TIMEOUT_FACTOR * baseline.millis / 1000 + TIMEOUT_SLACK_SECONDS;
    sr.timeoutSeconds = timeoutSeconds;
    // The mutants run side by side (each in a JVM with its own redis-servers, on ports the testkit
    // reserves), their results printed in order; the baseline above ran alone, and its time with
    // TIMEOUT_FACTOR and the slack bounds each.
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(THREADS);
    try {
      List<java.util.concurrent.Future<Result>> running = new ArrayList<>();
      int i = 0;
      for (Mutant m : mutants) {
        i++;
        String invalid = loadError(admin, m.text());
        Path dir = work.resolve("m" + i);
        running.add(
            pool.submit(
                () -> {
                  if (invalid != null) {
                    return new Result(m, Outcome.INVALID, invalid, 0);
                  }
                  Result r = run(m, tests, dir, timeoutSeconds);
                  if (r.outcome == Outcome.KILLED && CONFIRM) {
                    r =
                        confirm(
                            r,
                            tests,
                            dir.resolveSibling(dir.getFileName() + "-again"),
                            timeoutSeconds);
                  }
                  return r;
                }));
      }
      for (int k = 0; k < running.size(); k++) {
        Result r;
        try {
          r = running.get(k).get();
        } catch (java.util.concurrent.ExecutionException e) {
          if (e.getCause() instanceof IOException io) {
            throw io;
          }
          if (e.getCause() instanceof InterruptedException interrupted) {
            throw interrupted;
          }
          throw new IllegalStateException(e.getCause());
        }
        System.out.printf(
            Locale.ROOT,
            "[%s %d/%d] %s: %s %s%n",
            script,
            k + 1,
            mutants.size(),
            r.mutant,
            r.outcome,
            r.outcome == Outcome.SURVIVED ? "" : r.detail);
        sr.results.add(r);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Runs the class whose test killed the mutant once more, alone: a test that fails on a busy
   * machine now and then would otherwise count as a kill. If it passes, the mutant survived (the
   * first failure is kept in the detail).
   */
  private static Result confirm(Result killed, List<String> tests, Path dir, long timeoutSeconds)
      throws IOException, InterruptedException {
    String failed = killed.detail.substring(0, Math.max(0, killed.detail.indexOf(':')));
    String simpleName = failed.contains(".") ? failed.substring(0, failed.indexOf('.')) : failed;
    List<String> killer =
        tests.stream().filter(t -> t.endsWith("." + simpleName)).limit(1).toList();
    Result again = run(killed.mutant, killer.isEmpty() ? tests : killer, dir, timeoutSeconds);
    if (again.outcome == Outcome.SURVIVED) {
      return new Result(
          killed.mutant,
          Outcome.SURVIVED,
          FLAKY + Report.abbreviate(killed.detail) + "; passed when run again",
          killed.millis + again.millis);
    }
    return new Result(
        killed.mutant,
        again.outcome == Outcome.TIMED_OUT ? Outcome.TIMED_OUT : Outcome.KILLED,
        killed.detail,
        killed.millis + again.millis);
  }

  /**
   * The test class name of a script: {@code keyset} is {@code KeySet}, {@code fence} {@code Fence}.
   */
  static String testName(String name) {
    return switch (name) {
      case "keyset" -> "KeySet";
      default -> Character.toUpperCase(name.charAt(0)) + name.substring(1);
    };
  }

  /**
   * {@code n} mutants of each operator, evenly spaced among that operator's, in order; a known
   * survivor ({@code explained}: in {@code survivors.tsv}, keyed as {@link Mutant#key()}) is never
   * chosen, since running it tells nothing new (and, surviving, it runs every covering test: half a
   * minute of CI's sample). An edit of its line or of its change makes it unexplained, and it can
   * be chosen again.
   */
  static List<Mutant> sample(List<Mutant> mutants, int n, java.util.Set<String> explained) {
    Map<Operator, List<Mutant>> byOperator = new EnumMap<>(Operator.class);
    for (Mutant m : mutants) {
      if (explained.contains(m.key())) {
        continue;
      }
      byOperator.computeIfAbsent(m.operator(), o -> new ArrayList<>()).add(m);
    }
    List<Mutant> chosen = new ArrayList<>();
    for (List<Mutant> list : byOperator.values()) {
      int take = Math.min(n, list.size());
      for (int k = 0; k < take; k++) {
        chosen.add(list.get(k * list.size() / take));
      }
    }
    return chosen;
  }

  /** Redis's error on loading the script, or null if it compiles. */
  private static String loadError(RedisAdmin admin, String text) {
    try {
      admin.command("SCRIPT", "LOAD", text);
      return null;
    } catch (RuntimeException e) {
      return String.valueOf(e.getMessage()).replaceAll("\\s+", " ");
    }
  }

  /**
   * Runs {@code tests} in a new JVM whose class path starts with {@code dir}, which holds the
   * mutant as the script's resource. {@code timeoutSeconds} 0: no limit.
   */
  private static Result run(Mutant m, List<String> tests, Path dir, long timeoutSeconds)
      throws IOException, InterruptedException {
    Path resource = dir.resolve("classes").resolve(PACKAGE + m.script());
    Files.createDirectories(resource.getParent());
    Files.writeString(resource, m.text(), StandardCharsets.UTF_8);
    Path verdict = dir.resolve("verdict.txt");
    Files.deleteIfExists(verdict);
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    // A short-lived JVM: the client compiler alone starts and warms up sooner on 2 cores.
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-cp");
    command.add(
        dir.resolve("classes") + File.pathSeparator + System.getProperty("java.class.path"));
    command.add(MutantTests.class.getName());
    command.add(verdict.toString());
    command.addAll(tests);
    Path log = dir.resolve("tests.log");
    long start = System.nanoTime();
    Process p =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    boolean ended =
        timeoutSeconds == 0 ? p.waitFor() >= 0 : p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
    long millis = (System.nanoTime() - start) / 1_000_000L;
    if (!ended) {
      // Its redis-servers first: killed at once, the JVM runs no shutdown hook to stop them.
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor();
      return new Result(
          m,
          Outcome.TIMED_OUT,
          "the tests ran over " + timeoutSeconds + " s (log: " + log + ")",
          millis);
    }
    String said =
        Files.exists(verdict) ? Files.readString(verdict, StandardCharsets.UTF_8) : "no verdict";
    if (p.exitValue() == 0 && said.startsWith("passed")) {
      return new Result(m, Outcome.SURVIVED, said, millis);
    }
    if (p.exitValue() == 1 && said.startsWith("failed")) {
      return new Result(m, Outcome.KILLED, said.substring("failed ".length()), millis);
    }
    return new Result(
        m, Outcome.ERROR, "exit " + p.exitValue() + ", " + said + " (log: " + log + ")", millis);
  }

  /** The scripts next to LuaScript in the main classes, by name. */
  private static List<String> scriptNames() throws IOException, URISyntaxException {
    URL url = LuaMutationRun.class.getClassLoader().getResource(PACKAGE + "release.lua");
    if (url == null || !url.getProtocol().equals("file")) {
      throw new IllegalStateException("the scripts are not in a directory: " + url);
    }
    try (Stream<Path> files = Files.list(Path.of(url.toURI()).getParent())) {
      return files
          .map(f -> f.getFileName().toString())
          .filter(f -> f.endsWith(".lua"))
          .sorted()
          .toList();
    }
  }

  private static byte[] readResource(String path) throws IOException {
    try (InputStream in = LuaMutationRun.class.getClassLoader().getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + path);
      }
      return in.readAllBytes();
    }
  }

  private static Properties resource(String name) throws IOException {
    Properties p = new Properties();
    try (InputStream in = LuaMutationRun.class.getResourceAsStream(name)) {
      if (in != null) {
        p.load(in);
      }
    }
    return p;
  }

  /**
   * Why each known survivor survives, from {@code survivors.tsv}: lines of script, operator, the
   * original line (trimmed), the change, and the reason, separated by tabs; {@code #} starts a
   * comment.
   */
  private static Map<String, String> explanations() throws IOException {
    Map<String, String> reasons = new LinkedHashMap<>();
    try (InputStream in = LuaMutationRun.class.getResourceAsStream("survivors.tsv")) {
      if (in == null) {
        return reasons;
      }
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (line.isBlank() || line.startsWith("#")) {
          continue;
        }
        String[] f = line.split("\t");
        if (f.length != 5) {
          throw new IllegalStateException("survivors.tsv: not 5 tab-separated fields: " + line);
        }
        reasons.put(f[0] + "\t" + f[1] + "\t" + f[2] + "\t" + f[3], f[4]);
      }
    }
    return reasons;
  }

  /** One script's part of the report. */
  static final class ScriptReport {
    final String script;
    final List<String> tests = new ArrayList<>();
    final List<String> missing = new ArrayList<>();
    final List<String> baselineFailures = new ArrayList<>();
    final List<Result> results = new ArrayList<>();
    final List<Mutant> unrun = new ArrayList<>();
    int generated;
    String notRun;
    long baselineMillis;
    long timeoutSeconds;

    ScriptReport(String script) {
      this.script = script;
    }

    long count(Outcome o) {
      return results.stream().filter(r -> r.outcome == o).count();
    }
  }

  /** The whole report. */
  static final class Report {
    final int sample;

    /** Read when the report is written, so that reasons added during a long run count. */
    final Map<String, String> explained = new LinkedHashMap<>();

    final Map<String, ScriptReport> scripts = new TreeMap<>();
    long elapsedSeconds;

    Report(int sample) {
      this.sample = sample;
    }

    ScriptReport script(String script) {
      return scripts.computeIfAbsent(script, ScriptReport::new);
    }

    List<Result> all() {
      return scripts.values().stream().flatMap(s -> s.results.stream()).toList();
    }

    /**
     * What {@code luamutation.strict} (CI) fails on: a survivor nobody has explained in {@code
     * survivors.tsv} (a branch newly unguarded, or a script changed under its survivors), a script
     * whose tests failed on the unmutated script (its mutants were not run, so it would pass
     * vacuously), and a covering test class that does not exist.
     */
    List<String> problems() {
      List<String> problems = new ArrayList<>();
      for (ScriptReport s : scripts.values()) {
        if (s.notRun != null) {
          problems.add(s.script + " not run: " + s.notRun);
        }
        if (!s.missing.isEmpty()) {
          problems.add(s.script + ": missing test classes " + s.missing);
        }
        for (Result r : s.results) {
          if (r.outcome == Outcome.SURVIVED && !explained.containsKey(r.mutant.key())) {
            problems.add("unexplained survivor " + r.mutant.key());
          }
        }
      }
      return problems;
    }

    /** Killed (a test failed, or ran over its time) of the valid mutants run, in percent. */
    double score() {
      long killed = all().stream().filter(r -> killed(r.outcome)).count();
      long counted = killed + all().stream().filter(r -> r.outcome == Outcome.SURVIVED).count();
      return counted == 0 ? 100 : 100.0 * killed / counted;
    }

    static boolean killed(Outcome o) {
      return o == Outcome.KILLED || o == Outcome.TIMED_OUT;
    }

    String markdown() {
      StringBuilder b = new StringBuilder();
      b.append("# Lua mutation report\n\n");
      b.append(
          sample == 0
              ? "All mutants.\n"
              : "A sample: at most "
                  + sample
                  + " mutant(s) of each operator on each script, none of the known survivors"
                  + " (survivors.tsv).\n");
      b.append(
          String.format(
              Locale.ROOT,
              "%nKilled %.1f%% of the valid mutants run (killed, including by time limit, of"
                  + " killed + survived); %d s in all.%n%n",
              score(),
              elapsedSeconds));
      b.append(
          "| script | mutants | run | killed | by time limit | survived | (explained) | invalid |"
              + " error | not run | score |\n");
      b.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
      for (ScriptReport s : scripts.values()) {
        long killed = s.count(Outcome.KILLED) + s.count(Outcome.TIMED_OUT);
        long survived = s.count(Outcome.SURVIVED);
        long explainedCount =
            s.results.stream()
                .filter(r -> r.outcome == Outcome.SURVIVED && explained.containsKey(r.mutant.key()))
                .count();
        b.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s |%n",
                s.script,
                s.generated,
                s.results.size(),
                killed,
                s.count(Outcome.TIMED_OUT),
                survived,
                explainedCount,
                s.count(Outcome.INVALID),
                s.count(Outcome.ERROR),
                s.unrun.size(),
                killed + survived == 0
                    ? "-"
                    : String.format(Locale.ROOT, "%.0f%%", 100.0 * killed / (killed + survived))));
      }
      b.append("\n## Per operator\n\n| operator | run | killed | survived | invalid | error |\n");
      b.append("|---|---|---|---|---|---|\n");
      for (Operator o : Operator.values()) {
        List<Result> rs = all().stream().filter(r -> r.mutant.operator() == o).toList();
        b.append(
            String.format(
                Locale.ROOT,
                "| %s | %d | %d | %d | %d | %d |%n",
                o,
                rs.size(),
                rs.stream().filter(r -> killed(r.outcome)).count(),
                rs.stream().filter(r -> r.outcome == Outcome.SURVIVED).count(),
                rs.stream().filter(r -> r.outcome == Outcome.INVALID).count(),
                rs.stream().filter(r -> r.outcome == Outcome.ERROR).count()));
      }
      for (ScriptReport s : scripts.values()) {
        b.append("\n## ").append(s.script).append("\n\n");
        b.append("Tests: ").append(s.tests.isEmpty() ? "none" : String.join(", ", s.tests));
        b.append(".\n");
        if (!s.missing.isEmpty()) {
          b.append("Missing test classes (left out): ").append(String.join(", ", s.missing));
          b.append(".\n");
        }
        for (String failure : s.baselineFailures) {
          b.append("The tests failed once on the unmutated script: ")
              .append(abbreviate(failure))
              .append("\n");
        }
        if (s.notRun != null) {
          b.append("**Not run**: ").append(s.notRun).append(".\n");
        } else {
          b.append(
              String.format(
                  Locale.ROOT,
                  "Tests on the unmutated script: %.1f s; time limit per mutant: %d s.%n",
                  s.baselineMillis / 1000.0,
                  s.timeoutSeconds));
        }
        b.append("\n| operator | run | killed | survived | invalid |\n|---|---|---|---|---|\n");
        for (Operator o : Operator.values()) {
          List<Result> rs = s.results.stream().filter(r -> r.mutant.operator() == o).toList();
          long unrun = s.unrun.stream().filter(m -> m.operator() == o).count();
          if (rs.isEmpty() && unrun == 0) {
            continue;
          }
          b.append(
              String.format(
                  Locale.ROOT,
                  "| %s | %d | %d | %d | %d |%n",
                  o,
                  rs.size(),
                  rs.stream().filter(r -> killed(r.outcome)).count(),
                  rs.stream().filter(r -> r.outcome == Outcome.SURVIVED).count(),
                  rs.stream().filter(r -> r.outcome == Outcome.INVALID).count()));
        }
        List<Result> survivors =
            s.results.stream()
                .filter(r -> r.outcome == Outcome.SURVIVED)
                .sorted(Comparator.comparingInt(r -> r.mutant.line()))
                .toList();
        if (!survivors.isEmpty()) {
          b.append("\nSurvivors:\n\n");
          for (Result r : survivors) {
            String why = explained.get(r.mutant.key());
            b.append(item(r))
                .append(" in `")
                .append(r.mutant.lineText())
                .append("`. ")
                .append(why == null ? "**Not explained.**" : why);
            if (r.detail.startsWith(FLAKY)) {
              b.append(" (").append(r.detail).append(")");
            }
            b.append('\n');
          }
        }
        List<Result> odd =
            s.results.stream()
                .filter(
                    r ->
                        r.outcome == Outcome.INVALID
                            || r.outcome == Outcome.ERROR
                            || r.outcome == Outcome.TIMED_OUT)
                .toList();
        if (!odd.isEmpty()) {
          b.append("\nInvalid, errors and time limits:\n\n");
          for (Result r : odd) {
            b.append(item(r))
                .append(": ")
                .append(r.outcome)
                .append(", ")
                .append(r.detail)
                .append('\n');
          }
        }
        List<Result> killedOnes =
            s.results.stream().filter(r -> r.outcome == Outcome.KILLED).toList();
        if (!killedOnes.isEmpty()) {
          b.append("\n<details><summary>Killed</summary>\n\n");
          for (Result r : killedOnes) {
            b.append(item(r)).append(", by ").append(abbreviate(r.detail)).append('\n');
          }
          b.append("\n</details>\n");
        }
      }
      return b.toString();
    }

    /** A report line's start: "- line N, OPERATOR: change". */
    static String item(Result r) {
      return "- line " + r.mutant.line() + ", " + r.mutant.operator() + ": " + r.mutant.change();
    }

    static String abbreviate(String detail) {
      return detail.length() > 200 ? detail.substring(0, 200) + "..." : detail;
    }
  }
}
