package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.luaj.vm2.Globals;
import org.luaj.vm2.LoadState;
import org.luaj.vm2.LuaError;
import org.luaj.vm2.LuaString;
import org.luaj.vm2.LuaTable;
import org.luaj.vm2.LuaValue;
import org.luaj.vm2.Varargs;
import org.luaj.vm2.compiler.LuaC;
import org.luaj.vm2.lib.Bit32Lib;
import org.luaj.vm2.lib.OneArgFunction;
import org.luaj.vm2.lib.PackageLib;
import org.luaj.vm2.lib.StringLib;
import org.luaj.vm2.lib.TableLib;
import org.luaj.vm2.lib.VarArgFunction;
import org.luaj.vm2.lib.ZeroArgFunction;
import org.luaj.vm2.lib.jse.JseBaseLib;
import org.luaj.vm2.lib.jse.JseMathLib;

/**
 * A simulated master's scripting: EVAL, EVALSHA and SCRIPT on one Lua interpreter (LuaJ), with the
 * {@code redis} table a script calls: {@code call}, {@code pcall}, {@code sha1hex}, {@code
 * error_reply}, {@code status_reply}, {@code replicate_commands}, {@code log}. Replies cross
 * between Redis and Lua as Redis converts them: a bulk string is a Lua string, a nil is {@code
 * false}, an integer a number, an array a table, a status {@code {ok=...}}, an error {@code
 * {err=...}} (raised by {@code call}, returned by {@code pcall}); a script's return value the other
 * way, a number truncated to an integer, {@code true} 1, {@code false} nil, a table an array up to
 * its first nil. A number passed to {@code redis.call} is written as C's {@code %.17g}, as Redis
 * does.
 */
final class Scripts {

  private final SimMaster master;
  private final Globals globals;
  private final Map<String, LuaValue> loaded = new HashMap<>(); // SHA-1 -> compiled chunk
  private java.util.function.UnaryOperator<String> edit = source -> source;
  private LineCoverage coverage; // null: none recorded
  private java.util.BitSet running; // the lines run of the script running now, or null

  Scripts(SimMaster master) {
    this.master = master;
    this.globals = new Globals();
    globals.load(new JseBaseLib());
    globals.load(new PackageLib());
    globals.load(new TableLib());
    globals.load(new StringLib());
    globals.load(new JseMathLib());
    globals.load(new Bit32Lib());
    LoadState.install(globals);
    LuaC.install(globals);
    LuaTable redis = new LuaTable();
    redis.set("call", new Call(true));
    redis.set("pcall", new Call(false));
    redis.set(
        "sha1hex",
        new OneArgFunction() {
          @Override
          public LuaValue call(LuaValue text) {
            return LuaValue.valueOf(SimMaster.sha1hex(bytes(text.checkstring())));
          }
        });
    redis.set(
        "error_reply",
        new OneArgFunction() {
          @Override
          public LuaValue call(LuaValue text) {
            LuaTable t = new LuaTable();
            t.set("err", text.checkstring());
            return t;
          }
        });
    redis.set(
        "status_reply",
        new OneArgFunction() {
          @Override
          public LuaValue call(LuaValue text) {
            LuaTable t = new LuaTable();
            t.set("ok", text.checkstring());
            return t;
          }
        });
    redis.set(
        "replicate_commands",
        new ZeroArgFunction() {
          @Override
          public LuaValue call() {
            return LuaValue.TRUE;
          }
        });
    redis.set(
        "log",
        new VarArgFunction() {
          @Override
          public Varargs invoke(Varargs args) {
            return LuaValue.NONE;
          }
        });
    redis.set("LOG_DEBUG", 0);
    redis.set("LOG_VERBOSE", 1);
    redis.set("LOG_NOTICE", 2);
    redis.set("LOG_WARNING", 3);
    globals.set("redis", redis);
  }

  /** SCRIPT LOAD, EXISTS, FLUSH. */
  Object command(List<String> args) {
    String sub = args.size() >= 2 ? args.get(1).toUpperCase(Locale.ROOT) : "";
    switch (sub) {
      case "LOAD" -> {
        if (args.size() != 3) {
          break;
        }
        Object compiled = load(args.get(2));
        return compiled instanceof SimMaster.Error ? compiled : SimMaster.bytes((String) compiled);
      }
      case "EXISTS" -> {
        List<Object> out = new ArrayList<>();
        for (int i = 2; i < args.size(); i++) {
          out.add(loaded.containsKey(args.get(i).toLowerCase(Locale.ROOT)) ? 1L : 0L);
        }
        return out;
      }
      case "FLUSH" -> {
        flush();
        return SimMaster.OK;
      }
      default -> {}
    }
    return new SimMaster.Error(
        "ERR unknown subcommand or wrong number of arguments for 'script' command");
  }

  void flush() {
    loaded.clear();
  }

  /**
   * From now on, records which lines of each script run into {@code coverage} (a line hook of
   * LuaJ's debug library: slower, so only the differential test asks for it).
   */
  void coverage(LineCoverage coverage) {
    this.coverage = coverage;
    globals.load(new org.luaj.vm2.lib.DebugLib());
    LuaValue hook =
        new org.luaj.vm2.lib.TwoArgFunction() {
          @Override
          public LuaValue call(LuaValue event, LuaValue line) {
            if (running != null) {
              running.set(line.toint());
            }
            return NONE;
          }
        };
    globals.get("debug").get("sethook").call(hook, LuaValue.valueOf("l"));
  }

  /** From now on, each script loaded runs as {@code edit} rewrites it (under its own SHA-1). */
  void edit(java.util.function.UnaryOperator<String> edit) {
    this.edit = edit;
  }

  /** Compiles and keeps a script; its SHA-1, or the compile error. */
  private Object load(String source) {
    String sha = SimMaster.sha1hex(source.getBytes(ISO_8859_1));
    if (!loaded.containsKey(sha)) {
      try {
        loaded.put(sha, globals.load(edit.apply(source), "@user_script"));
      } catch (LuaError e) {
        return new SimMaster.Error("ERR Error compiling script (new function): " + e.getMessage());
      }
    }
    return sha;
  }

  /** EVAL (the script's source) or EVALSHA (its SHA-1): {@code args} is the whole command. */
  Object eval(boolean source, List<String> args) {
    int numkeys;
    try {
      numkeys = Integer.parseInt(args.get(2));
    } catch (NumberFormatException e) {
      return new SimMaster.Error("ERR value is not an integer or out of range");
    }
    if (numkeys < 0) {
      return new SimMaster.Error("ERR Number of keys can't be negative");
    }
    if (numkeys > args.size() - 3) {
      return new SimMaster.Error("ERR Number of keys can't be greater than number of args");
    }
    LuaValue chunk;
    String sha;
    if (source) {
      Object loadedSha = load(args.get(1));
      if (loadedSha instanceof SimMaster.Error error) {
        return error;
      }
      sha = (String) loadedSha;
      chunk = loaded.get(sha);
    } else {
      sha = args.get(1).toLowerCase(Locale.ROOT);
      chunk = loaded.get(sha);
      if (chunk == null) {
        return new SimMaster.Error("NOSCRIPT No matching script. Please use EVAL.");
      }
    }
    running = coverage == null ? null : coverage.of(sha, chunk);
    LuaTable keys = new LuaTable();
    LuaTable argv = new LuaTable();
    for (int i = 0; i < numkeys; i++) {
      keys.set(i + 1, lua(args.get(3 + i)));
    }
    for (int i = 3 + numkeys; i < args.size(); i++) {
      argv.set(i - 2 - numkeys, lua(args.get(i)));
    }
    globals.set("KEYS", keys);
    globals.set("ARGV", argv);
    return master.frozen(
        () -> {
          try {
            return toRedis(chunk.call());
          } catch (LuaError e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
              if (t instanceof RaisedReply raised) {
                return raised.error;
              }
            }
            return new SimMaster.Error("ERR user_script: " + e.getMessage());
          }
        });
  }

  /** A {@code redis.call} that failed: the script ends with the command's error. */
  private static final class RaisedReply extends LuaError {
    final SimMaster.Error error;

    RaisedReply(SimMaster.Error error) {
      super(error.message());
      this.error = error;
    }
  }

  /** {@code redis.call} ({@code raise}) or {@code redis.pcall}. */
  private final class Call extends VarArgFunction {
    private final boolean raise;

    Call(boolean raise) {
      this.raise = raise;
    }

    @Override
    public Varargs invoke(Varargs luaArgs) {
      if (luaArgs.narg() == 0) {
        return fail(
            new SimMaster.Error(
                "ERR Please specify at least one argument for this redis lib call"));
      }
      List<String> args = new ArrayList<>(luaArgs.narg());
      for (int i = 1; i <= luaArgs.narg(); i++) {
        LuaValue arg = luaArgs.arg(i);
        if (arg.type() == LuaValue.TNUMBER) {
          args.add(ZSet.g17(arg.todouble()));
        } else if (arg.type() == LuaValue.TSTRING) {
          args.add(new String(bytes(arg.checkstring()), ISO_8859_1));
        } else {
          return fail(
              new SimMaster.Error(
                  "ERR Lua redis lib command arguments must be strings or integers"));
        }
      }
      Object reply = master.run(args, true);
      if (reply instanceof SimMaster.Error error) {
        return fail(error);
      }
      return toLua(reply);
    }

    private LuaValue fail(SimMaster.Error error) {
      if (raise) {
        throw new RaisedReply(error);
      }
      LuaTable t = new LuaTable();
      t.set("err", error.message());
      return t;
    }
  }

  private static LuaValue toLua(Object reply) {
    if (reply == null) {
      return LuaValue.FALSE;
    }
    if (reply instanceof byte[] b) {
      return LuaString.valueOf(b);
    }
    if (reply instanceof Long n) {
      return LuaValue.valueOf(n.doubleValue());
    }
    if (reply instanceof SimMaster.Status status) {
      LuaTable t = new LuaTable();
      t.set("ok", status.text());
      return t;
    }
    if (reply instanceof SimMaster.Error error) {
      LuaTable t = new LuaTable();
      t.set("err", error.message());
      return t;
    }
    List<?> list = (List<?>) reply;
    LuaTable t = new LuaTable();
    for (int i = 0; i < list.size(); i++) {
      t.set(i + 1, toLua(list.get(i)));
    }
    return t;
  }

  private static Object toRedis(LuaValue value) {
    switch (value.type()) {
      case LuaValue.TNUMBER:
        return (long) value.todouble();
      case LuaValue.TSTRING:
        return bytes(value.checkstring());
      case LuaValue.TBOOLEAN:
        return value.toboolean() ? 1L : null;
      case LuaValue.TTABLE:
        LuaValue err = value.get("err");
        if (err.isstring()) {
          return new SimMaster.Error(err.tojstring());
        }
        LuaValue ok = value.get("ok");
        if (ok.isstring()) {
          return new SimMaster.Status(ok.tojstring());
        }
        List<Object> out = new ArrayList<>();
        for (int i = 1; !value.get(i).isnil(); i++) {
          out.add(toRedis(value.get(i)));
        }
        return out;
      default:
        return null;
    }
  }

  private static LuaString lua(String s) {
    return LuaString.valueOf(s.getBytes(ISO_8859_1));
  }

  private static byte[] bytes(LuaString s) {
    byte[] b = new byte[s.length()];
    s.copyInto(0, b, 0, b.length);
    return b;
  }
}
