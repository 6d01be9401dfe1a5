package dev.redlock.drill;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTML report of a real failover drill, rendered by headless Chromium: the screenshot is not
 * blank, shows one lane per worker (each with leases in it) and one strip per master.
 *
 * <p>Lanes and strips are counted by their markers: each lane begins with a {@value
 * HtmlReport#ROW_HEIGHT} px tall bar in {@link HtmlReport#LANE_MARKER}, each strip with one in
 * {@link HtmlReport#STRIP_MARKER}, colours used nowhere else on the page. The test finds the pixel
 * column with the most vertical runs of that colour (each at least most of a row tall) and counts
 * them. Skipped, with a message, where {@code chromium} is not on {@code PATH} (CI installs
 * Debian's package).
 */
class DrillReportChromiumIT {

  private static final int WORKERS = 4;
  private static final int MASTERS = Masters.LOCAL_COUNT;
  private static final int WIDTH = 1400;
  private static final int HEIGHT = 1000;

  /** How far a rendered pixel may stray from a marker's colour, per channel. */
  private static final int TOLERANCE = 16;

  @Test
  void theScreenshotShowsALanePerWorkerWithLeasesAndAStripPerMaster(@TempDir Path dir)
      throws Exception {
    Optional<Path> chromium = Chromium.find();
    assumeTrue(
        chromium.isPresent(),
        "chromium is not on PATH: the HTML report is not rendered here"
            + " (apt-get install chromium; CI installs it)");
    Path html = dir.resolve("drill-report.html");
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    int code =
        Drill.run(
            new String[] {
              "--workers",
              Integer.toString(WORKERS),
              "--duration",
              "2.5",
              "--report",
              html.toString(),
              "--faults",
              "at 0.5s pause master 2 for 0.8s; at 1.4s partition masters 4 and 5 for 0.6s"
            },
            new PrintStream(text, true, StandardCharsets.UTF_8));
    assertEquals(0, code, text.toString(StandardCharsets.UTF_8));

    Path png = dir.resolve("drill-report.png");
    Chromium.screenshot(chromium.get(), html, png, WIDTH, HEIGHT);
    BufferedImage image = ImageIO.read(png.toFile());

    assertEquals(WIDTH, image.getWidth());
    assertEquals(HEIGHT, image.getHeight());
    assertNotBlank(image);
    List<int[]> lanes = markerRuns(image, HtmlStyle.LANE_MARKER);
    assertEquals(WORKERS, lanes.size(), "worker lanes in the screenshot " + png);
    assertEquals(MASTERS, markerRuns(image, HtmlStyle.STRIP_MARKER).size(), "master strips");
    for (int i = 0; i < lanes.size(); i++) {
      int[] lane = lanes.get(i);
      assertTrue(
          colouredPixels(image, lane[0], lane[1]) > 0,
          "lane " + (i + 1) + " (rows " + lane[0] + " to " + lane[1] + ") shows no lease");
    }
  }

  /** Most of the picture is not background, and it has many colours: a page was drawn. */
  private static void assertNotBlank(BufferedImage image) {
    long drawn = 0;
    Set<Integer> colours = new HashSet<>();
    for (int y = 0; y < image.getHeight(); y++) {
      for (int x = 0; x < image.getWidth(); x++) {
        int rgb = image.getRGB(x, y) & 0xffffff;
        colours.add(rgb);
        if (rgb != 0xffffff) {
          drawn++;
        }
      }
    }
    double share = (double) drawn / (image.getWidth() * image.getHeight());
    assertTrue(share > 0.05, "only " + share + " of the screenshot is not white");
    assertTrue(colours.size() > 50, "only " + colours.size() + " colours in the screenshot");
  }

  /**
   * The vertical runs of {@code marker} in the pixel column that has the most of them, each as
   * {first row, last row}; runs shorter than most of a row are ignored.
   */
  private static List<int[]> markerRuns(BufferedImage image, int marker) {
    List<int[]> best = List.of();
    int minRun = HtmlStyle.ROW_HEIGHT * 3 / 4;
    for (int x = 0; x < image.getWidth() / 4; x++) {
      List<int[]> runs = new ArrayList<>();
      int start = -1;
      for (int y = 0; y <= image.getHeight(); y++) {
        boolean on = y < image.getHeight() && near(image.getRGB(x, y), marker);
        if (on && start < 0) {
          start = y;
        } else if (!on && start >= 0) {
          if (y - start >= minRun) {
            runs.add(new int[] {start, y - 1});
          }
          start = -1;
        }
      }
      if (runs.size() > best.size()) {
        best = runs;
      }
    }
    return best;
  }

  /** Pixels in rows [top, bottom] to the right of the labels that are clearly coloured. */
  private static long colouredPixels(BufferedImage image, int top, int bottom) {
    long coloured = 0;
    for (int y = top + 2; y <= bottom - 2; y++) {
      for (int x = image.getWidth() / 5; x < image.getWidth(); x++) {
        int rgb = image.getRGB(x, y);
        int r = (rgb >> 16) & 0xff;
        int g = (rgb >> 8) & 0xff;
        int b = rgb & 0xff;
        if (Math.max(r, Math.max(g, b)) - Math.min(r, Math.min(g, b)) > 40) {
          coloured++;
        }
      }
    }
    return coloured;
  }

  private static boolean near(int rgb, int target) {
    for (int shift = 0; shift <= 16; shift += 8) {
      int a = (rgb >> shift) & 0xff;
      int b = (target >> shift) & 0xff;
      if (Math.abs(a - b) > TOLERANCE) {
        return false;
      }
    }
    return true;
  }
}
