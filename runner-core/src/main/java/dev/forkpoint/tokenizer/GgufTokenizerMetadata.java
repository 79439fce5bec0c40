package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.MetadataValue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * GGUF {@code tokenizer.*} metadata for a Hugging Face folder's tokenizer, the way llama.cpp's converter describes
 * the same vocabularies. {@code tokenizer.json} is read by the loader's reader ({@link TokenizerJson}, every field
 * checked), {@code tokenizer_config.json} and {@code generation_config.json} by the same checked JSON reads:
 * <ul>
 * <li>a BPE model with byte fallback (SentencePiece converted by Hugging Face) becomes {@code model = llama} with
 *     tokens, token types (byte, control, user-defined, unknown, normal) and scores that reproduce the merge order:
 *     where the merges follow the vocabulary order (SentencePiece-trained vocabularies) normal piece i scores
 *     −(i − first normal id), as SentencePiece does; otherwise the piece a merge of rank r produces scores −r;</li>
 * <li>a byte-level BPE becomes {@code model = gpt2} with its merges and {@code pre} named after the Split expression.</li>
 * </ul>
 */
public final class GgufTokenizerMetadata {
    private static final String P = "tokenizer.ggml.";
    private static final Pattern BYTE = Pattern.compile("<0x[0-9A-Fa-f]{2}>");

    private GgufTokenizerMetadata() {}

    /**
     * The metadata of {@code folder}'s tokenizer for a model of {@code vocabSize} embeddings whose config.json gives
     * BOS {@code configBos} (or −1) and EOS {@code configEos}: tokenizer_config.json's tokens win over them.
     */
    public static Map<String, MetadataValue> fromFolder(Path folder, int vocabSize, int configBos, List<Integer> configEos) throws IOException {
        Path file = folder.resolve("tokenizer.json");
        if (!Files.isRegularFile(file)) throw new ModelFormatException(file, "tokenizer.json", "missing: the folder has no Hugging Face tokenizer");
        HfTokenizer.Builder b = TokenizerJson.read(file);
        // ids: vocabulary, then added tokens (which may extend it)
        Map<Integer, String> byId = new HashMap<>();
        b.vocab.forEach((piece, id) -> byId.put(id, piece));
        String unk = b.unknown >= 0 ? byId.get(b.unknown) : null;
        Map<Integer, Boolean> added = new HashMap<>();   // id -> special
        for (AddedToken a : b.added) {
            byId.put(a.id(), a.content());
            added.put(a.id(), a.special());
        }
        int size = Math.max(vocabSize, byId.keySet().stream().mapToInt(i -> i + 1).max().orElse(0));
        List<String> tokens = new ArrayList<>(size);
        for (int i = 0; i < size; i++) tokens.add(byId.getOrDefault(i, "[PAD" + i + "]"));
        Map<String, Integer> idOf = new HashMap<>();
        for (int i = 0; i < size; i++) idOf.putIfAbsent(tokens.get(i), i);
        List<String[]> merges = Arrays.asList(b.mergePairs);
        boolean spm = b.byteFallback;

        Map<String, MetadataValue> m = new LinkedHashMap<>();
        int[] types = new int[size];
        for (int i = 0; i < size; i++) {
            String t = tokens.get(i);
            TokenType type;
            if (unk != null && t.equals(unk)) type = TokenType.UNKNOWN;
            else if (added.containsKey(i)) type = added.get(i) ? TokenType.CONTROL : TokenType.USER_DEFINED;
            else if (!byId.containsKey(i)) type = TokenType.UNUSED;
            else if (spm && BYTE.matcher(t).matches()) type = TokenType.BYTE;
            else type = TokenType.NORMAL;
            types[i] = type.ordinal();
        }
        if (spm) {
            m.put(P + "model", MetadataValue.of("llama"));
            m.put(P + "tokens", MetadataValue.ofStrings(tokens));
            m.put(P + "scores", MetadataValue.ofF32s(spmScores(tokens, types, merges, idOf)));
            m.put(P + "token_type", MetadataValue.ofI32s(types));
            m.put(P + "add_space_prefix", MetadataValue.ofBool(prependsSpace(b)));
        } else {
            m.put(P + "model", MetadataValue.of("gpt2"));
            m.put(P + "pre", MetadataValue.of(preName(file, b)));
            m.put(P + "tokens", MetadataValue.ofStrings(tokens));
            m.put(P + "token_type", MetadataValue.ofI32s(types));
            m.put(P + "merges", MetadataValue.ofStrings(merges.stream().map(x -> x[0] + " " + x[1]).toList()));
        }

        JsonNode tc = TokenizerFiles.readIfPresent(folder.resolve("tokenizer_config.json"));
        JsonNode gen = TokenizerFiles.readIfPresent(folder.resolve("generation_config.json"));
        int bos = tokenId(tc, "bos_token", idOf, configBos);
        int eos = tokenId(tc, "eos_token", idOf, configEos.isEmpty() ? -1 : configEos.getFirst());
        if (bos >= 0) m.put(P + "bos_token_id", MetadataValue.ofU32(bos));
        if (eos >= 0) m.put(P + "eos_token_id", MetadataValue.ofU32(eos));
        List<Integer> ends = new ArrayList<>(configEos);
        if (gen != null) {
            JsonNode e = gen.get("eos_token_id");
            if (e != null && e.isArray()) e.forEach(x -> ends.add(x.asInt()));
            else if (e != null && e.isIntegralNumber()) ends.add(e.asInt());
        }
        ends.stream().filter(x -> x != eos && x >= 0 && x < size).findFirst()
                .ifPresent(eot -> m.put(P + "eot_token_id", MetadataValue.ofU32(eot)));
        if (unk != null && idOf.containsKey(unk)) m.put(P + "unknown_token_id", MetadataValue.ofU32(idOf.get(unk)));
        int pad = tokenId(tc, "pad_token", idOf, -1);
        if (pad >= 0) m.put(P + "padding_token_id", MetadataValue.ofU32(pad));
        boolean addBos = tc != null && tc.has("add_bos_token") ? tc.get("add_bos_token").asBoolean()
                : bos >= 0 && (b.prefix.contains(bos) || b.suffix.contains(bos));   // the post-processor's template adds it
        boolean addEos = tc != null && tc.has("add_eos_token") && tc.get("add_eos_token").asBoolean();
        m.put(P + "add_bos_token", MetadataValue.ofBool(addBos && bos >= 0));
        m.put(P + "add_eos_token", MetadataValue.ofBool(addEos && eos >= 0));
        if (tc != null && tc.path("chat_template").isTextual()) {
            m.put("tokenizer.chat_template", MetadataValue.of(tc.get("chat_template").asText()));
        } else if (Files.isRegularFile(folder.resolve("chat_template.jinja"))) {
            m.put("tokenizer.chat_template", MetadataValue.of(Files.readString(folder.resolve("chat_template.jinja"))));
        }
        return m;
    }

    /** Scores whose order reproduces the merge ranks (see the class comment). */
    private static float[] spmScores(List<String> tokens, int[] types, List<String[]> merges, Map<String, Integer> idOf) {
        int n = tokens.size();
        int normal = TokenType.NORMAL.ordinal();
        int[] rank = new int[n];
        Arrays.fill(rank, -1);
        for (int r = 0; r < merges.size(); r++) {
            Integer id = idOf.get(merges.get(r)[0] + merges.get(r)[1]);
            if (id != null && rank[id] < 0) rank[id] = r;
        }
        int firstNormal = -1;
        boolean byId = true;
        int lastId = -1;
        for (int r = 0; r < merges.size(); r++) {
            Integer id = idOf.get(merges.get(r)[0] + merges.get(r)[1]);
            if (id == null || rank[id] != r) continue;
            if (id < lastId) byId = false;
            lastId = id;
        }
        for (int i = 0; i < n; i++) if (types[i] == normal) { firstNormal = i; break; }
        float[] scores = new float[n];
        for (int i = 0; i < n; i++) {
            if (types[i] != normal) scores[i] = 0;
            else if (byId) scores[i] = -(float) (i - firstNormal);
            else scores[i] = rank[i] >= 0 ? -(float) rank[i] : -(float) (merges.size() + i);
        }
        return scores;
    }

    /** Whether the normalizer prepends SentencePiece's space, or the Metaspace pre-tokenizer does. */
    private static boolean prependsSpace(HfTokenizer.Builder b) {
        if (b.normalizer instanceof Normalizer.Sequence s && s.normalizers().stream().anyMatch(x -> x instanceof Normalizer.Prepend)) return true;
        if (b.preTokenizer instanceof HfPreTokenizer.Metaspace ms) return ms.prependScheme() != HfPreTokenizer.PrependScheme.NEVER;
        return b.normalizer instanceof Normalizer.Prepend;
    }

    /** llama.cpp's {@code tokenizer.ggml.pre} for the byte-level pre-tokenizer of {@code b}. */
    private static String preName(Path file, HfTokenizer.Builder b) {
        List<HfPreTokenizer> parts = b.preTokenizer instanceof HfPreTokenizer.Sequence s ? s.steps() : List.of(b.preTokenizer);
        boolean byteLevelRegex = false;
        for (HfPreTokenizer p : parts) if (p instanceof HfPreTokenizer.ByteLevel bl) byteLevelRegex = bl.useRegex();
        List<String> regexes = b.splitRegexes;
        String regex = regexes.isEmpty() ? null : regexes.getLast();
        if (regex == null && byteLevelRegex) return "gpt-2";
        if (regexes.equals(HfPreTokenization.forGgufName("default").orElseThrow().splitExpressions())) return "default";
        List<String> last = regex == null ? List.of() : List.of(HfPreTokenization.hfSpelling(regex));
        for (String name : List.of("llama-bpe", "qwen2")) {
            if (last.equals(HfPreTokenization.forGgufName(name).orElseThrow().splitExpressions())) return name;
        }
        throw new ModelFormatException(file, "pre_tokenizer", "the byte-level pre-tokenizer " + (regex == null ? "without a Split expression" : "regex " + regex)
                + " matches no pre-tokenizer Forkpoint knows (default, gpt-2, llama-bpe, qwen2)");
    }

    private static int tokenId(JsonNode tc, String field, Map<String, Integer> idOf, int fallback) {
        if (tc == null) return fallback;
        JsonNode v = tc.get(field);
        String s = v == null ? null : v.isTextual() ? v.asText() : v.path("content").asText(null);
        if (s == null) return fallback;
        Integer id = idOf.get(s);
        return id == null ? fallback : id;
    }
}
