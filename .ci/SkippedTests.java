import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * CI's skip check, run after the build with the JDK's source launcher (no dependency):
 *
 * <pre>java .ci/SkippedTests.java .ci/allowed-skips .</pre>
 *
 * <p>Reads every module's Surefire and Failsafe XML reports ({@code target/surefire-reports*},
 * {@code target/failsafe-reports*}) and exits 1, listing each with its reason, if a test was skipped
 * that the allowed-skips file does not name, if a report holds no test at all (a class aborted in
 * {@code @BeforeAll}, which Surefire counts as neither run nor skipped), or if a test class left
 * no report (a module whose tests were switched off). A skipped safety test is evidence CI did not collect, and the
 * build stays green without this check.
 */
public final class SkippedTests {

  private static final Pattern TEST_ANNOTATION =
      Pattern.compile("@(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\\b");

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: java .ci/SkippedTests.java <allowed-skips file> <repository root>");
      System.exit(2);
    }
    Set<String> allowed = readAllowed(Path.of(args[0]));
    Path root = Path.of(args[1]);
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
    DocumentBuilder parser = factory.newDocumentBuilder();

    int reports = 0;
    int tests = 0;
    List<String> unexpected = new ArrayList<>();
    Set<String> allowedSeen = new TreeSet<>();
    List<String> unreported = new ArrayList<>();
    List<String> empty = new ArrayList<>();
    for (Path module : modules(root)) {
      Set<String> reported = new LinkedHashSet<>(); // "surefire:fqcn" or "failsafe:fqcn"
      Set<String> withCases = new TreeSet<>(); // classes whose report holds a test case
      List<Path> withoutCases = new ArrayList<>();
      for (Path dir : reportDirs(module)) {
        String plugin = dir.getFileName().toString().startsWith("failsafe") ? "failsafe" : "surefire";
        for (Path report : list(dir, "TEST-", ".xml")) {
          reports++;
          String file = report.getFileName().toString();
          String className = file.substring(5, file.length() - 4);
          reported.add(plugin + ":" + className);
          NodeList cases = parser.parse(report.toFile()).getElementsByTagName("testcase");
          if (cases.getLength() == 0) {
            withoutCases.add(report);
          } else {
            withCases.add(className);
          }
          for (int i = 0; i < cases.getLength(); i++) {
            Element testcase = (Element) cases.item(i);
            tests++;
            Element skipped = child(testcase, "skipped");
            if (skipped == null) {
              continue;
            }
            String id = testcase.getAttribute("classname") + "#" + testcase.getAttribute("name");
            if (allowed.contains(id)) {
              allowedSeen.add(id);
            } else {
              unexpected.add(id + "\n      " + reason(skipped) + "\n      in " + root.relativize(report));
            }
          }
        }
      }
      // A class aborted before its tests (an assumption in @BeforeAll) leaves a report with no test
      // case and no <skipped/>, counted as 0 tests run and 0 skipped. Only an outer class whose
      // tests are all in @Nested classes may do that.
      for (Path report : withoutCases) {
        String file = report.getFileName().toString();
        String className = file.substring(5, file.length() - 4);
        if (withCases.stream().noneMatch(c -> c.startsWith(className + "$"))) {
          empty.add(
              className
                  + "\n      no test ran and none is reported skipped: the whole class was aborted"
                  + " (an assumption in @BeforeAll?) or it has no tests\n      in "
                  + root.relativize(report));
        }
      }
      for (String expected : testClasses(module)) {
        if (!reported.contains(expected)) {
          String plugin = expected.substring(0, expected.indexOf(':'));
          unreported.add(
              expected.substring(plugin.length() + 1)
                  + " (no report under "
                  + root.relativize(module.resolve("target"))
                  + "/"
                  + plugin
                  + "-reports*)");
        }
      }
    }

    System.out.printf(
        "skip check: %d test cases in %d reports; skipped as allowed: %s%n",
        tests, reports, allowedSeen.isEmpty() ? "none" : String.join(", ", allowedSeen));
    if (reports == 0) {
      System.err.println("skip check: no test reports under " + root.toAbsolutePath() + ": did the build run the tests?");
      System.exit(1);
    }
    if (!unexpected.isEmpty()) {
      System.err.println(
          "skip check: " + unexpected.size() + " skipped test(s) not on " + args[0] + ":");
      unexpected.forEach(s -> System.err.println("  " + s));
    }
    if (!empty.isEmpty()) {
      System.err.println("skip check: " + empty.size() + " report(s) with no test in them:");
      empty.forEach(s -> System.err.println("  " + s));
    }
    if (!unreported.isEmpty()) {
      System.err.println(
          "skip check: " + unreported.size() + " test class(es) that did not run at all:");
      unreported.forEach(s -> System.err.println("  " + s));
    }
    if (!unexpected.isEmpty() || !empty.isEmpty() || !unreported.isEmpty()) {
      System.exit(1);
    }
  }

  /** {@code class#method} entries, one a line; blank lines and lines starting with # ignored. */
  private static Set<String> readAllowed(Path file) throws IOException {
    Set<String> allowed = new LinkedHashSet<>();
    for (String line : Files.readAllLines(file)) {
      String entry = line.strip();
      if (entry.isEmpty() || entry.startsWith("#")) {
        continue;
      }
      allowed.add(entry.split("\\s+", 2)[0]);
    }
    return allowed;
  }

  private static List<Path> modules(Path root) throws IOException {
    try (Stream<Path> children = Files.list(root)) {
      return children
          .filter(dir -> Files.isRegularFile(dir.resolve("pom.xml")))
          .sorted()
          .toList();
    }
  }

  private static List<Path> reportDirs(Path module) throws IOException {
    Path target = module.resolve("target");
    if (!Files.isDirectory(target)) {
      return List.of();
    }
    try (Stream<Path> dirs = Files.list(target)) {
      return dirs.filter(Files::isDirectory)
          .filter(
              dir -> {
                String name = dir.getFileName().toString();
                return name.startsWith("surefire-reports") || name.startsWith("failsafe-reports");
              })
          .sorted()
          .toList();
    }
  }

  private static List<Path> list(Path dir, String prefix, String suffix) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .filter(
              file -> {
                String name = file.getFileName().toString();
                return name.startsWith(prefix) && name.endsWith(suffix);
              })
          .sorted()
          .toList();
    }
  }

  /**
   * The test classes a build must report, as "surefire:fqcn" ({@code *Test.java}) or
   * "failsafe:fqcn" ({@code *IT.java}): those that declare a test and are not abstract.
   */
  private static List<String> testClasses(Path module) throws IOException {
    Path sources = module.resolve("src/test/java");
    if (!Files.isDirectory(sources)) {
      return List.of();
    }
    List<String> expected = new ArrayList<>();
    try (Stream<Path> files = Files.walk(sources)) {
      for (Path file : files.sorted().toList()) {
        String name = file.getFileName().toString();
        String plugin =
            name.endsWith("IT.java") ? "failsafe" : name.endsWith("Test.java") ? "surefire" : null;
        if (plugin == null) {
          continue;
        }
        String simpleName = name.substring(0, name.length() - ".java".length());
        String source = Files.readString(file);
        boolean isAbstract =
            Pattern.compile("\\babstract\\s+class\\s+" + simpleName + "\\b").matcher(source).find();
        if (isAbstract || !TEST_ANNOTATION.matcher(source).find()) {
          continue;
        }
        String relative = sources.relativize(file).toString();
        String fqcn =
            relative.substring(0, relative.length() - ".java".length()).replace('/', '.');
        expected.add(plugin + ":" + fqcn);
      }
    }
    return expected;
  }

  private static Element child(Element parent, String name) {
    for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
      if (node instanceof Element element && element.getTagName().equals(name)) {
        return element;
      }
    }
    return null;
  }

  /** The skip's message, else the first line of its text (the assumption's exception), else "". */
  private static String reason(Element skipped) {
    String reason = skipped.getAttribute("message").strip();
    if (reason.isEmpty()) {
      reason =
          skipped.getTextContent().strip().lines().findFirst().orElse("(no reason given)").strip();
    }
    return reason.length() > 400 ? reason.substring(0, 400) + "..." : reason;
  }
}
