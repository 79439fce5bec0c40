package dev.forkpoint.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Turns a stream of token ids into text, holding back bytes until they form complete UTF-8 characters.
 * Bytes that can never become a valid character are emitted at once as U+FFFD. Not thread-safe.
 */
public final class StreamingDecoder {
    private final Tokenizer tokenizer;
    private byte[] held = new byte[8];
    private int heldLength;

    public StreamingDecoder(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** Adds a token and returns the text that is now complete (possibly empty). */
    public String push(int id) {
        byte[] b = tokenizer.tokenBytes(id);
        if (b.length == 0) return "";
        if (heldLength + b.length > held.length) held = Arrays.copyOf(held, Math.max(held.length * 2, heldLength + b.length));
        System.arraycopy(b, 0, held, heldLength, b.length);
        heldLength += b.length;
        int complete = completePrefix(held, heldLength);
        if (complete == 0) return "";
        String text = new String(held, 0, complete, StandardCharsets.UTF_8);
        System.arraycopy(held, complete, held, 0, heldLength - complete);
        heldLength -= complete;
        return text;
    }

    /** Returns whatever is held back (incomplete sequences as U+FFFD) and resets. */
    public String flush() {
        String text = new String(held, 0, heldLength, StandardCharsets.UTF_8);
        heldLength = 0;
        return text;
    }

    /**
     * The length of the longest prefix of {@code bytes[0..n)} that does not end inside a UTF-8 sequence that
     * more bytes could still complete.
     */
    static int completePrefix(byte[] bytes, int n) {
        // A sequence is at most 4 bytes, so only a lead byte among the last 3 can start an unfinished one.
        for (int i = n - 1; i >= Math.max(0, n - 3); i--) {
            int b = bytes[i] & 0xFF;
            if ((b & 0xC0) == 0x80) continue; // continuation byte: keep looking for its lead
            int need = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? (b <= 0xEF ? 3 : 0) : b >= 0xC2 ? 2 : 0;
            return need > n - i ? i : n;
        }
        return n;
    }
}
