package dev.forkpoint.sampling.structured;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The grammar a structured output must follow, over the bytes of the generated text (UTF-8): a tree (a graph where
 * {@link Ref} closes a cycle) of immutable nodes that {@link MatchState} walks with a stack, so nesting may be
 * unbounded and counts ({@link Repeat}, {@link JsonString}) are counters, not copies. Built by
 * {@link JsonSchemaGrammar} and {@link RegexGrammar}; identity is the node itself (nodes are compared by reference).
 */
public sealed interface GrammarNode {
    /** Exactly these bytes (at least one). */
    record Literal(byte[] bytes) implements GrammarNode {
        public Literal {
            if (bytes.length == 0) throw new IllegalArgumentException("empty literal");
        }

        static Literal of(String s) { return new Literal(s.getBytes(StandardCharsets.UTF_8)); }

        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
        @Override public String toString() { return "Literal[" + new String(bytes, StandardCharsets.UTF_8) + "]"; }
    }

    /**
     * One code point (its UTF-8 bytes, well-formed: no surrogates, no overlong forms) from a set given as sorted,
     * disjoint, non-adjacent inclusive ranges {@code [lo0, hi0, lo1, hi1, …]}.
     */
    record CodePoints(int[] ranges) implements GrammarNode {
        public CodePoints {
            if (ranges.length == 0 || ranges.length % 2 != 0) throw new IllegalArgumentException("no ranges");
        }

        /** Whether some code point in [lo, hi] is in the set. */
        boolean intersects(int lo, int hi) {
            for (int i = 0; i < ranges.length; i += 2) if (ranges[i] <= hi && ranges[i + 1] >= lo) return true;
            return false;
        }

        boolean contains(int cp) { return intersects(cp, cp); }

        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
        @Override public String toString() { return "CodePoints" + Arrays.toString(ranges); }
    }

    /** The parts one after the other; none = the empty string. */
    record Sequence(List<GrammarNode> parts) implements GrammarNode {
        public Sequence { parts = List.copyOf(parts); }

        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
    }

    /** One of the choices (at least one). */
    record Choice(List<GrammarNode> choices) implements GrammarNode {
        public Choice {
            choices = List.copyOf(choices);
            if (choices.isEmpty()) throw new IllegalArgumentException("no choices");
        }

        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
    }

    /**
     * {@code item} min…max times ({@link #UNBOUNDED} = no upper bound), {@code separator} (or null) between two items.
     * The item must not match the empty string.
     */
    record Repeat(GrammarNode item, GrammarNode separator, int min, int max) implements GrammarNode {
        public static final int UNBOUNDED = Integer.MAX_VALUE;

        public Repeat {
            if (min < 0 || max < min) throw new IllegalArgumentException("bad repeat bounds " + min + ".." + max);
        }

        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
    }

    /** Up to {@code max} whitespace bytes (space, tab, LF, CR): the bounded gap between JSON tokens. */
    record Whitespace(int max) implements GrammarNode {
        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
    }

    /**
     * A JSON string's contents and its closing quote (the opening quote is a {@link Literal} before it): minLength …
     * maxLength characters (code points, an escape counting as the character it stands for), any character, escapes
     * allowed ({@code \" \\ \/ \b \f \n \r \t}, and {@code \}{@code uXXXX} outside the surrogates).
     */
    record JsonString(int minLength, int maxLength) implements GrammarNode {
        public JsonString {
            if (minLength < 0 || maxLength < minLength) throw new IllegalArgumentException("bad string bounds");
        }

        @Override public boolean equals(Object o) { return this == o; }
        @Override public int hashCode() { return System.identityHashCode(this); }
    }

    /** Another node, set once after construction: closes recursion ($ref cycles, any JSON value). */
    final class Ref implements GrammarNode {
        private GrammarNode target;
        private final String name;

        public Ref(String name) { this.name = name; }

        public GrammarNode target() {
            if (target == null) throw new IllegalStateException("unresolved reference " + name);
            return target;
        }

        public void set(GrammarNode target) {
            if (this.target != null) throw new IllegalStateException("reference " + name + " set twice");
            this.target = target;
        }

        @Override public String toString() { return "Ref[" + name + "]"; }
    }

    /** The empty string. */
    GrammarNode EMPTY = new Sequence(List.of());

    static GrammarNode seq(GrammarNode... parts) { return parts.length == 1 ? parts[0] : new Sequence(List.of(parts)); }

    static GrammarNode choice(List<GrammarNode> choices) { return choices.size() == 1 ? choices.getFirst() : new Choice(choices); }

    static GrammarNode optional(GrammarNode n) { return new Choice(List.of(n, EMPTY)); }
}
