package dev.redlock.shedlock;

import java.lang.reflect.Method;
import java.util.List;
import org.junit.jupiter.api.DisplayNameGenerator;

/**
 * Names each test after the class that declares it, so that the test reports show which of
 * ShedLock's contract classes a test comes from: {@code
 * AbstractLockProviderIntegrationTest.shouldCreateLock()}. A test this project overrides is named
 * after the overriding class, followed by the contract class whose test it replaces: {@code
 * QuorumContract.shouldNotBeAbleToExtendExpiredLock() overrides
 * AbstractExtensibleLockProviderIntegrationTest}. With surefire's {@code
 * usePhrasedTestCaseMethodName}, these names are the {@code name} of each {@code testcase} in the
 * XML reports.
 */
final class ContractClassNames extends DisplayNameGenerator.Standard {

  @Override
  public String generateDisplayNameForMethod(
      List<Class<?>> enclosingInstanceTypes, Class<?> testClass, Method testMethod) {
    String name =
        testMethod.getDeclaringClass().getSimpleName()
            + "."
            + super.generateDisplayNameForMethod(enclosingInstanceTypes, testClass, testMethod);
    Class<?> overridden = overriddenIn(testMethod);
    return overridden == null ? name : name + " overrides " + overridden.getSimpleName();
  }

  /** The nearest superclass that declares the method {@code method} overrides, or null. */
  private static Class<?> overriddenIn(Method method) {
    for (Class<?> c = method.getDeclaringClass().getSuperclass();
        c != null;
        c = c.getSuperclass()) {
      try {
        c.getDeclaredMethod(method.getName(), method.getParameterTypes());
        return c;
      } catch (NoSuchMethodException e) {
        // not declared here: look further up
      }
    }
    return null;
  }
}
