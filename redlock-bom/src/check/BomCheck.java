import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Fails the build when the BOM's entries and the published modules disagree.
 *
 * <p>Run by the BOM's build as a single-file program ({@code java BomCheck.java <bom pom> <root
 * pom>}). A module of the root pom is published when its pom's own {@code <properties>} set {@code
 * redlock.publish.skip} to {@code false}; the BOM must list exactly those, each at {@code
 * ${project.version}}, plus the names in its {@code redlock.bom.upcoming} property, which are not
 * modules yet. No Maven plugin compares a BOM with the reactor, and this is one comparison of two
 * lists read from the poms as written.
 */
final class BomCheck {
  private static final String SWITCH = "redlock.publish.skip";
  private static final String UPCOMING = "redlock.bom.upcoming";

  public static void main(String[] args) throws Exception {
    Path bomPom = Path.of(args[0]);
    Path rootPom = Path.of(args[1]);
    Element bom = read(bomPom);
    List<String> problems = new ArrayList<>();

    Set<String> listed = new TreeSet<>();
    for (Element dependency : children(path(bom, "dependencyManagement", "dependencies"))) {
      String artifactId = text(dependency, "artifactId");
      if (!text(bom, "groupId").equals(text(dependency, "groupId"))
          || !"${project.version}".equals(text(dependency, "version"))) {
        problems.add(
            "%s: a BOM entry must be %s:%s at ${project.version}"
                .formatted(artifactId, text(bom, "groupId"), artifactId));
      }
      if (!listed.add(artifactId)) {
        problems.add(artifactId + " is listed twice in the BOM");
      }
    }
    Set<String> upcoming = new TreeSet<>(words(property(bom, UPCOMING)));

    Map<String, Boolean> published = new LinkedHashMap<>();
    for (Element module : children(path(read(rootPom), "modules"))) {
      Path modulePom = rootPom.resolveSibling(module.getTextContent().trim()).resolve("pom.xml");
      Element project = read(modulePom);
      String artifactId = text(project, "artifactId");
      if (artifactId.equals(text(bom, "artifactId"))) {
        continue;
      }
      String skip = property(project, SWITCH);
      if (skip != null && !skip.equals("true") && !skip.equals("false")) {
        problems.add(modulePom + ": " + SWITCH + " must be written as true or false");
      }
      published.put(artifactId, "false".equals(skip));
    }

    published.forEach(
        (artifactId, isPublished) -> {
          if (isPublished && !listed.contains(artifactId)) {
            problems.add(artifactId + " is published but not in the BOM: add it to " + bomPom);
          } else if (!isPublished && listed.contains(artifactId)) {
            problems.add(
                "%s is in the BOM but not published: its pom does not set %s to false"
                    .formatted(artifactId, SWITCH));
          }
          if (upcoming.contains(artifactId)) {
            problems.add(artifactId + " is a module now: remove it from " + UPCOMING);
          }
        });
    for (String artifactId : listed) {
      if (!published.containsKey(artifactId) && !upcoming.contains(artifactId)) {
        problems.add(
            "%s is in the BOM but is no module of %s (add its name to %s if it is still to come)"
                .formatted(artifactId, rootPom, UPCOMING));
      }
    }
    for (String artifactId : upcoming) {
      if (!listed.contains(artifactId)) {
        problems.add(artifactId + " is in " + UPCOMING + " but not in the BOM");
      }
    }

    if (!problems.isEmpty()) {
      System.err.println("The BOM and the published modules disagree:");
      problems.forEach(problem -> System.err.println("  - " + problem));
      System.exit(1);
    }
    System.out.println(
        "BOM check: the BOM lists the published modules %s and, still to come, %s"
            .formatted(publishedNames(published), upcoming));
  }

  private static List<String> publishedNames(Map<String, Boolean> published) {
    return published.entrySet().stream()
        .filter(Map.Entry::getValue)
        .map(Map.Entry::getKey)
        .toList();
  }

  private static Element read(Path pom) throws Exception {
    if (!Files.isRegularFile(pom)) {
      throw new IllegalArgumentException("no pom at " + pom);
    }
    return DocumentBuilderFactory.newInstance()
        .newDocumentBuilder()
        .parse(pom.toFile())
        .getDocumentElement();
  }

  /** The child elements along {@code names}, or null where one is missing. */
  private static Element path(Element element, String... names) {
    for (String name : names) {
      if (element == null) {
        return null;
      }
      element = child(element, name);
    }
    return element;
  }

  private static Element child(Element parent, String name) {
    for (Element child : children(parent)) {
      if (child.getTagName().equals(name)) {
        return child;
      }
    }
    return null;
  }

  private static List<Element> children(Element parent) {
    List<Element> children = new ArrayList<>();
    if (parent != null) {
      for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
        if (node instanceof Element element) {
          children.add(element);
        }
      }
    }
    return children;
  }

  private static String text(Element parent, String name) {
    Element child = child(parent, name);
    return child == null ? "" : child.getTextContent().trim();
  }

  private static String property(Element project, String name) {
    Element property = path(project, "properties", name);
    return property == null ? null : property.getTextContent().trim();
  }

  private static List<String> words(String text) {
    return text == null || text.isBlank() ? List.of() : Arrays.asList(text.trim().split("\\s+"));
  }
}
