package dev.redlock.simulation;

import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.Map;
import org.luaj.vm2.LuaClosure;
import org.luaj.vm2.LuaValue;
import org.luaj.vm2.Prototype;

/**
 * Which lines of each script a {@link SimMaster} ran ({@link SimMaster#coverage}), beside the lines
 * that hold code: the differential test's measure of the script branches its sequences reached. Not
 * thread-safe: the master's one caller records into it.
 */
public final class LineCoverage {

  private final Map<String, BitSet> run = new LinkedHashMap<>();
  private final Map<String, BitSet> code = new LinkedHashMap<>();

  /** The lines run so far of the script with SHA-1 {@code sha}, its lines of code noted first. */
  BitSet of(String sha, LuaValue chunk) {
    if (!code.containsKey(sha) && chunk instanceof LuaClosure closure) {
      BitSet lines = new BitSet();
      addLines(closure.p, lines);
      code.put(sha, lines);
    }
    return run.computeIfAbsent(sha, any -> new BitSet());
  }

  private static void addLines(Prototype p, BitSet lines) {
    for (int line : p.lineinfo) {
      lines.set(line);
    }
    for (Prototype nested : p.p) {
      addLines(nested, lines);
    }
  }

  /**
   * The lines of code of the script with SHA-1 {@code sha} that never ran (empty if it never ran at
   * all, or every line did).
   */
  public BitSet neverRun(String sha) {
    BitSet never = (BitSet) code.getOrDefault(sha, new BitSet()).clone();
    never.andNot(run.getOrDefault(sha, new BitSet()));
    return never;
  }

  /** How many lines of code the script with SHA-1 {@code sha} has, and how many of them ran. */
  public int[] counts(String sha) {
    BitSet lines = code.getOrDefault(sha, new BitSet());
    BitSet ran = (BitSet) run.getOrDefault(sha, new BitSet()).clone();
    ran.and(lines);
    return new int[] {lines.cardinality(), ran.cardinality()};
  }
}
