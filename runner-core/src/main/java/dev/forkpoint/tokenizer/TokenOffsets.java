package dev.forkpoint.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Where places in a text fall in its encoding: given {@code text}, its tokens {@code encode(text, true, true)} and char
 * offsets into the text, the token index at which each offset lies — the number of tokens that cover exactly the text
 * before it — or −1 when a token spans the offset (a merge across it) or the tokens cannot be lined up with the text.
 * Found in one pass over the tokens, without encoding anything again.
 *
 * <p>How the tokens are lined up with the text's UTF-8 bytes: a token covers its {@link Tokenizer#tokenBytes} bytes;
 * a token with no bytes covers its piece when the text holds the piece there (a special token parsed from the text,
 * such as {@code <|im_end|>}), else nothing (the BOS or EOS the tokenizer adds); a SentencePiece token whose leading
 * space the text does not hold covers its bytes less that space (the space prefix a SentencePiece vocabulary adds to
 * the text, and after special tokens); whitespace right before or after a special token that the tokens do not hold
 * is covered by it (an added token that strips its neighbours' whitespace). A token whose bytes match none of these loses the alignment: the offsets after
 * it get −1 (normalisers that rewrite the text are not followed; an offset is then simply not found).
 *
 * <p>Invariant: an index returned for an offset is a token edge whose tokens, decoded, give exactly the text before the
 * offset (up to the leading spaces a SentencePiece vocabulary adds).
 */
public final class TokenOffsets {
    private TokenOffsets() {}

    /**
     * For each of {@code charOffsets} (ascending; values outside (0, text length] give −1) the token index in
     * {@code tokens} where it lies, or −1.
     */
    public static int[] indices(Tokenizer tokenizer, String text, int[] tokens, int[] charOffsets) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] byteOffsets = byteOffsets(text, charOffsets);
        int[] out = new int[charOffsets.length];
        Arrays.fill(out, -1);
        int next = 0;   // the first offset not yet passed
        while (next < byteOffsets.length && byteOffsets[next] <= 0) next++;
        int pos = 0;    // text bytes covered by tokens[0, k)
        boolean afterSpecial = false;
        for (int k = 0; k < tokens.length && next < byteOffsets.length; k++) {
            int id = tokens[k];
            boolean added = k == 0 && tokenizer.addsBos() && id == tokenizer.bosId()
                    || k == tokens.length - 1 && tokenizer.addsEos() && id == tokenizer.eosId();
            int covered = added ? 0 : covered(tokenizer, id, bytes, pos, afterSpecial);
            if (covered < 0) break;   // the alignment is lost: later offsets stay −1
            afterSpecial = !added && tokenizer.tokenBytes(id).length == 0;
            pos += covered;
            while (next < byteOffsets.length && byteOffsets[next] < pos) next++;   // spanned by token k (or not an offset)
            if (next < byteOffsets.length && byteOffsets[next] == pos && covered > 0) out[next++] = k + 1;
        }
        return out;
    }

    /**
     * The text bytes token {@code id} covers at {@code pos}, or −1 when it does not match the text there. Whitespace
     * the text holds before a special token, or after one ({@code afterSpecial}), may be absorbed by it (an added
     * token's lstrip / rstrip) and is covered too.
     */
    private static int covered(Tokenizer tokenizer, int id, byte[] text, int pos, boolean afterSpecial) {
        byte[] own = tokenizer.tokenBytes(id);
        if (own.length == 0) {
            byte[] piece = tokenizer.piece(id).getBytes(StandardCharsets.UTF_8);
            if (piece.length == 0) return 0;
            int space = whitespace(text, pos);
            for (int skip : new int[] {0, space}) {
                if (matches(text, pos + skip, piece, 0)) return skip + piece.length;
            }
            return 0;   // not in the text: a token the tokenizer added
        }
        int space = afterSpecial ? whitespace(text, pos) : 0;
        for (int skip = 0; skip <= space; skip += Math.max(1, space)) {
            if (matches(text, pos + skip, own, 0)) return skip + own.length;
            if (own[0] == ' ' && matches(text, pos + skip, own, 1)) return skip + own.length - 1;   // a space prefix the text does not hold
        }
        return -1;
    }

    /** The length of the run of ASCII whitespace at {@code pos}. */
    private static int whitespace(byte[] text, int pos) {
        int n = 0;
        while (pos + n < text.length && (text[pos + n] == ' ' || text[pos + n] == '\n' || text[pos + n] == '\t' || text[pos + n] == '\r')) n++;
        return n;
    }

    private static boolean matches(byte[] text, int pos, byte[] token, int from) {
        int n = token.length - from;
        return pos + n <= text.length && Arrays.equals(text, pos, pos + n, token, from, token.length);
    }

    /** The UTF-8 byte offset of each char offset; −1 for one outside (0, text length]. */
    private static int[] byteOffsets(String text, int[] charOffsets) {
        int[] out = new int[charOffsets.length];
        int chars = 0, bytes = 0;
        for (int i = 0; i < charOffsets.length; i++) {
            int c = charOffsets[i];
            if (c <= 0 || c > text.length() || c < chars) {
                out[i] = -1;
                continue;
            }
            bytes += utf8Length(text, chars, c);
            chars = c;
            out[i] = bytes;
        }
        return out;
    }

    private static int utf8Length(String s, int from, int to) {
        int n = 0;
        for (int i = from; i < to; i++) {
            char ch = s.charAt(i);
            if (ch < 0x80) n += 1;
            else if (ch < 0x800) n += 2;
            else if (Character.isHighSurrogate(ch) && i + 1 < to && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else n += 3;
        }
        return n;
    }
}
