package dev.forkpoint.sampling.structured;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.sampling.structured.GrammarNode.CodePoints;
import dev.forkpoint.sampling.structured.GrammarNode.Literal;
import dev.forkpoint.sampling.structured.GrammarNode.Repeat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A JSON schema {@code pattern} (ECMA-262 syntax, a regular subset) as a {@link GrammarNode} over a JSON string's
 * contents as they are written in JSON text (the characters {@code "}, {@code \}, LF, CR and tab as escapes; other
 * control characters are never produced). Supported: literal characters, {@code .}, classes {@code [...]} and
 * {@code [^...]} with ranges, {@code \d \D \w \W \s \S}, escaped punctuation, {@code \n \r \t \f \v},
 * {@code \}{@code uXXXX}, groups {@code (...)} and {@code (?:...)}, alternation, the quantifiers {@code * + ?}
 * {@code {n} {n,} {n,m}} (lazy forms too: the language is the same), {@code ^} at the start and {@code $} at the end.
 * A pattern without {@code ^} (or {@code $}) may have anything before (after) its match, as JSON schema's search
 * semantics say. Anything else (lookaround, backreferences, word boundaries, Unicode properties, flags) is refused
 * with {@link InvalidInputException} naming the pattern.
 */
final class RegexGrammar {
    private static final int MAX_CODE_POINT = 0x10ffff;
    /** Upper bound for {n,m} counts: a larger one is almost surely a mistake and costs nothing to refuse. */
    private static final int MAX_COUNT = 10_000;
    private static final int[] ALL = {0, 0xd7ff, 0xe000, MAX_CODE_POINT};
    private static final int[] DIGITS = {'0', '9'};
    private static final int[] WORD = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
    private static final int[] SPACE = normalize(new int[] {'\t', '\r', ' ', ' ', 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a,
            0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff});
    private static final int[] DOT = complement(new int[] {'\n', '\n', '\r', '\r', 0x2028, 0x2029});

    private final String pattern;
    private final String path;
    private int pos;

    private RegexGrammar(String pattern, String path) {
        this.pattern = pattern;
        this.path = path;
    }

    /** The grammar of a JSON string's contents matching {@code pattern}, without the closing quote. */
    static GrammarNode compile(String pattern, String path) {
        RegexGrammar r = new RegexGrammar(pattern, path);
        boolean anchoredStart = pattern.startsWith("^");
        if (anchoredStart) r.pos = 1;
        Parsed body = r.alternation();
        boolean anchoredEnd = false;
        if (r.pos < pattern.length() && pattern.charAt(r.pos) == '$' && r.pos == pattern.length() - 1) {
            anchoredEnd = true;
            r.pos++;
        }
        if (r.pos != pattern.length()) throw r.refuse("unexpected '" + pattern.charAt(r.pos) + "' at offset " + r.pos);
        GrammarNode anything = new Repeat(charIn(ALL), null, 0, Repeat.UNBOUNDED);
        List<GrammarNode> parts = new ArrayList<>();
        if (!anchoredStart) parts.add(anything);
        parts.add(body.node);
        if (!anchoredEnd) parts.add(anything);
        return new GrammarNode.Sequence(parts);
    }

    /** A parsed piece and whether it can match the empty string. */
    private record Parsed(GrammarNode node, boolean nullable) {}

    private InvalidInputException refuse(String why) {
        return new InvalidInputException("schema " + path + ": 'pattern' " + quote(pattern) + " is not supported: " + why
                + " (supported: literals, ., [classes], \\d \\w \\s and their negations, groups, |, * + ? {n,m}, ^ at the start, $ at the end)");
    }

    private static String quote(String s) { return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }

    private boolean more() { return pos < pattern.length(); }

    private char peek() { return pattern.charAt(pos); }

    private Parsed alternation() {
        List<Parsed> branches = new ArrayList<>();
        branches.add(concatenation());
        while (more() && peek() == '|') {
            pos++;
            branches.add(concatenation());
        }
        if (branches.size() == 1) return branches.getFirst();
        boolean nullable = false;
        List<GrammarNode> nodes = new ArrayList<>();
        for (Parsed p : branches) {
            nullable |= p.nullable;
            nodes.add(p.node);
        }
        return new Parsed(new GrammarNode.Choice(nodes), nullable);
    }

    private Parsed concatenation() {
        List<GrammarNode> parts = new ArrayList<>();
        boolean nullable = true;
        while (more() && peek() != '|' && peek() != ')') {
            if (peek() == '$' && pos == pattern.length() - 1) break;   // the end anchor, handled by compile
            Parsed p = quantified();
            parts.add(p.node);
            nullable &= p.nullable;
        }
        return new Parsed(parts.size() == 1 ? parts.getFirst() : new GrammarNode.Sequence(parts), nullable);
    }

    private Parsed quantified() {
        Parsed atom = atom();
        while (more()) {
            char c = peek();
            int min, max;
            if (c == '*') { min = 0; max = Repeat.UNBOUNDED; pos++; }
            else if (c == '+') { min = 1; max = Repeat.UNBOUNDED; pos++; }
            else if (c == '?') { min = 0; max = 1; pos++; }
            else if (c == '{' && isCount()) {
                int[] mm = count();
                min = mm[0];
                max = mm[1];
            } else break;
            if (more() && peek() == '?') pos++;   // lazy: the same language
            if (more() && peek() == '+') throw refuse("possessive quantifiers");
            if (atom.nullable) throw refuse("a quantified part that can match nothing");
            atom = new Parsed(max == 0 ? GrammarNode.EMPTY : new Repeat(atom.node, null, min, max), min == 0);
        }
        return atom;
    }

    private boolean isCount() {
        int end = pattern.indexOf('}', pos);
        return end > pos + 1 && pattern.substring(pos + 1, end).matches("\\d+(,\\d*)?");
    }

    private int[] count() {
        int end = pattern.indexOf('}', pos);
        String[] parts = pattern.substring(pos + 1, end).split(",", -1);
        pos = end + 1;
        int min = parse(parts[0]);
        int max = parts.length == 1 ? min : parts[1].isEmpty() ? Repeat.UNBOUNDED : parse(parts[1]);
        if (max < min) throw refuse("{" + min + "," + max + "} has max < min");
        return new int[] {min, max};
    }

    private int parse(String digits) {
        if (digits.length() > 5 || Integer.parseInt(digits) > MAX_COUNT) throw refuse("a count above " + MAX_COUNT);
        return Integer.parseInt(digits);
    }

    private Parsed atom() {
        char c = peek();
        switch (c) {
            case '(' -> {
                pos++;
                if (more() && peek() == '?') {
                    if (pos + 1 < pattern.length() && pattern.charAt(pos + 1) == ':') pos += 2;
                    else throw refuse("group modifiers other than (?:...) (lookaround, named groups, flags)");
                }
                Parsed inner = alternation();
                if (!more() || peek() != ')') throw refuse("an unclosed group");
                pos++;
                return inner;
            }
            case '[' -> {
                return new Parsed(charIn(charClass()), false);
            }
            case '.' -> {
                pos++;
                return new Parsed(charIn(DOT), false);
            }
            case '\\' -> {
                pos++;
                return new Parsed(charIn(escape(false)), false);
            }
            case '^', '$' -> throw refuse("anchors other than ^ at the start and $ at the end");
            case ')', '*', '+', '?', '{', '}', ']', '|' -> throw refuse("'" + c + "' at offset " + pos + " where a character was expected");
            default -> {
                int cp = pattern.codePointAt(pos);
                pos += Character.charCount(cp);
                return new Parsed(charIn(new int[] {cp, cp}), false);
            }
        }
    }

    /** After a backslash: the set it stands for. */
    private int[] escape(boolean inClass) {
        if (!more()) throw refuse("a trailing backslash");
        char c = pattern.charAt(pos++);
        return switch (c) {
            case 'd' -> DIGITS;
            case 'D' -> complement(DIGITS);
            case 'w' -> WORD;
            case 'W' -> complement(WORD);
            case 's' -> SPACE;
            case 'S' -> complement(SPACE);
            case 'n' -> single('\n');
            case 'r' -> single('\r');
            case 't' -> single('\t');
            case 'f' -> single('\f');
            case 'v' -> single(0x0b);
            case 'u' -> {
                if (pos + 4 > pattern.length() || !pattern.substring(pos, pos + 4).matches("[0-9a-fA-F]{4}")) throw refuse("a malformed \\u escape");
                int cp = Integer.parseInt(pattern.substring(pos, pos + 4), 16);
                pos += 4;
                if (cp >= 0xd800 && cp <= 0xdfff) throw refuse("surrogate escapes");
                yield single(cp);
            }
            default -> {
                if (c == 'b' && inClass) yield single(0x08);
                if (Character.isLetterOrDigit(c)) throw refuse("the escape \\" + c);
                yield single(c);
            }
        };
    }

    private static int[] single(int cp) { return new int[] {cp, cp}; }

    private int[] charClass() {
        pos++;   // [
        boolean negated = more() && peek() == '^';
        if (negated) pos++;
        List<int[]> sets = new ArrayList<>();
        boolean first = true;
        while (true) {
            if (!more()) throw refuse("an unclosed character class");
            char c = peek();
            if (c == ']' && !first) {
                pos++;
                break;
            }
            first = false;
            int[] lo = classAtom();
            if (lo.length == 2 && lo[0] == lo[1] && more() && peek() == '-' && pos + 1 < pattern.length() && pattern.charAt(pos + 1) != ']') {
                pos++;
                int[] hi = classAtom();
                if (hi.length != 2 || hi[0] != hi[1]) throw refuse("a range ending in a class escape");
                if (hi[0] < lo[0]) throw refuse("a range out of order");
                sets.add(new int[] {lo[0], hi[0]});
            } else {
                sets.add(lo);
            }
        }
        int total = 0;
        for (int[] s : sets) total += s.length;
        int[] all = new int[total];
        int k = 0;
        for (int[] s : sets) {
            System.arraycopy(s, 0, all, k, s.length);
            k += s.length;
        }
        int[] set = normalize(all);
        return negated ? complement(set) : set;
    }

    private int[] classAtom() {
        char c = peek();
        if (c == '\\') {
            pos++;
            return escape(true);
        }
        if (c == '[' && pos + 1 < pattern.length() && (pattern.charAt(pos + 1) == ':' || pattern.charAt(pos + 1) == '=')) {
            throw refuse("POSIX classes");
        }
        int cp = pattern.codePointAt(pos);
        pos += Character.charCount(cp);
        return single(cp);
    }

    // ---- sets of code points: sorted, merged inclusive ranges ----

    static int[] normalize(int[] ranges) {
        int n = ranges.length / 2;
        long[] r = new long[n];
        for (int i = 0; i < n; i++) r[i] = ((long) ranges[2 * i] << 32) | ranges[2 * i + 1];
        Arrays.sort(r);
        int[] out = new int[ranges.length];
        int m = 0;
        for (long x : r) {
            int lo = (int) (x >>> 32), hi = (int) x;
            if (m > 0 && lo <= out[m - 1] + 1) out[m - 1] = Math.max(out[m - 1], hi);
            else {
                out[m++] = lo;
                out[m++] = hi;
            }
        }
        return Arrays.copyOf(out, m);
    }

    /** Every code point (no surrogates) not in the set. */
    static int[] complement(int[] set) {
        int[] out = new int[set.length + 2];
        int m = 0, next = 0;
        for (int i = 0; i < set.length; i += 2) {
            if (set[i] > next) {
                out[m++] = next;
                out[m++] = set[i] - 1;
            }
            next = set[i + 1] + 1;
        }
        if (next <= MAX_CODE_POINT) {
            out[m++] = next;
            out[m++] = MAX_CODE_POINT;
        }
        return intersect(Arrays.copyOf(out, m), ALL);
    }

    static int[] intersect(int[] a, int[] b) {
        List<Integer> out = new ArrayList<>();
        int i = 0, j = 0;
        while (i < a.length && j < b.length) {
            int lo = Math.max(a[i], b[j]), hi = Math.min(a[i + 1], b[j + 1]);
            if (lo <= hi) {
                out.add(lo);
                out.add(hi);
            }
            if (a[i + 1] < b[j + 1]) i += 2;
            else j += 2;
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Characters written as themselves in a JSON string: not a quote, backslash or control character. */
    private static final int[] PLAIN = complement(new int[] {0, 0x1f, MatchState.QUOTE, MatchState.QUOTE, MatchState.BACKSLASH, MatchState.BACKSLASH});

    /**
     * One character of the set as JSON text: itself when plain, else its escape (\" \\ \n \r \t); other control
     * characters are left out (a pattern needing one cannot be met).
     */
    static GrammarNode charIn(int[] set) {
        if (set.length == 0) throw new InvalidInputException("a pattern's character class matches no character");
        List<GrammarNode> out = new ArrayList<>();
        int[] plain = intersect(set, PLAIN);
        if (plain.length > 0) out.add(new CodePoints(plain));
        CodePoints cps = new CodePoints(set);
        if (cps.contains(MatchState.QUOTE)) out.add(Literal.of("\\\""));
        if (cps.contains('\\')) out.add(Literal.of("\\\\"));
        if (cps.contains('\n')) out.add(Literal.of("\\n"));
        if (cps.contains('\r')) out.add(Literal.of("\\r"));
        if (cps.contains('\t')) out.add(Literal.of("\\t"));
        if (out.isEmpty()) throw new InvalidInputException("a pattern's character class holds only control characters");
        return GrammarNode.choice(out);
    }
}
