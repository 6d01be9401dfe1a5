package dev.redlock.drill;

import dev.redlock.NodeOutcome.Status;
import dev.redlock.drill.FaultPlan.Kind;
import java.util.EnumMap;
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
  static final String[] WORKER_COLORS = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
    "#8cd17d", "#a0cbe8"
  };

  static final Map<Status, String> STATUS_COLORS = new EnumMap<>(Status.class);
  static final Map<Status, String> STATUS_LABELS = new EnumMap<>(Status.class);
  static final Map<Kind, String> FAULT_COLORS = new EnumMap<>(Kind.class);

  static {
    STATUS_COLORS.put(Status.GRANTED, "#2e9e5b");
    STATUS_COLORS.put(Status.TAKEN, "#8fbfe0");
    STATUS_COLORS.put(Status.GONE, "#c7c7c7");
    STATUS_COLORS.put(Status.RESTARTED, "#9467bd");
    STATUS_COLORS.put(Status.FAILED, "#d62728");
    STATUS_COLORS.put(Status.TIMED_OUT, "#ff9f1c");
    STATUS_COLORS.put(Status.PENDING, "#e9ecef");
    STATUS_LABELS.put(Status.GRANTED, "granted");
    STATUS_LABELS.put(Status.TAKEN, "taken (held by another)");
    STATUS_LABELS.put(Status.GONE, "gone");
    STATUS_LABELS.put(Status.RESTARTED, "restarted (not voting)");
    STATUS_LABELS.put(Status.FAILED, "failed / refused");
    STATUS_LABELS.put(Status.TIMED_OUT, "timed out");
    STATUS_LABELS.put(Status.PENDING, "pending (round decided first)");
    FAULT_COLORS.put(Kind.PAUSE, "#f4b400");
    FAULT_COLORS.put(Kind.PARTITION, "#e8452c");
    FAULT_COLORS.put(Kind.BLACKHOLE, "#5f6b7a");
    FAULT_COLORS.put(Kind.LATENCY, "#2a7de1");
    FAULT_COLORS.put(Kind.KILL, "#7b3fb5");
  }

  private HtmlStyle() {}
}
