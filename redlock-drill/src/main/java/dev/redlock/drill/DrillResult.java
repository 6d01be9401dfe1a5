package dev.redlock.drill;

import static java.util.Objects.requireNonNull;

import dev.redlock.drill.DrillChecks.Result;
import dev.redlock.drill.Percentiles.Summary;
import java.util.List;
import java.util.Optional;

/**
 * What one drill run gives, the third stage of the drill's pipeline (plan, run, result, reports):
 * the plan it ran, what it found before the workers started, the checked figures, everything
 * recorded over time and each worker's wait for the lock. The reports ({@link TextReport}, {@link
 * HtmlReport}) are functions of it. Immutable.
 *
 * @param plan the plan that ran
 * @param setup the masters and how the workers reached them
 * @param checks the figures and the verdict
 * @param timeline the recording
 * @param waits per worker (in order, from worker 1), its waits for the lock: from the first try to
 *     the lease, backoff included, in nanoseconds; the count is the worker's grants (zero for a
 *     worker that did not stop)
 */
record DrillResult(
    DrillPlan plan, Setup setup, Result checks, Timeline timeline, List<Summary> waits) {

  DrillResult {
    requireNonNull(plan, "plan");
    requireNonNull(setup, "setup");
    requireNonNull(checks, "checks");
    requireNonNull(timeline, "timeline");
    waits = List.copyOf(waits);
    if (waits.size() != plan.workers()) {
      throw new IllegalArgumentException(
          "one wait summary per worker expected: " + waits.size() + " for " + plan.workers());
    }
  }

  /** Returns a copy with one more failure. */
  DrillResult withFailure(String failure) {
    return new DrillResult(plan, setup, checks.withFailure(failure), timeline, waits);
  }

  /** Whether the drill passed. */
  boolean passed() {
    return checks.passed();
  }

  /**
   * What the drill found and did before the workers started.
   *
   * @param origin where the masters come from ({@code "local, started in 40 ms"}, or the user's)
   * @param uris the masters' own URIs, in configuration order
   * @param clientUris what the workers connect to: the masters' URIs or a fault proxy in front of
   *     each
   * @param masterNames the masters as {@code host:port}, without credentials
   * @param admission the masters' answers to the admission, if the drill admitted them
   * @param injection how the plan's faults are made, a line each
   * @param injectionNotes what the user should know about that
   */
  record Setup(
      String origin,
      List<String> uris,
      List<String> clientUris,
      List<String> masterNames,
      Optional<Admission> admission,
      List<String> injection,
      List<String> injectionNotes) {

    Setup {
      requireNonNull(origin, "origin");
      uris = List.copyOf(uris);
      clientUris = List.copyOf(clientUris);
      masterNames = List.copyOf(masterNames);
      requireNonNull(admission, "admission");
      injection = List.copyOf(injection);
      injectionNotes = List.copyOf(injectionNotes);
      if (clientUris.size() != uris.size() || masterNames.size() != uris.size()) {
        throw new IllegalArgumentException("one client URI and one name per master expected");
      }
    }
  }
}
