package dev.redlock.shedlock;

import dev.redlock.testkit.RedisClusterExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's contract tests on 1 real master (see {@link QuorumContract}). */
class OneMasterContractIT extends QuorumContract {

  @RegisterExtension static final RedisClusterExtension redis = RedisClusterExtension.withNodes(1);
}
