package dev.redlock.simulation;

import static java.nio.charset.StandardCharsets.ISO_8859_1;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * A simulated master's side of RESP2: the commands it reads (arrays of bulk strings, as the library
 * writes them) and the replies it writes. The library's side is its own codec, unchanged.
 */
public final class RespCodec {

  private RespCodec() {}

  /**
   * Reads the commands in {@code bytes}: whole commands only, as one write of the library holds.
   *
   * @param bytes what the client wrote
   * @return each command's arguments
   * @throws IllegalArgumentException if the bytes are not whole RESP2 commands
   */
  public static List<List<byte[]>> commands(byte[] bytes) {
    List<List<byte[]>> commands = new ArrayList<>();
    int[] at = {0};
    while (at[0] < bytes.length) {
      int n = header(bytes, at, '*');
      List<byte[]> args = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        int length = header(bytes, at, '$');
        if (at[0] + length + 2 > bytes.length) {
          throw new IllegalArgumentException("a bulk string cut short");
        }
        byte[] arg = new byte[length];
        System.arraycopy(bytes, at[0], arg, 0, length);
        args.add(arg);
        at[0] += length + 2;
      }
      commands.add(args);
    }
    return commands;
  }

  private static int header(byte[] bytes, int[] at, char mark) {
    if (at[0] >= bytes.length || bytes[at[0]] != mark) {
      throw new IllegalArgumentException("expected '" + mark + "' at byte " + at[0]);
    }
    int n = 0;
    int i = at[0] + 1;
    for (; i < bytes.length && bytes[i] != '\r'; i++) {
      n = n * 10 + (bytes[i] - '0');
    }
    at[0] = i + 2;
    return n;
  }

  /**
   * Writes a reply as a master does.
   *
   * @param reply a {@link SimMaster} reply
   * @return its bytes
   */
  public static byte[] encode(Object reply) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    encode(reply, out);
    return out.toByteArray();
  }

  private static void encode(Object reply, ByteArrayOutputStream out) {
    if (reply == null) {
      out.writeBytes("$-1\r\n".getBytes(ISO_8859_1));
    } else if (reply instanceof SimMaster.Status status) {
      out.writeBytes(("+" + status.text() + "\r\n").getBytes(ISO_8859_1));
    } else if (reply instanceof SimMaster.Error error) {
      out.writeBytes(("-" + error.message().replace("\r\n", " ") + "\r\n").getBytes(ISO_8859_1));
    } else if (reply instanceof Long n) {
      out.writeBytes((":" + n + "\r\n").getBytes(ISO_8859_1));
    } else if (reply instanceof byte[] bulk) {
      out.writeBytes(("$" + bulk.length + "\r\n").getBytes(ISO_8859_1));
      out.writeBytes(bulk);
      out.writeBytes("\r\n".getBytes(ISO_8859_1));
    } else {
      List<?> items = (List<?>) reply;
      out.writeBytes(("*" + items.size() + "\r\n").getBytes(ISO_8859_1));
      for (Object item : items) {
        encode(item, out);
      }
    }
  }
}
