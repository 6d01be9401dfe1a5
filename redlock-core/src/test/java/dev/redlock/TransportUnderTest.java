package dev.redlock;

import dev.redlock.internal.transport.Transport;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

/**
 * The transport of plaintext masters a test run uses: the Jedis transport when the run's system
 * property {@value #PROPERTY} says {@code jedis} (the failsafe execution {@code jedis-transport}
 * sets it), else the default selector. The library reads no property: this listener, registered
 * with the JUnit Platform ({@code META-INF/services}), sets the core's hook ({@link
 * Transport#usePlaintext}) before any test runs.
 */
public final class TransportUnderTest implements LauncherSessionListener {

  /** The test run's system property: {@code jedis} for the Jedis transport. */
  public static final String PROPERTY = "redlock.test.transport";

  /** Whether this run asks for the Jedis transport: what the tests expect of the RedLocks. */
  public static boolean jedis() {
    return "jedis".equalsIgnoreCase(System.getProperty(PROPERTY));
  }

  @Override
  public void launcherSessionOpened(LauncherSession session) {
    Transport.usePlaintext(jedis() ? Transport.JEDIS : Transport.SELECTOR);
  }
}
