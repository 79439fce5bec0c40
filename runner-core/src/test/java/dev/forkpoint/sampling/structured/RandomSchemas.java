package dev.forkpoint.sampling.structured;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.SplittableRandom;

/**
 * Seeded random JSON schemas over the supported keywords, small enough that any output matching one is short:
 * nesting at most 3 deep, at most 3 properties (2 below the top), arrays of at most 2 items, strings of at most 4 characters (or a
 * bounded pattern), so a random model cannot run past a few hundred tokens before the grammar closes the document.
 */
final class RandomSchemas {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final String[] PATTERNS = {"^[a-z]{1,4}$", "^(yes|no|maybe)$", "^\\d{3}-\\d{2}$", "^[A-F0-9]{2,4}$",
            "^x[ab]?y?$", "^[^\"\\\\]{0,3}$"};

    private final SplittableRandom random;
    private int defs;

    RandomSchemas(long seed) {
        this.random = new SplittableRandom(seed);
    }

    /** The next schema (an object at the top, as APIs use them). */
    ObjectNode next() {
        defs = 0;
        ObjectNode root = object(0);
        if (random.nextInt(4) == 0) {   // a $ref to $defs (or definitions)
            String container = random.nextBoolean() ? "$defs" : "definitions";
            ObjectNode d = root.putObject(container);
            d.set("item", schema(2));
            ObjectNode props = (ObjectNode) root.get("properties");
            props.putObject("ref").put("$ref", "#/" + container + "/item");
            if (random.nextBoolean()) ((ArrayNode) root.withArray("required")).add("ref");
        }
        return root;
    }

    private ObjectNode schema(int depth) {
        int pick = random.nextInt(depth >= 2 ? 9 : 12);
        return switch (pick) {
            case 0 -> string();
            case 1 -> {
                ObjectNode s = F.objectNode().put("type", "integer");
                switch (random.nextInt(4)) {
                    case 0 -> s.put("minimum", 0);
                    case 1 -> s.put("exclusiveMinimum", 0);
                    case 2 -> s.put("minimum", -9007199254740991L).put("maximum", 9007199254740991L);
                    default -> { }
                }
                yield s;
            }
            case 2 -> F.objectNode().put("type", "number");
            case 3 -> F.objectNode().put("type", "boolean");
            case 4 -> {
                ObjectNode s = F.objectNode();
                s.putArray("type").add("string").add("null");
                s.put("maxLength", random.nextInt(4));
                yield s;
            }
            case 5 -> {
                ObjectNode s = F.objectNode();
                ArrayNode e = s.putArray("enum");
                e.add("red").add("green");
                if (random.nextBoolean()) e.add(7);
                if (random.nextBoolean()) e.addNull();
                if (random.nextBoolean()) e.addObject().put("k", "v \" \\ é");
                yield s;
            }
            case 6 -> {
                ObjectNode s = F.objectNode();
                if (random.nextBoolean()) s.put("const", "fixed");
                else s.put("const", random.nextInt(100));
                yield s;
            }
            case 7 -> {
                ObjectNode s = F.objectNode();
                ArrayNode any = s.putArray(random.nextBoolean() ? "anyOf" : "oneOf");
                any.add(F.objectNode().put("type", "integer"));
                any.add(string());
                if (random.nextBoolean()) any.add(F.objectNode().put("type", "null"));
                yield s;
            }
            case 8 -> F.objectNode().put("type", "null");
            case 9, 10 -> object(depth + 1);
            default -> array(depth + 1);
        };
    }

    private ObjectNode string() {
        ObjectNode s = F.objectNode().put("type", "string");
        if (random.nextInt(3) == 0) {
            s.put("pattern", PATTERNS[random.nextInt(PATTERNS.length)]);
        } else {
            int max = random.nextInt(5);
            s.put("maxLength", max);
            if (random.nextBoolean()) s.put("minLength", random.nextInt(max + 1));
        }
        return s;
    }

    private ObjectNode object(int depth) {
        ObjectNode s = F.objectNode().put("type", "object");
        ObjectNode props = s.putObject("properties");
        ArrayNode required = s.putArray("required");
        int n = 1 + random.nextInt(depth == 0 ? 3 : 2);
        for (int i = 0; i < n; i++) {
            String name = new String[] {"name", "age", "tags", "ok", "x y", "ünï", "q\"uote"}[random.nextInt(7)] + i;
            props.set(name, schema(depth));
            if (random.nextInt(3) != 0) required.add(name);
        }
        if (random.nextBoolean()) s.put("additionalProperties", false);
        return s;
    }

    private ObjectNode array(int depth) {
        ObjectNode s = F.objectNode().put("type", "array");
        s.set("items", schema(depth));
        int min = random.nextInt(2);
        s.put("minItems", min);
        s.put("maxItems", min + random.nextInt(2));
        return s;
    }
}
