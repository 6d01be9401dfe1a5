/** Local redis-server processes for tests and drills. */
package dev.redlock.testkit;
