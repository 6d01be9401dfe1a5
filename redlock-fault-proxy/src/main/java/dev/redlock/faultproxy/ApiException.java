package dev.redlock.faultproxy;

/**
 * A failed API call, carrying the HTTP status and the message Toxiproxy would put in its {@code
 * {"error": ..., "status": ...}} body.
 */
final class ApiException extends Exception {
  private static final long serialVersionUID = 1L;

  private final int status;

  ApiException(int status, String message) {
    super(message);
    this.status = status;
  }

  int status() {
    return status;
  }

  static ApiException badRequestBody(String detail) {
    return new ApiException(400, "bad request body: " + detail);
  }

  static ApiException missingField(String detail) {
    return new ApiException(400, "missing required field: " + detail);
  }

  static ApiException proxyNotFound() {
    return new ApiException(404, "proxy not found");
  }

  static ApiException toxicNotFound() {
    return new ApiException(404, "toxic not found");
  }

  static ApiException internal(String message) {
    return new ApiException(500, message);
  }
}
