package dev.forkpoint.bench.soak;

import dev.forkpoint.bench.soak.RawResponse.Ending;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, one request per connection: the client side of every soak request, because a faulty
 * client must be able to send what no HTTP library sends (bodies shorter than their Content-Length, broken chunk
 * framing, a body that stalls, no Host header) and to go away at any byte. The body is written by a virtual thread
 * while the calling thread reads the answer, so a server that answers before reading the whole body (413) is seen.
 * Never throws for what the server does: every outcome is a {@link RawResponse}.
 */
final class RawHttp {
    /** Body bytes kept per response (the rest are counted only). */
    static final int BODY_CAP = 4 << 20;
    private static final int HEAD_CAP = 64 << 10;
    private static final int SMALL_RECEIVE_BUFFER = 2048;

    private final String host;
    private final int port;

    RawHttp(String host, int port) {
        this.host = host;
        this.port = port;
    }

    int port() { return port; }

    /** The usual Host header value for this server. */
    String hostHeader() { return host + ":" + port; }

    /** Sends {@code request} on a new connection and reads the answer as {@code read} says, within {@code deadline}. */
    RawResponse exchange(RawRequest request, ReadPlan read, Duration deadline) {
        long t0 = System.nanoTime();
        long end = t0 + deadline.toNanos();
        Socket socket = new Socket();
        Thread writer = null;
        Exchange x = new Exchange(socket, t0);
        try {
            if (read instanceof ReadPlan.Ignore) socket.setReceiveBufferSize(SMALL_RECEIVE_BUFFER);
            socket.setTcpNoDelay(true);
            try {
                socket.connect(new InetSocketAddress(host, port), (int) Math.max(1, Math.min(5000, deadline.toMillis())));
            } catch (SocketTimeoutException e) {
                return x.result(Ending.TIMEOUT, "no connection within the deadline");
            } catch (ConnectException e) {
                return x.result(Ending.RESET, "connection refused");
            }
            OutputStream out = socket.getOutputStream();
            byte[] head = head(request);
            writer = Thread.ofVirtual().start(() -> x.write(out, head, request.body()));
            switch (read) {
                case ReadPlan.Ignore ig -> {
                    sleepUntil(Math.min(end, t0 + ig.hold().toNanos()));
                    return x.result(Ending.DROPPED, "never read; closed after " + ig.hold().toMillis() + " ms");
                }
                case ReadPlan.DropAfter d -> {
                    long dropAt = t0 + d.after().toNanos();
                    return x.read(Math.min(end, dropAt), dropAt <= end, Long.MAX_VALUE);
                }
                case ReadPlan.DropOnSignal sig -> {
                    x.signal = sig.signal();
                    return x.read(end, false, Long.MAX_VALUE);
                }
                case ReadPlan.DropAfterBytes b -> {
                    return x.read(end, false, b.bodyBytes());
                }
                case ReadPlan.Whole w -> {
                    return x.read(end, false, Long.MAX_VALUE);
                }
            }
        } catch (IOException e) {
            return x.result(Ending.RESET, describe(e));
        } finally {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing is best effort
            }
            if (writer != null) {
                try {
                    writer.join(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private static void sleepUntil(long nanoTime) {
        long left;
        while ((left = nanoTime - System.nanoTime()) > 0) {
            try {
                Thread.sleep(Duration.ofNanos(Math.min(left, 100_000_000L)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static byte[] head(RawRequest r) {
        StringBuilder sb = new StringBuilder();
        sb.append(r.method()).append(' ').append(r.target()).append(" HTTP/1.1\r\n");
        for (String h : r.headers()) sb.append(h).append("\r\n");
        switch (r.body()) {
            case BodyPlan.Whole w -> sb.append("Content-Length: ").append(w.bytes().length).append("\r\n");
            case BodyPlan.Chunked c -> sb.append("Transfer-Encoding: chunked\r\n");
            case BodyPlan.Truncated t -> sb.append("Content-Length: ").append(t.declared()).append("\r\n");
            case BodyPlan.Stalled s -> sb.append("Content-Length: ").append(s.declared()).append("\r\n");
            case BodyPlan.None n -> { }
            case BodyPlan.Raw raw -> { }
        }
        sb.append("Connection: close\r\n\r\n");
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    static String describe(IOException e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** The state of one exchange: the socket, what was read so far, and the writer's failure if any. */
    private static final class Exchange {
        private final Socket socket;
        private final long t0;
        private final ByteArrayOutputStream body = new ByteArrayOutputStream();
        private final Map<String, String> headers = new HashMap<>();
        private volatile String writeError;
        private int status = -1;
        private long ttfb = -1;
        private long bodyBytes;
        private byte[] buf = new byte[16384];
        private int pos, lim;
        private long end;
        private InputStream in;
        private java.util.concurrent.CountDownLatch signal;

        Exchange(Socket socket, long t0) {
            this.socket = socket;
            this.t0 = t0;
        }

        void write(OutputStream out, byte[] head, BodyPlan plan) {
            try {
                out.write(head);
                switch (plan) {
                    case BodyPlan.None n -> { }
                    case BodyPlan.Whole w -> out.write(w.bytes());
                    case BodyPlan.Raw r -> {
                        out.write(r.bytes());
                        out.flush();
                        if (r.halfClose()) socket.shutdownOutput();
                    }
                    case BodyPlan.Chunked c -> {
                        byte[] b = c.bytes();
                        for (int i = 0; i < b.length; i += c.chunk()) {
                            int n = Math.min(c.chunk(), b.length - i);
                            out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                            out.write(b, i, n);
                            out.write('\r');
                            out.write('\n');
                        }
                        out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    }
                    case BodyPlan.Truncated t -> {
                        out.write(t.bytes());
                        out.flush();
                        socket.shutdownOutput();
                    }
                    case BodyPlan.Stalled s -> out.write(s.prefix());
                }
                out.flush();
            } catch (IOException e) {
                writeError = describe(e);
            }
        }

        RawResponse result(Ending ending, String detail) {
            String d = detail;
            if (ending != Ending.COMPLETE && writeError != null) d = d + " (while sending: " + writeError + ")";
            return new RawResponse(status, Map.copyOf(headers), body.toByteArray(), bodyBytes, ending, d, ttfb, System.nanoTime() - t0);
        }

        /**
         * Reads the response until {@code until} (nanoTime). At that time the exchange ends as DROPPED when
         * {@code dropAtEnd}, else as TIMEOUT; after {@code dropAfterBody} body bytes it ends as DROPPED.
         */
        RawResponse read(long until, boolean dropAtEnd, long dropAfterBody) {
            this.end = until;
            Ending timeout = dropAtEnd ? Ending.DROPPED : Ending.TIMEOUT;
            try {
                in = socket.getInputStream();
                readHead();
                if (status == 204 || status == 304 || (status >= 100 && status < 200)) return result(Ending.COMPLETE, null);
                String te = headers.getOrDefault("transfer-encoding", "").toLowerCase(Locale.ROOT);
                String cl = headers.get("content-length");
                if (te.contains("chunked")) {
                    while (true) {
                        String line = line();
                        int semi = line.indexOf(';');
                        long size = Long.parseLong((semi >= 0 ? line.substring(0, semi) : line).trim(), 16);
                        if (size == 0) {
                            while (!line().isEmpty()) { /* trailers */ }
                            return result(Ending.COMPLETE, null);
                        }
                        if (bodyFor(size, dropAfterBody)) return result(Ending.DROPPED, "closed after " + bodyBytes + " body bytes");
                        if (!line().isEmpty()) return result(Ending.RESET, "bad chunk framing from the server");
                    }
                } else if (cl != null) {
                    long n = Long.parseLong(cl.trim());
                    if (bodyFor(n, dropAfterBody)) return result(Ending.DROPPED, "closed after " + bodyBytes + " body bytes");
                    return result(Ending.COMPLETE, null);
                } else {
                    while (true) {
                        if (pos == lim && fill() < 0) return result(Ending.COMPLETE, null);
                        if (take(lim - pos, dropAfterBody)) return result(Ending.DROPPED, "closed after " + bodyBytes + " body bytes");
                    }
                }
            } catch (Signalled e) {
                return result(Ending.DROPPED, "closed on signal after " + (System.nanoTime() - t0) / 1_000_000 + " ms, " + bodyBytes + " body bytes");
            } catch (SocketTimeoutException e) {
                if (timeout == Ending.DROPPED) return result(Ending.DROPPED, "closed after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
                return result(Ending.TIMEOUT, status < 0 ? "no response within the deadline" : "the response did not finish within the deadline ("
                        + bodyBytes + " body bytes)");
            } catch (EOFException e) {
                return result(Ending.RESET, status < 0 ? "connection closed before a status line" : "connection closed mid-body after " + bodyBytes + " bytes");
            } catch (NumberFormatException e) {
                return result(Ending.RESET, "unparsable framing from the server: " + e.getMessage());
            } catch (IOException e) {
                return result(Ending.RESET, describe(e));
            }
        }

        /** Reads n body bytes; true when the drop point was reached first. */
        private boolean bodyFor(long n, long dropAfterBody) throws IOException {
            long left = n;
            while (left > 0) {
                if (pos == lim && fill() < 0) throw new EOFException();
                int k = (int) Math.min(left, lim - pos);
                left -= k;
                if (take(k, dropAfterBody)) return true;
            }
            return false;
        }

        /** Consumes k buffered bytes into the body; true when at least dropAfterBody body bytes have arrived. */
        private boolean take(int k, long dropAfterBody) {
            if (body.size() < BODY_CAP) body.write(buf, pos, Math.min(k, BODY_CAP - body.size()));
            pos += k;
            bodyBytes += k;
            return bodyBytes >= dropAfterBody;
        }

        private void readHead() throws IOException {
            String statusLine = line();
            ttfb = System.nanoTime() - t0;
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].startsWith("HTTP/")) throw new IOException("not an HTTP status line: " + statusLine);
            status = Integer.parseInt(parts[1]);
            int total = statusLine.length();
            for (String h; !(h = line()).isEmpty(); ) {
                total += h.length();
                if (total > HEAD_CAP) throw new IOException("response head over " + HEAD_CAP + " bytes");
                int colon = h.indexOf(':');
                if (colon > 0) headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
            }
        }

        private String line() throws IOException {
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (pos == lim && fill() < 0) throw new EOFException();
                byte b = buf[pos++];
                if (b == '\n') {
                    int n = sb.length();
                    if (n > 0 && sb.charAt(n - 1) == '\r') sb.setLength(n - 1);
                    return sb.toString();
                }
                sb.append((char) (b & 0xff));
                if (sb.length() > HEAD_CAP) throw new IOException("line over " + HEAD_CAP + " bytes");
            }
        }

        /** Refills the buffer (only when empty); -1 at the end of the stream. Honours the deadline. */
        private int fill() throws IOException {
            int n;
            while (true) {
                long left = end - System.nanoTime();
                if (left <= 0) throw new SocketTimeoutException("deadline");
                if (signal != null && signal.getCount() == 0) throw new Signalled();
                long ms = Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000));
                socket.setSoTimeout((int) (signal != null ? Math.min(ms, 10) : ms));
                try {
                    n = in.read(buf, 0, buf.length);
                    break;
                } catch (SocketTimeoutException e) {
                    if (signal == null) throw e;
                }
            }
            if (n < 0) return -1;
            pos = 0;
            lim = n;
            return n;
        }
    }

    /** The caller's signal to drop the connection arrived. */
    private static final class Signalled extends IOException {
        Signalled() {
            super("signalled");
        }
    }
}
