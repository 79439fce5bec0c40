package dev.forkpoint.bench;

/**
 * Deterministic pseudo-random ASCII text: lowercase words of 1–9 letters separated by spaces, with an occasional
 * comma or full stop. Every character is one byte, so in the synthetic vocabulary (no merges, no multi-character
 * token any text can produce) a text of n characters is exactly n tokens.
 */
final class PromptText {
    private PromptText() {}

    static String of(int chars, long seed) {
        if (chars < 0) throw new IllegalArgumentException("negative length " + chars);
        var random = new SeededValues(seed);
        var sb = new StringBuilder(chars);
        int wordLeft = 0;
        while (sb.length() < chars) {
            long r = random.nextLong() >>> 1;
            if (wordLeft == 0 && !sb.isEmpty()) {
                long p = r % 16;
                sb.append(p == 0 ? ',' : p == 1 ? '.' : ' ');
                if (p <= 1 && sb.length() < chars) sb.append(' ');
                wordLeft = 1 + (int) ((r >>> 8) % 9);
            } else {
                if (wordLeft == 0) wordLeft = 1 + (int) ((r >>> 8) % 9);
                sb.append((char) ('a' + r % 26));
                wordLeft--;
            }
        }
        return sb.toString();
    }
}
