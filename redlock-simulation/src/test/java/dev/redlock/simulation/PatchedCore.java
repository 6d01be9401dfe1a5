package dev.redlock.simulation;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * A bug put back in the core's Java code for one simulation run, and never in the product: the
 * harness edits a copy of one source file of {@code redlock-core}, compiles it against the test
 * class path, and runs {@link Hunt#hunt} in a class loader of its own that finds the edited class
 * before the real one. So a switch of the test harness can reintroduce a bug of the library's own
 * code (a sign, a unit), as {@code editScripts} does for its Lua.
 */
final class PatchedCore {

  /**
   * A bug in a Java file of the core.
   *
   * @param file the source file under {@code redlock-core/src/main/java}
   * @param from the text replaced, which must occur exactly once
   * @param to its replacement
   */
  record JavaBug(String file, String from, String to) {}

  private static final Path SOURCES = Path.of("..", "redlock-core", "src", "main", "java");

  private PatchedCore() {}

  /**
   * Runs {@link Hunt#hunt} with {@code bugs} put back (edits of one file or of several).
   *
   * @return the first failure found, or null
   */
  static String hunt(List<JavaBug> bugs, String faults, int seeds, int steps, int faultEvery)
      throws Exception {
    Path classes = compile(bugs);
    List<URL> urls = new ArrayList<>();
    urls.add(classes.toUri().toURL());
    for (String entry : classPath()) {
      if (!isShared(entry)) {
        urls.add(Path.of(entry).toUri().toURL());
      }
    }
    try (URLClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), SHARED)) {
      Class<?> harness = loader.loadClass(Hunt.class.getName());
      if (harness == Hunt.class) {
        throw new IllegalStateException("the harness was not loaded apart");
      }
      Method hunt =
          harness.getDeclaredMethod("hunt", String.class, int.class, int.class, int.class);
      hunt.setAccessible(true);
      try {
        return (String) hunt.invoke(null, faults, seeds, steps, faultEvery);
      } catch (InvocationTargetException e) {
        throw e.getCause() instanceof Exception cause ? cause : e;
      }
    }
  }

  /**
   * The libraries that reference none of the project's classes (the Lua interpreter, the breakers,
   * the logging API and its binding), loaded once for every hunt: so the interpreter's code the JIT
   * compiled in one hunt serves the next (each hunt's own loader has the core and the harness).
   */
  private static final ClassLoader SHARED = sharedLibraries();

  private static boolean isShared(String entry) {
    String path = entry.replace(java.io.File.separatorChar, '/');
    return path.contains("/org/luaj/")
        || path.contains("/io/github/resilience4j/")
        || path.contains("/io/vavr/")
        || path.contains("/org/slf4j/");
  }

  private static ClassLoader sharedLibraries() {
    List<URL> urls = new ArrayList<>();
    for (String entry : classPath()) {
      if (isShared(entry)) {
        try {
          urls.add(Path.of(entry).toUri().toURL());
        } catch (java.net.MalformedURLException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    return new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
  }

  /** Compiles the edited files; returns the directory of their classes. */
  private static Path compile(List<JavaBug> bugs) throws IOException {
    Path work = Files.createTempDirectory("redlock-bug");
    java.util.Map<String, String> edited = new java.util.LinkedHashMap<>();
    for (JavaBug bug : bugs) {
      Path source = SOURCES.resolve(bug.file());
      String text = edited.get(bug.file());
      if (text == null) {
        text = Files.readString(source, StandardCharsets.UTF_8);
      }
      int at = text.indexOf(bug.from());
      if (at < 0 || text.indexOf(bug.from(), at + 1) >= 0) {
        throw new IllegalArgumentException(
            "not exactly once in " + source + ": " + bug.from() + " (the code moved?)");
      }
      edited.put(bug.file(), text.replace(bug.from(), bug.to()));
    }
    List<String> files = new ArrayList<>();
    for (java.util.Map.Entry<String, String> file : edited.entrySet()) {
      Path path = work.resolve("src").resolve(file.getKey());
      Files.createDirectories(path.getParent());
      Files.writeString(path, file.getValue(), StandardCharsets.UTF_8);
      files.add(path.toString());
    }
    Path classes = Files.createDirectories(work.resolve("classes"));
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    if (javac == null) {
      throw new IllegalStateException("no Java compiler in this runtime (a JRE, not a JDK?)");
    }
    java.io.ByteArrayOutputStream errors = new java.io.ByteArrayOutputStream();
    List<String> arguments =
        new ArrayList<>(
            List.of(
                "-proc:none",
                "-nowarn",
                "-d",
                classes.toString(),
                "-cp",
                String.join(java.io.File.pathSeparator, classPath())));
    arguments.addAll(files);
    int rc = javac.run(null, null, errors, arguments.toArray(String[]::new));
    if (rc != 0) {
      throw new IllegalStateException(
          "the edited "
              + edited.keySet()
              + " do not compile:\n"
              + errors.toString(StandardCharsets.UTF_8));
    }
    return classes;
  }

  /** The tests' class path: Surefire's (its own JAR names it in a manifest), or the JVM's. */
  private static List<String> classPath() {
    String path = System.getProperty("surefire.test.class.path");
    if (path == null || path.isBlank()) {
      path = System.getProperty("java.class.path");
    }
    List<String> entries = new ArrayList<>();
    for (String entry : path.split(java.io.File.pathSeparator)) {
      if (!entry.isBlank() && Files.exists(Path.of(entry))) {
        entries.add(entry);
      }
    }
    if (entries.isEmpty()) {
      throw new UncheckedIOException(new IOException("no class path to compile against: " + path));
    }
    return entries;
  }
}
