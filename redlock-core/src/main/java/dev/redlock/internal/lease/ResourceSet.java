package dev.redlock.internal.lease;

import static java.util.Objects.requireNonNull;

import dev.redlock.internal.transport.LockKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * The resources of a multi-resource lease, checked once: each a valid resource name, none twice, at
 * most {@link #MAX_RESOURCES}, their names together at most {@link Arguments#MAX_RESOURCE_BYTES}
 * UTF-8 bytes; sorted by their keys (unsigned bytewise), so that every master sees the keys of a
 * set in one fixed order. The lease's key is their {@link LockKey.Set}: the quorum round, renewals
 * and releases carry it as they carry one resource's key, and the key-set script acts on all of its
 * keys at once on each master. Immutable.
 */
public final class ResourceSet {

  /** The most resources one lease may hold. */
  public static final int MAX_RESOURCES = 64;

  private final List<String> names;
  private final LockKey.Set key;
  private final String shown;

  private ResourceSet(List<String> names, LockKey.Set key) {
    this.names = names;
    this.key = key;
    this.shown = names.toString();
  }

  /**
   * Checks {@code resources} and sorts them.
   *
   * @param resources the resource names, each as {@link Arguments#resourceKey} accepts
   * @return the set
   * @throws NullPointerException if {@code resources} or one of them is null
   * @throws IllegalArgumentException if it is empty, too large, names one resource twice, or one of
   *     its names is invalid
   */
  public static ResourceSet of(Collection<String> resources) {
    requireNonNull(resources, "resources");
    if (resources.isEmpty()) {
      throw new IllegalArgumentException("resources must not be empty");
    }
    if (resources.size() > MAX_RESOURCES) {
      throw new IllegalArgumentException(
          "a lease holds at most " + MAX_RESOURCES + " resources; got " + resources.size());
    }
    record Named(String name, byte[] key) {}
    List<Named> named = new ArrayList<>(resources.size());
    long bytes = 0;
    for (String resource : resources) {
      requireNonNull(resource, "resources must not contain null");
      byte[] key = Arguments.resourceKey(resource);
      bytes += key.length;
      named.add(new Named(resource, key));
    }
    if (bytes > Arguments.MAX_RESOURCE_BYTES) {
      throw new IllegalArgumentException(
          "the resources' names are "
              + bytes
              + " UTF-8 bytes together; the limit is "
              + Arguments.MAX_RESOURCE_BYTES);
    }
    named.sort(Comparator.comparing(Named::key, Arrays::compareUnsigned));
    List<String> names = new ArrayList<>(named.size());
    List<byte[]> keys = new ArrayList<>(named.size());
    for (Named each : named) {
      if (!keys.isEmpty() && Arrays.equals(keys.get(keys.size() - 1), each.key())) {
        throw new IllegalArgumentException(
            "resources name " + Arguments.quote(each.name()) + " twice");
      }
      names.add(each.name());
      keys.add(each.key());
    }
    return new ResourceSet(List.copyOf(names), LockKey.of(keys));
  }

  /**
   * Returns the resource names, sorted by their keys.
   *
   * @return an immutable list
   */
  public List<String> names() {
    return names;
  }

  /**
   * Returns the lease's key: the resources' keys, as a set.
   *
   * @return the set
   */
  public LockKey.Set key() {
    return key;
  }

  /**
   * Returns how the set is named in messages, events and the lease's {@code resource()}: {@code [a,
   * b, c]}, sorted.
   *
   * @return the set's name
   */
  public String shown() {
    return shown;
  }

  /**
   * Returns the resource names a lease holds: its set's, sorted, or its one resource.
   *
   * @param grant the lease
   * @return an immutable list of one or more names
   */
  public static List<String> namesOf(Grant grant) {
    if (!(grant.key() instanceof LockKey.Set set)) {
      return List.of(grant.resource());
    }
    List<String> names = new ArrayList<>();
    for (byte[] each : set.keys()) {
      names.add(new String(each, StandardCharsets.UTF_8));
    }
    return List.copyOf(names);
  }

  @Override
  public String toString() {
    return "ResourceSet" + shown;
  }
}
