package dev.redlock.cli;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.DrillCommand;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code redlock} command for operators: {@code inspect} prints the preflight table for a set
 * of masters, {@code admit} admits a brand-new cluster past the restart guard after asking, and
 * {@code drill} runs the contention and failover drill. Run {@code redlock --help}, or {@code
 * redlock help COMMAND}, for the options; every command exits with {@value #EXIT_OK} when all is
 * well and {@value #EXIT_USAGE} for a bad command line (see each command's help for the others).
 *
 * <p>The executable jar: {@code java -jar redlock-cli-VERSION.jar COMMAND [OPTIONS]}.
 */
@Command(
    name = "redlock",
    mixinStandardHelpOptions = true,
    versionProvider = RedLockCli.Version.class,
    description =
        "Operator commands for RedLock for Java, a Redlock multi-master quorum lock: inspect the"
            + " masters, admit a brand-new cluster, drill a failover. Run 'redlock help COMMAND'"
            + " for a command's options.",
    synopsisSubcommandLabel = "COMMAND",
    subcommands = {
      InspectCommand.class,
      AdmitCommand.class,
      DrillCommand.class,
      CommandLine.HelpCommand.class
    },
    footerHeading = "%nExit codes:%n",
    footer = {
      "  0  all is well",
      "  1  a finding or a failure the command's help describes (an unfit master, a",
      "     master not admitted, a failed drill), or an error",
      "  2  bad command line",
      "  3  inspect: nothing unfit, but a WARN or UNKNOWN to look at;",
      "     admit: the question was answered no (nothing was admitted)"
    })
public final class RedLockCli implements Callable<Integer> {

  /** All is well: every master fit, every master admitted, the drill passed. */
  public static final int EXIT_OK = 0;

  /** An unfit master, a master not admitted, a failed drill, or an error. */
  public static final int EXIT_FAILED = 1;

  /** A bad command line. */
  public static final int EXIT_USAGE = 2;

  /** A finding to look at (inspect: WARN or UNKNOWN), or nothing done (admit: answered no). */
  public static final int EXIT_ATTENTION = 3;

  @Spec private CommandSpec spec;

  private RedLockCli() {}

  /**
   * Runs the command line and exits the JVM with its exit code.
   *
   * @param args the command and its options, e.g. {@code inspect --nodes redis://a:6379}
   */
  public static void main(String[] args) {
    int code = commandLine(System.in, System.out, System.err).execute(args);
    System.out.flush();
    System.exit(code);
  }

  /**
   * The command line, its output going to {@code out} and its errors to {@code err}; {@code admit}
   * reads its answer from {@code in}. For tests and embedding; {@link #main} uses the standard
   * streams.
   *
   * @param in where {@code admit} reads the answer to its question
   * @param out where the commands print (the drill's live progress line only if this is {@link
   *     System#out} on a terminal)
   * @param err where usage errors go
   * @return a command line to {@link CommandLine#execute execute}
   */
  static CommandLine commandLine(InputStream in, PrintStream out, PrintStream err) {
    return commandLine(in, out, err, System.getenv());
  }

  /**
   * The command line, as {@link #commandLine(InputStream, PrintStream, PrintStream)}, reading its
   * environment variables ({@value Masters#NODES_VARIABLE}) from {@code environment}: for tests.
   */
  static CommandLine commandLine(
      InputStream in, PrintStream out, PrintStream err, Map<String, String> environment) {
    requireNonNull(in, "in");
    requireNonNull(out, "out");
    requireNonNull(err, "err");
    requireNonNull(environment, "environment");
    CommandLine line = new CommandLine(new RedLockCli(), new Factory(in, out));
    Charset charset = Charset.defaultCharset();
    line.setOut(new PrintWriter(out, true, charset));
    line.setErr(new PrintWriter(err, true, charset));
    line.setParameterExceptionHandler(DrillCommand::usageError);
    line.setDefaultValueProvider(Masters.fromEnvironment(environment));
    return line;
  }

  /** {@code redlock} alone: the usage, as for a bad command line. */
  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    err.println("redlock: give a command.");
    spec.commandLine().usage(err);
    return EXIT_USAGE;
  }

  /** Creates the commands; hands {@code admit} its input and {@code drill} its output. */
  private static final class Factory implements CommandLine.IFactory {
    private final InputStream in;
    private final PrintStream out;

    Factory(InputStream in, PrintStream out) {
      this.in = in;
      this.out = out;
    }

    @Override
    public <K> K create(Class<K> type) throws Exception {
      if (type == AdmitCommand.class) {
        return type.cast(new AdmitCommand(in));
      }
      if (type == DrillCommand.class) {
        return type.cast(new DrillCommand(out));
      }
      return CommandLine.defaultFactory().create(type);
    }
  }

  /** The version from the jar's build. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      Properties properties = new Properties();
      try (InputStream in = RedLockCli.class.getResourceAsStream("version.properties")) {
        if (in != null) {
          properties.load(in);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new String[] {
        "redlock " + properties.getProperty("version", "(unknown version)"),
        "Java "
            + System.getProperty("java.version")
            + " ("
            + System.getProperty("java.vendor")
            + ")"
      };
    }
  }
}
