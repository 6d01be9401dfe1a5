package dev.redlock.spring.boot.example;

// README: Spring Boot example application

import dev.redlock.Lease;
import dev.redlock.RedLock;
import java.time.Duration;
import java.util.Optional;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;

@SpringBootApplication
public class ExampleApplication {
  public static void main(String[] args) {
    SpringApplication.run(ExampleApplication.class, args);
  }
}

@Service
class InvoiceJob {
  private final RedLock redlock; // the starter's bean, built from redlock.* properties

  InvoiceJob(RedLock redlock) {
    this.redlock = redlock;
  }

  boolean runOnce() {
    Optional<Lease> lease = redlock.tryAcquire("invoices", Duration.ofSeconds(30));
    if (lease.isEmpty()) {
      return false; // another instance holds it
    }
    try (Lease held = lease.get()) {
      // ... the work, within held.validity() ...
      return true;
    }
  }
}
// end README: Spring Boot example application
