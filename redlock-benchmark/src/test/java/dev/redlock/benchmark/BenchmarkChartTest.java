package dev.redlock.benchmark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.redlock.benchmark.BenchmarkChart.Series;
import java.io.StringReader;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.xml.sax.InputSource;

/** The chart's SVG, without Redis. */
class BenchmarkChartTest {

  private static final long[] MICROS_100_TO_1000 =
      LongStream.rangeClosed(100, 1_000).map(us -> us * 1_000).toArray();

  @Test
  void everyMeasuredRowIsACurveAndTwoBarsAndASkippedOneSaysWhy() throws Exception {
    List<Series> series =
        List.of(
            new Series(
                "floor (hand-written)",
                "floor",
                MICROS_100_TO_1000,
                Map.of(8, 4_000.0, 32, 5_000.0),
                null),
            new Series(
                "default RedLock",
                "dflt",
                MICROS_100_TO_1000,
                Map.of(8, 9_000.0, 32, 12_000.0),
                null),
            new Series(
                "node-redlock",
                "node",
                new long[0],
                Map.of(),
                "skipped: npm ci failed <offline> & more"));

    String svg = BenchmarkChart.svg(series, 5, "5 local masters, 2 CPUs");

    Document doc = parse(svg); // well-formed XML, or this throws
    assertEquals("svg", doc.getDocumentElement().getTagName());
    assertEquals(2, doc.getElementsByTagName("polyline").getLength());
    // The white background, two panel frames, two legend swatches, four bars.
    assertEquals(1 + 2 + 2 + 4, doc.getElementsByTagName("rect").getLength());
    assertTrue(svg.contains("<title>default RedLock, 32 threads: 12,000 ops/s</title>"), svg);
    assertTrue(svg.contains(">12.0k</text>"), "the bar's short label: " + svg);
    assertTrue(
        svg.contains("node-redlock: skipped: npm ci failed &lt;offline&gt; &amp; more"), svg);
    assertFalse(svg.contains("<title>node-redlock"), svg);
    assertTrue(svg.contains(">p99.9</text>"), svg);
    assertTrue(svg.contains("on 5 masters"), svg);
  }

  @Test
  void barLabelsAreShort() {
    assertEquals("924", BenchmarkChart.compact(924));
    assertEquals("6.9k", BenchmarkChart.compact(6_907));
    assertEquals("19.3k", BenchmarkChart.compact(19_336));
  }

  @Test
  void thePercentileAxisCountsNines() {
    assertEquals(0, BenchmarkChart.nines(0), 1e-9);
    assertEquals(1, BenchmarkChart.nines(90), 1e-9);
    assertEquals(2, BenchmarkChart.nines(99), 1e-9);
    assertEquals(3, BenchmarkChart.nines(99.9), 1e-9);
  }

  @Test
  void theThroughputScaleEndsOnARoundNumber() {
    assertEquals(15_000, BenchmarkChart.niceCeiling(13_200), 1e-9);
    assertEquals(25_000, BenchmarkChart.niceCeiling(20_001), 1e-9);
    assertEquals(1_000, BenchmarkChart.niceCeiling(1_000), 1e-9);
    assertEquals(6_000, BenchmarkChart.niceCeiling(5_340), 1e-9);
    assertEquals(100, BenchmarkChart.niceCeiling(81), 1e-9);
  }

  private static Document parse(String xml) throws Exception {
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return factory.newDocumentBuilder().parse(new InputSource(new StringReader(xml)));
  }
}
