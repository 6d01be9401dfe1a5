package dev.redlock.simulation;

import dev.redlock.internal.transport.SimNodeClient;
import java.util.List;
import java.util.Map;

/**
 * What the harness watches besides the clients' calls: the masters' commands for the trace, the
 * waiters that queue at a gate, and the turn notices that name them.
 */
final class Observers {

  private Observers() {}

  /**
   * Whether a run's trace shows every command the masters run for the clients, with its reply
   * ({@code -Dsimulation.traceMasters=true}): the timeline of a failure down to each master.
   */
  static final boolean TRACE_MASTERS = Boolean.getBoolean("simulation.traceMasters");

  /** A command and its reply on one line: tokens and long arguments cut to 8 characters. */
  static String brief(List<String> args, Object reply) {
    String name = args.get(0).toUpperCase(java.util.Locale.ROOT);
    if (name.equals("INFO") || name.equals("CONFIG") || name.equals("SCRIPT")) {
      return name + " ...";
    }
    StringBuilder line = new StringBuilder();
    for (String arg : args) {
      line.append(arg.length() > 8 ? arg.substring(0, 8) : arg).append(' ');
    }
    String answer =
        reply instanceof byte[] bytes
            ? new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1)
            : reply instanceof List<?> list ? list.size() + " items" : String.valueOf(reply);
    return line.append("-> ")
        .append(answer.length() > 16 ? answer.substring(0, 16) : answer)
        .toString();
  }

  /** How long a waiter's name is, and its client's name at its start (Wakeups). */
  static final int WAITER_LENGTH = 32;

  static final int CLIENT_NAME_LENGTH = 16;

  /**
   * Notes which process each waiter that queues at a gate (queue.lua's acquire) belongs to, and
   * tells {@code check} of each ask and leave of client {@code client}'s waiters.
   */
  static SimNodeClient observeQueueing(
      SimNodeClient node, Map<String, SimProcess> waiters, Checker check, int client) {
    node.observe(
        args -> {
          if (args.size() < 4) {
            return;
          }
          String name = ascii(args.get(0));
          if (!name.equalsIgnoreCase("EVALSHA") && !name.equalsIgnoreCase("EVAL")) {
            return;
          }
          int at = 3 + Integer.parseInt(ascii(args.get(2)));
          String verb = args.size() > at + 3 ? ascii(args.get(at)) : "";
          String waiter = verb.isEmpty() ? "" : ascii(args.get(at + 3));
          if (waiter.length() != WAITER_LENGTH) {
            return; // not a queue's command (keyset.lua's acquire has no waiter)
          }
          int r = Workload.RESOURCES.indexOf(ascii(args.get(3)));
          if (verb.equals("acquire") || verb.equals("join")) { // a set's waiter joins
            waiters.put(waiter.substring(0, CLIENT_NAME_LENGTH), node.process());
            if (r >= 0) {
              check.queueAsk(client, r, waiter);
            }
          } else if (verb.equals("leave")) {
            check.queueLeave(r, waiter);
          }
        });
    return node;
  }

  /**
   * Tells {@code check} of each acquire of a lease that master {@code master} ran, and of each
   * release that ran there (not answered NOSCRIPT), by the lease's token: the plain acquire ({@code
   * SET key token NX}), queue.lua's and keyset.lua's acquires, release.lua and keyset.lua's
   * release.
   */
  static void leases(List<String> args, Object reply, Checker check, int master) {
    String name = args.get(0);
    if (name.equalsIgnoreCase("SET") && args.size() > 3) {
      check.acquireRan(master, args.get(2));
      return;
    }
    if (!(name.equalsIgnoreCase("EVALSHA") || name.equalsIgnoreCase("EVAL"))
        || args.size() < 4
        || reply instanceof SimMaster.Error) {
      return;
    }
    String script = SimNodeClient.SCRIPT_NAMES.get(args.get(1));
    int at = 3 + Integer.parseInt(args.get(2)); // the first argument after the keys
    if (script == null || args.size() <= at) {
      return;
    }
    String first = args.get(at);
    switch (script) {
      case "release" -> check.releaseRan(master, first); // at the gate, the token its one argument
      case "queue", "keyset" -> {
        if (args.size() <= at + 1) {
          return;
        }
        if (first.equals("acquire")) {
          check.acquireRan(master, args.get(at + 1));
        } else if (first.equals("release")) {
          check.releaseRan(master, args.get(at + 1));
        }
      }
      default -> {}
    }
  }

  private static String ascii(byte[] bytes) {
    return new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1);
  }

  /**
   * Tells {@code check} of each turn notice {@code pubsub}'s master publishes (a release or a yield
   * at a gate naming its first waiter, on its client's channel or the resource's): the client whose
   * waiter it names, known by the name its queue acquires carry ({@link #observeQueueing}), unless
   * that client's wake-up link to the master was down then (a reset: it could not hear).
   */
  static void observeTurns(
      SimPubSub pubsub, Map<String, SimProcess> waiters, SimProcess[] processes, Checker check) {
    pubsub.observe(
        (channel, message, down) -> {
          if (!message.startsWith("turn:") || message.length() < 5 + WAITER_LENGTH) {
            return;
          }
          SimProcess named = waiters.get(message.substring(5, 5 + CLIENT_NAME_LENGTH));
          String key =
              channel.startsWith("redlock:wake:@")
                  ? message.substring(5 + WAITER_LENGTH)
                  : channel.substring("redlock:wake:".length());
          int r = Workload.RESOURCES.indexOf(key);
          for (int c = 0; c < processes.length; c++) {
            if (processes[c] == named && !down.contains(named) && r >= 0) {
              check.named(c, r, message.substring(5, 5 + WAITER_LENGTH));
            }
          }
        });
  }
}
