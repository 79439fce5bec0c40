package dev.forkpoint.convert;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tokenizer.HfPreTokenization;
import dev.forkpoint.tokenizer.TokenType;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Hugging Face tokenizer files ({@code tokenizer.json}, {@code tokenizer_config.json}, {@code generation_config.json})
 * written from a GGUF file's {@code tokenizer.ggml.*} metadata.
 *
 * <p>SentencePiece ("llama") vocabularies become a BPE model with byte fallback, the normalizer and decoder Hugging
 * Face writes for Llama 2, and merges derived from the scores as Hugging Face's SentencePiece converter derives them:
 * every split of a piece into two pieces of the vocabulary is a merge, ranked by the merged piece's score (highest
 * first; ties by the ids of the left, then the right part). Byte-level ("gpt2") vocabularies keep their
 * merges; the Split expression is the one {@code tokenizer.ggml.pre} names. Control, unknown and user-defined tokens
 * become {@code added_tokens}.
 */
final class TokenizerJson {
    static final String TOKENIZER = "tokenizer.json";
    static final String TOKENIZER_CONFIG = "tokenizer_config.json";
    static final String GENERATION_CONFIG = "generation_config.json";
    static final String SPACE = "\u2581";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final GgufFile f;
    private final String model;
    private final String[] tokens;
    private final TokenType[] types;
    private final int bos, eos, eot, unk, pad;
    private final boolean addBos, addEos;

    private TokenizerJson(GgufFile f) {
        this.f = f;
        String key = "tokenizer.ggml.model";
        if (!f.has(key)) throw new ModelFormatException(f.path(), "metadata " + key, "missing (the file has no tokenizer)");
        model = f.getString(key);
        if (!model.equals("llama") && !model.equals("gpt2")) {
            throw new ModelFormatException(f.path(), "metadata " + key, "tokenizer model \"" + model + "\" cannot be converted (supported: llama, gpt2)");
        }
        tokens = f.getStringArray("tokenizer.ggml.tokens");
        int[] codes = f.has("tokenizer.ggml.token_type") ? f.getIntArray("tokenizer.ggml.token_type") : new int[tokens.length];
        if (codes.length != tokens.length) {
            throw new ModelFormatException(f.path(), "metadata tokenizer.ggml.token_type", codes.length + " entries for " + tokens.length + " tokens");
        }
        types = new TokenType[codes.length];
        for (int i = 0; i < codes.length; i++) types[i] = TokenType.of(codes[i]);
        boolean llama = model.equals("llama");
        bos = id("bos_token_id", llama ? 1 : -1);
        eos = id("eos_token_id", llama ? 2 : -1);
        eot = id("eot_token_id", -1);
        unk = id("unknown_token_id", llama ? 0 : -1);
        pad = id("padding_token_id", -1);
        String pre = f.getString("tokenizer.ggml.pre", "default");
        boolean bosByDefault = llama || HfPreTokenization.forGgufName(pre).map(HfPreTokenization::addBosDefault).orElse(false);
        addBos = f.getBool("tokenizer.ggml.add_bos_token", bosByDefault) && bos >= 0;
        addEos = f.getBool("tokenizer.ggml.add_eos_token", false) && eos >= 0;
    }

    private int id(String name, int fallback) {
        String key = "tokenizer.ggml." + name;
        if (!f.has(key)) return fallback < tokens.length ? fallback : -1;
        long v = f.getLong(key);
        return v >= 0 && v < tokens.length ? (int) v : -1;   // llama.cpp writes 2^32-1 for "none"
    }

    /** Writes the three files into {@code folder}. */
    static void write(GgufFile f, Path folder) throws IOException {
        new TokenizerJson(f).writeAll(folder);
    }

    private void writeAll(Path folder) throws IOException {
        JSON.writeValue(folder.resolve(TOKENIZER).toFile(), tokenizer());
        JSON.writeValue(folder.resolve(TOKENIZER_CONFIG).toFile(), tokenizerConfig());
        ObjectNode gen = JSON.createObjectNode();
        if (bos >= 0) gen.put("bos_token_id", bos);
        List<Integer> ends = new ArrayList<>();
        if (eos >= 0) ends.add(eos);
        if (eot >= 0 && eot != eos) ends.add(eot);
        if (ends.size() == 1) gen.put("eos_token_id", ends.getFirst());
        else if (!ends.isEmpty()) ends.forEach(gen.putArray("eos_token_id")::add);
        JSON.writeValue(folder.resolve(GENERATION_CONFIG).toFile(), gen);
    }

    ObjectNode tokenizer() {
        boolean llama = model.equals("llama");
        ObjectNode o = JSON.createObjectNode();
        o.put("version", "1.0");
        o.putNull("truncation");
        o.putNull("padding");
        ArrayNode added = o.putArray("added_tokens");
        for (int i = 0; i < tokens.length; i++) {
            TokenType t = types[i];
            if (t.isSpecial() || i == unk) {
                ObjectNode a = added.addObject();
                a.put("id", i);
                a.put("content", tokens[i]);
                a.put("single_word", false);
                a.put("lstrip", false);
                a.put("rstrip", false);
                a.put("normalized", llama && t != TokenType.USER_DEFINED);
                a.put("special", t != TokenType.USER_DEFINED);
            }
        }
        if (llama) {
            boolean prefix = f.getBool("tokenizer.ggml.add_space_prefix", true);
            ObjectNode norm = o.putObject("normalizer");
            norm.put("type", "Sequence");
            ArrayNode ns = norm.putArray("normalizers");
            if (prefix) ns.addObject().put("type", "Prepend").put("prepend", SPACE);
            ObjectNode rep = ns.addObject().put("type", "Replace");
            rep.putObject("pattern").put("String", " ");
            rep.put("content", SPACE);
            o.putNull("pre_tokenizer");
            o.set("post_processor", template());
            ObjectNode dec = o.putObject("decoder");
            dec.put("type", "Sequence");
            ArrayNode ds = dec.putArray("decoders");
            ObjectNode drep = ds.addObject().put("type", "Replace");
            drep.putObject("pattern").put("String", SPACE);
            drep.put("content", " ");
            ds.addObject().put("type", "ByteFallback");
            ds.addObject().put("type", "Fuse");
            if (prefix) ds.addObject().put("type", "Strip").put("content", " ").put("start", 1).put("stop", 0);
        } else {
            String pre = f.getString("tokenizer.ggml.pre", "gpt2");
            HfPreTokenization p = HfPreTokenization.forGgufName(pre).orElseThrow(() -> new ModelFormatException(f.path(),
                    "metadata tokenizer.ggml.pre", "pre-tokenizer \"" + pre + "\" has no known Hugging Face equivalent; supported: "
                    + "default, gpt2, llama-bpe, qwen2 and their aliases"));
            if (p.nfc()) o.putObject("normalizer").put("type", "NFC");
            else o.putNull("normalizer");
            if (p.splitExpressions().isEmpty()) {
                o.set("pre_tokenizer", byteLevel(true));
            } else {
                ObjectNode seq = o.putObject("pre_tokenizer");
                seq.put("type", "Sequence");
                ArrayNode ps = seq.putArray("pretokenizers");
                for (String regex : p.splitExpressions()) {
                    ObjectNode split = ps.addObject().put("type", "Split");
                    split.putObject("pattern").put("Regex", regex);
                    split.put("behavior", "Isolated").put("invert", false);
                }
                ps.add(byteLevel(false));
            }
            o.set("post_processor", addBos || addEos ? template() : byteLevel(false).put("trim_offsets", false));
            o.set("decoder", byteLevel(false));
        }
        o.set("model", bpeModel(llama));
        return o;
    }

    private static ObjectNode byteLevel(boolean regex) {
        ObjectNode b = JSON.createObjectNode();
        b.put("type", "ByteLevel").put("add_prefix_space", false).put("trim_offsets", true).put("use_regex", regex);
        return b;
    }

    /** TemplateProcessing that adds BOS / EOS as the GGUF says. */
    private ObjectNode template() {
        ObjectNode t = JSON.createObjectNode();
        t.put("type", "TemplateProcessing");
        for (String kind : new String[]{"single", "pair"}) {
            ArrayNode a = t.putArray(kind);
            int seqs = kind.equals("single") ? 1 : 2;
            for (int s = 0; s < seqs; s++) {
                if (addBos) a.addObject().putObject("SpecialToken").put("id", tokens[bos]).put("type_id", s);
                a.addObject().putObject("Sequence").put("id", s == 0 ? "A" : "B").put("type_id", s);
                if (addEos) a.addObject().putObject("SpecialToken").put("id", tokens[eos]).put("type_id", s);
            }
        }
        ObjectNode sp = t.putObject("special_tokens");
        for (int id : new int[]{addBos ? bos : -1, addEos ? eos : -1}) {
            if (id < 0) continue;
            ObjectNode e = sp.putObject(tokens[id]);
            e.put("id", tokens[id]);
            e.putArray("ids").add(id);
            e.putArray("tokens").add(tokens[id]);
        }
        return t;
    }

    private ObjectNode bpeModel(boolean llama) {
        ObjectNode m = JSON.createObjectNode();
        m.put("type", "BPE");
        m.putNull("dropout");
        if (llama && unk >= 0) m.put("unk_token", tokens[unk]);
        else m.putNull("unk_token");
        m.putNull("continuing_subword_prefix");
        m.putNull("end_of_word_suffix");
        m.put("fuse_unk", llama);
        m.put("byte_fallback", llama);
        m.put("ignore_merges", !llama && HfPreTokenization.forGgufName(f.getString("tokenizer.ggml.pre", ""))
                .map(HfPreTokenization::ignoreMerges).orElse(false));
        ObjectNode vocab = m.putObject("vocab");
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < tokens.length; i++) {
            Integer before = ids.putIfAbsent(tokens[i], i);
            if (before != null) {
                throw new ModelFormatException(f.path(), "metadata tokenizer.ggml.tokens[" + i + "]", "token \"" + tokens[i]
                        + "\" repeats token " + before + "; a Hugging Face vocabulary cannot hold it twice");
            }
            vocab.put(tokens[i], i);
        }
        List<String[]> merges = llama ? spmMerges(ids) : gpt2Merges();
        boolean spaces = merges.stream().anyMatch(p -> p[0].contains(" ") || p[1].contains(" "));
        ArrayNode ma = m.putArray("merges");
        for (String[] p : merges) {
            if (spaces) ma.addArray().add(p[0]).add(p[1]);
            else ma.add(p[0] + " " + p[1]);
        }
        return m;
    }

    private List<String[]> gpt2Merges() {
        if (!f.has("tokenizer.ggml.merges")) return List.of();
        List<String[]> out = new ArrayList<>();
        String[] merges = f.getStringArray("tokenizer.ggml.merges");
        for (int i = 0; i < merges.length; i++) {
            int sp = merges[i].indexOf(' ', 1);
            if (sp < 0) throw new ModelFormatException(f.path(), "metadata tokenizer.ggml.merges[" + i + "]", "\"" + merges[i] + "\" is not two pieces separated by a space");
            out.add(new String[]{merges[i].substring(0, sp), merges[i].substring(sp + 1)});
        }
        return out;
    }

    /** Merges as Hugging Face's SentencePiece converter derives them from a BPE model's pieces and scores. */
    private List<String[]> spmMerges(Map<String, Integer> ids) {
        float[] scores = f.getFloatArray("tokenizer.ggml.scores");
        if (scores.length != tokens.length) {
            throw new ModelFormatException(f.path(), "metadata tokenizer.ggml.scores", scores.length + " entries for " + tokens.length + " tokens");
        }
        record Merge(int left, int right, float score, int order) {}
        List<Merge> all = new ArrayList<>();
        for (int i = 0; i < tokens.length; i++) {
            String piece = tokens[i];
            List<Merge> local = new ArrayList<>();
            for (int cut = piece.offsetByCodePoints(0, 1); cut < piece.length(); cut = piece.offsetByCodePoints(cut, 1)) {
                Integer l = ids.get(piece.substring(0, cut)), r = ids.get(piece.substring(cut));
                if (l != null && r != null) local.add(new Merge(l, r, scores[i], 0));
            }
            local.sort(java.util.Comparator.<Merge>comparingInt(Merge::left).thenComparingInt(Merge::right));
            for (Merge m : local) all.add(new Merge(m.left, m.right, m.score, all.size()));
        }
        // equal scores: by the ids of the left, then the right piece (the order Hugging Face's Llama 2 / TinyLlama files have)
        all.sort(java.util.Comparator.<Merge>comparingDouble(m -> -m.score).thenComparingInt(Merge::left).thenComparingInt(Merge::right));
        return all.stream().map(m -> new String[]{tokens[m.left], tokens[m.right]}).toList();
    }

    ObjectNode tokenizerConfig() {
        boolean llama = model.equals("llama");
        ObjectNode c = JSON.createObjectNode();
        c.put("add_bos_token", addBos);
        c.put("add_eos_token", addEos);
        ObjectNode dec = c.putObject("added_tokens_decoder");
        for (int i = 0; i < tokens.length; i++) {
            TokenType t = types[i];
            if (t.isSpecial() || i == unk) {
                ObjectNode a = dec.putObject(Integer.toString(i));
                a.put("content", tokens[i]).put("lstrip", false).put("normalized", llama && t != TokenType.USER_DEFINED)
                        .put("rstrip", false).put("single_word", false).put("special", t != TokenType.USER_DEFINED);
            }
        }
        if (bos >= 0) c.put("bos_token", tokens[bos]); else c.putNull("bos_token");
        if (eos >= 0) c.put("eos_token", tokens[eos]); else c.putNull("eos_token");
        if (unk >= 0) c.put("unk_token", tokens[unk]);
        if (pad >= 0) c.put("pad_token", tokens[pad]);
        if (f.has("tokenizer.chat_template")) c.put("chat_template", f.getString("tokenizer.chat_template"));
        c.put("clean_up_tokenization_spaces", false);
        if (llama) c.put("legacy", true);   // (no add_prefix_space: transformers would rebuild from a tokenizer.model)
        c.put("model_max_length", f.getInt(f.getString("general.architecture", "llama") + ".context_length", 2048));
        c.put("tokenizer_class", llama ? "LlamaTokenizer" : "PreTrainedTokenizerFast");
        return c;
    }

    static boolean exists(Path folder) {
        return Files.isRegularFile(folder.resolve(TOKENIZER));
    }
}
