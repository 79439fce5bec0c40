package dev.forkpoint.sampling.structured;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import dev.forkpoint.TestData;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Structured outputs end to end on the tiny models, whose weights (random, or barely trained) would never write JSON on
 * their own: 200 seeded random schemas ({@link RandomSchemas}), each generated greedily and sampled with a seed, on
 * stories260K (512 tokens), llama-2-tiny-random (Llama 2's 32,000) and qwen35-tiny-dense (GPT-2's 50,257, a hybrid
 * model); every output must parse (strictly: one value, nothing after it) and validate against its schema with an
 * independent validator (networknt json-schema-validator, draft 2020-12). {@code format: "json"} outputs that finish
 * must parse as objects.
 */
class StructuredGenerationTest {
    static final ObjectMapper STRICT = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    static final JsonSchemaFactory VALIDATORS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
    static final String[] MODELS = {"models/stories260K.gguf", "models/llama-2-tiny-random.gguf", "models/qwen35-tiny-dense"};
    static final int SCHEMAS = 200;

    static List<String> violations(JsonNode schema, String text) {
        JsonNode value;
        try {
            value = STRICT.readTree(text);
        } catch (Exception e) {
            return List.of("does not parse: " + e.getMessage());
        }
        if (value == null) return List.of("empty output");
        JsonSchema s = VALIDATORS.getSchema(schema);
        Set<ValidationMessage> errors = s.validate(value);
        List<String> out = new ArrayList<>();
        for (ValidationMessage m : errors) out.add(m.getMessage());
        return out;
    }

    @Test
    void randomSchemasOnTinyModelsAlwaysValidate() throws Exception {
        RandomSchemas schemas = new RandomSchemas(20261205L);
        List<ObjectNode> all = new ArrayList<>();
        for (int i = 0; i < SCHEMAS; i++) all.add(schemas.next());
        int generations = 0, tokens = 0;
        long start = System.nanoTime();
        for (int k = 0; k < MODELS.length; k++) {
            String m = MODELS[k];
            try (LoadedModel model = LoadedModel.load(TestData.shared(m), 2, LoadProgress.NONE)) {
                // every schema greedy and sampled, on one of the models in turn (the three vocabularies all get ~67)
                for (int i = k; i < all.size(); i += MODELS.length) {
                    ObjectNode schema = all.get(i);
                    GrammarNode grammar = JsonSchemaGrammar.compile(schema);
                    for (boolean greedy : new boolean[] {true, false}) {
                        SamplingOptions o = (greedy ? SamplingOptions.greedy() : SamplingOptions.defaults().withSeed(1000 + i).withTemperature(1.5))
                                .withNumPredict(400);
                        StringBuilder sofar = new StringBuilder();
                        GenerationResult r;
                        try {
                            r = model.generate(GenerationRequest.of("Once upon a time", o).withGrammar(grammar), sofar::append);
                        } catch (RuntimeException e) {
                            throw new AssertionError(m + " schema " + i + (greedy ? " greedy" : " sampled") + ": " + schema
                                    + "\noutput so far: " + sofar, e);
                        }
                        generations++;
                        tokens += r.generatedIds().length;
                        String what = m + " schema " + i + (greedy ? " greedy" : " sampled") + ": " + schema + "\noutput: " + r.text();
                        assertEquals("stop", r.doneReason(), what);
                        assertEquals(r.text(), sofar.toString(), what);
                        List<String> v = violations(schema, r.text());
                        if (!v.isEmpty()) fail(what + "\n" + v);
                    }
                }
            }
        }
        System.out.println(String.format(Locale.ROOT, "structured outputs: %d schemas, %d generations, %d tokens, %.1f s",
                all.size(), generations, tokens, (System.nanoTime() - start) / 1e9));
    }

    /**
     * {@code format: "json"} (any object) on llama-2-tiny-random: the grammar has no bound, so a random model may still
     * be writing when num_predict ends it ("length": what it has, a prefix of an object); every output that ends on its
     * own parses as an object, and some do.
     */
    @Test
    void formatJsonFinishesAsAnObject() throws Exception {
        try (LoadedModel model = LoadedModel.load(TestData.shared("models/llama-2-tiny-random.gguf"), 2, LoadProgress.NONE)) {
            int finished = 0;
            for (int seed = 0; seed < 12; seed++) {
                SamplingOptions o = (seed == 0 ? SamplingOptions.greedy() : SamplingOptions.defaults().withSeed(seed)).withNumPredict(120);
                GenerationResult r = model.generate(GenerationRequest.of("Once upon a time", o).withGrammar(JsonSchemaGrammar.anyObject()), p -> {});
                MatchState prefix = MatchState.start(JsonSchemaGrammar.anyObject()).advance(r.text().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                assertNotNull(prefix, "not even a prefix of a JSON object: " + r.text());
                if (r.doneReason().equals("stop")) {
                    finished++;
                    JsonNode v = STRICT.readTree(r.text());
                    assertTrue(v.isObject(), r.text());
                } else {
                    assertEquals("length", r.doneReason());
                    assertEquals(120, r.generatedIds().length);
                }
            }
            assertTrue(finished > 0, "no format json output finished");
        }
    }

    /**
     * A schema the unconstrained greedy output already satisfies changes nothing: stories260K continues "Lily said,"
     * with a quoted sentence ({@code ▁"Lily, I want to go to the park. …"}); constrained to a JSON string (and to any
     * value, {@code {}}), greedy decoding must produce exactly those tokens, up to the closing quote, and stop there.
     */
    @Test
    void aSchemaTheGreedyOutputAlreadyMeetsChangesNoToken() throws Exception {
        try (LoadedModel model = LoadedModel.load(TestData.shared("models/stories260K.gguf"), 2, LoadProgress.NONE)) {
            GenerationResult free = model.generate(GenerationRequest.of("Lily said,", SamplingOptions.greedy().withNumPredict(60)), p -> {});
            for (String schema : new String[] {"{\"type\":\"string\"}", "{}", "{\"type\":[\"string\",\"null\"],\"maxLength\":200}"}) {
                GenerationResult r = model.generate(GenerationRequest.of("Lily said,", SamplingOptions.greedy().withNumPredict(60))
                        .withGrammar(JsonSchemaGrammar.compile(JsonSchemaGrammarTest.schema(schema))), p -> {});
                assertEquals("stop", r.doneReason(), schema + ": " + r.text());
                assertTrue(r.generatedIds().length > 10, r.text());
                assertEquals(java.util.Arrays.toString(java.util.Arrays.copyOf(free.generatedIds(), r.generatedIds().length)),
                        java.util.Arrays.toString(r.generatedIds()), schema + ": " + r.text() + " vs " + free.text());
                assertEquals(List.of(), violations(JsonSchemaGrammarTest.schema(schema), r.text()));
                assertTrue(free.text().startsWith(r.text()), r.text());
            }
        }
    }
}
