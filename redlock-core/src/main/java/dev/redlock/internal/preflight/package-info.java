/**
 * Internal, not exported: the deployment preflight. {@link
 * dev.redlock.internal.preflight.Preflight} checks a master's fitness for Redlock with read-only
 * commands and reports {@link dev.redlock.internal.preflight.Findings}, which the API turns into
 * its {@code Inspection}; {@link dev.redlock.internal.preflight.FitNodeClient} keeps an unfit
 * master from voting. Imports the transport only.
 */
package dev.redlock.internal.preflight;
