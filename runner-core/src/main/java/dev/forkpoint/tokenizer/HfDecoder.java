package dev.forkpoint.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code decoder} of a Hugging Face tokenizer: token pieces → text, as a chain of steps over the list of
 * pieces. {@link #perToken} is the streaming view: what one token contributes, without the steps that depend on
 * its position (stripping the first space).
 */
sealed interface HfDecoder {
    List<String> decode(List<String> tokens);

    /** The text one token contributes when streamed; byte-producing steps are handled by the tokenizer. */
    String perToken(String token);

    /** Pieces unchanged. */
    record None() implements HfDecoder {
        public List<String> decode(List<String> tokens) { return tokens; }
        public String perToken(String token) { return token; }
    }

    record Sequence(List<HfDecoder> decoders) implements HfDecoder {
        public List<String> decode(List<String> tokens) {
            for (HfDecoder d : decoders) tokens = d.decode(tokens);
            return tokens;
        }

        public String perToken(String token) {
            for (HfDecoder d : decoders) token = d.perToken(token);
            return token;
        }
    }

    /** GPT-2's byte characters back to bytes, all pieces joined, invalid UTF-8 as U+FFFD. */
    record ByteLevel() implements HfDecoder {
        public List<String> decode(List<String> tokens) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (String t : tokens) {
                byte[] b = bytesOf(t);
                out.write(b, 0, b.length);
            }
            return List.of(out.toString(StandardCharsets.UTF_8));
        }

        public String perToken(String token) { return token; }

        /** A piece's bytes: its byte characters, or its UTF-8 when a character is not one of them. */
        static byte[] bytesOf(String piece) {
            byte[] out = new byte[piece.length()];
            for (int i = 0; i < piece.length(); i++) {
                int b = ByteUnicode.byteOf(piece.charAt(i));
                if (b < 0) return piece.getBytes(StandardCharsets.UTF_8);
                out[i] = (byte) b;
            }
            return out;
        }
    }

    /** Replaces every match of {@code pattern} in each piece with {@code content}. */
    record Replace(Pattern pattern, String content) implements HfDecoder {
        public List<String> decode(List<String> tokens) { return tokens.stream().map(this::perToken).toList(); }

        public String perToken(String token) { return pattern.matcher(token).replaceAll(Matcher.quoteReplacement(content)); }
    }

    /**
     * {@code <0xNN>} pieces become their bytes; each run of them is one piece, or one U+FFFD per byte when the
     * run is not valid UTF-8.
     */
    record ByteFallback() implements HfDecoder {
        public List<String> decode(List<String> tokens) {
            List<String> out = new ArrayList<>();
            ByteArrayOutputStream run = new ByteArrayOutputStream();
            for (String t : tokens) {
                int b = byteOf(t);
                if (b >= 0) {
                    run.write(b);
                    continue;
                }
                flush(run, out);
                out.add(t);
            }
            flush(run, out);
            return out;
        }

        public String perToken(String token) { return token; }

        private static void flush(ByteArrayOutputStream run, List<String> out) {
            if (run.size() == 0) return;
            byte[] bytes = run.toByteArray();
            run.reset();
            var decoder = StandardCharsets.UTF_8.newDecoder();
            try {
                out.add(decoder.decode(java.nio.ByteBuffer.wrap(bytes)).toString());
            } catch (java.nio.charset.CharacterCodingException invalid) {
                out.add("\uFFFD".repeat(bytes.length));
            }
        }

        /** The byte of a {@code <0xNN>} piece, or -1. */
        static int byteOf(String piece) {
            if (piece.length() != 6 || !piece.startsWith("<0x") || piece.charAt(5) != '>') return -1;
            int hi = Character.digit(piece.charAt(3), 16), lo = Character.digit(piece.charAt(4), 16);
            return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
        }
    }

    /** All pieces joined into one. */
    record Fuse() implements HfDecoder {
        public List<String> decode(List<String> tokens) { return List.of(String.join("", tokens)); }
        public String perToken(String token) { return token; }
    }

    /** Removes up to {@code start} leading and {@code stop} trailing {@code content} characters from each piece. */
    record Strip(int content, int start, int stop) implements HfDecoder {
        public List<String> decode(List<String> tokens) {
            return tokens.stream().map(t -> {
                int[] cps = t.codePoints().toArray();
                int from = 0;
                while (from < start && from < cps.length && cps[from] == content) from++;
                int to = cps.length;
                while (cps.length - to < stop && to > from && cps[to - 1] == content) to--;
                return new String(cps, from, to - from);
            }).toList();
        }

        public String perToken(String token) { return token; }
    }

    /**
     * SentencePiece's space mark back to spaces; unless the prepend scheme is "never", the first piece loses all
     * its marks (as the Hugging Face library does, not only a leading one).
     */
    record Metaspace(char replacement, boolean stripFirst) implements HfDecoder {
        public List<String> decode(List<String> tokens) {
            List<String> out = new ArrayList<>(tokens.size());
            for (int i = 0; i < tokens.size(); i++) {
                String t = tokens.get(i);
                out.add(i == 0 && stripFirst ? t.replace(String.valueOf(replacement), "") : perToken(t));
            }
            return out;
        }

        public String perToken(String token) { return token.replace(replacement, ' '); }
    }
}
