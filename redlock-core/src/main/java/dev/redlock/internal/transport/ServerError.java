package dev.redlock.internal.transport;

/**
 * An error reply from the server; the stream is still in step.
 *
 * @param message the server's message, e.g. {@code NOSCRIPT No matching script}
 */
record ServerError(String message) {

  /** Whether the server lost the script (restart, {@code SCRIPT FLUSH}). */
  boolean noScript() {
    return message.startsWith("NOSCRIPT");
  }

  /**
   * Whether this answer to {@code SCRIPT LOAD} refuses it for as long as the connection lasts: an
   * ACL without {@code SCRIPT} ({@code NOPERM}), or a server or proxy without the command. Every
   * other error ({@code LOADING}, {@code BUSY}, {@code TRYAGAIN}, {@code MASTERDOWN}, ...) may
   * pass, so it is worth trying again.
   */
  boolean refusesScriptLoad() {
    return message.startsWith("NOPERM")
        || message.startsWith("ERR unknown command")
        || message.startsWith("ERR unknown subcommand");
  }

  /** Whether the server wants a password that the connection did not give ({@code NOAUTH}). */
  boolean wantsPassword() {
    return message.startsWith("NOAUTH");
  }

  /**
   * What a link fails with when its master wants a password the URI does not give: an
   * authentication failure naming its remedy, not the first command it refused.
   */
  String passwordMissing() {
    return "authentication refused: the master requires a password and the URI gives none ("
        + firstLine()
        + "): give the user and password in its URI (redis://user:password@host:port)";
  }

  String firstLine() {
    int newline = message.indexOf('\n');
    return newline < 0 ? message : message.substring(0, newline);
  }
}
