package dev.forkpoint.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.file.Path;
import java.text.Normalizer.Form;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Reads a Hugging Face {@code tokenizer.json} with a BPE model. Components Forkpoint does not implement are
 * refused by name, listing the supported ones, rather than approximated.
 */
final class TokenizerJson {
    private final JsonFields json;
    private final List<String> splitRegexes = new ArrayList<>();

    private TokenizerJson(Path file) {
        this.json = new JsonFields(file);
    }

    static HfTokenizer.Builder read(Path file) {
        return new TokenizerJson(file).parse();
    }

    private HfTokenizer.Builder parse() {
        JsonNode root = json.read();
        if (!root.isObject()) throw json.error("(root)", "expected an object, found " + JsonFields.describe(root));
        var b = new HfTokenizer.Builder();
        b.source = json.file;
        readModel(json.object(root, "model", "model"), b);
        JsonNode added = JsonFields.optional(root, "added_tokens");
        if (added != null) {
            if (!added.isArray()) throw json.error("added_tokens", "expected an array, found " + JsonFields.describe(added));
            for (int i = 0; i < added.size(); i++) b.addToken(addedToken(added.get(i), "added_tokens[" + i + "]", null));
        }
        b.normalizer = normalizer(JsonFields.optional(root, "normalizer"), "normalizer");
        b.preTokenizer = preTokenizer(JsonFields.optional(root, "pre_tokenizer"), "pre_tokenizer");
        b.splitRegexes = splitRegexes;
        b.decoder = decoder(JsonFields.optional(root, "decoder"), "decoder");
        postProcessor(JsonFields.optional(root, "post_processor"), "post_processor", b);
        return b;
    }

    /**
     * One added token (the {@code added_tokens} entries of tokenizer.json, or {@code added_tokens_decoder} values
     * of tokenizer_config.json, which give the id as their key).
     */
    AddedToken addedToken(JsonNode n, String where, Integer id) {
        if (n == null || !n.isObject()) throw json.error(where, "expected an object, found " + JsonFields.describe(n));
        int tokenId = id != null ? id : json.tokenId(JsonFields.optional(n, "id"), where + ".id");
        String content = json.string(n, "content", where + ".content");
        if (content.isEmpty()) throw json.error(where + ".content", "is empty");
        boolean special = json.bool(n, "special", false, where + ".special");
        return new AddedToken(tokenId, content, special, json.bool(n, "normalized", !special, where + ".normalized"),
                json.bool(n, "lstrip", false, where + ".lstrip"), json.bool(n, "rstrip", false, where + ".rstrip"),
                json.bool(n, "single_word", false, where + ".single_word"));
    }

    static AddedToken addedToken(Path file, JsonNode n, String where, int id) {
        return new TokenizerJson(file).addedToken(n, where, id);
    }

    private void readModel(JsonNode model, HfTokenizer.Builder b) {
        String type = json.optionalString(model, "type", "model.type");
        if (type == null && JsonFields.optional(model, "merges") == null) throw json.error("model.type", "missing");
        if (type != null && !type.equals("BPE")) {
            throw json.error("model.type", "tokenizer model \"" + type + "\" is not supported (supported: BPE)");
        }
        for (String affix : new String[]{"continuing_subword_prefix", "end_of_word_suffix"}) {
            String value = json.optionalString(model, affix, "model." + affix);
            if (value != null && !value.isEmpty()) {
                throw json.error("model." + affix, "\"" + value + "\" is not supported (only BPE without sub-word affixes is)");
            }
        }
        JsonNode vocabNode = json.object(model, "vocab", "model.vocab");
        Map<String, Integer> vocab = new HashMap<>(vocabNode.size() * 2);
        for (Iterator<Map.Entry<String, JsonNode>> it = vocabNode.fields(); it.hasNext(); ) {
            var e = it.next();
            vocab.put(e.getKey(), json.tokenId(e.getValue(), "model.vocab[\"" + e.getKey() + "\"]"));
        }
        if (vocab.isEmpty()) throw json.error("model.vocab", "is empty");
        JsonNode mergesNode = json.array(model, "merges", "model.merges");
        String[][] pairs = new String[mergesNode.size()][];
        for (int i = 0; i < pairs.length; i++) {
            JsonNode m = mergesNode.get(i);
            String where = "model.merges[" + i + "]";
            if (m.isTextual()) {
                pairs[i] = m.textValue().split(" ", -1);
                if (pairs[i].length != 2 || pairs[i][0].isEmpty() || pairs[i][1].isEmpty()) {
                    throw json.error(where, "expected \"left right\" (two pieces and one space), found " + JsonFields.describe(m));
                }
            } else if (m.isArray() && m.size() == 2) {
                pairs[i] = new String[]{json.text(m.get(0), where + "[0]"), json.text(m.get(1), where + "[1]")};
            } else {
                throw json.error(where, "expected \"left right\" or [left, right], found " + JsonFields.describe(m));
            }
        }
        b.vocab = vocab;
        b.mergePairs = pairs;
        b.merges = HfBpe.mergesOf(vocab, pairs, i -> json.error("model.merges[" + i + "]",
                "\"" + pairs[i][0] + "\", \"" + pairs[i][1] + "\" or their concatenation is not in model.vocab"));
        String unk = json.optionalString(model, "unk_token", "model.unk_token");
        if (unk != null) {
            Integer id = vocab.get(unk);
            if (id == null) throw json.error("model.unk_token", "\"" + unk + "\" is not in model.vocab");
            b.unknown = id;
        }
        b.byteFallback = json.bool(model, "byte_fallback", false, "model.byte_fallback");
        b.fuseUnknown = json.bool(model, "fuse_unk", false, "model.fuse_unk");
        b.ignoreMerges = json.bool(model, "ignore_merges", false, "model.ignore_merges");
    }

    private String type(JsonNode n, String where) {
        if (!n.isObject()) throw json.error(where, "expected an object, found " + JsonFields.describe(n));
        return json.string(n, "type", where + ".type");
    }

    private List<JsonNode> list(JsonNode n, String name, String where) {
        JsonNode a = json.array(n, name, where + "." + name);
        List<JsonNode> out = new ArrayList<>();
        a.forEach(out::add);
        return out;
    }

    /** A {@code {"String": …}} or {@code {"Regex": …}} pattern. */
    private Pattern pattern(JsonNode parent, String where) {
        JsonNode p = json.object(parent, "pattern", where + ".pattern");
        String literal = json.optionalString(p, "String", where + ".pattern.String");
        if (literal != null) return Pattern.compile(Pattern.quote(literal));
        String regex = json.optionalString(p, "Regex", where + ".pattern.Regex");
        if (regex == null) throw json.error(where + ".pattern", "expected {\"String\": …} or {\"Regex\": …}, found " + JsonFields.describe(p));
        try {
            return OnigRegex.compile(regex);
        } catch (PatternSyntaxException e) {
            throw json.error(where + ".pattern.Regex", "cannot be translated to a Java regular expression: " + e.getDescription());
        }
    }

    private char singleChar(JsonNode n, String name, String fallback, String where) {
        String s = json.optionalString(n, name, where + "." + name);
        if (s == null) s = fallback;
        if (s.length() != 1) throw json.error(where + "." + name, "expected one character, found \"" + s + "\"");
        return s.charAt(0);
    }

    private Normalizer normalizer(JsonNode n, String where) {
        if (n == null) return new Normalizer.None();
        return switch (type(n, where)) {
            case "Sequence" -> {
                List<Normalizer> steps = new ArrayList<>();
                List<JsonNode> items = list(n, "normalizers", where);
                for (int i = 0; i < items.size(); i++) steps.add(normalizer(items.get(i), where + ".normalizers[" + i + "]"));
                yield new Normalizer.Sequence(steps);
            }
            case "Prepend" -> new Normalizer.Prepend(json.string(n, "prepend", where + ".prepend"));
            case "Replace" -> new Normalizer.Replace(pattern(n, where), json.string(n, "content", where + ".content"));
            case "NFC" -> new Normalizer.Unicode(Form.NFC);
            case "NFD" -> new Normalizer.Unicode(Form.NFD);
            case "NFKC" -> new Normalizer.Unicode(Form.NFKC);
            case "NFKD" -> new Normalizer.Unicode(Form.NFKD);
            case "Lowercase" -> new Normalizer.Lowercase();
            case "Strip" -> new Normalizer.Strip(json.bool(n, "strip_left", false, where + ".strip_left"),
                    json.bool(n, "strip_right", false, where + ".strip_right"));
            default -> throw json.error(where + ".type", "normalizer \"" + n.get("type").asText()
                    + "\" is not supported (supported: Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD, Lowercase, Strip)");
        };
    }

    private HfPreTokenizer preTokenizer(JsonNode n, String where) {
        if (n == null) return new HfPreTokenizer.None();
        return switch (type(n, where)) {
            case "Sequence" -> {
                List<HfPreTokenizer> steps = new ArrayList<>();
                List<JsonNode> items = list(n, "pretokenizers", where);
                for (int i = 0; i < items.size(); i++) steps.add(preTokenizer(items.get(i), where + ".pretokenizers[" + i + "]"));
                yield new HfPreTokenizer.Sequence(steps);
            }
            case "ByteLevel" -> new HfPreTokenizer.ByteLevel(json.bool(n, "add_prefix_space", true, where + ".add_prefix_space"),
                    json.bool(n, "use_regex", true, where + ".use_regex"));
            case "Split" -> {
                String behavior = json.string(n, "behavior", where + ".behavior");
                HfPreTokenizer.Behavior b = switch (behavior) {
                    case "Removed" -> HfPreTokenizer.Behavior.REMOVED;
                    case "Isolated" -> HfPreTokenizer.Behavior.ISOLATED;
                    case "MergedWithPrevious" -> HfPreTokenizer.Behavior.MERGED_WITH_PREVIOUS;
                    case "MergedWithNext" -> HfPreTokenizer.Behavior.MERGED_WITH_NEXT;
                    case "Contiguous" -> HfPreTokenizer.Behavior.CONTIGUOUS;
                    default -> throw json.error(where + ".behavior", "unknown split behavior \"" + behavior + "\"");
                };
                Pattern pattern = pattern(n, where);
                splitRegexes.add(json.optionalString(n.get("pattern"), "Regex", where + ".pattern.Regex"));
                yield new HfPreTokenizer.Split(pattern, b, json.bool(n, "invert", false, where + ".invert"));
            }
            case "Metaspace" -> {
                char replacement = singleChar(n, "replacement", "\u2581", where);
                String scheme = json.optionalString(n, "prepend_scheme", where + ".prepend_scheme");
                HfPreTokenizer.PrependScheme p;
                if (scheme == null) {
                    p = json.bool(n, "add_prefix_space", true, where + ".add_prefix_space")
                            ? HfPreTokenizer.PrependScheme.ALWAYS : HfPreTokenizer.PrependScheme.NEVER;
                } else {
                    p = switch (scheme) {
                        case "always" -> HfPreTokenizer.PrependScheme.ALWAYS;
                        case "first" -> HfPreTokenizer.PrependScheme.FIRST;
                        case "never" -> HfPreTokenizer.PrependScheme.NEVER;
                        default -> throw json.error(where + ".prepend_scheme", "expected always, first or never, found \"" + scheme + "\"");
                    };
                }
                yield new HfPreTokenizer.Metaspace(replacement, p, json.bool(n, "split", true, where + ".split"));
            }
            case "Digits" -> new HfPreTokenizer.Digits(json.bool(n, "individual_digits", false, where + ".individual_digits"));
            default -> throw json.error(where + ".type", "pre-tokenizer \"" + n.get("type").asText()
                    + "\" is not supported (supported: Sequence, ByteLevel, Split, Metaspace, Digits)");
        };
    }

    private HfDecoder decoder(JsonNode n, String where) {
        if (n == null) return new HfDecoder.None();
        return switch (type(n, where)) {
            case "Sequence" -> {
                List<HfDecoder> steps = new ArrayList<>();
                List<JsonNode> items = list(n, "decoders", where);
                for (int i = 0; i < items.size(); i++) steps.add(decoder(items.get(i), where + ".decoders[" + i + "]"));
                yield new HfDecoder.Sequence(steps);
            }
            case "ByteLevel" -> new HfDecoder.ByteLevel();
            case "Replace" -> new HfDecoder.Replace(pattern(n, where), json.string(n, "content", where + ".content"));
            case "ByteFallback" -> new HfDecoder.ByteFallback();
            case "Fuse" -> new HfDecoder.Fuse();
            case "Strip" -> {
                String content = json.string(n, "content", where + ".content");
                if (content.codePointCount(0, content.length()) != 1) throw json.error(where + ".content", "expected one character");
                yield new HfDecoder.Strip(content.codePointAt(0), json.integer(n, "start", where + ".start"), json.integer(n, "stop", where + ".stop"));
            }
            case "Metaspace" -> {
                char replacement = singleChar(n, "replacement", "\u2581", where);
                String scheme = json.optionalString(n, "prepend_scheme", where + ".prepend_scheme");
                boolean strip = scheme == null ? json.bool(n, "add_prefix_space", true, where + ".add_prefix_space") : !scheme.equals("never");
                yield new HfDecoder.Metaspace(replacement, strip);
            }
            default -> throw json.error(where + ".type", "decoder \"" + n.get("type").asText()
                    + "\" is not supported (supported: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)");
        };
    }

    /** Sets the builder's prefix and suffix: the special tokens the post-processor puts around a single text. */
    private void postProcessor(JsonNode n, String where, HfTokenizer.Builder b) {
        if (n == null) return;
        switch (type(n, where)) {
            case "Sequence" -> {
                List<JsonNode> items = list(n, "processors", where);
                for (int i = 0; i < items.size(); i++) postProcessor(items.get(i), where + ".processors[" + i + "]", b);
            }
            case "ByteLevel" -> { }
            case "TemplateProcessing" -> {
                JsonNode specials = JsonFields.optional(n, "special_tokens");
                List<Integer> before = new ArrayList<>(), after = new ArrayList<>();
                boolean seenSequence = false;
                List<JsonNode> single = list(n, "single", where);
                for (int i = 0; i < single.size(); i++) {
                    String at = where + ".single[" + i + "]";
                    JsonNode item = single.get(i);
                    if (JsonFields.optional(item, "Sequence") != null) {
                        seenSequence = true;
                        continue;
                    }
                    JsonNode special = json.object(item, "SpecialToken", at + ".SpecialToken");
                    String name = json.string(special, "id", at + ".SpecialToken.id");
                    JsonNode entry = JsonFields.optional(specials, name);
                    if (entry == null) throw json.error(where + ".special_tokens", "has no entry \"" + name + "\" (used by " + at + ")");
                    JsonNode ids = json.array(entry, "ids", where + ".special_tokens[\"" + name + "\"].ids");
                    for (int k = 0; k < ids.size(); k++) {
                        (seenSequence ? after : before).add(json.tokenId(ids.get(k), where + ".special_tokens[\"" + name + "\"].ids[" + k + "]"));
                    }
                }
                b.prefix = concat(b.prefix, before);
                b.suffix = concat(after, b.suffix);
            }
            case "RobertaProcessing", "BertProcessing" -> {
                b.prefix = concat(b.prefix, List.of(pairId(n, "cls", where)));
                b.suffix = concat(List.of(pairId(n, "sep", where)), b.suffix);
            }
            default -> throw json.error(where + ".type", "post-processor \"" + n.get("type").asText()
                    + "\" is not supported (supported: Sequence, ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing)");
        }
    }

    private int pairId(JsonNode n, String name, String where) {
        JsonNode pair = json.array(n, name, where + "." + name);
        if (pair.size() != 2) throw json.error(where + "." + name, "expected [token, id], found " + JsonFields.describe(pair));
        return json.tokenId(pair.get(1), where + "." + name + "[1]");
    }

    private static List<Integer> concat(List<Integer> a, List<Integer> b) {
        List<Integer> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }
}
