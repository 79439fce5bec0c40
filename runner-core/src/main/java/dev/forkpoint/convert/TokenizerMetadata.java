package dev.forkpoint.convert;

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
 * GGUF {@code tokenizer.*} metadata from a Hugging Face {@code tokenizer.json} (+ {@code tokenizer_config.json},
 * {@code generation_config.json}), the way llama.cpp's converter describes the same vocabularies:
 * <ul>
 * <li>a BPE model with byte fallback (SentencePiece converted by Hugging Face) becomes {@code model = llama} with
 *     tokens, token types (byte, control, user-defined, unknown, normal) and scores that reproduce the merge order:
 *     where the merges follow the vocabulary order (SentencePiece-trained vocabularies) normal piece i scores
 *     −(i − first normal id), as SentencePiece does; otherwise the piece a merge of rank r produces scores −r;</li>
 * <li>a byte-level BPE becomes {@code model = gpt2} with its merges and {@code pre} named after the Split expression.</li>
 * </ul>
 */
final class TokenizerMetadata {
    private static final String P = "tokenizer.ggml.";
    private static final Pattern BYTE = Pattern.compile("<0x[0-9A-Fa-f]{2}>");

    private TokenizerMetadata() {}

    static Map<String, MetadataValue> fromFolder(Path folder, ConfigJson config) throws IOException {
        Path file = folder.resolve(TokenizerJson.TOKENIZER);
        JsonNode root = TokenizerJson.readJson(file);
        JsonNode model = root.path("model");
        if (!model.path("type").asText("BPE").equals("BPE") || !model.path("vocab").isObject()) {
            throw new ModelFormatException(file, "model.type", "tokenizer model \"" + model.path("type").asText() + "\" cannot be converted (only BPE)");
        }
        // ids: vocabulary, then added tokens (which may extend it)
        Map<Integer, String> byId = new HashMap<>();
        model.get("vocab").properties().forEach(e -> byId.put(e.getValue().asInt(), e.getKey()));
        Map<Integer, Boolean> added = new HashMap<>();   // id -> special
        for (JsonNode a : root.path("added_tokens")) {
            int id = a.path("id").asInt();
            byId.put(id, a.path("content").asText());
            added.put(id, a.path("special").asBoolean(false));
        }
        int size = Math.max(config.vocabSize(), byId.keySet().stream().mapToInt(i -> i + 1).max().orElse(0));
        List<String> tokens = new ArrayList<>(size);
        for (int i = 0; i < size; i++) tokens.add(byId.getOrDefault(i, "[PAD" + i + "]"));
        Map<String, Integer> idOf = new HashMap<>();
        for (int i = 0; i < size; i++) idOf.putIfAbsent(tokens.get(i), i);

        List<String[]> merges = new ArrayList<>();
        for (JsonNode m : model.path("merges")) {
            if (m.isArray() && m.size() == 2) merges.add(new String[]{m.get(0).asText(), m.get(1).asText()});
            else if (m.isTextual() && m.asText().indexOf(' ', 1) > 0) {
                String s = m.asText();
                int sp = s.indexOf(' ', 1);
                merges.add(new String[]{s.substring(0, sp), s.substring(sp + 1)});
            } else throw new ModelFormatException(file, "model.merges", "entry " + m + " is not a pair of pieces");
        }
        String unk = model.path("unk_token").isTextual() ? model.get("unk_token").asText() : null;
        boolean spm = model.path("byte_fallback").asBoolean(false);

        Map<String, MetadataValue> m = new LinkedHashMap<>();
        int[] types = new int[size];
        for (int i = 0; i < size; i++) {
            String t = tokens.get(i);
            if (unk != null && t.equals(unk)) types[i] = TokenizerJson.UNKNOWN;
            else if (added.containsKey(i)) types[i] = added.get(i) ? TokenizerJson.CONTROL : TokenizerJson.USER_DEFINED;
            else if (!byId.containsKey(i)) types[i] = TokenizerJson.UNUSED;
            else if (spm && BYTE.matcher(t).matches()) types[i] = TokenizerJson.BYTE;
            else types[i] = TokenizerJson.NORMAL;
        }
        if (spm) {
            m.put(P + "model", MetadataValue.of("llama"));
            m.put(P + "tokens", MetadataValue.ofStrings(tokens));
            m.put(P + "scores", MetadataValue.ofF32s(spmScores(tokens, types, merges, idOf)));
            m.put(P + "token_type", MetadataValue.ofI32s(types));
            m.put(P + "add_space_prefix", MetadataValue.ofBool(prependsSpace(root)));
        } else {
            m.put(P + "model", MetadataValue.of("gpt2"));
            m.put(P + "pre", MetadataValue.of(preName(file, root)));
            m.put(P + "tokens", MetadataValue.ofStrings(tokens));
            m.put(P + "token_type", MetadataValue.ofI32s(types));
            m.put(P + "merges", MetadataValue.ofStrings(merges.stream().map(x -> x[0] + " " + x[1]).toList()));
        }

        JsonNode tc = Files.isRegularFile(folder.resolve(TokenizerJson.TOKENIZER_CONFIG))
                ? TokenizerJson.readJson(folder.resolve(TokenizerJson.TOKENIZER_CONFIG)) : null;
        JsonNode gen = Files.isRegularFile(folder.resolve(TokenizerJson.GENERATION_CONFIG))
                ? TokenizerJson.readJson(folder.resolve(TokenizerJson.GENERATION_CONFIG)) : null;
        int bos = tokenId(tc, "bos_token", idOf, config.bosTokenId());
        int eos = tokenId(tc, "eos_token", idOf, config.eosTokenIds().isEmpty() ? -1 : config.eosTokenIds().getFirst());
        if (bos >= 0) m.put(P + "bos_token_id", MetadataValue.ofU32(bos));
        if (eos >= 0) m.put(P + "eos_token_id", MetadataValue.ofU32(eos));
        List<Integer> ends = new ArrayList<>(config.eosTokenIds());
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
        boolean addBos = tc != null && tc.has("add_bos_token") ? tc.get("add_bos_token").asBoolean() : templateAdds(root, bos, tokens);
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
        int[] rank = new int[n];
        Arrays.fill(rank, -1);
        for (int r = 0; r < merges.size(); r++) {
            Integer id = idOf.get(merges.get(r)[0] + merges.get(r)[1]);
            if (id != null && rank[id] < 0) rank[id] = r;
        }
        int firstNormal = -1;
        boolean byId = true;
        int lastId = -1;
        for (int r = 0, seen = 0; r < merges.size(); r++) {
            Integer id = idOf.get(merges.get(r)[0] + merges.get(r)[1]);
            if (id == null || rank[id] != r) continue;
            if (id < lastId) byId = false;
            lastId = id;
            seen++;
        }
        for (int i = 0; i < n; i++) if (types[i] == TokenizerJson.NORMAL) { firstNormal = i; break; }
        float[] scores = new float[n];
        for (int i = 0; i < n; i++) {
            if (types[i] != TokenizerJson.NORMAL) scores[i] = 0;
            else if (byId) scores[i] = -(float) (i - firstNormal);
            else scores[i] = rank[i] >= 0 ? -(float) rank[i] : -(float) (merges.size() + i);
        }
        return scores;
    }

    private static boolean prependsSpace(JsonNode root) {
        for (JsonNode n : root.path("normalizer").path("normalizers")) {
            if (n.path("type").asText().equals("Prepend")) return true;
        }
        JsonNode pre = root.path("pre_tokenizer");
        if (pre.path("type").asText().equals("Metaspace")) return !pre.path("prepend_scheme").asText("always").equals("never");
        return root.path("normalizer").path("type").asText().equals("Prepend");
    }

    /** llama.cpp's {@code tokenizer.ggml.pre} for the byte-level pre-tokenizer of {@code root}. */
    private static String preName(Path file, JsonNode root) {
        JsonNode pre = root.path("pre_tokenizer");
        List<JsonNode> parts = new ArrayList<>();
        if (pre.path("type").asText().equals("Sequence")) pre.path("pretokenizers").forEach(parts::add);
        else parts.add(pre);
        String regex = null;
        List<String> regexes = new ArrayList<>();
        boolean byteLevelRegex = false;
        for (JsonNode p : parts) {
            switch (p.path("type").asText()) {
                case "Split" -> regexes.add(regex = p.path("pattern").path("Regex").asText(null));
                case "ByteLevel" -> byteLevelRegex = p.path("use_regex").asBoolean(true);
                default -> { }
            }
        }
        if (regex == null && byteLevelRegex) return "gpt-2";
        if (regexes.equals(TokenizerJson.DEFAULT_REGEXES)) return "default";
        String norm = regex == null ? "" : regex.replace("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])", "(?i:'s|'t|'re|'ve|'m|'ll|'d)");
        if (norm.equals(TokenizerJson.LLAMA3_REGEX)) return "llama-bpe";
        if (norm.equals(TokenizerJson.QWEN2_REGEX)) return "qwen2";
        throw new ModelFormatException(file, "pre_tokenizer", "the byte-level pre-tokenizer " + (regex == null ? pre.toString() : "regex " + regex)
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

    private static boolean templateAdds(JsonNode root, int bos, List<String> tokens) {
        if (bos < 0) return false;
        for (JsonNode p : root.path("post_processor").path("single")) {
            if (p.path("SpecialToken").path("id").asText("").equals(tokens.get(bos))) return true;
        }
        return false;
    }
}
