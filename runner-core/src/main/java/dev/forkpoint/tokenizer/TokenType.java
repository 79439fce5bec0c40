package dev.forkpoint.tokenizer;

/** The kinds of vocabulary entries in {@code tokenizer.ggml.token_type} (llama.cpp's numbering). */
public enum TokenType {
    UNDEFINED, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE;

    /** The type a stored code names; codes outside the known range count as {@link #UNDEFINED}. */
    public static TokenType of(int code) {
        TokenType[] all = values();
        return code >= 0 && code < all.length ? all[code] : UNDEFINED;
    }

    /** Tokens that text is split around before the model's own algorithm runs. */
    public boolean isSpecial() {
        return this == CONTROL || this == USER_DEFINED || this == UNKNOWN;
    }
}
