package dev.redlock.shedlock;

import dev.redlock.testkit.RedisClusterExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's contract tests on 5 real masters (see {@link QuorumContract}). */
class FiveMastersContractIT extends QuorumContract {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(5);
}
