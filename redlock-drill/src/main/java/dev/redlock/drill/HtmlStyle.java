package dev.redlock.drill;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.FaultPlan.Kind;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The look of the drill's HTML report: the page's geometry, the colours of the workers, the
 * masters' answers and the faults, and the markers a screenshot is checked by (each in a colour
 * used nowhere else). Constants only.
 */
final class HtmlStyle {

  /** The marker at the left of each worker's lane; no other pixel of the page has this colour. */
  static final int LANE_MARKER = 0x1a237e;

  /** The marker at the left of each master's strip; no other pixel has this colour. */
  static final int STRIP_MARKER = 0x880e4f;

  /** Overlapping leases: pure red, drawn over both lanes; no other pixel has this colour. */
  static final int OVERLAP = 0xff0000;

  /** Lane and strip height, in pixels; the markers are as tall. */
  static final int ROW_HEIGHT = 18;

  // The page's geometry, in pixels: the plot is the page less the gutter of labels at its left.
  static final int PAGE_WIDTH = 1340;
  static final int GUTTER = 170;
  static final int RIGHT = 24;
  static final int PLOT_WIDTH = PAGE_WIDTH - GUTTER - RIGHT;
  static final int ROW_GAP = 5;
  static final int MARKER_WIDTH = 6;
  static final int FAULT_ROW = 16;
  static final int LATENCY_HEIGHT = 150;
  static final int RATE_HEIGHT = 80;

  /** Worker colours, in turn; none is near a marker, red (overlaps) or the status colours' red. */
  static final List<String> WORKER_COLORS =
      List.of(
          "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
          "#8cd17d", "#a0cbe8");

  /** The colour of each answer a master gives in a round. */
  static final Map<Status, String> STATUS_COLORS =
      Collections.unmodifiableMap(
          new EnumMap<>(
              Map.of(
                  Status.GRANTED, "#2e9e5b",
                  Status.TAKEN, "#8fbfe0",
                  Status.GONE, "#c7c7c7",
                  Status.RESTARTED, "#9467bd",
                  Status.FAILED, "#d62728",
                  Status.TIMED_OUT, "#ff9f1c",
                  Status.PENDING, "#e9ecef")));

  /** What the legend calls each answer. */
  static final Map<Status, String> STATUS_LABELS =
      Collections.unmodifiableMap(
          new EnumMap<>(
              Map.of(
                  Status.GRANTED, "granted",
                  Status.TAKEN, "taken (held by another)",
                  Status.GONE, "gone",
                  Status.RESTARTED, "restarted (not voting)",
                  Status.FAILED, "failed / refused",
                  Status.TIMED_OUT, "timed out",
                  Status.PENDING, "pending (round decided first)")));

  /** The colour of each kind of fault: its bar, its shading, its outline on a strip. */
  static final Map<Kind, String> FAULT_COLORS =
      Collections.unmodifiableMap(
          new EnumMap<>(
              Map.of(
                  Kind.PAUSE, "#f4b400",
                  Kind.PARTITION, "#e8452c",
                  Kind.BLACKHOLE, "#5f6b7a",
                  Kind.LATENCY, "#2a7de1",
                  Kind.KILL, "#7b3fb5")));

  private HtmlStyle() {}
}
