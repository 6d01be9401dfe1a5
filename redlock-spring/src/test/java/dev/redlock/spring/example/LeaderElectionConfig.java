package dev.redlock.spring.example;

// The README's Spring Integration snippet is this file from the imports to the end, verbatim (in
// a package of its own, so that its imports are what an application needs): redlock-core's
// ReadmeSnippetsTest checks the README's copy, and ReadmeSnippetIT runs it in a Spring context.

// README: Spring
import dev.redlock.RedLock;
import dev.redlock.spring.RedLockRegistry;
import java.time.Duration;
import java.util.List;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

@Configuration
class LeaderElectionConfig {

  // redlock.nodes=redis://h1:6379,redis://h2:6379,redis://h3:6379,redis://h4:6379,redis://h5:6379
  @Bean(destroyMethod = "close")
  RedLock redlock(@Value("${redlock.nodes}") String[] nodes) {
    return RedLock.builder().nodes(List.of(nodes)).build();
  }

  @Bean
  RedLockRegistry lockRegistry(RedLock redlock) {
    return RedLockRegistry.builder(redlock)
        .keyPrefix("my-app:")
        .ttl(Duration.ofSeconds(10)) // safety margin: a fifth, 2 s, well above the heartbeat
        .build();
  }

  @Bean
  LockRegistryLeaderInitiator leaderInitiator(RedLockRegistry lockRegistry) {
    // DefaultCandidate, role "leader"; starts and stops with the context.
    LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(lockRegistry);
    initiator.setHeartBeatMillis(500); // Spring's default: how often the leader checks its lock
    initiator.setBusyWaitMillis(50); // Spring's default: the pause after losing the lock
    return initiator;
  }

  @EventListener
  void leading(OnGrantedEvent granted) {
    // Start the leader's work (on another thread: this one checks the lock).
  }

  @EventListener
  void notLeading(OnRevokedEvent revoked) {
    // Stop it: another candidate may lead once the masters let it.
  }
}
// end README: Spring
