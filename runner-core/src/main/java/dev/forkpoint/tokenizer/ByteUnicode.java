package dev.forkpoint.tokenizer;

/**
 * GPT-2's reversible byte ↔ character mapping: printable Latin-1 bytes map to themselves, the other bytes to
 * U+0100 upwards in byte order, so every byte is one visible BMP character.
 */
public final class ByteUnicode {
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[512];

    static {
        java.util.Arrays.fill(CHAR_TO_BYTE, -1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = (char) (printable ? b : next++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private ByteUnicode() {}

    /** The 256 byte tokens of a byte-level BPE vocabulary, in byte order: token b is byte b's mapped character. */
    public static java.util.List<String> byteTokens() {
        var out = new java.util.ArrayList<String>(256);
        for (int b = 0; b < 256; b++) out.add(String.valueOf(BYTE_TO_CHAR[b]));
        return java.util.List.copyOf(out);
    }

    static char charOf(int b) {
        return BYTE_TO_CHAR[b & 0xFF];
    }

    /** The byte a mapped character stands for, or -1 when {@code c} is not one of the 256 mapped characters. */
    static int byteOf(char c) {
        return c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    }

    /** The mapped form of {@code bytes}: one character per byte. */
    static String encode(byte[] bytes) {
        char[] out = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) out[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
        return new String(out);
    }
}
