package dev.redlock.benchmark;

import dev.redlock.testkit.RedisCluster;
import dev.redlock.testkit.RedisProcess;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Acquire+release throughput of two or more builds of redlock-core side by side, in one run: each
 * core jar is loaded in a class loader of its own (with this class path's dependencies, none of the
 * project's own classes), each with a RedLock of its defaults on five local masters of its own
 * (builds of different dates may read each other's admission records differently), and the blocks
 * alternate, in reverse order every other round, as the benchmark's throughput section does. Each
 * thread acquires and releases keys of its own. Prints each block's rate and CPU time per
 * acquire+release (the client's and the masters'), then each build's medians and its rate's ratio
 * to the first build's, with what the masters did per acquire+release (commands, including those a
 * script calls; their event loops' reads and writes) and the context switches of the client and of
 * the masters; last, per build, every command the masters ran with its calls per acquire+release
 * and its microseconds per call ({@code INFO commandstats}), the keys left on the masters and their
 * Lua memory: where a difference in the masters' CPU time comes from.
 *
 * <p>For the question "is this build as fast as that one": a regression found by comparing two
 * benchmark runs taken hours apart is as often the machine. {@code redlock-benchmark/compare-cores}
 * builds the core of each git revision it is given and runs this. The RedLock is driven through
 * reflection (the same calls for every build), so any build since {@code RedLock.tryAcquire} and
 * {@code admitFreshNodes} existed can be compared.
 *
 * <p>Usage: {@code CoreComparison ROUNDS SECONDS THREADS JAR [JAR...]}. Not thread-safe: one thread
 * runs it.
 */
final class CoreComparison {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final int KEYS_PER_THREAD = 64;

  /** The prefix of the warm-up block's keys, which marks that block. */
  private static final String WARM_UP = "warm-up";

  private static final Pattern COMMAND_STATS =
      Pattern.compile("cmdstat_([^:]+):calls=(\\d+),usec=(\\d+),.*");

  private CoreComparison() {}

  /**
   * One block's figures: acquire+release per second, CPU microseconds per acquire+release, and per
   * acquire+release on all masters together: commands run, and the reads and writes of their event
   * loops (INFO stats: {@code total_reads_processed}, {@code total_writes_processed}; fewer reads
   * per command means more commands batched per read).
   */
  private record Block(
      double rate,
      double clientMicros,
      double serverMicros,
      double commands,
      double reads,
      double writes,
      double clientSwitches,
      double serverSwitches) {}

  /** One section of a master's INFO: each field's name and value. */
  private static Map<String, String> info(RedisProcess node, String section) {
    Map<String, String> fields = new HashMap<>();
    for (String line : String.valueOf(node.admin().command("INFO", section)).split("\\r?\\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && !line.startsWith("#")) {
        fields.put(line.substring(0, colon), line.substring(colon + 1).trim());
      }
    }
    return fields;
  }

  /** The masters' counters summed: commands, reads, writes. */
  private static long[] counters(RedisCluster masters) {
    long[] sum = new long[3];
    String[] names = {
      "total_commands_processed", "total_reads_processed", "total_writes_processed"
    };
    for (RedisProcess node : masters.nodes()) {
      Map<String, String> stats = info(node, "stats");
      for (int i = 0; i < names.length; i++) {
        sum[i] += Long.parseLong(stats.getOrDefault(names[i], "0"));
      }
    }
    return sum;
  }

  /** CPU time, in nanoseconds. */
  private static final class Cpu {
    private static final long TICK_NANOS = 10_000_000L; // USER_HZ 100, as on every Linux we know

    /** This process's CPU time. */
    static long process() {
      java.lang.management.OperatingSystemMXBean bean =
          java.lang.management.ManagementFactory.getOperatingSystemMXBean();
      return bean instanceof com.sun.management.OperatingSystemMXBean sun
          ? sun.getProcessCpuTime()
          : 0;
    }

    /**
     * Context switches, voluntary and not, of every thread of this process (the first) and of every
     * process it started (the second), from /proc; 0 elsewhere.
     */
    static long[] switches() {
      long[] sum = new long[2];
      sum[0] = switches(ProcessHandle.current().pid());
      for (ProcessHandle child : ProcessHandle.current().descendants().toList()) {
        sum[1] += switches(child.pid());
      }
      return sum;
    }

    private static long switches(long pid) {
      long n = 0;
      try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
        for (Path task : tasks.toList()) {
          try {
            for (String line : Files.readAllLines(task.resolve("status"))) {
              if (line.startsWith("voluntary_ctxt_switches:")
                  || line.startsWith("nonvoluntary_ctxt_switches:")) {
                n += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
              }
            }
          } catch (IOException | RuntimeException e) {
            // a thread gone meanwhile: not counted
          }
        }
      } catch (IOException | RuntimeException e) {
        // gone, or no /proc
      }
      return n;
    }

    /** The CPU time of every process this one started (the masters), from /proc; 0 elsewhere. */
    static long children() {
      long ticks = 0;
      for (ProcessHandle child : ProcessHandle.current().descendants().toList()) {
        try {
          String stat = Files.readString(Path.of("/proc/" + child.pid() + "/stat"));
          String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
        } catch (IOException | RuntimeException e) {
          // gone meanwhile, or no /proc: not counted
        }
      }
      return ticks * TICK_NANOS;
    }
  }

  /** One build: its class loader, its masters and its RedLock. */
  private record Build(
      String name, RedisCluster masters, Object redlock, Method tryAcquire, AtomicLong ops)
      implements AutoCloseable {

    static Build open(Path jar, List<URL> dependencies) throws Exception {
      List<URL> urls = new ArrayList<>();
      urls.add(jar.toUri().toURL());
      urls.addAll(dependencies);
      // Parent: the platform loader, so that none of this class path's redlock classes is seen.
      ClassLoader loader =
          new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
      Class<?> type = loader.loadClass("dev.redlock.RedLock");
      RedisCluster masters = RedisCluster.start(5, i -> RedisProcess.builder());
      Object redlock = null;
      try {
        Object builder = type.getMethod("builder").invoke(null);
        builder = builder.getClass().getMethod("nodes", List.class).invoke(builder, masters.uris());
        redlock = builder.getClass().getMethod("build").invoke(builder);
        type.getMethod("admitFreshNodes").invoke(redlock);
        Method tryAcquire = type.getMethod("tryAcquire", String.class, Duration.class);
        return new Build(
            jar.getFileName().toString(), masters, redlock, tryAcquire, new AtomicLong());
      } catch (Exception | Error e) {
        if (redlock != null) {
          ((AutoCloseable) redlock).close();
        }
        masters.close();
        throw e;
      }
    }

    /**
     * Acquire+release per second with {@code threads} threads for {@code millis}, and the CPU time
     * each took: this process's and the masters' (every child process: the other builds' masters
     * are idle meanwhile), in microseconds per acquire+release.
     */
    Block block(int threads, long millis, String prefix) throws InterruptedException {
      long[] before = counters(masters);
      long[] switches = Cpu.switches();
      long client = Cpu.process();
      long servers = Cpu.children();
      double rate = rate(threads, millis, prefix);
      double ops = rate * millis / 1000.0;
      long clientNanos = Cpu.process() - client;
      long serverNanos = Cpu.children() - servers;
      long[] switched = Cpu.switches();
      long[] after = counters(masters);
      return new Block(
          rate,
          clientNanos / 1000.0 / ops,
          serverNanos / 1000.0 / ops,
          (after[0] - before[0]) / ops,
          (after[1] - before[1]) / ops,
          (after[2] - before[2]) / ops,
          (switched[0] - switches[0]) / ops,
          (switched[1] - switches[1]) / ops);
    }

    /**
     * Every command the masters ran since they started, summed over the masters: calls per
     * acquire+release counted by this build's blocks and microseconds per call, most calls first.
     */
    String commandStats() {
      Map<String, long[]> stats = new HashMap<>();
      long keys = 0;
      long luaBytes = 0;
      for (RedisProcess node : masters.nodes()) {
        for (Map.Entry<String, String> field : info(node, "commandstats").entrySet()) {
          Matcher m = COMMAND_STATS.matcher(field.getKey() + ":" + field.getValue());
          if (m.matches()) {
            long[] sum = stats.computeIfAbsent(m.group(1), k -> new long[2]);
            sum[0] += Long.parseLong(m.group(2));
            sum[1] += Long.parseLong(m.group(3));
          }
        }
        keys += node.admin().dbSize();
        luaBytes += Long.parseLong(info(node, "memory").getOrDefault("used_memory_lua", "0"));
      }
      StringBuilder out =
          new StringBuilder(
              String.format("keys left %d, Lua memory %d KiB:", keys, luaBytes / 1024));
      stats.entrySet().stream()
          .sorted((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]))
          .filter(e -> e.getValue()[0] > ops.get() / 100)
          .forEach(
              e ->
                  out.append(
                      String.format(
                          " %s %.2f x %.2f us",
                          e.getKey(),
                          e.getValue()[0] / (double) Math.max(1, ops.get()),
                          e.getValue()[1] / (double) e.getValue()[0])));
      return out.toString().trim();
    }

    /**
     * Acquire+release per second with {@code threads} threads for {@code millis}. In the warm-up
     * ({@code prefix} {@link CoreComparison#WARM_UP}), a cold JVM's first rounds can time out on 2
     * cores (the JIT runs beside 32 threads): they are counted and printed, not fatal. In a
     * measured block any failure ends the run.
     */
    double rate(int threads, long millis, String prefix) throws InterruptedException {
      boolean warmUp = prefix.equals(WARM_UP);
      AtomicLong unavailable = new AtomicLong();
      AtomicLong done = new AtomicLong();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      CountDownLatch end = new CountDownLatch(threads);
      long stop = System.nanoTime() + millis * 1_000_000L;
      for (int t = 0; t < threads; t++) {
        String mine = prefix + ":" + t + ":";
        Thread thread =
            new Thread(
                () -> {
                  long n = 0;
                  try {
                    for (long i = 0; System.nanoTime() - stop < 0; i++) {
                      Optional<?> lease;
                      try {
                        lease =
                            (Optional<?>)
                                tryAcquire.invoke(redlock, mine + i % KEYS_PER_THREAD, TTL);
                      } catch (InvocationTargetException e) {
                        if (warmUp
                            && e.getCause()
                                .getClass()
                                .getSimpleName()
                                .equals("QuorumUnavailableException")) {
                          unavailable.incrementAndGet();
                          continue;
                        }
                        throw e;
                      }
                      if (lease.isPresent()) {
                        ((AutoCloseable) lease.get()).close();
                        n++;
                      }
                    }
                  } catch (InvocationTargetException e) {
                    failed.compareAndSet(null, e.getCause());
                  } catch (Exception e) {
                    failed.compareAndSet(null, e);
                  } finally {
                    done.addAndGet(n);
                    end.countDown();
                  }
                },
                "compare-" + t);
        thread.start();
      }
      end.await();
      if (unavailable.get() > 0) {
        System.out.printf(
            "%s: %d warm-up acquisitions found too few masters in time (cold JIT)%n",
            name, unavailable.get());
      }
      if (failed.get() != null) {
        throw new IllegalStateException(name + " failed: " + failed.get(), failed.get());
      }
      ops.addAndGet(done.get());
      return done.get() * 1000.0 / millis;
    }

    @Override
    public void close() throws Exception {
      try {
        ((AutoCloseable) redlock).close();
      } finally {
        masters.close();
      }
    }
  }

  /**
   * Runs the comparison; see the class comment.
   *
   * @param args rounds, seconds per block, threads, then two or more core jars
   */
  public static void main(String[] args) throws Exception {
    if (args.length < 5) {
      System.err.println(
          "usage: CoreComparison ROUNDS SECONDS THREADS JAR JAR [JAR...]"
              + " (redlock-benchmark/compare-cores builds the jars of git revisions)");
      System.exit(2);
    }
    int rounds = Integer.parseInt(args[0]);
    long millis = Math.round(Double.parseDouble(args[1]) * 1000);
    int threads = Integer.parseInt(args[2]);
    List<URL> dependencies = dependencies();
    List<Build> builds = new ArrayList<>();
    try {
      for (int i = 3; i < args.length; i++) {
        Path jar = Path.of(args[i]);
        if (!Files.isRegularFile(jar)) {
          throw new IOException("no such jar: " + jar);
        }
        Build build = Build.open(jar, dependencies);
        builds.add(build);
        build.rate(threads, Math.min(millis, 1_500), WARM_UP); // JIT and connections
      }
      System.out.printf(
          "%d rounds of %s s, %d threads, keys of their own, acquire+release per second%n",
          rounds, args[1], threads);
      List<List<Block>> blocks = new ArrayList<>();
      builds.forEach(b -> blocks.add(new ArrayList<>()));
      int block = 0;
      for (int round = 0; round < rounds; round++) {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < builds.size(); i++) {
          order.add(i);
        }
        if (round % 2 == 1) {
          Collections.reverse(order);
        }
        StringBuilder line = new StringBuilder("round " + round + ":");
        for (int i : order) {
          Block figures = builds.get(i).block(threads, millis, "block" + block++);
          blocks.get(i).add(figures);
          line.append(
              String.format(
                  "  %s %.0f/s (%.1f+%.1f us)",
                  builds.get(i).name(),
                  figures.rate(),
                  figures.clientMicros(),
                  figures.serverMicros()));
        }
        System.out.println(line);
      }
      System.out.println(
          "medians: acquire+release per second; CPU microseconds per acquire+release, of the"
              + " client and of the masters");
      double first = median(blocks.get(0), Block::rate);
      for (int i = 0; i < builds.size(); i++) {
        List<Block> b = blocks.get(i);
        double median = median(b, Block::rate);
        System.out.printf(
            "%-24s %8.0f/s  %.2fx the first  client %.1f us  masters %.1f us"
                + "  (per op on the masters: %.1f commands, %.1f reads, %.1f writes;"
                + " context switches per op: client %.2f, masters %.2f)%n",
            builds.get(i).name(),
            median,
            median / first,
            median(b, Block::clientMicros),
            median(b, Block::serverMicros),
            median(b, Block::commands),
            median(b, Block::reads),
            median(b, Block::writes),
            median(b, Block::clientSwitches),
            median(b, Block::serverSwitches));
      }
      System.out.println(
          "per command on the masters, over the whole run: calls per acquire+release and"
              + " microseconds per call (INFO commandstats; a script's calls count as commands)");
      for (int i = 0; i < builds.size(); i++) {
        System.out.printf("%-24s %s%n", builds.get(i).name(), builds.get(i).commandStats());
      }
    } finally {
      for (Build build : builds) {
        build.close();
      }
    }
  }

  private static double median(List<Block> blocks, java.util.function.ToDoubleFunction<Block> of) {
    List<Double> sorted = new ArrayList<>();
    blocks.forEach(b -> sorted.add(of.applyAsDouble(b)));
    Collections.sort(sorted);
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /**
   * This class path but the project's own modules: the libraries a core jar needs (Jedis,
   * Resilience4j, SLF4J and the binding), and some it does not, which it never loads.
   */
  private static List<URL> dependencies() throws IOException {
    List<URL> urls = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      String name = Path.of(entry).getFileName().toString();
      boolean ours = name.startsWith("redlock-") || entry.contains("/redlock-");
      if (!entry.isBlank() && !ours) {
        urls.add(Path.of(entry).toUri().toURL());
      }
    }
    return urls;
  }
}
