package dev.forkpoint.sampling;

import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SamplingOptionsTest {
    static final SamplingOptions D = SamplingOptions.defaults();

    @Test
    void defaultsAreOllamas() {
        assertEquals(new SamplingOptions(0.8, 40, 0.9, 0.0, 1.0, 64, 0, 0, -1, -1, List.of()), D);
        assertSame(D, D.validate());
        assertEquals(0, SamplingOptions.greedy().temperature());
        assertTrue(SamplingOptions.greedy().isGreedy());
    }

    @Test
    void withMethodsChangeOneComponent() {
        SamplingOptions o = D.withTemperature(0.1).withTopK(5).withTopP(0.5).withMinP(0.05).withRepeatPenalty(1.2)
                .withRepeatLastN(-1).withPresencePenalty(0.3).withFrequencyPenalty(-0.4).withSeed(77).withNumPredict(9)
                .withStop(List.of("a", "bc"));
        assertEquals(new SamplingOptions(0.1, 5, 0.5, 0.05, 1.2, -1, 0.3, -0.4, 77, 9, List.of("a", "bc")), o);
    }

    @Test
    void stopListIsCopied() {
        List<String> stops = new ArrayList<>(List.of("x"));
        SamplingOptions o = D.withStop(stops);
        stops.add("y");
        assertEquals(List.of("x"), o.stop());
        assertThrows(UnsupportedOperationException.class, () -> o.stop().add("z"));
        assertEquals(List.of(), D.withStop(null).stop());
    }

    static Stream<Arguments> badOptions() {
        List<String> seventeen = Collections.nCopies(17, "s");
        return Stream.of(
                Arguments.of(D.withTemperature(-0.5), "option temperature must be a finite number >= 0 (0 = greedy), got -0.5"),
                Arguments.of(D.withTemperature(Double.NaN), "option temperature must be a finite number >= 0 (0 = greedy), got NaN"),
                Arguments.of(D.withTemperature(Double.POSITIVE_INFINITY), "option temperature must be a finite number >= 0 (0 = greedy), got Infinity"),
                Arguments.of(D.withTopK(-1), "option top_k must be >= 0 (0 = disabled), got -1"),
                Arguments.of(D.withTopP(1.5), "option top_p must be in [0, 1], got 1.5"),
                Arguments.of(D.withTopP(-0.1), "option top_p must be in [0, 1], got -0.1"),
                Arguments.of(D.withTopP(Double.NaN), "option top_p must be in [0, 1], got NaN"),
                Arguments.of(D.withMinP(2), "option min_p must be in [0, 1], got 2"),
                Arguments.of(D.withMinP(-1e-9), "option min_p must be in [0, 1], got -1.0E-9"),
                Arguments.of(D.withRepeatPenalty(-1), "option repeat_penalty must be a finite number >= 0 (1 = disabled), got -1"),
                Arguments.of(D.withRepeatPenalty(Double.POSITIVE_INFINITY), "option repeat_penalty must be a finite number >= 0 (1 = disabled), got Infinity"),
                Arguments.of(D.withRepeatLastN(-2), "option repeat_last_n must be >= -1 (-1 = whole context, 0 = disabled), got -2"),
                Arguments.of(D.withPresencePenalty(Double.NaN), "option presence_penalty must be a finite number, got NaN"),
                Arguments.of(D.withFrequencyPenalty(Double.NEGATIVE_INFINITY), "option frequency_penalty must be a finite number, got -Infinity"),
                Arguments.of(D.withNumPredict(-3), "option num_predict must be >= -2 (-1 = no limit, -2 = until the context is full), got -3"),
                Arguments.of(D.withStop(List.of("ok", "")), "option stop must not contain empty strings, got \"\" at index 1"),
                Arguments.of(D.withStop(Arrays.asList("ok", null)), "option stop must not contain null, got null at index 1"),
                Arguments.of(D.withStop(seventeen), "option stop must hold at most 16 strings, got 17"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("badOptions")
    void validationNamesTheOptionAndTheValue(SamplingOptions o, String message) {
        assertEquals(message, assertThrows(InvalidInputException.class, o::validate).getMessage());
    }

    @Test
    void edgesOfTheRangesAreValid() {
        for (SamplingOptions o : List.of(D.withTemperature(0), D.withTemperature(100), D.withTopK(0), D.withTopP(0),
                D.withTopP(1), D.withMinP(0), D.withMinP(1), D.withRepeatPenalty(0), D.withRepeatLastN(-1),
                D.withRepeatLastN(0), D.withPresencePenalty(-2), D.withFrequencyPenalty(2), D.withNumPredict(-2),
                D.withNumPredict(0), D.withSeed(Long.MIN_VALUE), D.withStop(Collections.nCopies(16, "s")))) {
            assertSame(o, o.validate());
        }
    }

    // ---- fromMap: what a JSON parser hands over ----

    @Test
    void fromMapReadsOllamaOptions() {
        Map<String, Object> m = new HashMap<>();
        m.put("temperature", 0);            // integer for a double
        m.put("top_k", 20.0);               // integral double for an int
        m.put("top_p", new BigDecimal("0.5"));
        m.put("min_p", 0.05f);
        m.put("repeat_penalty", 1.1);
        m.put("repeat_last_n", -1L);
        m.put("presence_penalty", 0.25);
        m.put("frequency_penalty", -0.5);
        m.put("seed", new BigInteger("9007199254740993")); // beyond a double's integers
        m.put("num_predict", 128);
        m.put("stop", List.of("\n\n", "User:"));
        m.put("num_ctx", 8192);             // not a sampling option: left to the caller
        m.put("mirostat", 0);
        SamplingOptions o = SamplingOptions.fromMap(m);
        assertEquals(new SamplingOptions(0, 20, 0.5, 0.05f, 1.1, -1, 0.25, -0.5, 9007199254740993L, 128,
                List.of("\n\n", "User:")), o);
    }

    @Test
    void fromMapKeepsDefaultsForMissingOrNullValuesAndAcceptsOneStopString() {
        Map<String, Object> m = new HashMap<>();
        m.put("top_k", null);
        m.put("stop", "###");
        assertEquals(D.withStop(List.of("###")), SamplingOptions.fromMap(m));
        assertEquals(D, SamplingOptions.fromMap(Map.of()));
        // over a base other than the defaults
        assertEquals(SamplingOptions.greedy().withSeed(5), SamplingOptions.greedy().withOptions(Map.of("seed", 5)));
    }

    static Stream<Arguments> badMaps() {
        return Stream.of(
                Arguments.of(Map.of("temperature", "hot"), "option temperature must be a number, got string \"hot\""),
                Arguments.of(Map.of("top_p", true), "option top_p must be a number, got boolean true"),
                Arguments.of(Map.of("top_k", 40.5), "option top_k must be an integer, got 40.5"),
                Arguments.of(Map.of("top_k", "40"), "option top_k must be an integer, got string \"40\""),
                Arguments.of(Map.of("top_k", 1e10), "option top_k must be an integer in the 32-bit range, got 10000000000"),
                Arguments.of(Map.of("seed", 1e30), "option seed must be an integer in the 64-bit range, got 1.0E30"),
                Arguments.of(Map.of("seed", Double.NaN), "option seed must be an integer, got NaN"),
                Arguments.of(Map.of("num_predict", List.of(1)), "option num_predict must be an integer, got a list"),
                Arguments.of(Map.of("stop", 5), "option stop must be a string or a list of strings, got Integer 5"),
                Arguments.of(Map.of("stop", List.of("a", 5)), "option stop must be a string or a list of strings, got Integer 5 at index 1"),
                Arguments.of(Map.of("stop", Map.of()), "option stop must be a string or a list of strings, got an object"),
                Arguments.of(Map.of("top_p", 1.5), "option top_p must be in [0, 1], got 1.5"),
                Arguments.of(Map.of("stop", List.of("")), "option stop must not contain empty strings, got \"\" at index 0"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("badMaps")
    void fromMapRejectsWrongTypesClearly(Map<String, Object> m, String message) {
        assertEquals(message, assertThrows(InvalidInputException.class, () -> SamplingOptions.fromMap(m)).getMessage());
    }

    @Test
    void optionNamesListWhatFromMapReads() {
        assertEquals(11, SamplingOptions.OPTION_NAMES.size());
        assertTrue(SamplingOptions.OPTION_NAMES.containsAll(List.of("temperature", "top_k", "top_p", "min_p",
                "repeat_penalty", "repeat_last_n", "presence_penalty", "frequency_penalty", "seed", "num_predict", "stop")));
    }
}
