package dev.forkpoint.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A deterministic (seeded) corpus of varied texts for comparing tokenizers: many scripts, accents in composed and
 * decomposed form, emoji with ZWJ sequences and skin tones, code, runs of whitespace, digit runs, contractions,
 * special-token text and odd characters (lone combining marks, zero-width and private-use characters). Texts are
 * valid Unicode (no lone surrogates), since the reference library takes Rust strings.
 */
final class TokenizerCorpus {
    private static final String[] WORDS = {
            "hello", "world", "The", "quick", "brown", "fox", "HELLO", "Hello,", "don't", "I'm", "they'll", "we've",
            "she'd", "it's", "It'S", "O'Neil", "rock'n'roll", "'s", "'ll", "'re", "can't", "y'all", "'", "''",
            "你好世界", "日本語のテキスト", "カタカナ", "한국어 문장", "中文，标点。", "مرحبا بالعالم", "السَّلَامُ",
            "नमस्ते दुनिया", "हिन्दी", "Привет мир", "Ёлка", "Καλημέρα κόσμε", "สวัสดีครับ", "שלום עולם", "ქართული",
            "Ελληνικά", "Tiếng Việt", "café", "naïve", "Ångström", "e\u0301", "a\u0308\u0304", "ﬁnancial", "ß", "İstanbul",
            "ſ", "Ǆ", "ŉ", "straße", "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "🧑🏿‍💻", "👩🏻‍🔬", "✨", "🤖🤖",
            "def f(x):\n    return x**2", "if (a && b) { c++; }", "<div class=\"x\">", "SELECT * FROM t;",
            "x = [1, 2, 3]", "#include <stdio.h>", "fn main() -> i32 { 0 }", "`~!@#$%^&*()_+-=[]{}|;:,.<>/?",
            "\"quoted\"", "a_b_c", "CamelCaseWord", "snake_case", "http://example.com/a?b=c&d=e", "user@mail.org",
            "0", "42", "1234567", "3.14159", "1,000,000", "٣٤٥", "²³", "١٢٣٤", "12:30", "2024-01-01", "000000000000",
            "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<0x41>", "\u2581", "<s", "s>", "</", "<|",
            "\u0301", "\u0308\u0301", "\u200B", "\u200D", "\uFEFF", "\uFFFD", "\u00AD", "\uE000", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𐍈",
            "\u0000", "\u007F", "\u0085", "…", "—", "“smart”", "«guillemets»", "¿Qué?", "¡Hola!",
    };
    private static final String[] SPACES = {
            "", " ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "   \t ", "\u00A0", "\u3000", "\u2028",
            " \t\n", "\n   ",
    };
    /** Well-established blocks to draw random characters from: Latin, Cyrillic, Greek, CJK, Hangul, Arabic, emoji. */
    private static final int[][] BLOCKS = {
            {0x20, 0x7E}, {0xA0, 0x17F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x600, 0x6FF}, {0x900, 0x97F},
            {0x3040, 0x30FF}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3}, {0x1F600, 0x1F64F}, {0x1F300, 0x1F5FF},
            {0x300, 0x36F}, {0x2000, 0x206F},
    };

    private TokenizerCorpus() {}

    /** {@code count} texts from {@code seed}; the same arguments always give the same texts. */
    static List<String> generate(long seed, int count) {
        SplittableRandom random = new SplittableRandom(seed);
        List<String> out = new ArrayList<>(count);
        for (String w : WORDS) if (out.size() < count) out.add(w);
        while (out.size() < count) {
            StringBuilder sb = new StringBuilder();
            if (random.nextInt(5) == 0) sb.append(pick(random, SPACES));
            int kind = random.nextInt(10);
            if (kind == 0) {
                int n = 1 + random.nextInt(12);
                for (int i = 0; i < n; i++) {
                    int[] block = BLOCKS[random.nextInt(BLOCKS.length)];
                    sb.appendCodePoint(block[0] + random.nextInt(block[1] - block[0] + 1));
                }
            } else {
                int n = 1 + random.nextInt(8);
                for (int i = 0; i < n; i++) {
                    if (i > 0) sb.append(random.nextInt(3) == 0 ? pick(random, SPACES) : " ");
                    sb.append(pick(random, WORDS));
                }
            }
            if (random.nextInt(5) == 0) sb.append(pick(random, SPACES));
            out.add(sb.toString());
        }
        return out;
    }

    private static String pick(SplittableRandom random, String[] from) {
        return from[random.nextInt(from.length)];
    }

    /** The text with control and whitespace characters escaped, for failure messages. */
    static String escape(String s) {
        StringBuilder sb = new StringBuilder("\"");
        s.codePoints().forEach(c -> {
            if (c == '\n') sb.append("\\n");
            else if (c == '\t') sb.append("\\t");
            else if (c == '\r') sb.append("\\r");
            else if (Character.isISOControl(c) || Character.isSpaceChar(c) && c != ' ' || c == 0x200B || c == 0x200D || c == 0xFEFF)
                sb.append(String.format("\\u%04X", c));
            else sb.appendCodePoint(c);
        });
        return sb.append('"').toString();
    }
}
