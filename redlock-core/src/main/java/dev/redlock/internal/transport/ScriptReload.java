package dev.redlock.internal.transport;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NOSCRIPT handling of one {@link CommandPipeline}: the reload of the scripts, the commands it
 * holds back and sends again, and the scripts sent whole where the master refuses to load them.
 * Guarded by the pipeline's lock, which every method here is called under.
 *
 * <p>A master that lost its scripts (a restart, {@code SCRIPT FLUSH}) answers an EVALSHA with
 * NOSCRIPT. Such a command is sent again, at most once, and its future completes with that answer:
 * an extend, fence, release or shorten still succeeds in the same call. And no command of a lease
 * runs on a master after a later command of the same lease. The master runs one connection's
 * commands in order, so it is a matter of what is written when:
 *
 * <ol>
 *   <li>the first NOSCRIPT starts a reload: {@code SCRIPT LOAD} of every script, written behind
 *       every command in flight. Until its last answer, commands submitted wait, unwritten;
 *   <li>the commands answered NOSCRIPT meanwhile, all written before the reload, are kept in the
 *       order of their answers, which is the order they were written in;
 *   <li>the reload's last answer comes after those of every command written before it. The kept
 *       commands are then written again, whole (EVAL), in that order, and after them those that
 *       waited, in theirs.
 * </ol>
 *
 * So the master runs the commands as first written (those that met NOSCRIPT doing nothing), the
 * reload, the commands sent again, then those that waited: each sent again stays behind the earlier
 * ones and ahead of the later ones. One thing could still put a command behind a later one of its
 * lease: a later command that did not meet NOSCRIPT because another connection loaded the scripts
 * between the two (sent again, an extend would then lengthen the key its lease's shorten had just
 * shortened). So each answer is looked at while a reload is in flight, which is why the kept
 * commands wait for its end rather than go at once: a kept command whose lease (same key, same
 * token) has a later command answered with anything but NOSCRIPT is not sent again but fails, a
 * failed vote. Commands of other leases may run in another order relative to ours, which is
 * harmless: the acquire is no script and never meets NOSCRIPT, and every script acts only where the
 * key holds its own lease's random token (release and shorten delete or shorten only that; extend
 * never re-creates a key and never shortens one; fence stores only while the key holds), so the
 * most another lease can see of ours is our key kept a little longer: its acquire fails on that
 * master, a failed vote, never a second holder. The fencing argument (the lease layer's {@code
 * Leases.storeFence}) holds as well: a fence sent again stores only while our key holds.
 *
 * <p>Sent again whole rather than by EVALSHA behind the reload: a whole command cannot meet
 * NOSCRIPT again (a second flush between the reload and it), nor depend on the reload, which a busy
 * or loading master refuses; it costs the script's few hundred bytes, once. The cost of it all is
 * bounded: a command is sent again at most once (a whole one answered NOSCRIPT fails); its answer
 * may come after its round's deadline, which then counts it as timed out; commands wait about one
 * round trip, within the byte cap, and the stall limit still watches the oldest in flight.
 *
 * <p>A reload refused for a while ({@code LOADING}, {@code BUSY}, ...) changes nothing: the kept
 * commands go whole anyway, and the next NOSCRIPT reloads again. One refused for good ({@code
 * NOPERM}, an unknown command: {@link ServerError#refusesScriptLoad}) sends every script whole for
 * the link's lifetime, as a handshake so refused does ({@link CommandPipeline.Link#scriptsLoaded});
 * a handshake refused for a while fails the connection attempt, retried after the reconnect delay.
 */
final class ScriptReload {

  private static final Logger log = LoggerFactory.getLogger(ScriptReload.class);

  /** The failure of a command that met NOSCRIPT though it was sent whole: at most once. */
  static final NodeUnavailableException NOSCRIPT =
      new NodeUnavailableException(
          "NOSCRIPT: the master lost its scripts (restart or SCRIPT FLUSH) again; not sent again");

  /** The failure of a kept command that a later one of its lease overtook. */
  static final NodeUnavailableException OVERTAKEN =
      new NodeUnavailableException(
          "NOSCRIPT: the master had lost its scripts (restart or SCRIPT FLUSH); not sent again,"
              + " as a later command of the same lease already ran");

  /** How the pipeline writes a command on its link: false if the link broke. */
  @FunctionalInterface
  interface Writer {
    boolean write(NodeCommand command);
  }

  private boolean sendScriptsWhole; // this link's master refused SCRIPT LOAD
  private int reloading; // SCRIPT LOADs in flight; while any, commands wait
  // Answered NOSCRIPT while reloading, to be sent again once the reload is in.
  private final ArrayDeque<NodeCommand> resend = new ArrayDeque<>();

  /** A new link opened; its handshake loaded the scripts, or was refused for good. */
  void opened(boolean scriptsLoaded) {
    sendScriptsWhole = !scriptsLoaded;
    reloading = 0;
  }

  /** Whether a reload is in flight: commands submitted meanwhile wait behind it. */
  boolean reloading() {
    return reloading > 0;
  }

  /** Marks {@code command} to go whole (EVAL) if it calls a script the master refused to load. */
  void wholeIfRefused(NodeCommand command) {
    if (sendScriptsWhole && command.callsScript()) {
      command.sendWhole = true;
    }
  }

  /**
   * Writes {@code SCRIPT LOAD} of every script; returns false if the link broke while writing. Not
   * held to the byte cap: it is a few kilobytes, and it must go out, since the commands that
   * answered NOSCRIPT and those submitted since wait for its answers.
   */
  boolean reload(Writer writer) {
    for (LuaScript script : LuaScript.ALL) {
      NodeCommand load = NodeCommand.load(script);
      reloading++;
      if (!writer.write(load)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Keeps {@code command}, answered NOSCRIPT, to send again whole once the reload is in; returns
   * false if it cannot be (no script, or sent whole already): it then fails with {@link #NOSCRIPT}.
   */
  boolean keep(NodeCommand command) {
    if (!command.callsScript() || command.sendWhole) {
      return false;
    }
    resend.add(command);
    return true;
  }

  /**
   * Takes one answer to the reload, on {@code link}: a refusal for good sends scripts whole from
   * now on. Returns whether it was the last: every command written before the reload is answered.
   */
  boolean reloaded(Object reply, Object link) {
    reloading--;
    if (reply instanceof ServerError error) {
      if (error.refusesScriptLoad()) {
        if (!sendScriptsWhole) {
          log.debug("{} refused SCRIPT LOAD; scripts go whole: {}", link, error.firstLine());
        }
        sendScriptsWhole = true;
      } else {
        log.debug(
            "{} could not reload the scripts, tried again later: {}", link, error.firstLine());
      }
    }
    return reloading == 0;
  }

  /**
   * The reload is answered: writes again, whole, those that answered NOSCRIPT, in order (the
   * pipeline then writes those that waited). Returns false if the link broke.
   */
  boolean sendKept(Writer writer) {
    while (!resend.isEmpty()) {
      NodeCommand again = resend.poll();
      again.sendWhole = true;
      if (!writer.write(again)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Takes out the kept commands of {@code ran}'s lease: {@code ran} was written after them and did
   * not meet NOSCRIPT (another connection reloaded the scripts between), so sent again they would
   * run after it. Returns them, to fail with {@link #OVERTAKEN}.
   */
  List<NodeCommand> overtaken(NodeCommand ran) {
    List<NodeCommand> earlier = null;
    for (var it = resend.iterator(); it.hasNext(); ) {
      NodeCommand kept = it.next();
      if (kept.sameLease(ran)) {
        it.remove();
        if (earlier == null) {
          earlier = new ArrayList<>();
        }
        earlier.add(kept);
      }
    }
    return earlier == null ? List.of() : earlier;
  }

  /** The link is gone: the kept commands go to {@code dropped}, to fail with it. */
  void drainTo(List<NodeCommand> dropped) {
    dropped.addAll(resend);
    resend.clear();
    reloading = 0;
  }
}
