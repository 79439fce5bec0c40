package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.ModelFormatException;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Builds a tokenizer from Hugging Face files: a {@code tokenizer.json}, a tiktoken {@code tokenizer.model}, or a
 * model folder holding one of those or {@code vocab.json} + {@code merges.txt}. In a folder,
 * {@code tokenizer_config.json} and {@code generation_config.json} override what the tokenizer file implies.
 */
final class TokenizerFiles {
    /** Meta's Llama 3 split expression (tiktoken's cl100k pattern). */
    static final String LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Qwen2's split expression (as its tokenizer.json has it): digits one by one. */
    static final String QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Ranks in Llama 3's tiktoken file; its 256 special tokens follow. */
    static final int LLAMA3_RANKS = 128_000;
    private static final Pattern TIKTOKEN_LINE = Pattern.compile("[A-Za-z0-9+/]+=*\\s+[0-9]+");

    private TokenizerFiles() {}

    static Tokenizer load(Path path) {
        if (Files.isDirectory(path)) return loadFolder(path);
        if (!Files.isRegularFile(path)) throw new ModelFormatException(path, "path", "is neither a tokenizer file nor a folder");
        return loadFile(path).build();
    }

    private static HfTokenizer.Builder loadFile(Path file) {
        String name = file.getFileName().toString();
        byte[] head = head(file);
        if (name.endsWith(".json") || (head.length > 0 && head[0] == '{')) return TokenizerJson.read(file);
        String firstLine = new String(head, StandardCharsets.ISO_8859_1).split("\n", 2)[0].trim();
        if (TIKTOKEN_LINE.matcher(firstLine).matches()) return tiktoken(file);
        if (head.length > 0 && head[0] == 0x0A) {
            throw new ModelFormatException(file, "content", "is a SentencePiece model (protobuf), which Forkpoint does not "
                    + "read; use the model's tokenizer.json or a GGUF file");
        }
        throw new ModelFormatException(file, "content", "is not a tokenizer Forkpoint knows (expected tokenizer.json, "
                + "a tiktoken tokenizer.model, or a folder with vocab.json and merges.txt)");
    }

    private static byte[] head(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return in.readNBytes(256);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private static Tokenizer loadFolder(Path dir) {
        HfTokenizer.Builder b;
        if (Files.isRegularFile(dir.resolve("tokenizer.json"))) {
            b = TokenizerJson.read(dir.resolve("tokenizer.json"));
        } else if (Files.isRegularFile(dir.resolve("vocab.json")) && Files.isRegularFile(dir.resolve("merges.txt"))) {
            b = vocabAndMerges(dir);
        } else if (Files.isRegularFile(dir.resolve("tokenizer.model"))) {
            b = loadFile(dir.resolve("tokenizer.model"));
        } else {
            throw new ModelFormatException(dir, "folder", "has no tokenizer.json, vocab.json + merges.txt or tokenizer.model");
        }
        b.source = dir;
        applyConfigs(dir, b);
        return b.build();
    }

    /** Llama 3's tiktoken file: "base64-bytes rank" per line, then Meta's 256 special tokens. */
    private static HfTokenizer.Builder tiktoken(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
        }
        Map<String, Integer> vocab = new HashMap<>(lines.size() * 2);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            if (line.isEmpty()) continue;
            String[] parts = line.split("\\s+");
            int rank;
            byte[] bytes;
            try {
                if (parts.length != 2) throw new IllegalArgumentException("expected \"base64-token rank\"");
                bytes = Base64.getDecoder().decode(parts[0]);
                rank = Integer.parseInt(parts[1]);
                if (rank < 0 || rank > JsonFields.MAX_TOKEN_ID) throw new IllegalArgumentException("rank out of range");
            } catch (IllegalArgumentException e) {
                throw new ModelFormatException(file, "line " + (i + 1), "\"" + abbreviate(line) + "\": "
                        + (e instanceof NumberFormatException ? "rank is not an integer" : e.getMessage()));
            }
            if (vocab.put(ByteUnicode.encode(bytes), rank) != null) {
                throw new ModelFormatException(file, "line " + (i + 1), "token \"" + parts[0] + "\" appears twice");
            }
        }
        if (vocab.size() != LLAMA3_RANKS) {
            throw new ModelFormatException(file, "content", "is a tiktoken file with " + vocab.size() + " ranks; only "
                    + "Llama 3's (" + LLAMA3_RANKS + " ranks) is known, because the file names neither its special tokens "
                    + "nor its split pattern");
        }
        // tiktoken merges the adjacent pair whose concatenation has the lowest rank: every split of a token
        // into two tokens is a merge of that token's rank.
        PairTable merges = new PairTable(vocab.size() * 3);
        vocab.forEach((piece, rank) -> {
            for (int k = 1; k < piece.length(); k++) {
                Integer l = vocab.get(piece.substring(0, k));
                if (l == null) continue;
                Integer r = vocab.get(piece.substring(k));
                if (r != null) merges.putIfAbsent(l, r, rank, rank);
            }
        });
        var b = new HfTokenizer.Builder();
        b.vocab = vocab;
        b.merges = merges;
        b.ignoreMerges = true;
        b.preTokenizer = new HfPreTokenizer.Sequence(List.of(
                new HfPreTokenizer.Split(OnigRegex.compile(LLAMA3_PATTERN), HfPreTokenizer.Behavior.ISOLATED, false),
                new HfPreTokenizer.ByteLevel(false, false)));
        b.decoder = new HfDecoder.ByteLevel();
        List<String> specials = llama3SpecialTokens();
        for (int i = 0; i < specials.size(); i++) b.addToken(AddedToken.special(LLAMA3_RANKS + i, specials.get(i)));
        b.prefix = List.of(LLAMA3_RANKS); // <|begin_of_text|>
        b.bos = LLAMA3_RANKS;
        b.eos = LLAMA3_RANKS + 1; // <|end_of_text|>
        b.endOfGeneration.add(LLAMA3_RANKS + 1);
        b.endOfGeneration.add(LLAMA3_RANKS + 9); // <|eot_id|>
        return b;
    }

    /** Meta's Llama 3 special tokens, in id order from 128000. */
    static List<String> llama3SpecialTokens() {
        List<String> out = new ArrayList<>(List.of("<|begin_of_text|>", "<|end_of_text|>",
                "<|reserved_special_token_0|>", "<|reserved_special_token_1|>", "<|reserved_special_token_2|>",
                "<|reserved_special_token_3|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|reserved_special_token_4|>", "<|eot_id|>"));
        for (int i = 5; out.size() < 256; i++) out.add("<|reserved_special_token_" + i + "|>");
        return out;
    }

    /** The GPT-2 layout: {@code vocab.json}, {@code merges.txt}, the family from the configs. */
    private static HfTokenizer.Builder vocabAndMerges(Path dir) {
        Path vocabFile = dir.resolve("vocab.json"), mergesFile = dir.resolve("merges.txt");
        JsonFields vj = new JsonFields(vocabFile);
        JsonNode root = vj.read();
        if (!root.isObject()) throw vj.error("(root)", "expected an object of token → id, found " + JsonFields.describe(root));
        Map<String, Integer> vocab = new HashMap<>(root.size() * 2);
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            var e = it.next();
            vocab.put(e.getKey(), vj.tokenId(e.getValue(), "\"" + e.getKey() + "\""));
        }
        List<String> lines;
        try {
            lines = Files.readAllLines(mergesFile, StandardCharsets.UTF_8);
        } catch (java.nio.charset.MalformedInputException e) {
            throw new ModelFormatException(mergesFile, "content", "is not UTF-8 text");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + mergesFile + ": " + e.getMessage(), e);
        }
        List<String[]> pairs = new ArrayList<>();
        List<Integer> lineOf = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isEmpty() || (i == 0 && line.startsWith("#version"))) continue;
            String[] p = line.split(" ", -1);
            if (p.length != 2 || p[0].isEmpty() || p[1].isEmpty()) {
                throw new ModelFormatException(mergesFile, "line " + (i + 1), "\"" + abbreviate(line) + "\": expected \"left right\"");
            }
            pairs.add(p);
            lineOf.add(i + 1);
        }
        var b = new HfTokenizer.Builder();
        b.vocab = vocab;
        String[][] array = pairs.toArray(String[][]::new);
        b.merges = HfBpe.mergesOf(vocab, array, k -> new ModelFormatException(mergesFile, "line " + lineOf.get(k),
                "\"" + array[k][0] + " " + array[k][1] + "\": a piece or their concatenation is not in vocab.json"));
        b.decoder = new HfDecoder.ByteLevel();

        JsonNode tokConfig = readIfPresent(dir.resolve("tokenizer_config.json"));
        JsonNode modelConfig = readIfPresent(dir.resolve("config.json"));
        String tokenizerClass = tokConfig == null ? null : textOrNull(tokConfig.get("tokenizer_class"));
        String modelType = modelConfig == null ? null : textOrNull(modelConfig.get("model_type"));
        String family = tokenizerClass != null ? tokenizerClass.replaceFirst("Fast$", "") : null;
        boolean qwen = "Qwen2Tokenizer".equals(family) || (family == null && modelType != null && modelType.startsWith("qwen"));
        boolean gpt2 = "GPT2Tokenizer".equals(family) || (family == null && "gpt2".equals(modelType));
        if (qwen) {
            b.normalizer = new Normalizer.Unicode(java.text.Normalizer.Form.NFC);
            b.preTokenizer = new HfPreTokenizer.Sequence(List.of(
                    new HfPreTokenizer.Split(OnigRegex.compile(QWEN2_PATTERN), HfPreTokenizer.Behavior.ISOLATED, false),
                    new HfPreTokenizer.ByteLevel(false, false)));
        } else if (gpt2) {
            boolean prefixSpace = tokConfig != null && tokConfig.path("add_prefix_space").asBoolean(false);
            b.preTokenizer = new HfPreTokenizer.ByteLevel(prefixSpace, true);
        } else {
            throw new ModelFormatException(dir, "tokenizer_config.json tokenizer_class", "vocab.json + merges.txt of "
                    + (tokenizerClass != null ? "tokenizer class \"" + tokenizerClass + "\"" : modelType != null
                    ? "model type \"" + modelType + "\"" : "an unnamed tokenizer (no tokenizer_config.json tokenizer_class, "
                    + "no config.json model_type)") + ": the split pattern is unknown (supported: Qwen2Tokenizer, "
                    + "GPT2Tokenizer); use the model's tokenizer.json");
        }
        // added_tokens.json: tokens after the vocabulary; special when special_tokens_map.json names them.
        Path addedFile = dir.resolve("added_tokens.json");
        JsonNode added = readIfPresent(addedFile);
        if (added != null) {
            JsonFields aj = new JsonFields(addedFile);
            Set<String> specials = specialNames(readIfPresent(dir.resolve("special_tokens_map.json")));
            for (Iterator<Map.Entry<String, JsonNode>> it = added.fields(); it.hasNext(); ) {
                var e = it.next();
                int id = aj.tokenId(e.getValue(), "\"" + e.getKey() + "\"");
                boolean special = specials.contains(e.getKey());
                b.addToken(new AddedToken(id, e.getKey(), special, !special, false, false, false));
            }
        }
        return b;
    }

    private static Set<String> specialNames(JsonNode map) {
        Set<String> out = new HashSet<>();
        if (map == null) return out;
        map.fields().forEachRemaining(e -> {
            JsonNode v = e.getValue();
            if (v.isArray()) v.forEach(x -> addName(x, out));
            else addName(v, out);
        });
        return out;
    }

    private static void addName(JsonNode v, Set<String> out) {
        if (v.isTextual()) out.add(v.textValue());
        else if (v.isObject() && v.path("content").isTextual()) out.add(v.path("content").textValue());
    }

    /** tokenizer_config.json and generation_config.json, where present, over what the tokenizer file says. */
    private static void applyConfigs(Path dir, HfTokenizer.Builder b) {
        Path configFile = dir.resolve("tokenizer_config.json");
        JsonNode config = readIfPresent(configFile);
        if (config != null) {
            JsonFields cj = new JsonFields(configFile);
            JsonNode decoder = JsonFields.optional(config, "added_tokens_decoder");
            if (decoder != null) {
                if (!decoder.isObject()) throw cj.error("added_tokens_decoder", "expected an object, found " + JsonFields.describe(decoder));
                for (Iterator<Map.Entry<String, JsonNode>> it = decoder.fields(); it.hasNext(); ) {
                    var e = it.next();
                    String where = "added_tokens_decoder[\"" + e.getKey() + "\"]";
                    int id;
                    try {
                        id = Integer.parseInt(e.getKey());
                        if (id < 0 || id > JsonFields.MAX_TOKEN_ID) throw new NumberFormatException();
                    } catch (NumberFormatException nfe) {
                        throw cj.error(where, "the key is not a token id (0 to " + JsonFields.MAX_TOKEN_ID + ")");
                    }
                    b.addToken(TokenizerJson.addedToken(configFile, e.getValue(), where, id));
                }
            }
            b.addBos = cj.optionalBool(config, "add_bos_token", "add_bos_token") != null
                    ? cj.optionalBool(config, "add_bos_token", "add_bos_token") : b.addBos;
            b.addEos = cj.optionalBool(config, "add_eos_token", "add_eos_token") != null
                    ? cj.optionalBool(config, "add_eos_token", "add_eos_token") : b.addEos;
            Integer bos = tokenId(cj, config, "bos_token", b);
            if (bos != null) b.bos = bos;
            Integer eos = tokenId(cj, config, "eos_token", b);
            if (eos != null) b.eos = eos;
        }
        Path generationFile = dir.resolve("generation_config.json");
        JsonNode generation = readIfPresent(generationFile);
        if (generation != null) {
            JsonFields gj = new JsonFields(generationFile);
            JsonNode ids = JsonFields.optional(generation, "eos_token_id");
            List<Integer> eos = new ArrayList<>();
            if (ids != null && ids.isArray()) {
                for (int i = 0; i < ids.size(); i++) eos.add(gj.tokenId(ids.get(i), "eos_token_id[" + i + "]"));
            } else if (ids != null) {
                eos.add(gj.tokenId(ids, "eos_token_id"));
            }
            b.endOfGeneration.addAll(eos);
            if (!eos.isEmpty() && (config == null || JsonFields.optional(config, "eos_token") == null)) b.eos = eos.getFirst();
        }
    }

    /** A config's token field (a string or {"content": …}) as an id; null when absent or null. */
    private static Integer tokenId(JsonFields json, JsonNode config, String field, HfTokenizer.Builder b) {
        JsonNode n = JsonFields.optional(config, field);
        if (n == null) return null;
        String text = n.isObject() ? json.string(n, "content", field + ".content") : json.text(n, field);
        int id = b.idOf(text);
        if (id < 0) throw json.error(field, "\"" + text + "\" is not a token of the vocabulary");
        return id;
    }

    /** A JSON object file of a folder (tokenizer_config.json, generation_config.json), or null when absent. */
    static JsonNode readIfPresent(Path file) {
        if (!Files.isRegularFile(file)) return null;
        JsonFields json = new JsonFields(file);
        JsonNode n = json.read();
        if (!n.isObject()) throw json.error("(root)", "expected an object, found " + JsonFields.describe(n));
        return n;
    }

    private static String textOrNull(JsonNode n) {
        return n != null && n.isTextual() ? n.textValue() : null;
    }

    private static String abbreviate(String s) {
        return s.length() > 60 ? s.substring(0, 60) + "…" : s;
    }
}
