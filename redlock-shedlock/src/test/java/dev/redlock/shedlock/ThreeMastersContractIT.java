package dev.redlock.shedlock;

import dev.redlock.testkit.RedisClusterExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's contract tests on 3 real masters (see {@link QuorumContract}). */
class ThreeMastersContractIT extends QuorumContract {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(3);
}
