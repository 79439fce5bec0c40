package dev.forkpoint.sampling.structured;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.InvalidInputException;
import dev.forkpoint.sampling.structured.GrammarNode.CodePoints;
import dev.forkpoint.sampling.structured.GrammarNode.JsonString;
import dev.forkpoint.sampling.structured.GrammarNode.Literal;
import dev.forkpoint.sampling.structured.GrammarNode.Ref;
import dev.forkpoint.sampling.structured.GrammarNode.Repeat;
import dev.forkpoint.sampling.structured.GrammarNode.Whitespace;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A JSON schema as a {@link GrammarNode} over the JSON text that satisfies it. Supported: {@code type} (object, array,
 * string, number, integer, boolean, null, or an array of them), {@code properties} (emitted in the schema's order;
 * required ones always, optional ones may be left out), {@code required}, {@code additionalProperties} (extra
 * properties are never emitted; with no {@code properties}, a schema for them (or true) allows any keys),
 * {@code items}, {@code minItems}/{@code maxItems}, {@code minLength}/{@code maxLength}, {@code minimum} & co. (the
 * bounds {@link #number} lists), {@code pattern} (the subset
 * {@link RegexGrammar} reads), {@code enum}, {@code const}, {@code anyOf}, {@code oneOf} (branches of disjoint types),
 * {@code $ref} to {@code #}, {@code #/$defs/…} or {@code #/definitions/…} (recursion included), and annotations
 * (title, description, default, examples, $schema, $id, $comment, deprecated, readOnly, writeOnly). Any other keyword
 * is refused with {@link InvalidInputException} naming it and where it is; so is a schema nothing can satisfy.
 *
 * <p>Whitespace between tokens is allowed, at most {@link #MAX_WHITESPACE} bytes per gap, none before the first token or
 * after the last. Numbers have at most {@value #MAX_INTEGER_DIGITS} integer digits, {@value #MAX_FRACTION_DIGITS}
 * fraction digits and a 3-digit exponent, so nothing but an unbounded string, array or nesting can run on forever.
 */
public final class JsonSchemaGrammar {
    /** The most whitespace bytes between two tokens of the JSON text. */
    public static final int MAX_WHITESPACE = 4;
    static final int MAX_INTEGER_DIGITS = 15;
    /** The largest magnitude an integer of the grammar can have: 10^15 − 1, below 2^53 (exact in a double). */
    static final long INTEGER_LIMIT = 999_999_999_999_999L;
    static final int MAX_FRACTION_DIGITS = 16;

    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "default", "examples", "$schema", "$id",
            "$comment", "deprecated", "readOnly", "writeOnly", "$defs", "definitions");
    private static final Set<String> SUPPORTED = Set.of("type", "properties", "required", "additionalProperties", "items",
            "minItems", "maxItems", "minLength", "maxLength", "pattern", "enum", "const", "anyOf", "oneOf", "$ref",
            "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum");
    private static final ObjectMapper JSON = new ObjectMapper();

    static final GrammarNode WS = new Whitespace(MAX_WHITESPACE);
    private static final GrammarNode DIGIT = new CodePoints(new int[] {'0', '9'});
    private static final GrammarNode NUMBER, INTEGER, NON_NEGATIVE_INTEGER, POSITIVE_INTEGER, NON_NEGATIVE_NUMBER;
    private static final GrammarNode ANY_VALUE, ANY_OBJECT;

    enum Kind { OBJECT, ARRAY, STRING, NUMBER, BOOLEAN, NULL }

    static {
        GrammarNode integerPart = new GrammarNode.Choice(List.of(lit("0"),
                GrammarNode.seq(new CodePoints(new int[] {'1', '9'}), new Repeat(DIGIT, null, 0, MAX_INTEGER_DIGITS - 1))));
        GrammarNode sign = GrammarNode.optional(lit("-"));
        INTEGER = GrammarNode.seq(sign, integerPart);
        NON_NEGATIVE_INTEGER = integerPart;
        POSITIVE_INTEGER = GrammarNode.seq(new CodePoints(new int[] {'1', '9'}), new Repeat(DIGIT, null, 0, MAX_INTEGER_DIGITS - 1));
        GrammarNode fraction = GrammarNode.optional(GrammarNode.seq(lit("."), new Repeat(DIGIT, null, 1, MAX_FRACTION_DIGITS)));
        GrammarNode exponent = GrammarNode.optional(GrammarNode.seq(new CodePoints(new int[] {'E', 'E', 'e', 'e'}),
                GrammarNode.optional(new CodePoints(new int[] {'+', '+', '-', '-'})), new Repeat(DIGIT, null, 1, 3)));
        NUMBER = GrammarNode.seq(sign, integerPart, fraction, exponent);
        NON_NEGATIVE_NUMBER = GrammarNode.seq(integerPart, fraction, exponent);
        Ref value = new Ref("any JSON value");
        GrammarNode string = GrammarNode.seq(lit("\""), new JsonString(0, Repeat.UNBOUNDED));
        ANY_OBJECT = objectOfAny(string, value);
        GrammarNode array = GrammarNode.seq(lit("["), WS,
                GrammarNode.optional(GrammarNode.seq(new Repeat(value, GrammarNode.seq(WS, lit(","), WS), 1, Repeat.UNBOUNDED), WS)), lit("]"));
        value.set(new GrammarNode.Choice(List.of(ANY_OBJECT, array, string, NUMBER, lit("true"), lit("false"), lit("null"))));
        ANY_VALUE = value;
    }

    private final JsonNode root;
    private final Map<String, Ref> refs = new HashMap<>();
    private final Map<String, GrammarNode> compiled = new HashMap<>();

    private JsonSchemaGrammar(JsonNode root) {
        this.root = root;
    }

    /** A JSON text of any object (Ollama's {@code format: "json"}, OpenAI's {@code json_object}). */
    public static GrammarNode anyObject() { return document(ANY_OBJECT); }

    /**
     * A whole generated document of {@code value}: up to {@link #MAX_WHITESPACE} whitespace bytes may come first (a
     * SentencePiece model likes to start with "▁{"), nothing after it, so a complete value ends the generation.
     */
    public static GrammarNode document(GrammarNode value) {
        GrammarNode d = GrammarNode.seq(WS, value);
        MatchState.start(d);   // a left-recursive schema ($ref reaching itself before any output) is refused here
        return d;
    }

    /**
     * The grammar of the JSON texts valid against {@code schema} ({@link #document} of {@link #compileValue}).
     *
     * @throws InvalidInputException naming the unsupported keyword (and its path) or why the schema cannot be met
     */
    public static GrammarNode compile(JsonNode schema) {
        return document(compileValue(schema));
    }

    /** The grammar of one JSON value valid against {@code schema}, without the document's leading whitespace. */
    public static GrammarNode compileValue(JsonNode schema) {
        JsonSchemaGrammar g = new JsonSchemaGrammar(schema);
        return g.node(schema, "#");
    }

    /** The grammar of a JSON string holding exactly {@code s}. */
    public static GrammarNode stringLiteral(String s) {
        return literalOf(JSON.getNodeFactory().textNode(s));
    }

    /** Literal JSON text (at least one byte), e.g. punctuation around values. */
    public static GrammarNode text(String s) { return lit(s); }

    /** The bounded whitespace allowed between tokens. */
    public static GrammarNode whitespace() { return WS; }

    private static Literal lit(String s) { return Literal.of(s); }

    private static GrammarNode objectOfAny(GrammarNode key, GrammarNode value) {
        GrammarNode member = GrammarNode.seq(key, WS, lit(":"), WS, value);
        return GrammarNode.seq(lit("{"), WS,
                GrammarNode.optional(GrammarNode.seq(new Repeat(member, GrammarNode.seq(WS, lit(","), WS), 1, Repeat.UNBOUNDED), WS)), lit("}"));
    }

    private static InvalidInputException refuse(String path, String why) {
        return new InvalidInputException("schema " + path + ": " + why);
    }

    private GrammarNode node(JsonNode s, String path) {
        if (s == null) throw refuse(path, "missing schema");
        if (s.isBoolean()) {
            if (!s.asBoolean()) throw refuse(path, "false allows no value");
            return ANY_VALUE;
        }
        if (!s.isObject()) throw refuse(path, "a schema must be an object or a boolean, got " + s.getNodeType().name().toLowerCase());
        for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!SUPPORTED.contains(k) && !ANNOTATIONS.contains(k)) {
                throw refuse(path, "keyword '" + k + "' is not supported (structured outputs support type, properties, required, "
                        + "additionalProperties, items, minItems, maxItems, minLength, maxLength, minimum, maximum, exclusiveMinimum, "
                        + "exclusiveMaximum, pattern, enum, const, anyOf, oneOf, $ref)");
            }
        }
        if (s.has("$ref")) {
            if (s.size() > 1) {
                for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
                    String k = it.next();
                    if (!k.equals("$ref") && !ANNOTATIONS.contains(k)) throw refuse(path, "'$ref' beside '" + k + "' is not supported");
                }
            }
            return ref(s.get("$ref"), path);
        }
        if (s.has("const")) return constant(s, s.get("const"), path);
        if (s.has("enum")) return enumeration(s, path);
        if (s.has("anyOf") || s.has("oneOf")) return union(s, path);
        Set<Kind> kinds = kinds(s, path);
        List<GrammarNode> out = new ArrayList<>();
        for (Kind k : kinds) {
            out.add(switch (k) {
                case OBJECT -> object(s, path);
                case ARRAY -> array(s, path);
                case STRING -> string(s, path);
                case NUMBER -> number(s, path, !s.has("type") || isType(s, "number") || hasType(s, "number"));
                case BOOLEAN -> new GrammarNode.Choice(List.of(lit("true"), lit("false")));
                case NULL -> lit("null");
            });
        }
        return GrammarNode.choice(out);
    }

    private static boolean isType(JsonNode s, String t) { return s.path("type").isTextual() && s.get("type").asText().equals(t); }

    private static boolean hasType(JsonNode s, String t) {
        for (JsonNode e : s.path("type")) if (e.asText().equals(t)) return true;
        return false;
    }

    /** The kinds a schema without const/enum/anyOf/oneOf/$ref allows: its type(s), or what its keywords imply. */
    private Set<Kind> kinds(JsonNode s, String path) {
        JsonNode type = s.get("type");
        Set<Kind> kinds = EnumSet.noneOf(Kind.class);
        if (type == null) {
            boolean object = s.has("properties") || s.has("required") || s.has("additionalProperties");
            boolean array = s.has("items") || s.has("minItems") || s.has("maxItems");
            boolean string = s.has("minLength") || s.has("maxLength") || s.has("pattern");
            boolean number = s.has("minimum") || s.has("maximum") || s.has("exclusiveMinimum") || s.has("exclusiveMaximum");
            if (number) kinds.add(Kind.NUMBER);
            if (object) kinds.add(Kind.OBJECT);
            if (array) kinds.add(Kind.ARRAY);
            if (string) kinds.add(Kind.STRING);
            if (kinds.isEmpty()) kinds.addAll(EnumSet.allOf(Kind.class));   // {}: any value
            return kinds;
        }
        List<JsonNode> names = new ArrayList<>();
        if (type.isArray()) type.forEach(names::add);
        else names.add(type);
        if (names.isEmpty()) throw refuse(path, "'type' is an empty array: no value satisfies it");
        for (JsonNode n : names) {
            if (!n.isTextual()) throw refuse(path, "'type' must be a string or an array of strings, got " + n);
            kinds.add(switch (n.asText()) {
                case "object" -> Kind.OBJECT;
                case "array" -> Kind.ARRAY;
                case "string" -> Kind.STRING;
                case "number", "integer" -> Kind.NUMBER;
                case "boolean" -> Kind.BOOLEAN;
                case "null" -> Kind.NULL;
                default -> throw refuse(path, "unknown type '" + n.asText() + "'");
            });
        }
        return kinds;
    }

    // ---- numbers ----

    /**
     * A number or integer with the bounds structured outputs can honour exactly: none; bounds the grammar meets anyway
     * (an integer has at most {@value #MAX_INTEGER_DIGITS} digits, so JavaScript's safe-integer bounds, which zod writes
     * for {@code .int()}, always hold); minimum 0 (no sign) and, for integers, minimum 1 or exclusiveMinimum 0. Other
     * bounds are refused naming the keyword.
     */
    private static GrammarNode number(JsonNode s, String path, boolean real) {
        double lower = Double.NEGATIVE_INFINITY, upper = Double.POSITIVE_INFINITY;
        boolean lowerExclusive = false, upperExclusive = false;
        for (String k : new String[] {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
            JsonNode v = s.get(k);
            if (v == null) continue;
            if (!v.isNumber()) throw refuse(path, "'" + k + "' must be a number, got " + v);
            double d = v.asDouble();
            switch (k) {
                case "minimum" -> { if (d > lower || d == lower && lowerExclusive) { lower = d; lowerExclusive = false; } }
                case "exclusiveMinimum" -> { if (d >= lower) { lower = d; lowerExclusive = true; } }
                case "maximum" -> { if (d < upper || d == upper && upperExclusive) { upper = d; upperExclusive = false; } }
                default -> { if (d <= upper) { upper = d; upperExclusive = true; } }
            }
        }
        boolean upperHolds = real ? upper == Double.POSITIVE_INFINITY : upper > INTEGER_LIMIT || upper == INTEGER_LIMIT && !upperExclusive;
        if (!upperHolds) {
            throw refuse(path, "'" + (upperExclusive ? "exclusiveMaximum" : "maximum") + "' " + fmt(upper) + " is not supported (an upper "
                    + "bound is honoured only when " + (real ? "absent" : "at least " + INTEGER_LIMIT) + ")");
        }
        if (lower == Double.NEGATIVE_INFINITY || !real && (lower < -INTEGER_LIMIT || lower == -INTEGER_LIMIT && !lowerExclusive)) {
            return real ? NUMBER : INTEGER;
        }
        if (lower == 0 && !lowerExclusive) return real ? NON_NEGATIVE_NUMBER : NON_NEGATIVE_INTEGER;
        if (!real && (lower == 1 && !lowerExclusive || lower == 0 && lowerExclusive)) return POSITIVE_INTEGER;
        throw refuse(path, "'" + (lowerExclusive ? "exclusiveMinimum" : "minimum") + "' " + fmt(lower) + " is not supported (lower bounds "
                + "honoured: none, minimum 0" + (real ? "" : ", minimum 1, exclusiveMinimum 0, or " + -INTEGER_LIMIT + " and below") + ")");
    }

    private static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e18 ? Long.toString((long) d) : Double.toString(d);
    }

    // ---- $ref ----

    private GrammarNode ref(JsonNode ref, String path) {
        if (!ref.isTextual()) throw refuse(path, "'$ref' must be a string");
        String r = ref.asText();
        if (!r.equals("#") && !r.startsWith("#/$defs/") && !r.startsWith("#/definitions/")) {
            throw refuse(path, "'$ref' " + r + " is not supported: only '#', '#/$defs/NAME' and '#/definitions/NAME' are");
        }
        GrammarNode done = compiled.get(r);
        if (done != null) return done;
        Ref pending = refs.get(r);
        if (pending != null) return pending;   // recursion: resolved when the target is compiled
        JsonNode target;
        try {
            target = r.equals("#") ? root : root.at(r.substring(1));
        } catch (IllegalArgumentException e) {
            throw refuse(path, "'$ref' " + r + " is not a valid JSON pointer");
        }
        if (target == null || target.isMissingNode()) throw refuse(path, "'$ref' " + r + " points at nothing");
        Ref placeholder = new Ref(r);
        refs.put(r, placeholder);
        GrammarNode n = node(target, r);
        placeholder.set(n);
        compiled.put(r, placeholder);
        return placeholder;
    }

    // ---- const, enum ----

    private GrammarNode constant(JsonNode s, JsonNode value, String path) {
        onlyWith(s, path, "const", "type");
        return literalOf(value);
    }

    private GrammarNode enumeration(JsonNode s, String path) {
        onlyWith(s, path, "enum", "type");
        JsonNode values = s.get("enum");
        if (!values.isArray() || values.isEmpty()) throw refuse(path, "'enum' must be a non-empty array");
        List<GrammarNode> out = new ArrayList<>();
        Set<String> seen = new LinkedHashSet<>();
        for (JsonNode v : values) {
            if (s.has("type") && !typeAllows(s, v)) continue;
            if (seen.add(write(v))) out.add(literalOf(v));
        }
        if (out.isEmpty()) throw refuse(path, "no 'enum' value has the schema's 'type'");
        return GrammarNode.choice(out);
    }

    private boolean typeAllows(JsonNode s, JsonNode v) {
        List<String> types = new ArrayList<>();
        if (s.get("type").isArray()) s.get("type").forEach(t -> types.add(t.asText()));
        else types.add(s.get("type").asText());
        for (String t : types) {
            boolean ok = switch (t) {
                case "object" -> v.isObject();
                case "array" -> v.isArray();
                case "string" -> v.isTextual();
                case "number" -> v.isNumber();
                case "integer" -> v.isIntegralNumber() || v.isNumber() && v.decimalValue().stripTrailingZeros().scale() <= 0;
                case "boolean" -> v.isBoolean();
                case "null" -> v.isNull();
                default -> false;
            };
            if (ok) return true;
        }
        return false;
    }

    /** Keywords beside const/enum: only the type (checked) and annotations. */
    private void onlyWith(JsonNode s, String path, String keyword, String... allowed) {
        for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (k.equals(keyword) || ANNOTATIONS.contains(k) || List.of(allowed).contains(k)) continue;
            throw refuse(path, "'" + k + "' beside '" + keyword + "' is not supported");
        }
        if (keyword.equals("const") && s.has("type") && !typeAllows(s, s.get("const"))) {
            throw refuse(path, "'const' does not have the schema's 'type'");
        }
    }

    private static String write(JsonNode v) {
        try {
            return JSON.writeValueAsString(v);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static GrammarNode literalOf(JsonNode v) {
        return lit(write(v));
    }

    // ---- anyOf, oneOf ----

    private GrammarNode union(JsonNode s, String path) {
        if (s.has("anyOf") && s.has("oneOf")) throw refuse(path, "'anyOf' beside 'oneOf' is not supported");
        String keyword = s.has("anyOf") ? "anyOf" : "oneOf";
        for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!k.equals(keyword) && !ANNOTATIONS.contains(k)) throw refuse(path, "'" + k + "' beside '" + keyword + "' is not supported");
        }
        JsonNode branches = s.get(keyword);
        if (!branches.isArray() || branches.isEmpty()) throw refuse(path, "'" + keyword + "' must be a non-empty array");
        List<GrammarNode> out = new ArrayList<>();
        Set<Kind> seen = EnumSet.noneOf(Kind.class);
        for (int i = 0; i < branches.size(); i++) {
            String at = path + "/" + keyword + "/" + i;
            if (keyword.equals("oneOf")) {
                Set<Kind> k = branchKinds(branches.get(i), at, 0);
                for (Kind kind : k) {
                    if (!seen.add(kind)) {
                        throw refuse(at, "'oneOf' branches must have disjoint types (a value matching two branches would be "
                                + "invalid); use 'anyOf'");
                    }
                }
            }
            out.add(node(branches.get(i), at));
        }
        return GrammarNode.choice(out);
    }

    /** The kinds of value a branch may produce (for oneOf's disjointness). */
    private Set<Kind> branchKinds(JsonNode b, String path, int depth) {
        if (depth > 64) throw refuse(path, "'$ref' chain too deep");
        if (b.isBoolean()) return EnumSet.allOf(Kind.class);
        if (b.has("$ref")) {
            String r = b.get("$ref").asText();
            JsonNode target;
            try {
                target = r.equals("#") ? root : root.at(r.startsWith("#/") ? r.substring(1) : "/");
            } catch (IllegalArgumentException e) {
                throw refuse(path, "'$ref' " + r + " is not a valid JSON pointer");
            }
            if (target == null || target.isMissingNode()) throw refuse(path, "'$ref' " + r + " points at nothing");
            return branchKinds(target, r, depth + 1);
        }
        if (b.has("const")) return EnumSet.of(kindOf(b.get("const")));
        if (b.has("enum")) {
            Set<Kind> k = EnumSet.noneOf(Kind.class);
            for (JsonNode v : b.get("enum")) k.add(kindOf(v));
            return k;
        }
        if (b.has("anyOf") || b.has("oneOf")) {
            Set<Kind> k = EnumSet.noneOf(Kind.class);
            for (JsonNode c : b.path(b.has("anyOf") ? "anyOf" : "oneOf")) k.addAll(branchKinds(c, path, depth + 1));
            return k;
        }
        return kinds(b, path);
    }

    private static Kind kindOf(JsonNode v) {
        if (v.isObject()) return Kind.OBJECT;
        if (v.isArray()) return Kind.ARRAY;
        if (v.isTextual()) return Kind.STRING;
        if (v.isNumber()) return Kind.NUMBER;
        if (v.isBoolean()) return Kind.BOOLEAN;
        return Kind.NULL;
    }

    // ---- object ----

    private GrammarNode object(JsonNode s, String path) {
        JsonNode props = s.get("properties");
        if (props != null && !props.isObject()) throw refuse(path, "'properties' must be an object");
        Set<String> required = new LinkedHashSet<>();
        JsonNode req = s.get("required");
        if (req != null) {
            if (!req.isArray()) throw refuse(path, "'required' must be an array of strings");
            for (JsonNode r : req) {
                if (!r.isTextual()) throw refuse(path, "'required' must be an array of strings");
                required.add(r.asText());
            }
        }
        JsonNode additional = s.get("additionalProperties");
        if (additional != null && !additional.isBoolean() && !additional.isObject()) {
            throw refuse(path, "'additionalProperties' must be a boolean or a schema");
        }
        boolean extraAllowed = additional == null || !additional.isBoolean() || additional.asBoolean();
        Map<String, GrammarNode> members = new LinkedHashMap<>();
        Set<String> optional = new LinkedHashSet<>();
        if (props != null) {
            for (Iterator<Map.Entry<String, JsonNode>> it = props.fields(); it.hasNext(); ) {
                var e = it.next();
                members.put(e.getKey(), node(e.getValue(), path + "/properties/" + e.getKey()));
                if (!required.contains(e.getKey())) optional.add(e.getKey());
            }
        }
        for (String r : required) {
            if (members.containsKey(r)) continue;
            if (!extraAllowed) throw refuse(path, "required property '" + r + "' is not in 'properties' and additionalProperties is false");
            members.put(r, additional == null || additional.isBoolean() ? ANY_VALUE : node(additional, path + "/additionalProperties"));
        }
        if (members.isEmpty()) {
            if (!extraAllowed) return GrammarNode.seq(lit("{"), WS, lit("}"));
            GrammarNode value = additional == null || additional.isBoolean() ? ANY_VALUE : node(additional, path + "/additionalProperties");
            return objectOfAny(GrammarNode.seq(lit("\""), new JsonString(0, Repeat.UNBOUNDED)), value);
        }
        List<String> names = new ArrayList<>(members.keySet());
        List<GrammarNode> member = new ArrayList<>();
        for (String n : names) member.add(GrammarNode.seq(literalOf(JSON.getNodeFactory().textNode(n)), WS, lit(":"), WS, members.get(n)));
        // rest(i, first): the members from i on; 'first' when none was emitted yet (no comma before the next)
        GrammarNode[][] rest = new GrammarNode[names.size() + 1][2];
        rest[names.size()][0] = GrammarNode.EMPTY;
        rest[names.size()][1] = GrammarNode.EMPTY;
        GrammarNode comma = GrammarNode.seq(WS, lit(","), WS);
        for (int i = names.size() - 1; i >= 0; i--) {
            for (int first = 0; first < 2; first++) {
                GrammarNode emit = first == 1 ? GrammarNode.seq(member.get(i), rest[i + 1][0])
                        : GrammarNode.seq(comma, member.get(i), rest[i + 1][0]);
                rest[i][first] = optional.contains(names.get(i)) ? new GrammarNode.Choice(List.of(emit, rest[i + 1][first])) : emit;
            }
        }
        return GrammarNode.seq(lit("{"), WS, rest[0][1], WS, lit("}"));
    }

    // ---- array ----

    private GrammarNode array(JsonNode s, String path) {
        int min = count(s, "minItems", 0, path);
        int max = s.has("maxItems") ? count(s, "maxItems", 0, path) : Repeat.UNBOUNDED;
        if (max < min) throw refuse(path, "maxItems " + max + " < minItems " + min + ": no array satisfies it");
        JsonNode items = s.get("items");
        if (items != null && items.isArray()) throw refuse(path, "'items' as an array (tuples) is not supported");
        GrammarNode item = items == null ? ANY_VALUE : node(items, path + "/items");
        if (max == 0) return GrammarNode.seq(lit("["), WS, lit("]"));
        GrammarNode list = GrammarNode.seq(new Repeat(item, GrammarNode.seq(WS, lit(","), WS), Math.max(min, 1), max), WS);
        return GrammarNode.seq(lit("["), WS, min == 0 ? GrammarNode.optional(list) : list, lit("]"));
    }

    private static int count(JsonNode s, String keyword, int dflt, String path) {
        JsonNode v = s.get(keyword);
        if (v == null) return dflt;
        if (!v.canConvertToInt() || !v.isIntegralNumber() && !(v.isNumber() && v.asDouble() == Math.rint(v.asDouble())) || v.asInt() < 0) {
            throw refuse(path, "'" + keyword + "' must be a non-negative integer, got " + v);
        }
        return v.asInt();
    }

    // ---- string ----

    private GrammarNode string(JsonNode s, String path) {
        int min = count(s, "minLength", 0, path);
        int max = s.has("maxLength") ? count(s, "maxLength", 0, path) : Repeat.UNBOUNDED;
        if (max < min) throw refuse(path, "maxLength " + max + " < minLength " + min + ": no string satisfies it");
        if (s.has("pattern")) {
            if (s.has("minLength") || s.has("maxLength")) throw refuse(path, "'pattern' beside 'minLength'/'maxLength' is not supported");
            JsonNode p = s.get("pattern");
            if (!p.isTextual()) throw refuse(path, "'pattern' must be a string");
            return GrammarNode.seq(lit("\""), RegexGrammar.compile(p.asText(), path), lit("\""));
        }
        return GrammarNode.seq(lit("\""), new JsonString(min, max));
    }
}
