package dev.redlock.spring.boot;

import dev.redlock.Inspection;
import dev.redlock.RedLock;
import dev.redlock.RedLockBuilder;
import dev.redlock.RedLockListener;
import dev.redlock.micrometer.RedLockMetrics;
import dev.redlock.shedlock.RedLockProvider;
import dev.redlock.spring.RedLockRegistry;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.stream.Collectors;
import net.javacrumbs.shedlock.core.LockProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Auto-configures a {@link RedLock} from the {@code redlock.*} properties ({@link
 * RedLockProperties}) when {@code redlock.nodes} or {@code redlock.datacenters} names a master, and
 * on it: a Spring Integration {@link RedLockRegistry} when Spring Integration and redlock-spring
 * are present, a ShedLock {@link RedLockProvider} when ShedLock and redlock-shedlock are, {@link
 * RedLockMetrics} (a {@code MeterBinder}) when redlock-micrometer is present and the context has a
 * {@link MeterRegistry} (Boot's metrics auto-configuration, which this one runs after, or the
 * application's own). The health indicator is configured by {@link RedLockHealthConfiguration}.
 * Each bean backs off when the application defines its own of the type.
 */
@AutoConfiguration(
    afterName = {
      // Where the MeterRegistry bean comes from: Boot 4, then Boot 3.5 (the names differ).
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"
    })
@ConditionalOnClass(RedLock.class)
@EnableConfigurationProperties(RedLockProperties.class)
public class RedLockAutoConfiguration {

  private static final Logger log = LoggerFactory.getLogger(RedLockAutoConfiguration.class);

  /** Created by Spring Boot. */
  public RedLockAutoConfiguration() {}

  /**
   * The RedLock, closed when the context closes. A {@link RedLockListener} bean becomes its
   * listener; with redlock-micrometer, the metrics record its events first. Its {@code
   * max-lease-time} is the property's, or unset, the longest TTL the context asks for (see {@link
   * RedLockProperties#setMaxLeaseTime}). Once built, one line is logged: the masters, the quorum,
   * how many vote and the max-lease-time (INFO; WARN when fewer than a quorum vote), after a
   * preflight that takes at most the longer of 1 s and twice the longest node timeout.
   *
   * @param properties the {@code redlock.*} properties
   * @param sslBundles Boot's SSL bundles, for {@code redlock.ssl.bundle}
   * @param listener the application's listener, if it defines one
   * @param factory how the metrics build it, when they are present
   * @param beanFactory the context's bean factory, whose ShedLock tasks and registry set the
   *     max-lease-time when the property is unset
   * @param shedLockCheck the startup check of the ShedLock tasks, when ShedLock is present
   * @return the RedLock
   * @throws IllegalArgumentException if the properties name no master, or a setting is out of
   *     range; the message names the property
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public RedLock redLock(
      RedLockProperties properties,
      ObjectProvider<SslBundles> sslBundles,
      ObjectProvider<RedLockListener> listener,
      ObjectProvider<RedLockFactory> factory,
      ConfigurableListableBeanFactory beanFactory,
      ObjectProvider<ShedLockCheck> shedLockCheck) {
    MaxLeaseTime maxLeaseTime = MaxLeaseTime.of(properties, beanFactory);
    RedLock redlock;
    try {
      RedLockBuilder builder = builder(properties, sslBundles.getIfAvailable());
      builder.maxLeaseTime(maxLeaseTime.value());
      RedLockListener own = listener.getIfUnique();
      RedLockFactory build = factory.getIfAvailable();
      if (build != null) {
        redlock = build.build(builder, own);
      } else {
        if (own != null) {
          builder.listener(own);
        }
        redlock = builder.build();
      }
    } catch (IllegalArgumentException e) {
      String message = PropertyNames.of(e.getMessage(), !properties.getDatacenters().isEmpty());
      if (!maxLeaseTime.set() && message.contains("redlock.max-lease-time")) {
        message += " (" + maxLeaseTime + ")";
      }
      throw PropertyNames.renamed(message, e);
    }
    if (properties.isAdmitFreshMasters()) {
      admit(redlock);
    }
    ShedLockCheck check = shedLockCheck.getIfAvailable();
    if (check != null) {
      check.builtWith(redlock, maxLeaseTime);
    }
    logReady(redlock, properties.isRestartGuard() ? maxLeaseTime : null);
    return redlock;
  }

  /** Applies every property to a new builder; the builder checks each. */
  static RedLockBuilder builder(RedLockProperties properties, SslBundles sslBundles) {
    RedLockBuilder builder = RedLock.builder();
    if (properties.getNodes().isEmpty() && properties.getDatacenters().isEmpty()) {
      throw new IllegalArgumentException(
          "redlock.nodes (or redlock.datacenters.<name>.nodes) must name at least one Redis"
              + " master, e.g. redlock.nodes=redis://host1:6379,redis://host2:6379,..."
              + " (an odd number of independent masters, 5 for production)");
    }
    builder.nodes(properties.getNodes());
    for (Map.Entry<String, RedLockProperties.Datacenter> datacenter :
        properties.getDatacenters().entrySet()) {
      builder.datacenter(
          datacenter.getKey(),
          datacenter.getValue().getNodeTimeout(),
          datacenter.getValue().getNodes());
    }
    builder
        .nodeTimeout(properties.getNodeTimeout())
        .connectTimeout(properties.getConnectTimeout())
        .excludeUnfitMasters(properties.isExcludeUnfitMasters())
        .driftFactor(properties.getDriftFactor())
        .minValidity(properties.getMinValidity())
        .retryDelay(properties.getRetryDelay())
        .fencing(properties.isFencing())
        .restartGuard(properties.isRestartGuard())
        .circuitBreakers(properties.isCircuitBreakers())
        .circuitBreakerWait(properties.getCircuitBreakerWait());
    String bundle = properties.getSsl().getBundle();
    if (bundle != null && !bundle.isBlank()) {
      if (sslBundles == null) {
        throw new IllegalStateException(
            "redlock.ssl.bundle is set to '" + bundle + "' but the application has no SSL bundles");
      }
      builder.sslContext(sslBundles.getBundle(bundle).createSslContext());
    }
    return builder;
  }

  private static void admit(RedLock redlock) {
    log.warn(
        "redlock.admit-fresh-masters=true: admitting the masters at startup, for development only;"
            + " in production an operator admits a brand-new cluster once, since admitting a master"
            + " that restarted within max-lease-time can let two clients hold one lock");
    redlock.admitFreshNodes(); // logs each master's result in words
  }

  /**
   * The startup line: the masters, the quorum, how many vote (and why the others do not), and the
   * max-lease-time with where it comes from; at WARN when fewer than a quorum vote.
   */
  private static void logReady(RedLock redlock, MaxLeaseTime maxLeaseTime) {
    Inspection inspection;
    try {
      inspection = redlock.inspect(); // bounded: at most max(1 s, 2 x the longest node timeout)
    } catch (RuntimeException e) {
      log.warn("RedLock ready, but its preflight failed: {}", e.toString());
      return;
    }
    StringBuilder line =
        new StringBuilder("RedLock ready: ")
            .append(inspection.masters().size())
            .append(inspection.masters().size() == 1 ? " master (" : " masters (")
            .append(
                inspection.masters().stream()
                    .map(Inspection.Master::node)
                    .collect(Collectors.joining(", ")))
            .append("), quorum ")
            .append(inspection.quorum())
            .append(", ")
            .append(inspection.voting())
            .append(" voting");
    for (Inspection.Master master : inspection.masters()) {
      if (!master.votes()) {
        line.append("; not voting: ")
            .append(master.node())
            .append(" (")
            .append(master.whyNotVoting());
        line.append(')');
      }
    }
    if (maxLeaseTime == null) {
      line.append("; restart guard off (redlock.restart-guard=false)");
    } else {
      line.append("; redlock.max-lease-time ")
          .append(maxLeaseTime.value())
          .append(" (")
          .append(maxLeaseTime.source())
          .append("), the restart guard's wait");
    }
    if (inspection.voting() >= inspection.quorum()) {
      log.info("{}", line);
    } else {
      log.warn("{}", line);
    }
  }

  /**
   * The metrics, when redlock-micrometer is present and there is a {@link MeterRegistry} to bind
   * them to: without one, the listener they add would record into nothing.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({MeterRegistry.class, RedLockMetrics.class})
  @ConditionalOnBean(MeterRegistry.class)
  static class Metrics {

    @Bean
    @ConditionalOnMissingBean
    RedLockMetrics redLockMetrics() {
      return RedLockMetrics.create();
    }

    @Bean
    RedLockFactory redLockMetricsFactory(RedLockMetrics metrics) {
      return (builder, listener) ->
          listener == null ? metrics.build(builder) : metrics.build(builder, listener);
    }
  }

  /**
   * The Spring Integration registry, when Spring Integration and redlock-spring are present: on
   * Spring Integration 7.x (Boot 4) and 6.5 (Boot 3.5) alike; its locks are {@code
   * DistributedLock}s on 7.x only.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({LockRegistry.class, RedLockRegistry.class})
  @ConditionalOnProperty(
      prefix = "redlock.registry",
      name = "enabled",
      havingValue = "true",
      matchIfMissing = true)
  static class Registry {

    @Bean
    @ConditionalOnMissingBean(LockRegistry.class)
    RedLockRegistry redLockRegistry(RedLock redlock, RedLockProperties properties) {
      RedLockProperties.Registry settings = properties.getRegistry();
      RedLockRegistry.Builder builder =
          RedLockRegistry.builder(redlock)
              .keyPrefix(settings.getKeyPrefix())
              .ttl(settings.getTtl());
      if (settings.getSafetyMargin() != null) {
        builder.safetyMargin(settings.getSafetyMargin());
      }
      try {
        return builder.build();
      } catch (IllegalArgumentException e) {
        throw PropertyNames.renamed(
            "redlock.registry (ttl "
                + settings.getTtl()
                + ", key-prefix '"
                + settings.getKeyPrefix()
                + "'): "
                + PropertyNames.of(e.getMessage(), !properties.getDatacenters().isEmpty()),
            e);
      }
    }
  }

  /**
   * The startup check of the ShedLock tasks, when ShedLock is present (with or without
   * redlock-shedlock): see {@link ShedLockCheck}.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(LockProvider.class)
  static class ShedlockTasks {

    @Bean
    ShedLockCheck redLockShedLockCheck(
        ConfigurableListableBeanFactory beanFactory, RedLockProperties properties) {
      return new ShedLockCheck(beanFactory, properties);
    }
  }

  /** The ShedLock provider, when ShedLock and redlock-shedlock are present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({LockProvider.class, RedLockProvider.class})
  @ConditionalOnProperty(
      prefix = "redlock.shedlock",
      name = "enabled",
      havingValue = "true",
      matchIfMissing = true)
  static class Shedlock {

    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    RedLockProvider redLockProvider(RedLock redlock, RedLockProperties properties) {
      return new RedLockProvider(redlock, properties.getShedlock().getKeyPrefix());
    }
  }
}
