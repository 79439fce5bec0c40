package dev.forkpoint.tokenizer;

import dev.forkpoint.InvalidInputException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits text into words before byte-level BPE, as {@code tokenizer.ggml.pre} selects. The expressions are applied
 * in order, each to the pieces the previous one produced; text between matches is kept as pieces of its own, so no
 * character is ever dropped.
 *
 * @param name          the {@code tokenizer.ggml.pre} value this was built for
 * @param expressions   the split expressions, applied in order
 * @param ignoreMerges  whether a word that is itself a token is taken whole, without merging (Llama 3 family)
 * @param addBosDefault whether BOS is added when the file does not say ({@code tokenizer.ggml.add_bos_token})
 */
record PreTokenizer(String name, List<Pattern> expressions, boolean ignoreMerges, boolean addBosDefault) {

    static final String GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
    static final String LLAMA3 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
            + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static final String QWEN2 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
            + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    static final List<String> DEFAULT = List.of("[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]");

    private enum Family { DEFAULT, GPT2, LLAMA3, LLAMA3_WITH_MERGES, QWEN2 }

    /** Supported {@code tokenizer.ggml.pre} values and the splitting they mean. */
    private static final Map<String, Family> FAMILIES = Map.ofEntries(
            Map.entry("default", Family.DEFAULT),
            Map.entry("gpt-2", Family.GPT2),
            Map.entry("gpt2", Family.GPT2),
            Map.entry("phi-2", Family.GPT2),
            Map.entry("llama3", Family.LLAMA3),
            Map.entry("llama-v3", Family.LLAMA3),
            Map.entry("llama-bpe", Family.LLAMA3),
            Map.entry("falcon3", Family.LLAMA3),
            Map.entry("pixtral", Family.LLAMA3),
            Map.entry("smaug-bpe", Family.LLAMA3_WITH_MERGES),
            Map.entry("dbrx", Family.LLAMA3_WITH_MERGES),
            Map.entry("qwen2", Family.QWEN2),
            Map.entry("deepseek-r1-qwen", Family.QWEN2));

    PreTokenizer {
        expressions = List.copyOf(expressions);
    }

    /** The pre-tokenizer {@code pre} names; an unknown name is refused, listing the supported ones. */
    static PreTokenizer forName(String pre) {
        Family family = FAMILIES.get(pre);
        if (family == null) {
            throw new InvalidInputException("unsupported tokenizer.ggml.pre \"" + pre + "\"; supported: "
                    + String.join(", ", new java.util.TreeSet<>(FAMILIES.keySet())));
        }
        return switch (family) {
            case DEFAULT -> new PreTokenizer(pre, compile(DEFAULT), false, false);
            case GPT2 -> new PreTokenizer(pre, compile(List.of(GPT2)), false, false);
            case LLAMA3 -> new PreTokenizer(pre, compile(List.of(LLAMA3)), true, true);
            case LLAMA3_WITH_MERGES -> new PreTokenizer(pre, compile(List.of(LLAMA3)), false, false);
            case QWEN2 -> new PreTokenizer(pre, compile(List.of(QWEN2)), false, false);
        };
    }

    private static List<Pattern> compile(List<String> regexes) {
        return regexes.stream().map(r -> Pattern.compile(r, Pattern.UNICODE_CHARACTER_CLASS)).toList();
    }

    /** The words of {@code text}, in order; their concatenation is {@code text}. */
    List<String> split(String text) {
        List<String> pieces = List.of(text);
        for (Pattern p : expressions) {
            List<String> next = new ArrayList<>();
            for (String piece : pieces) splitOne(p, piece, next);
            pieces = next;
        }
        return pieces;
    }

    private static void splitOne(Pattern p, String piece, List<String> out) {
        Matcher m = p.matcher(piece);
        int at = 0;
        while (m.find()) {
            if (m.end() == m.start()) continue;
            if (m.start() > at) out.add(piece.substring(at, m.start()));
            out.add(piece.substring(m.start(), m.end()));
            at = m.end();
        }
        if (at < piece.length()) out.add(piece.substring(at));
    }
}
