package dev.forkpoint.tokenizer;

import dev.forkpoint.InvalidInputException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A tokenizer in the Hugging Face {@code tokenizers} library's pipeline, built from {@code tokenizer.json},
 * {@code vocab.json} + {@code merges.txt} or a tiktoken {@code tokenizer.model}: added tokens are cut out of the raw
 * text, each remaining piece is normalized, added tokens marked {@code normalized} are cut out of that, the
 * pre-tokenizer splits it into words, BPE encodes each word, and the post-processor's tokens go around the result.
 * Encodes as that library does for the same file. Immutable and thread-safe.
 */
final class HfTokenizer implements Tokenizer {
    private static final byte[] NONE = new byte[0];

    private final String model;
    private final String[] pieces;
    private final BitSet special = new BitSet();
    private final AddedTokenSplitter rawSplitter, normalizedSplitter;
    private final Normalizer normalizer;
    private final HfPreTokenizer preTokenizer;
    private final HfBpe bpe;
    private final HfDecoder decoder;
    private final boolean byteLevel, byteFallback;
    private final int[] prefix, suffix;
    private final int bos, eos, eot;
    private final BitSet endOfGeneration = new BitSet();

    private HfTokenizer(Builder b) {
        this.model = b.byteLevel() ? "gpt2" : "llama";
        int size = 0;
        for (int id : b.vocab.values()) size = Math.max(size, id + 1);
        for (AddedToken t : b.added) size = Math.max(size, t.id() + 1);
        this.pieces = new String[size];
        Arrays.fill(pieces, "");
        // ids the post-processor and the configs name must be tokens: encode would emit them, decode would refuse them
        for (var e : Map.of("the post-processor's prefix", b.prefix, "the post-processor's suffix", b.suffix).entrySet()) {
            for (int id : e.getValue()) requireToken(b, size, id, e.getKey());
        }
        if (b.bos != null) requireToken(b, size, b.bos, "bos_token");
        if (b.eos != null) requireToken(b, size, b.eos, "eos_token");
        b.vocab.forEach((piece, id) -> pieces[id] = piece);
        List<AddedToken> raw = new ArrayList<>(), normalized = new ArrayList<>();
        List<String> normalizedPatterns = new ArrayList<>();
        for (AddedToken t : b.added) {
            pieces[t.id()] = t.content();
            if (t.special()) special.set(t.id());
            if (t.normalized()) {
                normalized.add(t);
                normalizedPatterns.add(b.normalizer.apply(t.content()));
            } else {
                raw.add(t);
            }
        }
        this.rawSplitter = new AddedTokenSplitter(raw, raw.stream().map(AddedToken::content).toList());
        this.normalizedSplitter = new AddedTokenSplitter(normalized, normalizedPatterns);
        this.normalizer = b.normalizer;
        this.preTokenizer = b.preTokenizer;
        this.bpe = new HfBpe(b.vocab, b.merges, b.unknown, b.byteFallback, b.fuseUnknown, b.ignoreMerges);
        this.decoder = b.decoder;
        this.byteLevel = b.byteLevel();
        this.byteFallback = contains(b.decoder, HfDecoder.ByteFallback.class);

        this.bos = b.bos != null ? b.bos : !b.prefix.isEmpty() ? b.prefix.getFirst()
                : specialNamed("<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>");
        this.eos = b.eos != null ? b.eos : !b.suffix.isEmpty() ? b.suffix.getLast()
                : specialNamed("</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>");
        List<Integer> pre = b.addBos == null ? b.prefix : b.addBos && bos >= 0 ? List.of(bos) : List.of();
        List<Integer> post = b.addEos == null ? b.suffix : b.addEos && eos >= 0 ? List.of(eos) : List.of();
        this.prefix = pre.stream().mapToInt(Integer::intValue).toArray();
        this.suffix = post.stream().mapToInt(Integer::intValue).toArray();
        this.eot = specialNamed("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>");
        for (int id : new int[]{eos, eot}) if (id >= 0) endOfGeneration.set(id);
        for (int id : b.endOfGeneration) if (id >= 0 && id < size) endOfGeneration.set(id);
        Map<String, Integer> specialIds = new HashMap<>();
        for (AddedToken t : b.added) if (t.special()) specialIds.put(t.content(), t.id());
        for (String name : Vocabulary.END_OF_GENERATION_TEXTS) {
            Integer id = specialIds.get(name);
            if (id != null) endOfGeneration.set(id);
        }
    }

    private static void requireToken(Builder b, int size, int id, String what) {
        if (id < 0 || id >= size) {
            throw new dev.forkpoint.format.ModelFormatException(b.source, what, "token id " + id
                    + " is not in the vocabulary (ids 0 to " + (size - 1) + ")");
        }
    }

    private static boolean contains(HfDecoder d, Class<? extends HfDecoder> kind) {
        if (kind.isInstance(d)) return true;
        return d instanceof HfDecoder.Sequence(List<HfDecoder> steps) && steps.stream().anyMatch(s -> contains(s, kind));
    }

    private int specialNamed(String... names) {
        for (String name : names) {
            for (int id = special.nextSetBit(0); id >= 0; id = special.nextSetBit(id + 1)) {
                if (pieces[id].equals(name)) return id;
            }
        }
        return -1;
    }

    @Override
    public String model() { return model; }

    @Override
    public int vocabSize() { return pieces.length; }

    @Override
    public int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
        if (text == null) throw new InvalidInputException("text to encode is null");
        IdList out = new IdList();
        if (addSpecial) for (int id : prefix) out.add(id);
        List<AddedTokenSplitter.Part> parts = new ArrayList<>();
        rawSplitter.split(text, true, parseSpecial, parts);
        List<AddedTokenSplitter.Part> normalizedParts = new ArrayList<>();
        for (AddedTokenSplitter.Part part : parts) {
            if (part.isToken()) {
                out.add(part.id());
                continue;
            }
            normalizedParts.clear();
            normalizedSplitter.split(normalizer.apply(part.text()), part.atStart(), parseSpecial, normalizedParts);
            for (AddedTokenSplitter.Part p : normalizedParts) {
                if (p.isToken()) {
                    out.add(p.id());
                    continue;
                }
                for (HfPreTokenizer.Word word : preTokenizer.split(List.of(new HfPreTokenizer.Word(p.text(), p.atStart())))) {
                    bpe.encode(word.text(), out);
                }
            }
        }
        if (addSpecial) for (int id : suffix) out.add(id);
        return out.toArray();
    }

    /** {@inheritDoc} Special added tokens are skipped; the rest goes through the file's decoder. */
    @Override
    public String decode(int[] ids) {
        List<String> tokens = new ArrayList<>(ids.length);
        for (int id : ids) {
            checkId(id);
            if (!special.get(id) && !pieces[id].isEmpty()) tokens.add(pieces[id]);
        }
        return String.join("", decoder.decode(tokens));
    }

    @Override
    public byte[] tokenBytes(int id) {
        checkId(id);
        String piece = pieces[id];
        if (special.get(id) || piece.isEmpty()) return NONE;
        if (byteLevel) return HfDecoder.ByteLevel.bytesOf(piece);
        if (byteFallback) {
            int b = HfDecoder.ByteFallback.byteOf(piece);
            if (b >= 0) return new byte[]{(byte) b};
        }
        return decoder.perToken(piece).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String piece(int id) {
        checkId(id);
        return pieces[id];
    }

    @Override
    public int bosId() { return bos; }

    @Override
    public int eosId() { return eos; }

    @Override
    public int eotId() { return eot; }

    @Override
    public boolean addsBos() { return prefix.length > 0; }

    @Override
    public boolean addsEos() { return suffix.length > 0; }

    @Override
    public boolean isEndOfGeneration(int id) { return id >= 0 && endOfGeneration.get(id); }

    private void checkId(int id) {
        if (id < 0 || id >= pieces.length) {
            throw new InvalidInputException("token id " + id + " is outside the vocabulary (size " + pieces.length + ")");
        }
    }

    /** What the loaders gather; {@code null} overrides mean "as the tokenizer file implies". */
    static final class Builder {
        Map<String, Integer> vocab = Map.of();
        PairTable merges = new PairTable(0);
        int unknown = -1;
        boolean byteFallback, fuseUnknown, ignoreMerges;
        List<AddedToken> added = new ArrayList<>();
        Normalizer normalizer = new Normalizer.None();
        HfPreTokenizer preTokenizer = new HfPreTokenizer.None();
        HfDecoder decoder = new HfDecoder.None();
        List<Integer> prefix = List.of(), suffix = List.of();
        Integer bos, eos;
        Boolean addBos, addEos;
        List<Integer> endOfGeneration = new ArrayList<>();
        /** tokenizer.json's merges as written, in rank order (for {@link GgufTokenizerMetadata}). */
        String[][] mergePairs = new String[0][];
        /** The pre-tokenizer's Split expressions as written (null for a literal pattern), in order. */
        List<String> splitRegexes = new ArrayList<>();
        /** The file or folder the tokenizer comes from, for errors. */
        java.nio.file.Path source = java.nio.file.Path.of("tokenizer");

        boolean byteLevel() { return contains(decoder, HfDecoder.ByteLevel.class); }

        /** The id of an added token or vocabulary entry with this text, or -1. */
        int idOf(String text) {
            for (AddedToken t : added) if (t.content().equals(text)) return t.id();
            return vocab.getOrDefault(text, -1);
        }

        /** Adds or replaces (same id) an added token. */
        void addToken(AddedToken token) {
            added.removeIf(t -> t.id() == token.id());
            added.add(token);
        }

        Tokenizer build() { return new HfTokenizer(this); }
    }
}
