package dev.forkpoint.sampling;

import dev.forkpoint.InvalidInputException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StopSequencesTest {

    @Test
    void matchAcrossTokens() {
        StopSequences s = new StopSequences(List.of("wor"));
        assertEquals("Hel", s.accept("Hel"));
        assertEquals("lo ", s.accept("lo w"));
        assertEquals("", s.accept("o"));
        assertFalse(s.stopped());
        assertEquals("", s.accept("rld"));
        assertTrue(s.stopped());
        assertEquals("wor", s.matchedStop());
        assertEquals("", s.accept("more"));
        assertEquals("", s.flush());
    }

    @Test
    void heldTextIsReleasedWhenItStopsLookingLikeAStop() {
        StopSequences s = new StopSequences(List.of("</s>"));
        assertEquals("a", s.accept("a</"));
        assertEquals("</x", s.accept("x"));
        assertEquals("", s.accept("<"));
        assertEquals("<", s.flush());
        assertFalse(s.stopped());
        assertNull(s.matchedStop());
    }

    @Test
    void overlappingStopsOfDifferentLengths() {
        StopSequences s = new StopSequences(List.of("abcd", "bc"));
        assertEquals("x", s.accept("xab")); // "ab" may begin "abcd", "b" may begin "bc"
        assertEquals("a", s.accept("ce"));  // "bc" matched first
        assertEquals("bc", s.matchedStop());
        // the leftmost occurrence wins, not the first listed
        StopSequences t = new StopSequences(List.of("cd", "abc"));
        assertEquals("", t.accept("abcd"));
        assertEquals("abc", t.matchedStop());
    }

    @Test
    void stopInsideOneToken() {
        StopSequences s = new StopSequences(List.of("\n\n"));
        assertEquals("line", s.accept("line\n\nnext"));
        assertTrue(s.stopped());
    }

    @Test
    void noStopsPassEverything() {
        StopSequences s = new StopSequences(List.of());
        assertEquals("abc", s.accept("abc"));
        assertEquals("", s.flush());
    }

    @Test
    void badStopListsAreRejected() {
        assertThrows(InvalidInputException.class, () -> new StopSequences(List.of("")));
        assertThrows(InvalidInputException.class, () -> new StopSequences(Collections.nCopies(17, "x")));
    }

    // ---- property: random text in random chunks ----

    record Case(String text, List<String> stops, List<Integer> cuts) {}

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<String> text = Arbitraries.strings().withChars("abc\n").ofMaxLength(80);
        Arbitrary<List<String>> stops = Arbitraries.strings().withChars("abc\n").ofMinLength(1).ofMaxLength(5)
                .list().ofMinSize(0).ofMaxSize(4);
        Arbitrary<List<Integer>> cuts = Arbitraries.integers().between(0, 80).list().ofMaxSize(30);
        return Combinators.combine(text, stops, cuts).as(Case::new);
    }

    static List<String> chunks(String text, List<Integer> cuts) {
        List<Integer> points = new ArrayList<>();
        for (int c : cuts) points.add(Math.min(c, text.length()));
        points.add(0);
        points.add(text.length());
        Collections.sort(points);
        List<String> out = new ArrayList<>();
        for (int i = 1; i < points.size(); i++) out.add(text.substring(points.get(i - 1), points.get(i))); // may be ""
        return out;
    }

    @Property(tries = 2000)
    void outputIsTheTextCutBeforeTheFirstStop(@ForAll("cases") Case c) {
        int first = -1;
        for (String s : c.stops()) {
            int i = c.text().indexOf(s);
            if (i >= 0 && (first < 0 || i < first)) first = i;
        }
        String expected = first < 0 ? c.text() : c.text().substring(0, first);
        int longest = c.stops().stream().mapToInt(String::length).max().orElse(0);

        StopSequences seq = new StopSequences(c.stops());
        StringBuilder emitted = new StringBuilder();
        StringBuilder received = new StringBuilder();
        for (String chunk : chunks(c.text(), c.cuts())) {
            received.append(chunk);
            emitted.append(seq.accept(chunk));
            // never anything at or past the match
            assertTrue(expected.startsWith(emitted.toString()), () -> "emitted \"" + emitted + "\" beyond \"" + expected + "\"");
            if (seq.stopped()) break;
            // what is held is a proper prefix of some stop (so shorter than the longest), and no earlier suffix is
            String held = received.substring(emitted.length());
            assertTrue(held.length() < Math.max(1, longest));
            if (!held.isEmpty()) assertTrue(c.stops().stream().anyMatch(s -> s.length() > held.length() && s.startsWith(held)), held);
            for (int j = 0; j < emitted.length(); j++) {
                String tail = received.substring(j);
                assertFalse(c.stops().stream().anyMatch(s -> s.startsWith(tail)), () -> "emitted the start of a stop: " + tail);
            }
        }
        if (!seq.stopped()) emitted.append(seq.flush());
        assertEquals(expected, emitted.toString());
        assertEquals(first >= 0, seq.stopped());
        // which stop is reported: one that occurs at the cut (several may start there; the first complete one wins)
        if (first < 0) assertNull(seq.matchedStop());
        else assertTrue(c.text().startsWith(seq.matchedStop(), first), seq.matchedStop());
    }
}
