/**
 * Spring Boot auto-configuration for RedLock: {@link dev.redlock.spring.boot.RedLockProperties}
 * ({@code redlock.*}), the {@link dev.redlock.RedLock} bean, its health indicator, and the Spring
 * Integration registry, ShedLock provider and Micrometer metrics when the application has them.
 *
 * <p><b>Null policy.</b> No parameter of a public method in this package accepts {@code null}
 * unless its Javadoc says so; a property left unset is {@code null} only where its getter says so.
 */
package dev.redlock.spring.boot;
