package dev.forkpoint;

/**
 * Text from a client (a path, a model name, an error message that quotes one) made safe for a one-line log record:
 * control characters (CR and LF above all, which would let a client forge log lines) become visible escapes such as
 * {@code \n} or {@code \u001b}, and very long text is cut at {@value #MAX_CHARS} characters with a note of the length.
 */
public final class LogText {
    public static final int MAX_CHARS = 512;

    private LogText() {}

    /** {@code text} with control characters escaped and its length bounded; "null" for null. */
    public static String escape(String text) {
        return escape(text, MAX_CHARS);
    }

    /** {@code text} with control characters escaped, whatever its length (a whole log record made one line). */
    public static String oneLine(String text) {
        return escape(text, Integer.MAX_VALUE);
    }

    private static String escape(String text, int max) {
        if (text == null) return "null";
        int n = Math.min(text.length(), max);
        StringBuilder out = null;
        for (int i = 0; i < n; i++) {
            char c = text.charAt(i);
            boolean control = c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u2028' || c == '\u2029';
            if (control && out == null) out = new StringBuilder(n + 16).append(text, 0, i);
            if (out == null) continue;
            if (!control) out.append(c);
            else if (c == '\n') out.append("\\n");
            else if (c == '\r') out.append("\\r");
            else if (c == '\t') out.append("\\t");
            else out.append(String.format("\\u%04x", (int) c));
        }
        String s = out == null ? text.substring(0, n) : out.toString();
        return text.length() > max ? s + "… (" + text.length() + " chars)" : s;
    }
}
