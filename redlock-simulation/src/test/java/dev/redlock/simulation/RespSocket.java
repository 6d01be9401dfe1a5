package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A plain RESP2 connection to a real redis-server whose replies take {@link SimMaster}'s shapes
 * ({@code byte[]}, {@code Long}, {@code List}, {@code null}, {@link SimMaster.Status}, {@link
 * SimMaster.Error}), so that the two can be compared reply for reply. Not thread-safe.
 */
final class RespSocket implements AutoCloseable {

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  RespSocket(String host, int port) throws IOException {
    socket = new Socket();
    socket.connect(new InetSocketAddress(host, port), 2000);
    socket.setSoTimeout(5000);
    socket.setTcpNoDelay(true);
    in = new BufferedInputStream(socket.getInputStream());
    out = socket.getOutputStream();
  }

  /** Sends one command and reads its reply. */
  Object execute(String... args) throws IOException {
    send(args);
    return read();
  }

  /** Sends one command without reading (a subscriber's SUBSCRIBE, whose replies are read later). */
  void send(String... args) throws IOException {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    buffer.writeBytes(("*" + args.length + "\r\n").getBytes(ISO_8859_1));
    for (String arg : args) {
      byte[] bytes = arg.getBytes(ISO_8859_1);
      buffer.writeBytes(("$" + bytes.length + "\r\n").getBytes(ISO_8859_1));
      buffer.writeBytes(bytes);
      buffer.writeBytes("\r\n".getBytes(ISO_8859_1));
    }
    out.write(buffer.toByteArray());
    out.flush();
  }

  /** Reads one reply. */
  Object read() throws IOException {
    String line = line();
    char type = line.charAt(0);
    String rest = line.substring(1);
    switch (type) {
      case '+':
        return new SimMaster.Status(rest);
      case '-':
        return new SimMaster.Error(rest);
      case ':':
        return Long.parseLong(rest);
      case '$':
        int length = Integer.parseInt(rest);
        if (length < 0) {
          return null;
        }
        byte[] bytes = in.readNBytes(length);
        in.readNBytes(2);
        return bytes;
      case '*':
        int count = Integer.parseInt(rest);
        if (count < 0) {
          return null;
        }
        List<Object> items = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          items.add(read());
        }
        return items;
      default:
        throw new IOException("not a RESP2 reply: " + line);
    }
  }

  private String line() throws IOException {
    StringBuilder line = new StringBuilder();
    int c;
    while ((c = in.read()) != '\r') {
      if (c < 0) {
        throw new IOException("connection closed");
      }
      line.append((char) c);
    }
    in.read(); // '\n'
    return line.toString();
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
