package dev.redlock.internal.preflight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeTicker;
import dev.redlock.internal.transport.NodeClient;
import dev.redlock.internal.transport.NodeReply;
import dev.redlock.internal.transport.NodeUnavailableException;
import dev.redlock.internal.transport.Vote;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Proxy;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/**
 * Every command of the {@link NodeClient} port is either a vote, which an excluded master refuses
 * without sending it, or not, which goes through: a command added to the port and not sorted into
 * one of the lists fails here, so an unfit master cannot vote through a command forgotten by {@link
 * FitNodeClient}.
 */
class FitNodeClientTest {

  /** What goes through to an excluded master: nothing here grants a lease or moves its deadline. */
  private static final Set<String> NOT_VOTES =
      Set.of(
          "leaveQueue",
          "release",
          "releaseAtGate",
          "releaseQuietly",
          "releaseAtNext",
          "noticeWaiters",
          "shorten",
          "admit");

  /** The port's commands: its methods that answer with a master's reply. */
  private static List<Method> commands() {
    List<Method> commands = new ArrayList<>();
    for (Method method : NodeClient.class.getMethods()) {
      Type type = method.getGenericReturnType();
      if (type instanceof ParameterizedType future
          && future.getRawType() == CompletableFuture.class
          && future.getActualTypeArguments()[0] == NodeReply.class) {
        commands.add(method);
      }
    }
    return commands;
  }

  @Test
  void everyCommandOfThePortIsAVoteOrNot() {
    Set<String> named = new TreeSet<>();
    for (Method command : commands()) {
      named.add(command.getName());
      assertTrue(
          FitNodeClient.VOTES.contains(command.getName()) ^ NOT_VOTES.contains(command.getName()),
          command.getName() + " must be in exactly one of FitNodeClient.VOTES and NOT_VOTES");
    }
    Set<String> listed = new TreeSet<>(FitNodeClient.VOTES);
    listed.addAll(NOT_VOTES);
    assertEquals(listed, named, "a listed command is not on the port");
  }

  /**
   * A master that answers every command GRANTED and records it; its diagnostics are {@code node}'s.
   */
  private static NodeClient recording(FakeNode node, List<String> received) {
    NodeReply granted = node.release(new byte[] {'k'}, new byte[] {'t'}).join();
    assertEquals(Vote.GRANTED, granted.status());
    InvocationHandler handler =
        (proxy, method, args) -> {
          if (method.getName().equals("query")) {
            return method.invoke(node, args);
          }
          if (method.getReturnType() == CompletableFuture.class) {
            received.add(method.getName());
            return CompletableFuture.completedFuture(granted);
          }
          if (method.isDefault()) {
            return InvocationHandler.invokeDefault(proxy, method, args);
          }
          return null; // close()
        };
    return (NodeClient)
        Proxy.newProxyInstance(
            NodeClient.class.getClassLoader(), new Class<?>[] {NodeClient.class}, handler);
  }

  private static FitNodeClient fit(NodeClient master, boolean exclude, FakeTicker ticker) {
    FitNodeClient client =
        new FitNodeClient(
            master,
            new Preflight(false, 0),
            "127.0.0.1:7000",
            "",
            exclude,
            Long.MAX_VALUE,
            ticker,
            Runnable::run);
    client.awaitFirstCheck(ticker.read() + 1_000_000_000L);
    return client;
  }

  private static FakeNode evicting(FakeTicker ticker) {
    FakeNode node = new FakeNode(ticker);
    node.queries.put("CONFIG GET maxmemory", List.of("maxmemory", "67108864"));
    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    return node;
  }

  private static CompletableFuture<?> call(NodeClient client, Method command) throws Exception {
    Object[] args = new Object[command.getParameterCount()];
    Class<?>[] types = command.getParameterTypes();
    for (int i = 0; i < args.length; i++) {
      args[i] = types[i] == byte[].class ? new byte[] {'k'} : (Object) 1L;
    }
    return (CompletableFuture<?>) command.invoke(client, args);
  }

  @Test
  void anExcludedMasterRefusesEveryVoteUnsentAndPassesEveryOtherCommand() throws Exception {
    FakeTicker ticker = new FakeTicker();
    List<String> received = new ArrayList<>();
    FitNodeClient client = fit(recording(evicting(ticker), received), true, ticker);
    assertFalse(client.permits(), "an excluded master does not count toward a quorum");
    assertTrue(client.exclusion().getMessage().startsWith(FitNodeClient.UNFIT));
    for (Method command : commands()) {
      received.clear();
      CompletableFuture<?> answer = call(client, command);
      if (FitNodeClient.VOTES.contains(command.getName())) {
        assertTrue(answer.isCompletedExceptionally(), command.getName() + " was not refused");
        CompletionException refused =
            org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, answer::join);
        assertInstanceOf(NodeUnavailableException.class, refused.getCause());
        assertTrue(
            refused.getCause().getMessage().startsWith("unfit for Redlock: maxmemory 67108864"),
            refused.getCause().getMessage());
        assertEquals(List.of(), received, command.getName() + " reached the master");
      } else {
        assertEquals(
            List.of(command.getName()), received, command.getName() + " did not go through");
      }
    }
  }

  @Test
  void withExclusionOffAnUnfitMasterGetsEveryCommand() throws Exception {
    FakeTicker ticker = new FakeTicker();
    List<String> received = new ArrayList<>();
    FitNodeClient client = fit(recording(evicting(ticker), received), false, ticker);
    assertTrue(client.permits());
    for (Method command : commands()) {
      received.clear();
      assertFalse(call(client, command).isCompletedExceptionally(), command.getName());
      assertEquals(List.of(command.getName()), received, command.getName());
    }
  }

  @Test
  void aCorrectedMasterIsCheckedAgainOnlyAfterTheIntervalAndThenVotes() {
    FakeTicker ticker = new FakeTicker();
    FakeNode node = evicting(ticker);
    java.time.Duration interval = java.time.Duration.ofSeconds(10);
    FitNodeClient client =
        new FitNodeClient(
            node,
            new Preflight(false, 0),
            "127.0.0.1:7000",
            "",
            true,
            interval.toNanos(),
            ticker,
            Runnable::run);
    client.awaitFirstCheck(ticker.read() + 1_000_000_000L);
    assertFalse(client.permits(), "unfit: excluded");

    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "noeviction"));
    ticker.advance(interval);
    assertFalse(client.permits(), "exactly the interval: the verdict stands");
    ticker.advance(java.time.Duration.ofNanos(1));
    assertTrue(client.permits(), "checked again when used past the interval: it votes");
    assertEquals(null, client.exclusion());

    node.queries.put("CONFIG GET maxmemory-policy", List.of("maxmemory-policy", "allkeys-lru"));
    ticker.advance(interval.plusNanos(1));
    assertFalse(client.permits(), "unfit again at the next check: excluded again");
    assertTrue(
        client
            .acquire(new byte[] {'k'}, null, new byte[] {'t'}, 1000, 0)
            .isCompletedExceptionally());
  }
}
