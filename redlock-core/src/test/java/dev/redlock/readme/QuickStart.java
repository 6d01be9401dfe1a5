package dev.redlock.readme;

// README: QuickStart
import dev.redlock.Lease;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;

public class QuickStart {
  public static void main(String[] args) throws InterruptedException {
    // The 5 masters of `docker compose up`, or yours as arguments: redis://host:port ...
    List<String> nodes =
        args.length > 0
            ? List.of(args)
            : IntStream.rangeClosed(26371, 26375)
                .mapToObj(port -> "redis://localhost:" + port)
                .toList();
    // Admitted once by an operator (redlock admit), never by the application: see "Concepts".
    try (RedLock redlock = RedLock.builder().nodes(nodes).build()) { // one per process
      try (Lease lease =
          redlock.acquire("orders:42", Duration.ofSeconds(10), Duration.ofSeconds(3))) {
        System.out.println("locked orders:42, fencing token " + lease.fencingToken());
      } // released on every master
    }
  }
}
// end README: QuickStart
