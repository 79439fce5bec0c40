package dev.forkpoint.tokenizer;

import dev.forkpoint.InvalidInputException;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The {@code llama} model: SentencePiece BPE over a scored vocabulary, as llama.cpp runs it. Spaces become "▁",
 * text gets a leading space (when {@code add_space_prefix}) at the start and after each special token, and
 * adjacent pieces are merged best score first (ties: leftmost) while the merged text is a token. Characters that
 * end up outside the vocabulary fall back to their UTF-8 bytes as {@code <0xNN>} tokens, else the unknown token.
 */
final class SpmTokenizer extends VocabularyTokenizer {
    static final char SPACE_MARK = '\u2581';

    /** The id each byte falls back to, or -1. */
    private final int[] byteTokens = new int[256];

    SpmTokenizer(Vocabulary vocab) {
        super(vocab);
        for (int b = 0; b < 256; b++) {
            int id = vocab.id(String.format("<0x%02X>", b));
            if (id < 0 && b < 0x80) id = vocab.id(String.valueOf((char) b));
            byteTokens[b] = id >= 0 ? id : vocab.unknown;
        }
    }

    @Override
    byte[] normalBytes(String text, TokenType type) {
        if (type == TokenType.BYTE && text.length() == 6 && text.startsWith("<0x") && text.endsWith(">")) {
            try {
                return new byte[]{(byte) Integer.parseInt(text.substring(3, 5), 16)};
            } catch (NumberFormatException e) {
                // not a byte token after all: fall through to its text
            }
        }
        return text.replace(SPACE_MARK, ' ').getBytes(StandardCharsets.UTF_8);
    }

    @Override
    void encodeFragments(List<Fragment> fragments, IdList out) {
        boolean afterSpecial = true;
        for (Fragment fragment : fragments) {
            switch (fragment) {
                case Fragment.Special(int id) -> {
                    out.add(id);
                    afterSpecial = true;
                }
                case Fragment.Text(String text) -> {
                    String prefixed = vocab.addSpacePrefix && afterSpecial ? " " + text : text;
                    encodeText(prefixed.replace(' ', SPACE_MARK), out);
                    afterSpecial = false;
                }
            }
        }
    }

    /** A candidate merge of two adjacent symbols. */
    private record Bigram(float score, int left, int right, int length) {}

    private void encodeText(String text, IdList out) {
        int n = text.codePointCount(0, text.length());
        int[] start = new int[n], length = new int[n], prev = new int[n], next = new int[n];
        for (int i = 0, at = 0; i < n; i++) {
            int len = Character.charCount(text.codePointAt(at));
            start[i] = at;
            length[i] = len;
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
            at += len;
        }
        PriorityQueue<Bigram> queue = new PriorityQueue<>((a, b) -> a.score != b.score
                ? Float.compare(b.score, a.score) : Integer.compare(a.left, b.left));
        for (int i = 1; i < n; i++) offer(queue, text, start, length, i - 1, i);
        while (!queue.isEmpty()) {
            Bigram bigram = queue.poll();
            int l = bigram.left, r = bigram.right;
            if (length[l] == 0 || length[r] == 0 || length[l] + length[r] != bigram.length) continue;
            length[l] += length[r];
            length[r] = 0;
            next[l] = next[r];
            if (next[r] >= 0) prev[next[r]] = l;
            if (prev[l] >= 0) offer(queue, text, start, length, prev[l], l);
            if (next[l] >= 0) offer(queue, text, start, length, l, next[l]);
        }
        for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) {
            String piece = text.substring(start[i], start[i] + length[i]);
            int id = vocab.id(piece);
            if (id >= 0) {
                out.add(id);
                continue;
            }
            for (byte b : piece.getBytes(StandardCharsets.UTF_8)) {
                int fallback = byteTokens[b & 0xFF];
                if (fallback < 0) {
                    throw new InvalidInputException("text \"" + piece + "\" has no token, and the vocabulary has "
                            + "neither byte tokens nor an unknown token to stand for it");
                }
                out.add(fallback);
            }
        }
    }

    private void offer(PriorityQueue<Bigram> queue, String text, int[] start, int[] length, int l, int r) {
        int len = length[l] + length[r];
        int id = vocab.id(text.substring(start[l], start[l] + len));
        if (id >= 0) queue.add(new Bigram(vocab.scores[id], l, r, len));
    }
}
