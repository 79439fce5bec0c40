package dev.forkpoint.sampling.structured;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Schemas compiled to grammars: texts they must accept and refuse; keywords refused by name. */
class JsonSchemaGrammarTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static JsonNode schema(String s) {
        try {
            return JSON.readTree(s);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** Whether the grammar matches the whole text. */
    static boolean matches(GrammarNode g, String text) {
        MatchState s = MatchState.start(g).advance(text.getBytes(StandardCharsets.UTF_8));
        return s != null && s.accepting();
    }

    static void accepts(String schema, String... texts) {
        GrammarNode g = JsonSchemaGrammar.compile(schema(schema));
        for (String t : texts) assertTrue(matches(g, t), schema + " should accept " + t);
    }

    static void rejects(String schema, String... texts) {
        GrammarNode g = JsonSchemaGrammar.compile(schema(schema));
        for (String t : texts) assertFalse(matches(g, t), schema + " should reject " + t);
    }

    @Test
    void scalars() {
        accepts("{\"type\":\"integer\"}", "0", "-12", "123456789012345");
        GrammarNode integer = JsonSchemaGrammar.compile(schema("{\"type\":\"integer\"}"));
        for (int lead = 0x80; lead < 0x100; lead++) assertTrue(MatchState.start(integer).advance(lead) == null, "byte " + lead);
        rejects("{\"type\":\"integer\"}", "01", "1.5", "-", "1234567890123456", "     1", "1 ", "1e3");
        accepts("{\"type\":\"number\"}", "0", "-0.5", "1e10", "2.25E-3");
        rejects("{\"type\":\"number\"}", ".5", "1.", "1e");
        accepts("{\"type\":\"boolean\"}", "true", "false");
        accepts("{\"type\":[\"null\",\"string\"]}", "null", "\"x\"");
        rejects("{\"type\":[\"null\",\"string\"]}", "1", "true");
    }

    @Test
    void numericBounds() {
        // zod's .int(): JavaScript's safe-integer bounds, which 15 digits always meet
        accepts("{\"type\":\"integer\",\"minimum\":-9007199254740991,\"maximum\":9007199254740991}", "-999999999999999", "0", "7");
        accepts("{\"type\":\"integer\",\"minimum\":0}", "0", "12");
        rejects("{\"type\":\"integer\",\"minimum\":0}", "-1", "-0");
        accepts("{\"type\":\"integer\",\"exclusiveMinimum\":0}", "1", "10");
        rejects("{\"type\":\"integer\",\"exclusiveMinimum\":0}", "0", "-3");
        accepts("{\"type\":\"number\",\"minimum\":0}", "0.5", "3e2");
        rejects("{\"type\":\"number\",\"minimum\":0}", "-0.5");
        for (String bad : new String[] {"{\"type\":\"integer\",\"minimum\":5}", "{\"type\":\"integer\",\"maximum\":100}",
                "{\"type\":\"number\",\"exclusiveMinimum\":0}", "{\"type\":\"number\",\"maximum\":1e300}"}) {
            var e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema(bad)));
            assertTrue(e.getMessage().contains("imum'"), e.getMessage());
        }
    }

    @Test
    void strings() {
        accepts("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"ab\"", "\"a\\nb\"", "\"é€😀\"", "\"\\u00e9x\"");
        rejects("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"a\"", "\"abcd\"", "\"a\nb\"", "\"\\ud800x\"", "\"ab");
        accepts("{\"type\":\"string\",\"pattern\":\"^[a-c]{2}(x|yz)?$\"}", "\"ab\"", "\"abx\"", "\"ccyz\"");
        rejects("{\"type\":\"string\",\"pattern\":\"^[a-c]{2}(x|yz)?$\"}", "\"a\"", "\"abd\"", "\"abyzx\"");
        accepts("{\"type\":\"string\",\"pattern\":\"\\\\d+\"}", "\"12\"", "\"ab3c\"");
        rejects("{\"type\":\"string\",\"pattern\":\"\\\\d+\"}", "\"abc\"");
        accepts("{\"type\":\"string\",\"pattern\":\"^[^a]\\\"$\"}", "\"b\\\"\"");
    }

    @Test
    void objectsAndArrays() {
        String s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\",\"maxLength\":2},"
                + "\"c\":{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":1,\"maxItems\":2}},\"required\":[\"b\"]}";
        accepts(s, "{\"b\":\"x\"}", "{\"a\":1,\"b\":\"\"}", "{\"b\":\"x\",\"c\":[true]}", "{ \"a\" : 1 , \"b\":\"xy\",\"c\":[true, false] }");
        rejects(s, "{}", "{\"a\":1}", "{\"b\":\"x\",\"c\":[]}", "{\"b\":\"x\",\"c\":[true,true,true]}", "{\"b\":\"x\",}", "{\"b\":\"x\"} ", "     {\"b\":\"x\"}",
                "{\"b\":\"x\"      }");
        accepts("{\"type\":\"array\",\"maxItems\":0}", "[]", " []", "\n []");
        accepts("{\"enum\":[\"a\",1,null,{\"k\":[1]}]}", "\"a\"", "1", "null", "{\"k\":[1]}");
        rejects("{\"enum\":[\"a\",1]}", "\"b\"", "2");
        accepts("{\"const\":\"x\\\"y\"}", "\"x\\\"y\"");
        accepts("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}", "3", "\"a\"");
        accepts("{}", "{\"a\":[1,{\"b\":null}]}", "\"s\"", "1.5", "[]");
    }

    @Test
    void refsAndRecursion() {
        String tree = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
                + "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},\"required\":[\"v\"],"
                + "\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}";
        accepts(tree, "{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]},{\"v\":4}]}");
        rejects(tree, "{\"v\":1,\"kids\":[{}]}");
    }

    @Test
    void formatJsonIsAnyObject() {
        GrammarNode g = JsonSchemaGrammar.anyObject();
        assertTrue(matches(g, "{\"a\":[1,2,{\"b\":\"c\"}],\"d\":null}"));
        assertTrue(matches(g, "{}"));
        assertFalse(matches(g, "[1]"));
        assertFalse(matches(g, "\"x\""));
    }

    @Test
    void unsupportedKeywordsAreRefusedByName() {
        for (String k : new String[] {"multipleOf", "format", "allOf", "not", "patternProperties", "uniqueItems", "prefixItems"}) {
            var e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"type\":\"object\",\"properties\":{\"x\":{\"" + k + "\":1}}}")));
            assertTrue(e.getMessage().contains("'" + k + "'") && e.getMessage().contains("#/properties/x"), e.getMessage());
        }
        var e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"type\":\"string\",\"pattern\":\"(?=a)b\"}")));
        assertTrue(e.getMessage().contains("pattern"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}")));
        assertTrue(e.getMessage().contains("oneOf"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"$ref\":\"#\"}")));
        assertTrue(e.getMessage().contains("left-recursive"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"anyOf\":[{\"type\":\"null\"},{\"$ref\":\"#\"}]}")));
        assertTrue(e.getMessage().contains("left-recursive"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"$ref\":\"http://x/y\"}")));
        assertTrue(e.getMessage().contains("$ref"), e.getMessage());
        e = assertThrows(InvalidInputException.class, () -> JsonSchemaGrammar.compile(schema("{\"type\":\"string\",\"minLength\":3,\"maxLength\":2}")));
        assertTrue(e.getMessage().contains("maxLength"), e.getMessage());
    }
}
