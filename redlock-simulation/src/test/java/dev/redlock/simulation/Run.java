package dev.redlock.simulation;

import java.util.List;

/**
 * A run's trace and figures; its first violation of mutual exclusion (or null); its first fencing
 * token that did not rise above every earlier grant's (or null); its first wait that outlasted its
 * {@code maxWait} by more than {@link SimHarness#OVERRUN_BOUND_NANOS} (or null); the step of the
 * first of these (or -1).
 *
 * @param tries acquisitions tried (a wait of many rounds is one)
 * @param contended tries made while another client held a valid lease or was waiting
 * @param nearFault tries made within a second of a fault
 * @param notices wake-up notices that reached a client
 * @param order the first waiter named at its gate before one that asked there earlier and still
 *     waited (runs without faults), or null
 * @param worstOverrunNanos the longest a wait lasted past its {@code maxWait}
 * @param longestUnservedNanos the longest some client waited while no client held the resource
 * @param longestNamedNanos the longest a waiter named by a turn notice went without the resource
 */
record Run(
    List<String> trace,
    int tries,
    int contended,
    int nearFault,
    int grants,
    int faults,
    long notices,
    long events,
    String violation,
    String fencing,
    String liveness,
    String order,
    String state,
    long worstOverrunNanos,
    long longestUnservedNanos,
    long longestNamedNanos,
    int failedAt) {

  /** The first failure of any checker, or null. */
  String failure() {
    return violation != null
        ? violation
        : fencing != null ? fencing : liveness != null ? liveness : order != null ? order : state;
  }
}
