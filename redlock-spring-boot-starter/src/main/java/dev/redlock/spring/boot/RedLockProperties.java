package dev.redlock.spring.boot;

import dev.redlock.RedLock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code redlock.*} properties: one for every setting of {@link dev.redlock.RedLockBuilder},
 * plus those of the beans built on the RedLock. Bound by Spring Boot; not thread-safe while it
 * binds, and read once when the RedLock bean is created.
 */
@ConfigurationProperties(prefix = "redlock")
public class RedLockProperties {

  /**
   * Independent Redis masters without a datacenter label: redis://[user:password@]host[:port][/db],
   * or rediss:// for TLS.
   */
  private List<String> nodes = new ArrayList<>();

  /**
   * Masters grouped by datacenter label, each group with a node timeout of its own; the health
   * details then say which single-datacenter losses leave a quorum.
   */
  private Map<String, Datacenter> datacenters = new LinkedHashMap<>();

  /**
   * How long one master may take to answer one command before its vote counts as failed; keep it
   * well below every TTL.
   */
  private Duration nodeTimeout = Duration.ofMillis(50);

  /**
   * How long opening a connection to one master may take (TCP, TLS, AUTH, SELECT, loading the
   * scripts); startup waits up to this long for the first connections.
   */
  private Duration connectTimeout = Duration.ofSeconds(1);

  /**
   * Whether masters the preflight finds unfit (a replica, cluster mode, an evicting
   * maxmemory-policy) are kept from voting; they are logged at WARN either way.
   */
  private boolean excludeUnfitMasters = true;

  /**
   * Fraction of the TTL allowed for clock drift between this process and the masters, in [0, 0.1).
   */
  private double driftFactor = 0.01;

  /** Least validity a new or extended lease must have; a round that leaves less fails. */
  private Duration minValidity = Duration.ZERO;

  /** Mean pause between the rounds of a blocking acquire. */
  private Duration retryDelay = Duration.ofMillis(50);

  /** Whether leases carry fencing tokens (a second round to a quorum per acquire). */
  private boolean fencing = true;

  /**
   * Whether a master younger than max-lease-time is kept from voting until it is admitted; see
   * admit-fresh-masters.
   */
  private boolean restartGuard = true;

  /**
   * Longest TTL this client uses, and how long the restart guard keeps a master that restarted
   * without being admitted from voting. Unset: the longest TTL the application's configuration asks
   * for, at least 1 min: every ShedLock lockAtMostFor (its @SchedulerLock methods,
   * and @EnableSchedulerLock's defaultLockAtMostFor for those that set none) when the starter's
   * RedLockProvider locks them, and redlock.registry.ttl when the registry is created.
   */
  private Duration maxLeaseTime;

  /**
   * Whether a master whose recent calls mostly failed is skipped at once instead of costing its
   * node timeout.
   */
  private boolean circuitBreakers = true;

  /** How long an open circuit breaker skips its master before probing it again. */
  private Duration circuitBreakerWait = Duration.ofSeconds(1);

  private final Ssl ssl = new Ssl();

  /**
   * Whether to admit every reachable master at startup, logged at WARN: for development against
   * brand-new masters only. In production an operator admits a brand-new cluster once; admitting a
   * master that restarted within max-lease-time can let two clients hold one lock.
   */
  private boolean admitFreshMasters;

  private final Registry registry = new Registry();
  private final Shedlock shedlock = new Shedlock();

  /** Creates the properties with the library's defaults. */
  public RedLockProperties() {}

  /**
   * Returns the independent Redis masters without a datacenter label.
   *
   * @return {@code redis://[user:password@]host[:port][/db]} or {@code rediss://} URIs
   */
  public List<String> getNodes() {
    return nodes;
  }

  /**
   * Sets the independent Redis masters without a datacenter label (see {@link
   * dev.redlock.RedLockBuilder#node}).
   *
   * @param nodes {@code redis://[user:password@]host[:port][/db]} or {@code rediss://} URIs
   */
  public void setNodes(List<String> nodes) {
    this.nodes = nodes;
  }

  /**
   * Returns the masters grouped by datacenter, by label, in configuration order.
   *
   * @return each datacenter's node timeout and masters
   */
  public Map<String, Datacenter> getDatacenters() {
    return datacenters;
  }

  /**
   * Sets the masters grouped by datacenter (see {@link dev.redlock.RedLockBuilder#datacenter}).
   *
   * @param datacenters each datacenter's node timeout and masters, by label
   */
  public void setDatacenters(Map<String, Datacenter> datacenters) {
    this.datacenters = datacenters;
  }

  /**
   * Returns how long one master may take to answer one command.
   *
   * @return the per-node timeout
   */
  public Duration getNodeTimeout() {
    return nodeTimeout;
  }

  /**
   * Sets how long one master may take to answer one command before its vote counts as failed; keep
   * it well below every TTL. Default 50 ms.
   *
   * @param nodeTimeout positive
   */
  public void setNodeTimeout(Duration nodeTimeout) {
    this.nodeTimeout = nodeTimeout;
  }

  /**
   * Returns how long opening a connection to one master may take.
   *
   * @return the connect timeout
   */
  public Duration getConnectTimeout() {
    return connectTimeout;
  }

  /**
   * Sets how long opening a connection to one master may take (TCP, TLS, AUTH, SELECT, loading the
   * scripts); startup waits up to this long for the first connections. Default 1 s.
   *
   * @param connectTimeout positive, at most 1 min
   */
  public void setConnectTimeout(Duration connectTimeout) {
    this.connectTimeout = connectTimeout;
  }

  /**
   * Returns whether masters the preflight finds unfit are kept from voting.
   *
   * @return true if they are
   */
  public boolean isExcludeUnfitMasters() {
    return excludeUnfitMasters;
  }

  /**
   * Keeps masters the preflight finds unfit (a replica, cluster mode, an evicting {@code
   * maxmemory-policy}) from voting; they are logged at WARN either way. Default true: an evicting
   * master that votes can lose a lock's key and grant it to a second client.
   *
   * @param excludeUnfitMasters whether unfit masters are kept from voting
   */
  public void setExcludeUnfitMasters(boolean excludeUnfitMasters) {
    this.excludeUnfitMasters = excludeUnfitMasters;
  }

  /**
   * Returns the fraction of the TTL allowed for clock drift.
   *
   * @return the drift factor
   */
  public double getDriftFactor() {
    return driftFactor;
  }

  /**
   * Sets the fraction of the TTL allowed for clock drift between this process and the masters.
   * Default 0.01.
   *
   * @param driftFactor in [0, 0.1)
   */
  public void setDriftFactor(double driftFactor) {
    this.driftFactor = driftFactor;
  }

  /**
   * Returns the least validity a new or extended lease must have.
   *
   * @return the minimum validity
   */
  public Duration getMinValidity() {
    return minValidity;
  }

  /**
   * Sets the least validity a new or extended lease must have; a round leaving less fails. Default
   * zero.
   *
   * @param minValidity zero or positive
   */
  public void setMinValidity(Duration minValidity) {
    this.minValidity = minValidity;
  }

  /**
   * Returns the mean pause between acquire rounds.
   *
   * @return the retry delay
   */
  public Duration getRetryDelay() {
    return retryDelay;
  }

  /**
   * Sets the mean pause between rounds of a blocking acquire. Default 50 ms.
   *
   * @param retryDelay positive
   */
  public void setRetryDelay(Duration retryDelay) {
    this.retryDelay = retryDelay;
  }

  /**
   * Returns whether leases carry fencing tokens.
   *
   * @return true if they do
   */
  public boolean isFencing() {
    return fencing;
  }

  /**
   * Turns fencing tokens on or off; on costs a second round to a quorum per acquire. Default true.
   *
   * @param fencing whether leases carry fencing tokens
   */
  public void setFencing(boolean fencing) {
    this.fencing = fencing;
  }

  /**
   * Returns whether the restart guard is on.
   *
   * @return true if it is
   */
  public boolean isRestartGuard() {
    return restartGuard;
  }

  /**
   * Turns the restart guard on or off: on, a master younger than {@code max-lease-time} does not
   * vote until it is admitted (see {@code admit-fresh-masters}). Default true.
   *
   * @param restartGuard whether young masters' votes are ignored
   */
  public void setRestartGuard(boolean restartGuard) {
    this.restartGuard = restartGuard;
  }

  /**
   * Returns the longest TTL this client uses, if set.
   *
   * @return the maximum lease time, or null when it is derived (see {@link #setMaxLeaseTime})
   */
  public Duration getMaxLeaseTime() {
    return maxLeaseTime;
  }

  /**
   * Sets the longest TTL this client uses, which is also how long the restart guard keeps a master
   * that restarted (and was not admitted) from voting. Unset (the default), the starter derives it:
   * the longest of 1 min ({@link RedLock#DEFAULT_MAX_LEASE_TIME}), every ShedLock {@code
   * lockAtMostFor} of the context's {@code @SchedulerLock} methods when the starter's {@code
   * RedLockProvider} locks them (a method without one counts {@code @EnableSchedulerLock}'s {@code
   * defaultLockAtMostFor}), and {@code redlock.registry.ttl} when the registry is created. Set
   * shorter than a task's {@code lockAtMostFor}, startup fails naming the value needed.
   *
   * @param maxLeaseTime positive, at most 1 day; null to derive it
   */
  public void setMaxLeaseTime(Duration maxLeaseTime) {
    this.maxLeaseTime = maxLeaseTime;
  }

  /**
   * Returns whether the per-master circuit breakers are on.
   *
   * @return true if they are
   */
  public boolean isCircuitBreakers() {
    return circuitBreakers;
  }

  /**
   * Turns the per-master circuit breakers on or off. Default true.
   *
   * @param circuitBreakers whether to use circuit breakers
   */
  public void setCircuitBreakers(boolean circuitBreakers) {
    this.circuitBreakers = circuitBreakers;
  }

  /**
   * Returns how long an open circuit breaker skips its master.
   *
   * @return the wait
   */
  public Duration getCircuitBreakerWait() {
    return circuitBreakerWait;
  }

  /**
   * Sets how long an open circuit breaker skips its master before probing it again. Default 1 s.
   *
   * @param circuitBreakerWait positive
   */
  public void setCircuitBreakerWait(Duration circuitBreakerWait) {
    this.circuitBreakerWait = circuitBreakerWait;
  }

  /**
   * Returns the TLS settings of {@code rediss://} masters.
   *
   * @return the TLS settings
   */
  public Ssl getSsl() {
    return ssl;
  }

  /**
   * Returns whether the masters are admitted at startup.
   *
   * @return true if they are
   */
  public boolean isAdmitFreshMasters() {
    return admitFreshMasters;
  }

  /**
   * Admits every reachable master at startup ({@link RedLock#admitFreshNodes()}), logged at WARN:
   * for development against brand-new masters only. In production an operator admits a brand-new
   * cluster once; admitting a master that restarted within {@code max-lease-time} can let two
   * clients hold one lock. Default false.
   *
   * @param admitFreshMasters whether to admit the masters at startup
   */
  public void setAdmitFreshMasters(boolean admitFreshMasters) {
    this.admitFreshMasters = admitFreshMasters;
  }

  /**
   * Returns the settings of the Spring Integration {@code RedLockRegistry} bean.
   *
   * @return the registry settings
   */
  public Registry getRegistry() {
    return registry;
  }

  /**
   * Returns the settings of the ShedLock {@code LockProvider} bean.
   *
   * @return the ShedLock settings
   */
  public Shedlock getShedlock() {
    return shedlock;
  }

  /** The masters of one datacenter. */
  public static class Datacenter {

    /** Node timeout of this datacenter's masters: a remote datacenter needs a longer one. */
    private Duration nodeTimeout = Duration.ofMillis(50);

    /** This datacenter's masters, as for redlock.nodes. */
    private List<String> nodes = new ArrayList<>();

    /** Creates an empty datacenter. */
    public Datacenter() {}

    /**
     * Returns these masters' node timeout.
     *
     * @return the node timeout
     */
    public Duration getNodeTimeout() {
      return nodeTimeout;
    }

    /**
     * Sets these masters' node timeout: a remote datacenter needs a longer one. Default 50 ms.
     *
     * @param nodeTimeout positive
     */
    public void setNodeTimeout(Duration nodeTimeout) {
      this.nodeTimeout = nodeTimeout;
    }

    /**
     * Returns this datacenter's masters.
     *
     * @return their URIs
     */
    public List<String> getNodes() {
      return nodes;
    }

    /**
     * Sets this datacenter's masters.
     *
     * @param nodes their URIs, as for {@code redlock.nodes}
     */
    public void setNodes(List<String> nodes) {
      this.nodes = nodes;
    }
  }

  /** TLS for {@code rediss://} masters. */
  public static class Ssl {

    /**
     * Name of the Spring Boot SSL bundle (spring.ssl.bundle.*) that connects to rediss:// masters;
     * unset: the JVM's default TLS context.
     */
    private String bundle;

    /** Creates the settings: the JVM's default TLS context. */
    public Ssl() {}

    /**
     * Returns the name of the SSL bundle, or null for the JVM's default context.
     *
     * @return the bundle's name, or null
     */
    public String getBundle() {
      return bundle;
    }

    /**
     * Sets the Spring Boot SSL bundle ({@code spring.ssl.bundle.*}) whose context connects to
     * {@code rediss://} masters: a private CA, client certificates. Default: the JVM's default
     * context.
     *
     * @param bundle the bundle's name
     */
    public void setBundle(String bundle) {
      this.bundle = bundle;
    }
  }

  /** The Spring Integration {@code RedLockRegistry} bean. */
  public static class Registry {

    /**
     * Whether the Spring Integration RedLockRegistry bean is created when Spring Integration and
     * redlock-spring are present.
     */
    private boolean enabled = true;

    /** Prefix put before each lock key to make its resource name. */
    private String keyPrefix = "";

    /** TTL of each hold, renewed while held; at most max-lease-time. */
    private Duration ttl = Duration.ofSeconds(10);

    /**
     * How long before a hold's validity ends the lock reports it lost; unset: a fifth of the TTL.
     */
    private Duration safetyMargin;

    /** Creates the settings with the registry's defaults. */
    public Registry() {}

    /**
     * Returns whether the registry bean is created when Spring Integration is present.
     *
     * @return true if it is
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether the registry bean is created when Spring Integration and redlock-spring are
     * present. Default true.
     *
     * @param enabled whether to create it
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the prefix of the registry's resource names.
     *
     * @return the key prefix
     */
    public String getKeyPrefix() {
      return keyPrefix;
    }

    /**
     * Sets the prefix put before each lock key to make its resource name. Default empty.
     *
     * @param keyPrefix the prefix
     */
    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }

    /**
     * Returns the TTL of each hold.
     *
     * @return the TTL
     */
    public Duration getTtl() {
      return ttl;
    }

    /**
     * Sets the TTL of each hold; renewed automatically while held. Default 10 s.
     *
     * @param ttl positive, at most {@code max-lease-time}
     */
    public void setTtl(Duration ttl) {
      this.ttl = ttl;
    }

    /**
     * Returns the safety margin, or null for a fifth of the TTL.
     *
     * @return the margin, or null
     */
    public Duration getSafetyMargin() {
      return safetyMargin;
    }

    /**
     * Sets how long before a hold's validity ends the lock reports it lost. Default a fifth of the
     * TTL.
     *
     * @param safetyMargin positive, less than the TTL
     */
    public void setSafetyMargin(Duration safetyMargin) {
      this.safetyMargin = safetyMargin;
    }
  }

  /** The ShedLock {@code LockProvider} bean. */
  public static class Shedlock {

    /**
     * Whether the ShedLock LockProvider bean is created when ShedLock and redlock-shedlock are
     * present.
     */
    private boolean enabled = true;

    /** Prefix put before each task's lock name. */
    private String keyPrefix = "shedlock:";

    /** Creates the settings with the provider's defaults. */
    public Shedlock() {}

    /**
     * Returns whether the provider bean is created when ShedLock is present.
     *
     * @return true if it is
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets whether the provider bean is created when ShedLock and redlock-shedlock are present.
     * Default true.
     *
     * @param enabled whether to create it
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * Returns the prefix of the provider's resource names.
     *
     * @return the key prefix
     */
    public String getKeyPrefix() {
      return keyPrefix;
    }

    /**
     * Sets the prefix put before each task's lock name. Default {@code shedlock:}.
     *
     * @param keyPrefix the prefix
     */
    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }
  }
}
