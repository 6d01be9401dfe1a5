package dev.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.redlock.internal.transport.FakeNode;
import dev.redlock.internal.transport.FakeNode.Answer;
import dev.redlock.internal.transport.Vote;
import dev.redlock.testkit.Poll;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An operator's admission and inspection wait for a master slow to answer, up to their deadlines,
 * rather than skipping it: on scripted masters and a clock that does not move, a master whose
 * answer hangs is heard when it answers, however late in real time.
 */
class AdmitWaitTest {

  private final FakeCluster cluster = new FakeCluster();
  private final RedLock redlock = cluster.builder(3).circuitBreakers(false).build();

  @AfterEach
  void close() {
    redlock.close();
  }

  @Test
  void theAdmissionWaitsForAMasterSlowToAnswer() throws Exception {
    FakeNode slow = cluster.nodes.get(0);
    slow.onAdmit = Answer.HANG;
    CompletableFuture<List<NodeOutcome>> admitted =
        CompletableFuture.supplyAsync(redlock::admitFreshNodes);
    Poll.until("the slow master asked", () -> slow.hanging.size() == 1);
    assertFalse(admitted.isDone(), "it waits for the slow master");
    slow.hanging.poll().complete(Vote.GRANTED);
    List<NodeOutcome> outcomes = admitted.get(10, TimeUnit.SECONDS);
    assertEquals(
        List.of(NodeOutcome.Status.GRANTED, NodeOutcome.Status.GRANTED, NodeOutcome.Status.GRANTED),
        outcomes.stream().map(NodeOutcome::status).toList(),
        outcomes::toString);
  }

  @Test
  void theInspectionWaitsForAMasterSlowToAnswer() throws Exception {
    FakeNode slow = cluster.nodes.get(0);
    CompletableFuture<Object> info = new CompletableFuture<>();
    slow.queries.put("INFO replication", info);
    CompletableFuture<Inspection> inspected = CompletableFuture.supplyAsync(redlock::inspect);
    Poll.until(
        "the slow master asked",
        () -> slow.queried().stream().filter("INFO replication"::equals).count() >= 2);
    assertFalse(inspected.isDone(), "it waits for the slow master");
    info.complete("role:replica\r\nmaster_host:10.0.0.9\r\n".getBytes(StandardCharsets.US_ASCII));
    Inspection inspection = inspected.get(10, TimeUnit.SECONDS);
    Inspection.Master first = inspection.masters().get(0);
    assertFalse(first.votes(), "its late answer counted: a replica does not vote: " + first);
  }
}
