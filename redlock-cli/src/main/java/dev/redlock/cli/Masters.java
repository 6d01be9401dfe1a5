package dev.redlock.cli;

import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The masters a command talks to, and the settings of the RedLock it builds for them: the options
 * {@code inspect} and {@code admit} share. The RedLock has the library's defaults otherwise, as an
 * application's would.
 */
final class Masters {

  /**
   * The environment variable that names the masters when {@code --nodes} is not given, so that a
   * password in their URIs is not on the command line.
   */
  static final String NODES_VARIABLE = "REDLOCK_NODES";

  @Spec(Spec.Target.MIXEE)
  private CommandSpec spec;

  @Option(
      names = "--nodes",
      split = ",",
      paramLabel = "URI",
      description =
          "the Redis masters, comma-separated: redis://[user:password@]host[:port][/db], or rediss:// for TLS (passwords are never printed). Not given: the environment variable "
              + NODES_VARIABLE
              + ". To keep a password off the command line (ps, shell history), set "
              + NODES_VARIABLE
              + " or put --nodes=... in a file only you can read and pass @FILE")
  private List<String> nodes = new ArrayList<>();

  @Option(
      names = "--datacenter",
      paramLabel = "NAME=URI[,URI...]",
      description =
          "masters under a datacenter label (repeatable), so that inspect says which single-datacenter losses leave a quorum")
  private List<String> datacenters = new ArrayList<>();

  @Option(
      names = "--node-timeout",
      paramLabel = "DURATION",
      converter = DurationConverter.class,
      description =
          "how long each master may take to connect or answer, e.g. 500ms (default: the library's, 50ms)")
  private Duration nodeTimeout; // null: the library's default

  @Option(
      names = "--max-lease-time",
      paramLabel = "DURATION",
      converter = DurationConverter.class,
      description =
          "the applications' maxLeaseTime, e.g. 10m; the restart guard's horizon (default: the library's, 60s)")
  private Duration maxLeaseTime; // null: the library's default

  /**
   * Builds a RedLock for the masters given.
   *
   * @throws ParameterException if no master is given, or the library refuses a URI or a setting
   */
  RedLock open() {
    RedLockBuilder builder = RedLock.builder();
    try {
      if (nodeTimeout != null) {
        builder.nodeTimeout(nodeTimeout);
      }
      if (maxLeaseTime != null) {
        builder.maxLeaseTime(maxLeaseTime);
      }
      builder.nodes(nodes);
      for (String datacenter : datacenters) {
        int equals = datacenter.indexOf('=');
        if (equals <= 0) {
          throw new ParameterException(
              spec.commandLine(),
              "--datacenter takes NAME=URI[,URI...], e.g. eu=redis://10.0.0.1:6379,redis://10.0.0.2:6379");
        }
        List<String> uris = new ArrayList<>();
        for (String uri : datacenter.substring(equals + 1).split(",")) {
          if (!uri.isBlank()) {
            uris.add(uri.strip());
          }
        }
        builder.datacenter(
            datacenter.substring(0, equals),
            nodeTimeout == null ? RedLock.DEFAULT_NODE_TIMEOUT : nodeTimeout,
            uris);
      }
      if (nodes.isEmpty() && datacenters.isEmpty()) {
        throw new ParameterException(
            spec.commandLine(),
            "give the masters: --nodes URI[,URI...] (or --datacenter), the environment variable "
                + NODES_VARIABLE
                + ", or a file of options passed as @FILE");
      }
      return builder.build();
    } catch (IllegalArgumentException e) {
      // The library's messages never show a password.
      throw new ParameterException(spec.commandLine(), e.getMessage(), e, null, "--nodes");
    }
  }

  /**
   * The default of {@code --nodes} in {@code inspect} and {@code admit}: the environment variable
   * {@value #NODES_VARIABLE}, if set and not blank. The drill's {@code --nodes} has none: without
   * it, the drill starts masters of its own rather than fault masters it was not pointed at.
   */
  static CommandLine.IDefaultValueProvider fromEnvironment(Map<String, String> environment) {
    return argument -> {
      if (argument instanceof OptionSpec option
          && option.longestName().equals("--nodes")
          && option.command() != null
          && (option.command().name().equals("inspect")
              || option.command().name().equals("admit"))) {
        String value = environment.get(NODES_VARIABLE);
        return value == null || value.isBlank() ? null : value.strip();
      }
      return null;
    };
  }

  /** The maximum lease time the RedLock is built with. */
  Duration maxLeaseTime() {
    return maxLeaseTime == null ? RedLock.DEFAULT_MAX_LEASE_TIME : maxLeaseTime;
  }

  /**
   * {@code 500ms}, {@code 2s}, {@code 1.5s}, {@code 10m}, {@code 1h}, or ISO-8601 ({@code PT1M}).
   */
  static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    private static final Pattern SIMPLE = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h)");

    @Override
    public Duration convert(String value) {
      String text = value.strip().toLowerCase(Locale.ROOT);
      Matcher matcher = SIMPLE.matcher(text);
      try {
        if (matcher.matches()) {
          long unitNanos =
              switch (matcher.group(2)) {
                case "ms" -> 1_000_000L;
                case "s" -> 1_000_000_000L;
                case "m" -> 60_000_000_000L;
                default -> 3_600_000_000_000L;
              };
          return Duration.ofNanos(
              new java.math.BigDecimal(matcher.group(1))
                  .multiply(java.math.BigDecimal.valueOf(unitNanos))
                  .longValueExact());
        }
        return Duration.parse(value.strip());
      } catch (ArithmeticException | DateTimeParseException e) {
        throw new CommandLine.TypeConversionException(
            "'" + value + "' is not a duration: give a number and a unit (500ms, 2s, 10m, 1h)");
      }
    }
  }
}
