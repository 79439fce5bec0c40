package dev.forkpoint.sampling.structured;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.sampling.structured.GrammarNode.Choice;
import dev.forkpoint.sampling.structured.GrammarNode.CodePoints;
import dev.forkpoint.sampling.structured.GrammarNode.JsonString;
import dev.forkpoint.sampling.structured.GrammarNode.Literal;
import dev.forkpoint.sampling.structured.GrammarNode.Ref;
import dev.forkpoint.sampling.structured.GrammarNode.Repeat;
import dev.forkpoint.sampling.structured.GrammarNode.Sequence;
import dev.forkpoint.sampling.structured.GrammarNode.Whitespace;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Where a match of a {@link GrammarNode} stands after some bytes: an immutable set of stacks, one per way the bytes so
 * far can be read (a choice may stay open until a later byte decides it). The top of a stack is the part being matched
 * (a literal, a code point, a string's contents, whitespace); below it what follows once that part is done (the rest of
 * a sequence, a repeat's count). The empty stack means the whole grammar is matched. Values are equal when their sets
 * are: a state reached twice (the same point in a string of unbounded length, say) is recognised, so per-state work
 * can be cached. A repeat without an upper bound counts only up to its minimum (the count beyond it changes nothing).
 */
public final class MatchState {
    /** Deeper than this, expanding a state (without reading a byte) is taken for a left-recursive grammar. */
    private static final int MAX_EXPANSION_DEPTH = 2000;

    private final Stack[] stacks;
    private final int hash;

    private MatchState(Stack[] stacks) {
        this.stacks = stacks;
        int h = 0;
        for (Stack s : stacks) h += s.hash;   // order-independent: a set
        this.hash = h;
    }

    /** The state before any byte. */
    public static MatchState start(GrammarNode root) {
        Builder out = new Builder();
        expand(root, Stack.EMPTY, out, 0);
        return out.build();
    }

    /** The state after one more byte (0–255), or null when no reading of the bytes so far allows it. */
    public MatchState advance(int b) {
        Builder out = new Builder();
        for (Stack s : stacks) if (s != Stack.EMPTY) step(s, b, out);
        return out.size == 0 ? null : out.build();
    }

    /** The state after these bytes, or null as soon as one is not allowed. */
    public MatchState advance(byte[] bytes) {
        MatchState s = this;
        for (int i = 0; i < bytes.length && s != null; i++) s = s.advance(bytes[i] & 0xff);
        return s;
    }

    /** Whether the bytes so far are a complete match (generation may end here). */
    public boolean accepting() {
        for (Stack s : stacks) if (s == Stack.EMPTY) return true;
        return false;
    }

    /** Whether the bytes so far are a complete match that no further byte can extend. */
    public boolean complete() {
        return stacks.length == 1 && stacks[0] == Stack.EMPTY;
    }

    /**
     * When the only way forward is inside a JSON string, between characters: how many more characters it may hold
     * (any plain character — not a quote, backslash or control character — is then allowed up to that many);
     * otherwise −1. Lets a token mask take the tokens made of plain characters in one step.
     */
    public int plainStringBudget() {
        if (stacks.length != 1 || !(stacks[0].top instanceof Str s) || s.mode != Str.CHAR) return -1;
        return s.node.maxLength() == Repeat.UNBOUNDED ? Integer.MAX_VALUE : s.node.maxLength() - s.count;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof MatchState m) || m.hash != hash || m.stacks.length != stacks.length) return false;
        outer:
        for (Stack a : stacks) {
            for (Stack b : m.stacks) if (a.equals(b)) continue outer;
            return false;
        }
        return true;
    }

    @Override
    public int hashCode() { return hash; }

    @Override
    public String toString() { return Arrays.toString(stacks); }

    // ---- stacks and frames ----

    /** An immutable linked stack of frames; EMPTY = matched. Equal by contents (nodes by identity). */
    static final class Stack {
        static final Stack EMPTY = new Stack(null, null);
        final Frame top;
        final Stack rest;
        final int hash;

        Stack(Frame top, Stack rest) {
            this.top = top;
            this.rest = rest;
            this.hash = top == null ? 1 : 31 * rest.hash + top.hashCode();
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Stack s) || s.hash != hash) return false;
            Stack a = this, b = s;
            while (a != b) {
                if (a.top == null || b.top == null || !a.top.equals(b.top)) return false;
                a = a.rest;
                b = b.rest;
            }
            return true;
        }

        @Override
        public int hashCode() { return hash; }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("[");
            for (Stack s = this; s.top != null; s = s.rest) sb.append(s.top).append(s.rest.top != null ? " | " : "");
            return sb.append(']').toString();
        }
    }

    private sealed interface Frame {}

    /** Matching a literal; {@code pos} bytes done. */
    private record Lit(Literal node, int pos) implements Frame {}

    /** Matching one code point: {@code need} continuation bytes to come, the next in [lo, hi]; cp so far. */
    private record Cp(CodePoints node, int cp, int need, int lo, int hi) implements Frame {}

    /** Whitespace, {@code used} bytes of it so far. */
    private record Ws(Whitespace node, int used) implements Frame {}

    /** A JSON string's contents: {@code count} characters so far; mode CHAR (between characters) or inside one. */
    private record Str(JsonString node, int count, int mode, int cp, int need, int lo, int hi) implements Frame {
        static final int CHAR = 0, ESCAPE = 1, HEX = 2, UTF8 = 3;
    }

    /** The rest of a sequence, from part {@code next}. */
    private record SeqK(Sequence node, int next) implements Frame {}

    /** A repeat with {@code count} items done; {@code separated}: the separator is done, an item must follow. */
    private record RepK(Repeat node, int count, boolean separated) implements Frame {}

    // ---- expansion (no byte read) ----

    private static void expand(GrammarNode node, Stack rest, Builder out, int depth) {
        if (depth > MAX_EXPANSION_DEPTH) {
            throw new InvalidInputException("the schema is left-recursive (a $ref reaches itself before any output)");
        }
        switch (node) {
            case Literal l -> out.add(new Stack(new Lit(l, 0), rest));
            case CodePoints c -> out.add(new Stack(new Cp(c, 0, 0, 0, 0), rest));
            case Sequence s -> {
                if (s.parts().isEmpty()) resume(rest, out, depth + 1);
                else expand(s.parts().getFirst(), s.parts().size() == 1 ? rest : new Stack(new SeqK(s, 1), rest), out, depth + 1);
            }
            case Choice c -> {
                for (GrammarNode n : c.choices()) expand(n, rest, out, depth + 1);
            }
            case Repeat r -> resume(new Stack(new RepK(r, 0, false), rest), out, depth + 1);
            case Whitespace w -> {
                if (w.max() > 0) out.add(new Stack(new Ws(w, 0), rest));
                resume(rest, out, depth + 1);
            }
            case JsonString j -> out.add(new Stack(new Str(j, 0, Str.CHAR, 0, 0, 0, 0), rest));
            case Ref r -> expand(r.target(), rest, out, depth + 1);
        }
    }

    /** The top part of {@code stack} is done: continue with what it waits for. */
    private static void resume(Stack stack, Builder out, int depth) {
        if (stack == Stack.EMPTY) {
            out.add(Stack.EMPTY);
            return;
        }
        switch (stack.top) {
            case SeqK k -> {
                List<GrammarNode> parts = k.node.parts();
                Stack after = k.next + 1 == parts.size() ? stack.rest : new Stack(new SeqK(k.node, k.next + 1), stack.rest);
                expand(parts.get(k.next), after, out, depth + 1);
            }
            case RepK k -> {
                Repeat r = k.node;
                if (k.separated) {
                    expand(r.item(), new Stack(rep(r, k.count + 1), stack.rest), out, depth + 1);
                    return;
                }
                if (k.count < r.max()) {
                    if (k.count > 0 && r.separator() != null) {
                        expand(r.separator(), new Stack(new RepK(r, k.count, true), stack.rest), out, depth + 1);
                    } else {
                        expand(r.item(), new Stack(rep(r, k.count + 1), stack.rest), out, depth + 1);
                    }
                }
                if (k.count >= r.min()) resume(stack.rest, out, depth + 1);
            }
            default -> throw new IllegalStateException("resume below an active frame: " + stack.top);
        }
    }

    /** A repeat's count frame; without an upper bound the count stops at max(min, 1) (more changes nothing). */
    private static RepK rep(Repeat r, int count) {
        if (r.max() == Repeat.UNBOUNDED) count = Math.min(count, Math.max(r.min(), 1));
        return new RepK(r, count, false);
    }

    // ---- one byte ----

    /** The quote and the backslash, by number (a quote in a char literal confuses the layering test's source scanner). */
    static final int QUOTE = 0x22, BACKSLASH = 0x5c;

    private static boolean isWhitespace(int b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

    private static void step(Stack s, int b, Builder out) {
        switch (s.top) {
            case Lit l -> {
                byte[] bytes = l.node.bytes();
                if ((bytes[l.pos] & 0xff) != b) return;
                if (l.pos + 1 == bytes.length) resume(s.rest, out, 0);
                else out.add(new Stack(new Lit(l.node, l.pos + 1), s.rest));
            }
            case Ws w -> {
                if (!isWhitespace(b)) return;
                int used = w.used + 1;
                if (used < w.node.max()) out.add(new Stack(new Ws(w.node, used), s.rest));
                resume(s.rest, out, 0);
            }
            case Cp c -> stepCodePoint(c, s.rest, b, out);
            case Str str -> stepString(str, s.rest, b, out);
            default -> throw new IllegalStateException("no active frame on top: " + s.top);
        }
    }

    private static void stepCodePoint(Cp c, Stack rest, int b, Builder out) {
        CodePoints set = c.node;
        if (c.need == 0) {
            if (b < 0x80) {
                if (set.contains(b)) resume(rest, out, 0);
                return;
            }
            int[] lead = lead(b);
            if (lead == null) return;
            int cp = lead[0], need = lead[1];
            // the smallest code point of a sequence this long (shorter forms are overlong): 0x80, 0x800, 0x10000
            int lowest = Math.max(cp << (6 * need), need == 1 ? 0x80 : need == 2 ? 0x800 : 0x10000);
            if (!set.intersects(lowest, (cp << (6 * need)) | ((1 << (6 * need)) - 1))) return;
            out.add(new Stack(new Cp(set, cp, need, lead[2], lead[3]), rest));
            return;
        }
        if (b < c.lo || b > c.hi) return;
        int cp = (c.cp << 6) | (b & 0x3f), need = c.need - 1;
        if (need == 0) {
            if (set.contains(cp)) resume(rest, out, 0);
        } else if (set.intersects(cp << (6 * need), (cp << (6 * need)) | ((1 << (6 * need)) - 1))) {
            out.add(new Stack(new Cp(set, cp, need, 0x80, 0xbf), rest));
        }
    }

    /** A UTF-8 lead byte of a multi-byte sequence: {payload bits, continuation bytes, next byte's lo, hi}; else null. */
    private static int[] lead(int b) {
        if (b >= 0xc2 && b <= 0xdf) return LEADS[b - 0xc0];
        if (b >= 0xe0 && b <= 0xef) return LEADS[b - 0xc0];
        if (b >= 0xf0 && b <= 0xf4) return LEADS[b - 0xc0];
        return null;
    }

    private static final int[][] LEADS = new int[0x40][];

    static {
        for (int b = 0xc2; b <= 0xdf; b++) LEADS[b - 0xc0] = new int[] {b & 0x1f, 1, 0x80, 0xbf};
        for (int b = 0xe0; b <= 0xef; b++) {
            LEADS[b - 0xc0] = new int[] {b & 0x0f, 2, b == 0xe0 ? 0xa0 : 0x80, b == 0xed ? 0x9f : 0xbf};
        }
        for (int b = 0xf0; b <= 0xf4; b++) {
            LEADS[b - 0xc0] = new int[] {b & 0x07, 3, b == 0xf0 ? 0x90 : 0x80, b == 0xf4 ? 0x8f : 0xbf};
        }
    }

    private static void stepString(Str s, Stack rest, int b, Builder out) {
        JsonString node = s.node;
        switch (s.mode) {
            case Str.CHAR -> {
                if (b == QUOTE) {
                    if (s.count >= node.minLength()) resume(rest, out, 0);
                    return;
                }
                if (s.count >= node.maxLength() || b < 0x20) return;
                if (b == '\\') out.add(new Stack(new Str(node, s.count, Str.ESCAPE, 0, 0, 0, 0), rest));
                else if (b < 0x80) out.add(new Stack(charDone(node, s.count), rest));
                else {
                    int[] lead = lead(b);
                    if (lead != null) out.add(new Stack(new Str(node, s.count, Str.UTF8, 0, lead[1], lead[2], lead[3]), rest));
                }
            }
            case Str.ESCAPE -> {
                switch (b) {
                    case QUOTE, BACKSLASH, '/', 'b', 'f', 'n', 'r', 't' -> out.add(new Stack(charDone(node, s.count), rest));
                    case 'u' -> out.add(new Stack(new Str(node, s.count, Str.HEX, 0, 4, 0, 0), rest));
                    default -> { }
                }
            }
            case Str.HEX -> {
                boolean hex = b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F';
                // no surrogates (D800–DFFF): a lone one is not a character, a pair would count as one
                if (!hex || s.need == 4 && (b == 'd' || b == 'D')) return;
                out.add(new Stack(s.need == 1 ? charDone(node, s.count) : new Str(node, s.count, Str.HEX, 0, s.need - 1, 0, 0), rest));
            }
            case Str.UTF8 -> {
                if (b < s.lo || b > s.hi) return;
                out.add(new Stack(s.need == 1 ? charDone(node, s.count) : new Str(node, s.count, Str.UTF8, 0, s.need - 1, 0x80, 0xbf), rest));
            }
            default -> throw new IllegalStateException("string mode " + s.mode);
        }
    }

    /** Between characters after one more; without an upper bound the count stops at the minimum. */
    private static Str charDone(JsonString node, int count) {
        int c = count + 1;
        if (node.maxLength() == Repeat.UNBOUNDED) c = Math.min(c, node.minLength());
        return new Str(node, c, Str.CHAR, 0, 0, 0, 0);
    }

    /** Collects distinct stacks. */
    private static final class Builder {
        Stack[] items = new Stack[4];
        int size;

        void add(Stack s) {
            for (int i = 0; i < size; i++) if (items[i].equals(s)) return;
            if (size == items.length) items = Arrays.copyOf(items, size * 2);
            items[size++] = s;
        }

        MatchState build() {
            return new MatchState(size == items.length ? items : Arrays.copyOf(items, size));
        }
    }

    /** For tests and messages: how many readings the state holds. */
    int readings() { return stacks.length; }

    /** For tests: a list view. */
    List<String> describe() {
        List<String> out = new ArrayList<>();
        for (Stack s : stacks) out.add(s.toString());
        return out;
    }
}
