package dev.redlock.luamutation;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Makes the mutants of one Lua script: each is the script with one small change a careless edit
 * could make, and the tests that cover the script should notice every one that changes what the
 * script does. The operators are {@link Operator}'s. The scripts are read as tokens (strings and
 * comments are never mutated), not parsed: they are short and written one statement to a line,
 * which the write deletion and the reorder rely on.
 */
final class LuaMutants {

  /** What a mutant changed. */
  enum Operator {
    /** {@code if c then} (or {@code elseif}) to {@code if not (c) then}. */
    NEGATE_CONDITION,
    /** {@code <} to {@code <=}, {@code >} to {@code >=}, {@code ==} to {@code ~=}, and back. */
    RELAX_COMPARISON,
    /**
     * A write ({@code SET}, {@code DEL}, {@code PEXPIRE}, {@code ZADD}, {@code ZREM}, {@code
     * PUBLISH}, ...) left out: the statement removed, or, where its reply is used, the reply a
     * write that changed nothing gives ({@code 0}).
     */
    DELETE_WRITE,
    /** The TIME arithmetic's factors swapped: {@code 1000} to {@code 1000000} and back. */
    SWAP_MS_US,
    /**
     * Seconds for milliseconds: {@code PX} to {@code EX}, {@code PEXPIRE} to {@code EXPIRE}, {@code
     * PTTL} to {@code TTL}, and back.
     */
    SWAP_PX_EX,
    /**
     * The delete moved after the publish that follows it (to after that statement, and before each
     * return in it).
     */
    REORDER_DELETE_PUBLISH
  }

  /**
   * One mutant.
   *
   * @param script the script's file name
   * @param operator what it changed
   * @param line the line (from 1) of the change in the original
   * @param change what was changed into what
   * @param lineText the original line, trimmed: with the change, what names the mutant whatever
   *     lines are added above it
   * @param text the mutated script
   */
  record Mutant(
      String script, Operator operator, int line, String change, String lineText, String text) {

    /** Names the mutant in the report and in the survivors' explanations. */
    String key() {
      return script + "\t" + operator + "\t" + lineText + "\t" + change;
    }

    @Override
    public String toString() {
      return script + ":" + line + " " + operator + " " + change;
    }
  }

  /** Redis commands that write (or, for PUBLISH, tell): each call of one is deleted once. */
  static final Set<String> WRITES =
      Set.of(
          "SET",
          "SETNX",
          "SETEX",
          "PSETEX",
          "GETSET",
          "GETDEL",
          "MSET",
          "DEL",
          "UNLINK",
          "EXPIRE",
          "PEXPIRE",
          "EXPIREAT",
          "PEXPIREAT",
          "PERSIST",
          "INCR",
          "INCRBY",
          "DECR",
          "DECRBY",
          "ZADD",
          "ZREM",
          "ZINCRBY",
          "ZREMRANGEBYSCORE",
          "ZPOPMIN",
          "HSET",
          "HDEL",
          "LPUSH",
          "RPUSH",
          "PUBLISH");

  private static final Map<String, String> RELAXED =
      Map.of("<", "<=", "<=", "<", ">", ">=", ">=", ">", "==", "~=", "~=", "==");

  private static final Map<String, String> TIME_UNITS =
      Map.of("1000", "1000000", "1000000", "1000");

  private static final Map<String, String> EXPIRY_UNITS =
      Map.of(
          "PX",
          "EX",
          "EX",
          "PX",
          "PEXPIRE",
          "EXPIRE",
          "EXPIRE",
          "PEXPIRE",
          "PEXPIREAT",
          "EXPIREAT",
          "EXPIREAT",
          "PEXPIREAT",
          "PTTL",
          "TTL",
          "TTL",
          "PTTL");

  private LuaMutants() {}

  /**
   * Every mutant of {@code text}, the script {@code script}, in the operators' and lines' order.
   */
  static List<Mutant> of(String script, String text) {
    List<Token> tokens = tokens(text);
    List<Mutant> mutants = new ArrayList<>();
    Source source = new Source(script, text);
    negations(source, tokens, mutants);
    comparisons(source, tokens, mutants);
    writeDeletions(source, tokens, mutants);
    for (Token t : tokens) {
      if (t.kind == Kind.NUMBER && TIME_UNITS.containsKey(t.text)) {
        mutants.add(source.replace(Operator.SWAP_MS_US, t, TIME_UNITS.get(t.text)));
      }
    }
    for (Token t : tokens) {
      String value = t.kind == Kind.STRING ? t.stringValue().toUpperCase(Locale.ROOT) : null;
      if (value != null && EXPIRY_UNITS.containsKey(value)) {
        String quote = t.text.substring(0, 1);
        mutants.add(
            source.replace(Operator.SWAP_PX_EX, t, quote + EXPIRY_UNITS.get(value) + quote));
      }
    }
    reorders(source, tokens, mutants);
    return mutants;
  }

  private static void negations(Source source, List<Token> tokens, List<Mutant> mutants) {
    for (int i = 0; i < tokens.size(); i++) {
      Token t = tokens.get(i);
      if (t.isName("if") || t.isName("elseif")) {
        int then = i + 1;
        while (then < tokens.size() && !tokens.get(then).isName("then")) {
          then++;
        }
        Token first = tokens.get(i + 1);
        Token last = tokens.get(then - 1);
        String condition = source.text.substring(first.start, last.end);
        mutants.add(
            source.mutant(
                Operator.NEGATE_CONDITION,
                first,
                first.start,
                last.end,
                "not (" + condition + ")",
                "`" + t.text + " " + oneLine(condition) + "` negated"));
      }
    }
  }

  private static void comparisons(Source source, List<Token> tokens, List<Mutant> mutants) {
    for (Token t : tokens) {
      if (t.kind == Kind.OPERATOR && RELAXED.containsKey(t.text)) {
        mutants.add(source.replace(Operator.RELAX_COMPARISON, t, RELAXED.get(t.text)));
      }
    }
  }

  private static void writeDeletions(Source source, List<Token> tokens, List<Mutant> mutants) {
    for (int i = 0; i < tokens.size(); i++) {
      int close = writeCall(tokens, i);
      if (close < 0) {
        continue;
      }
      Token redis = tokens.get(i);
      Token end = tokens.get(close);
      String call = source.text.substring(redis.start, end.end);
      String command = tokens.get(i + 4).stringValue().toUpperCase(Locale.ROOT);
      if (statement(source.text, redis.start)) {
        mutants.add(
            source.mutant(
                Operator.DELETE_WRITE,
                redis,
                redis.start,
                end.end,
                "",
                "`" + oneLine(call) + "` deleted (" + command + ")"));
      } else {
        mutants.add(
            source.mutant(
                Operator.DELETE_WRITE,
                redis,
                redis.start,
                end.end,
                "0",
                "`" + oneLine(call) + "` not called, its reply 0 (" + command + ")"));
      }
    }
  }

  /**
   * The delete moved after the publish: for a statement deleting keys ({@code DEL}), the next
   * statement of its block that publishes (itself or by a local function that does) is found; the
   * delete goes after it, and before each {@code return} inside it, so that it still runs on every
   * path, only after the notice.
   */
  private static void reorders(Source source, List<Token> tokens, List<Mutant> mutants) {
    Set<String> publishers = publishingFunctions(tokens);
    String[] lines = source.text.split("\n", -1);
    for (int i = 0; i < tokens.size(); i++) {
      int close = writeCall(tokens, i);
      if (close < 0
          || !tokens.get(i + 4).stringValue().equalsIgnoreCase("DEL")
          || !statement(source.text, tokens.get(i).start)) {
        continue;
      }
      int delLine = tokens.get(i).line;
      String delete = lines[delLine - 1].trim();
      // Walks the statements after the delete at its depth: one line each, or a block to its end.
      int line = delLine + 1;
      while (line <= lines.length) {
        int depth = 0;
        int last = line;
        boolean publishes = false;
        do {
          for (Token t : lineTokens(tokens, last)) {
            depth += t.depthChange();
            publishes |= t.isPublish() || (t.kind == Kind.NAME && publishers.contains(t.text));
          }
          if (depth < 0) {
            break;
          }
          last++;
        } while (depth > 0 && last <= lines.length);
        if (depth < 0 || last > lines.length && depth > 0) {
          break; // the block ended: nothing after the delete publishes
        }
        if (publishes) {
          StringBuilder mutated = new StringBuilder();
          for (int l = 1; l <= lines.length; l++) {
            if (l == delLine) {
              continue;
            }
            String text = lines[l - 1];
            if (l >= line && l < last && text.trim().startsWith("return")) {
              mutated.append(indent(text)).append(delete).append('\n');
            }
            mutated.append(text);
            if (l == last - 1) {
              mutated.append('\n').append(indent(lines[delLine - 1])).append(delete);
            }
            if (l < lines.length) {
              mutated.append('\n');
            }
          }
          mutants.add(
              new Mutant(
                  source.script,
                  Operator.REORDER_DELETE_PUBLISH,
                  delLine,
                  "`" + delete + "` moved after the publish of lines " + line + "-" + (last - 1),
                  delete,
                  mutated.toString()));
          break;
        }
        line = last;
      }
    }
  }

  /** The names of the local functions that publish. */
  private static Set<String> publishingFunctions(List<Token> tokens) {
    Set<String> names = new java.util.HashSet<>();
    for (int i = 0; i + 2 < tokens.size(); i++) {
      if (tokens.get(i).isName("local") && tokens.get(i + 1).isName("function")) {
        int depth = 0;
        for (int j = i + 1; j < tokens.size(); j++) {
          depth += tokens.get(j).depthChange();
          if (tokens.get(j).isPublish()) {
            names.add(tokens.get(i + 2).text);
          }
          if (depth == 0) {
            break;
          }
        }
      }
    }
    return names;
  }

  /**
   * If tokens from {@code i} are {@code redis.call('W', ...)} or {@code redis.pcall} of a write
   * {@code W}: the index of its closing parenthesis, else -1.
   */
  private static int writeCall(List<Token> tokens, int i) {
    if (i + 4 >= tokens.size()
        || !tokens.get(i).isName("redis")
        || !tokens.get(i + 1).text.equals(".")
        || !(tokens.get(i + 2).isName("call") || tokens.get(i + 2).isName("pcall"))
        || !tokens.get(i + 3).text.equals("(")
        || tokens.get(i + 4).kind != Kind.STRING
        || !WRITES.contains(tokens.get(i + 4).stringValue().toUpperCase(Locale.ROOT))) {
      return -1;
    }
    int depth = 0;
    for (int j = i + 3; j < tokens.size(); j++) {
      String s = tokens.get(j).text;
      if (tokens.get(j).kind == Kind.OPERATOR && s.equals("(")) {
        depth++;
      } else if (tokens.get(j).kind == Kind.OPERATOR && s.equals(")") && --depth == 0) {
        return j;
      }
    }
    return -1;
  }

  /** Whether only blanks come before {@code offset} on its line: a call there is a statement. */
  private static boolean statement(String text, int offset) {
    int start = text.lastIndexOf('\n', offset - 1) + 1;
    return text.substring(start, offset).isBlank();
  }

  private static List<Token> lineTokens(List<Token> tokens, int line) {
    return tokens.stream().filter(t -> t.line == line).toList();
  }

  private static String indent(String line) {
    return line.substring(0, line.length() - line.stripLeading().length());
  }

  private static String oneLine(String code) {
    return code.replaceAll("\\s*\n\\s*", " ");
  }

  /** The original script, and how a mutant of it is made. */
  private record Source(String script, String text) {

    Mutant replace(Operator operator, Token token, String replacement) {
      return mutant(
          operator,
          token,
          token.start,
          token.end,
          replacement,
          "`" + token.text + "` -> `" + replacement + "`");
    }

    /** The change is named with its column, which tells apart two alike on one line. */
    Mutant mutant(
        Operator operator, Token at, int start, int end, String replacement, String change) {
      int lineStart = text.lastIndexOf('\n', at.start - 1) + 1;
      change = change + " at column " + (at.start - lineStart + 1);
      int lineEnd = text.indexOf('\n', at.start);
      String lineText = text.substring(lineStart, lineEnd < 0 ? text.length() : lineEnd).trim();
      return new Mutant(
          script,
          operator,
          at.line,
          change,
          lineText,
          text.substring(0, start) + replacement + text.substring(end));
    }
  }

  enum Kind {
    NAME,
    NUMBER,
    STRING,
    OPERATOR
  }

  /** A token of the script: its text, where it starts and ends, and its line (from 1). */
  record Token(Kind kind, String text, int start, int end, int line) {

    boolean isName(String name) {
      return kind == Kind.NAME && text.equals(name);
    }

    boolean isPublish() {
      return kind == Kind.STRING && stringValue().equalsIgnoreCase("PUBLISH");
    }

    /** A quoted string's value (the scripts' strings have no escapes that matter here). */
    String stringValue() {
      return text.substring(1, text.length() - 1);
    }

    /** How the token changes the depth of blocks: +1 opens one, -1 closes one. */
    int depthChange() {
      if (kind != Kind.NAME) {
        return 0;
      }
      return switch (text) {
        case "if", "function", "do", "repeat" -> 1;
        case "end", "until" -> -1;
        default -> 0;
      };
    }
  }

  /**
   * The script's tokens, comments left out. {@code for} and {@code while} open their block with
   * {@code do}, so only {@code do} counts for them.
   */
  static List<Token> tokens(String text) {
    List<Token> tokens = new ArrayList<>();
    int line = 1;
    int i = 0;
    while (i < text.length()) {
      char c = text.charAt(i);
      if (c == '\n') {
        line++;
        i++;
      } else if (Character.isWhitespace(c)) {
        i++;
      } else if (text.startsWith("--", i)) {
        int end = text.indexOf('\n', i);
        i = end < 0 ? text.length() : end;
      } else if (c == '\'' || c == '"') {
        int j = i + 1;
        while (j < text.length() && text.charAt(j) != c) {
          j += text.charAt(j) == '\\' ? 2 : 1;
        }
        tokens.add(new Token(Kind.STRING, text.substring(i, j + 1), i, j + 1, line));
        i = j + 1;
      } else if (Character.isLetter(c) || c == '_') {
        int j = i;
        while (j < text.length()
            && (Character.isLetterOrDigit(text.charAt(j)) || text.charAt(j) == '_')) {
          j++;
        }
        tokens.add(new Token(Kind.NAME, text.substring(i, j), i, j, line));
        i = j;
      } else if (Character.isDigit(c)) {
        int j = i;
        while (j < text.length()
            && (Character.isLetterOrDigit(text.charAt(j)) || text.charAt(j) == '.')) {
          j++;
        }
        tokens.add(new Token(Kind.NUMBER, text.substring(i, j), i, j, line));
        i = j;
      } else {
        int length = 1;
        for (String op : List.of("...", "==", "~=", "<=", ">=", "..")) {
          if (text.startsWith(op, i)) {
            length = op.length();
            break;
          }
        }
        tokens.add(new Token(Kind.OPERATOR, text.substring(i, i + length), i, i + length, line));
        i += length;
      }
    }
    return tokens;
  }
}
