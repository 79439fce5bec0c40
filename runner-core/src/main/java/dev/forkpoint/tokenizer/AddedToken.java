package dev.forkpoint.tokenizer;

/**
 * A token of a Hugging Face tokenizer's {@code added_tokens}: matched in input text before the model runs.
 *
 * @param special    a control token: skipped when decoding, matched only when special text is parsed
 * @param normalized matched in the normalized text (its content normalized too) instead of the raw input
 * @param lstrip     the match takes the whitespace before it
 * @param rstrip     the match takes the whitespace after it
 * @param singleWord matched only where it is not part of a longer word
 */
record AddedToken(int id, String content, boolean special, boolean normalized, boolean lstrip, boolean rstrip,
                  boolean singleWord) {

    /** A special token as Meta's and most configs define them: raw text, no stripping. */
    static AddedToken special(int id, String content) {
        return new AddedToken(id, content, true, false, false, false, false);
    }

    /** Unicode White_Space, which is what Rust's {@code char::is_whitespace} tests. */
    static boolean isWhitespace(int c) {
        return Character.isSpaceChar(c) || (c >= 0x09 && c <= 0x0D) || c == 0x85;
    }
}
