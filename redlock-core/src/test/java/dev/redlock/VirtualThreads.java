package dev.redlock;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadFactory;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/**
 * Runs test workers on virtual threads when {@code -Dredlock.test.threads=virtual} (the {@code
 * virtual-threads} profile, on a JDK 21 or later), and records every time one of them was pinned to
 * its carrier while parked inside the library's code: JFR's {@code jdk.VirtualThreadPinned} event,
 * whose stack is checked for the library's own classes. (With {@code
 * -Djdk.tracePinnedThreads=full}, JDK 21 to 23 also print each pinned stack.)
 */
final class VirtualThreads implements AutoCloseable {

  private final boolean virtual = "virtual".equals(System.getProperty("redlock.test.threads"));
  private final Set<String> libraryClasses;
  private final Recording recording;

  VirtualThreads() {
    if (!virtual) {
      libraryClasses = Set.of();
      recording = null;
      return;
    }
    if (Runtime.version().feature() < 21) {
      throw new IllegalStateException(
          "-Dredlock.test.threads=virtual needs a JDK 21 or later; this is " + Runtime.version());
    }
    libraryClasses = libraryClasses();
    recording = new Recording();
    recording
        .enable("jdk.VirtualThreadPinned")
        .withThreshold(java.time.Duration.ZERO)
        .withStackTrace();
  }

  /**
   * Starts recording pinned virtual threads: after a warm-up, so that the JVM's first loading and
   * initialization of each class (which holds a lock and may pin) is left out.
   */
  void record() {
    if (recording != null) {
      initializeClasses();
      recording.start();
    }
  }

  /**
   * Initializes, before the recording starts, every class of the library and the JDK's classes for
   * a future completed by an exception. On JDK 25 a virtual thread that waits for another thread's
   * initialization of a class is pinned ("Contended monitor enter", no class-loading frame on its
   * stack): a warm-up whose rounds all succeeded left {@code CompletionException} to the first
   * failed command under load, and 10 ms of waiting for it was reported as pinned in the library.
   */
  private void initializeClasses() {
    ClassLoader loader = RedLock.class.getClassLoader();
    for (String name : libraryClasses) {
      try {
        Class.forName(name, true, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        // a class for an absent optional dependency: never used here either
      }
    }
    CompletableFuture<Object> failed = new CompletableFuture<>();
    failed.completeExceptionally(new IllegalStateException("warm-up"));
    failed.whenComplete((value, error) -> {}).exceptionally(error -> null).join();
    new CompletionException(new IllegalStateException("warm-up")).getCause();
  }

  /** Whether workers run on virtual threads. */
  boolean virtual() {
    return virtual;
  }

  /** Virtual threads in the profile, platform threads otherwise. */
  ThreadFactory factory(String prefix) {
    if (!virtual) {
      return task -> new Thread(task, prefix);
    }
    try {
      // Thread.ofVirtual() is JDK 21 API; the tests compile for 17.
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      Class<?> type = Class.forName("java.lang.Thread$Builder");
      type.getMethod("name", String.class, long.class).invoke(builder, prefix, 0L);
      return (ThreadFactory) type.getMethod("factory").invoke(builder);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("no virtual threads on " + Runtime.version(), e);
    }
  }

  /** Stops recording and returns every stack pinned inside the library. */
  List<String> pinnedInLibrary() throws IOException {
    if (recording == null) {
      return List.of();
    }
    recording.stop();
    Path file = Files.createTempFile("redlock-pinned", ".jfr");
    try {
      recording.dump(file);
      List<String> pinned = new ArrayList<>();
      for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
        if (event.getStackTrace() == null) {
          continue;
        }
        List<RecordedFrame> frames = event.getStackTrace().getFrames();
        if (inLibrary(frames) && !loadingAClass(frames)) {
          pinned.add(
              frames.stream()
                  .map(f -> f.getMethod().getType().getName() + "." + f.getMethod().getName())
                  .collect(
                      Collectors.joining(
                          "\n  ", "pinned for " + event.getDuration() + why(event) + ":\n  ", "")));
        }
      }
      return pinned;
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** The JVM's reason and blocking operation, where it gives them (JDK 24 and later). */
  private static String why(RecordedEvent event) {
    StringBuilder why = new StringBuilder();
    for (String field : List.of("pinnedReason", "blockingOperation")) {
      if (event.hasField(field) && event.getString(field) != null) {
        why.append(why.length() == 0 ? " (" : ", ").append(event.getString(field));
      }
    }
    return why.length() == 0 ? "" : why.append(')').toString();
  }

  private boolean inLibrary(List<RecordedFrame> frames) {
    return frames.stream()
        .anyMatch(f -> libraryClasses.contains(f.getMethod().getType().getName()));
  }

  /**
   * Whether the thread was pinned by the JVM loading a class the library (or a dependency) uses for
   * the first time: the class loader's lock, once per class, not a wait of the library's.
   */
  private boolean loadingAClass(List<RecordedFrame> frames) {
    for (RecordedFrame frame : frames) {
      String type = frame.getMethod().getType().getName();
      if (libraryClasses.contains(type)) {
        return false; // reached the library's own frames first
      }
      if (type.equals("java.lang.ClassLoader") && frame.getMethod().getName().equals("loadClass")
          || frame.getMethod().getName().equals("<clinit>")) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void close() {
    if (recording != null) {
      recording.close();
    }
  }

  /** The names of the library's classes, from the directory or jar RedLock was loaded from. */
  private static Set<String> libraryClasses() {
    try {
      Path root =
          Path.of(RedLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(root)) {
        return classesIn(root.resolve("dev/redlock"));
      }
      try (FileSystem jar = FileSystems.newFileSystem(root)) {
        return classesIn(jar.getPath("dev/redlock"));
      }
    } catch (IOException | URISyntaxException e) {
      throw new IllegalStateException("cannot list the library's classes", e);
    }
  }

  /** Every class under {@code dir} ({@code dev/redlock}), the internal packages' included. */
  private static Set<String> classesIn(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      return files
          .map(p -> dir.relativize(p).toString().replace(p.getFileSystem().getSeparator(), "."))
          .filter(name -> name.endsWith(".class"))
          .map(name -> "dev.redlock." + name.substring(0, name.length() - ".class".length()))
          .collect(Collectors.toUnmodifiableSet());
    }
  }
}
