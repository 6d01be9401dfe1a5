package dev.redlock.benchmark;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.Masters;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SingleServerConfig;

/**
 * The Redisson row of the benchmark: Redisson's own Redlock, {@code RedissonRedLock} (deprecated by
 * Redisson in favour of a single server's {@code RLock}, but still its Redlock), over one {@code
 * RedissonClient} per master, each with Redisson's defaults for a single server. The only class
 * that imports {@code org.redisson}.
 *
 * <p>A cycle is what a Redisson user writes for one attempt with a lease time: {@code tryLock(0,
 * ttl, MILLISECONDS)}, then {@code unlock()}. Redisson takes the masters' locks one after another
 * (a Lua script each, until a majority granted or too many refused), then sets every granted lock's
 * expiry again, in parallel; {@code unlock()} runs its unlock script (which also publishes to the
 * lock's channel) on every master in parallel and waits for all.
 *
 * <p>Thread-safe: the clients are shared by every thread, and each cycle makes its own lock objects
 * (a Redisson lock belongs to the thread that took it).
 */
final class RedissonRedLockClient implements AutoCloseable {

  private final List<RedissonClient> clients;

  private RedissonRedLockClient(List<RedissonClient> clients) {
    this.clients = clients;
  }

  /**
   * Connects one Redisson client to each master.
   *
   * @param uris {@code redis://} or {@code rediss://} URIs, with user, password and database as
   *     RedLock takes them
   * @throws RuntimeException whatever Redisson throws when a master cannot be reached; the clients
   *     already made are shut down first
   */
  static RedissonRedLockClient connect(List<String> uris) {
    requireNonNull(uris, "uris");
    List<RedissonClient> clients = new ArrayList<>();
    try {
      for (String uri : uris) {
        clients.add(Redisson.create(config(uri)));
      }
    } catch (RuntimeException e) {
      clients.forEach(RedissonRedLockClient::shutdown);
      throw e;
    }
    return new RedissonRedLockClient(List.copyOf(clients));
  }

  /**
   * Redisson's defaults for one server, at the address, user, password and database of {@code uri}.
   */
  static Config config(String uri) {
    URI parsed = URI.create(uri);
    String scheme = parsed.getScheme();
    if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
      throw new IllegalArgumentException("not a redis:// or rediss:// URI: " + Masters.redact(uri));
    }
    int port = parsed.getPort() < 0 ? 6379 : parsed.getPort();
    Config config = new Config();
    SingleServerConfig server =
        config.useSingleServer().setAddress(scheme + "://" + parsed.getHost() + ":" + port);
    String userInfo = parsed.getRawUserInfo();
    if (userInfo != null && !userInfo.isEmpty()) {
      int colon = userInfo.indexOf(':');
      if (colon < 0) {
        server.setPassword(decode(userInfo));
      } else {
        if (colon > 0) {
          server.setUsername(decode(userInfo.substring(0, colon)));
        }
        server.setPassword(decode(userInfo.substring(colon + 1)));
      }
    }
    String path = parsed.getPath();
    if (path != null && path.length() > 1) {
      server.setDatabase(Integer.parseInt(path.substring(1)));
    }
    return config;
  }

  /** Redisson's version, from its jar's manifest; {@code "?"} if it has none. */
  static String version() {
    String version = Redisson.class.getPackage().getImplementationVersion();
    return version == null ? "?" : version;
  }

  /**
   * One attempt to take {@code key} on a majority for {@code ttl}, and its release.
   *
   * @return whether the lock was granted
   */
  boolean cycle(String key, Duration ttl) throws InterruptedException {
    RLock[] locks = new RLock[clients.size()];
    for (int i = 0; i < locks.length; i++) {
      locks[i] = clients.get(i).getLock(key);
    }
    @SuppressWarnings("deprecation") // Redisson's Redlock: the very thing this row measures
    RedissonRedLock redlock = new RedissonRedLock(locks);
    if (!redlock.tryLock(0, ttl.toMillis(), TimeUnit.MILLISECONDS)) {
      return false;
    }
    redlock.unlock();
    return true;
  }

  /**
   * A hand-off contender's {@code RLock} on one master, with a Redisson client of its own:
   * Redisson's single-server lock, whose waiters are woken by pub/sub.
   */
  static HandOffRun.Mutex singleMasterLock(String uri, String key) {
    RedissonClient client = Redisson.create(lean(config(uri)));
    RLock lock = client.getLock(key);
    return mutex(lock, List.of(client));
  }

  /**
   * A hand-off contender's {@code RedissonRedLock} over every master, with a Redisson client per
   * master of its own.
   */
  static HandOffRun.Mutex redLock(List<String> uris, String key) {
    List<RedissonClient> own = new ArrayList<>();
    try {
      RLock[] locks = new RLock[uris.size()];
      for (int i = 0; i < locks.length; i++) {
        own.add(Redisson.create(lean(config(uris.get(i)))));
        locks[i] = own.get(i).getLock(key);
      }
      @SuppressWarnings("deprecation") // Redisson's Redlock: the very thing this row measures
      RLock redlock = new RedissonRedLock(locks);
      return mutex(redlock, own);
    } catch (RuntimeException e) {
      own.forEach(RedissonRedLockClient::shutdown);
      throw e;
    }
  }

  /**
   * Fewer idle connections than Redisson's default 24 per client: the hand-off section makes 40
   * clients. Nothing else changes; the lock and its pub/sub are Redisson's defaults.
   */
  private static Config lean(Config config) {
    config
        .useSingleServer()
        .setConnectionMinimumIdleSize(1)
        .setSubscriptionConnectionMinimumIdleSize(1);
    return config;
  }

  private static HandOffRun.Mutex mutex(RLock lock, List<RedissonClient> own) {
    return new HandOffRun.Mutex() {
      @Override
      public boolean lock(Duration wait) throws InterruptedException {
        return lock.tryLock(wait.toMillis(), Benchmark.TTL.toMillis(), TimeUnit.MILLISECONDS);
      }

      @Override
      public void unlock() {
        lock.unlock();
      }

      @Override
      public void close() {
        own.forEach(RedissonRedLockClient::shutdown);
      }
    };
  }

  /** Shuts every client down. */
  @Override
  public void close() {
    clients.forEach(RedissonRedLockClient::shutdown);
  }

  /** Without the default quiet period of 2 s (per client) Redisson's shutdown() waits. */
  private static void shutdown(RedissonClient client) {
    client.shutdown(0, 5, TimeUnit.SECONDS);
  }

  /** Percent-decodes a URI's user or password; a '+' stays a '+'. */
  private static String decode(String text) {
    return URLDecoder.decode(text.replace("+", "%2B"), StandardCharsets.UTF_8);
  }
}
