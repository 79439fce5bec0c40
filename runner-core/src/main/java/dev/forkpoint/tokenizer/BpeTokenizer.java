package dev.forkpoint.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * The {@code gpt2} model: byte-level BPE. Text is split into words by the pre-tokenizer, each word's UTF-8 bytes
 * are written as GPT-2's byte characters, and adjacent pieces are merged lowest merge rank first (ties: leftmost).
 * A vocabulary without merges leaves every byte its own token.
 */
final class BpeTokenizer extends VocabularyTokenizer {
    private final PreTokenizer preTokenizer;
    /** Merge rank by "left right". */
    private final Map<String, Integer> ranks;

    BpeTokenizer(Vocabulary vocab, PreTokenizer preTokenizer, String[] merges) {
        super(vocab);
        this.preTokenizer = preTokenizer;
        this.ranks = new HashMap<>(merges.length * 2);
        for (int rank = 0; rank < merges.length; rank++) {
            String merge = merges[rank];
            int space = merge.indexOf(' ', 1);
            if (space > 0) ranks.putIfAbsent(merge, rank);
        }
    }

    String preTokenizerName() { return preTokenizer.name(); }

    @Override
    byte[] normalBytes(String text, TokenType type) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(text.length());
        for (int i = 0; i < text.length(); ) {
            int cp = text.codePointAt(i);
            int b = cp < Character.MIN_SUPPLEMENTARY_CODE_POINT ? ByteUnicode.byteOf((char) cp) : -1;
            if (b >= 0) {
                out.write(b);
            } else {
                byte[] raw = Character.toString(cp).getBytes(StandardCharsets.UTF_8);
                out.write(raw, 0, raw.length);
            }
            i += Character.charCount(cp);
        }
        return out.toByteArray();
    }

    @Override
    void encodeFragments(List<Fragment> fragments, IdList out) {
        for (Fragment fragment : fragments) {
            switch (fragment) {
                case Fragment.Special(int id) -> out.add(id);
                case Fragment.Text(String text) -> {
                    for (String word : preTokenizer.split(text)) {
                        encodeWord(ByteUnicode.encode(word.getBytes(StandardCharsets.UTF_8)), out);
                    }
                }
            }
        }
    }

    /** A candidate merge of two adjacent symbols with the lengths they had when it was found. */
    private record Bigram(int rank, int left, int right, int leftLength, int rightLength) {}

    /** Encodes one word given in byte characters (one char per byte). */
    private void encodeWord(String word, IdList out) {
        if (preTokenizer.ignoreMerges()) {
            int whole = vocab.id(word);
            if (whole >= 0) {
                out.add(whole);
                return;
            }
        }
        int n = word.length();
        int[] length = new int[n], prev = new int[n], next = new int[n];
        for (int i = 0; i < n; i++) {
            length[i] = 1;
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        PriorityQueue<Bigram> queue = new PriorityQueue<>((a, b) -> a.rank != b.rank
                ? Integer.compare(a.rank, b.rank) : Integer.compare(a.left, b.left));
        for (int i = 1; i < n; i++) offer(queue, word, length, i - 1, i);
        while (!queue.isEmpty()) {
            Bigram bigram = queue.poll();
            int l = bigram.left, r = bigram.right;
            if (length[l] != bigram.leftLength || length[r] != bigram.rightLength) continue;
            length[l] += length[r];
            length[r] = 0;
            next[l] = next[r];
            if (next[r] >= 0) prev[next[r]] = l;
            if (prev[l] >= 0) offer(queue, word, length, prev[l], l);
            if (next[l] >= 0) offer(queue, word, length, l, next[l]);
        }
        for (int i = n > 0 ? 0 : -1; i >= 0; i = next[i]) {
            String piece = word.substring(i, i + length[i]);
            int id = vocab.id(piece);
            if (id >= 0) {
                out.add(id);
                continue;
            }
            // As llama.cpp: a piece outside the vocabulary is spelled with whatever single-character tokens exist.
            for (int c = 0; c < piece.length(); c++) {
                int single = vocab.id(piece.substring(c, c + 1));
                if (single >= 0) out.add(single);
            }
        }
    }

    private void offer(PriorityQueue<Bigram> queue, String word, int[] length, int l, int r) {
        if (length[l] == 0 || length[r] == 0) return;
        String key = word.substring(l, l + length[l]) + ' ' + word.substring(r, r + length[r]);
        Integer rank = ranks.get(key);
        if (rank != null) queue.add(new Bigram(rank, l, r, length[l], length[r]));
    }
}
