package dev.forkpoint.chat;

import com.fasterxml.jackson.databind.JsonNode;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON as Python's {@code json.dumps(value, ensure_ascii=False, indent=…)} writes it, which is what the {@code tojson}
 * filter of Hugging Face chat templates produces: {@code ", "} and {@code ": "} separators (or one item per line with
 * {@code indent}), keys in insertion order, non-ASCII text as is, floats as Python's repr. Also converts Jackson trees
 * to the plain maps, lists, strings and numbers the template engine sees.
 */
final class PyJson {
    private PyJson() {}

    /** {@code value} (maps, iterables, arrays, strings, numbers, booleans, null) as Python would dump it. */
    static String dumps(Object value, int indent) {
        StringBuilder out = new StringBuilder();
        write(out, value, indent, 0);
        return out.toString();
    }

    /** A Jackson tree as LinkedHashMap / ArrayList / String / Long / Double / Boolean / null. */
    static Object toPlain(JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) return null;
        if (node.isObject()) {
            Map<String, Object> map = new LinkedHashMap<>();
            node.properties().forEach(e -> map.put(e.getKey(), toPlain(e.getValue())));
            return map;
        }
        if (node.isArray()) {
            List<Object> list = new ArrayList<>();
            node.forEach(n -> list.add(toPlain(n)));
            return list;
        }
        if (node.isBoolean()) return node.booleanValue();
        if (node.isIntegralNumber()) return node.canConvertToLong() ? (Object) node.longValue() : node.bigIntegerValue();
        if (node.isNumber()) return node.doubleValue();
        return node.asText();
    }

    private static void write(StringBuilder out, Object v, int indent, int depth) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof CharSequence s) {
            string(out, s.toString());
        } else if (v instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (v instanceof Double || v instanceof Float) {
            out.append(pyFloat(((Number) v).doubleValue()));
        } else if (v instanceof BigDecimal d) {
            out.append(pyFloat(d.doubleValue()));
        } else if (v instanceof Number n) {
            out.append(n);
        } else if (v instanceof JsonNode node) {
            write(out, toPlain(node), indent, depth);
        } else if (v instanceof Map<?, ?> map) {
            if (map.isEmpty()) { out.append("{}"); return; }
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) out.append(indent > 0 ? "," : ", ");
                first = false;
                newline(out, indent, depth + 1);
                Object key = e.getKey();
                string(out, key instanceof CharSequence ? key.toString() : dumps(key, 0));
                out.append(": ");
                write(out, e.getValue(), indent, depth + 1);
            }
            newline(out, indent, depth);
            out.append('}');
        } else if (v instanceof Iterable<?> || v instanceof Object[] || v instanceof Iterator<?>) {
            Iterator<?> it = v instanceof Iterable<?> i ? i.iterator()
                    : v instanceof Object[] a ? List.of(a).iterator() : (Iterator<?>) v;
            if (!it.hasNext()) { out.append("[]"); return; }
            out.append('[');
            boolean first = true;
            while (it.hasNext()) {
                if (!first) out.append(indent > 0 ? "," : ", ");
                first = false;
                newline(out, indent, depth + 1);
                write(out, it.next(), indent, depth + 1);
            }
            newline(out, indent, depth);
            out.append(']');
        } else if (v instanceof Map.Entry<?, ?> e) {
            write(out, List.of(e.getKey(), e.getValue()), indent, depth);
        } else {
            string(out, v.toString());
        }
    }

    private static void newline(StringBuilder out, int indent, int depth) {
        if (indent <= 0) return;
        out.append('\n');
        out.append(" ".repeat(indent * depth));
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        out.append('"');
    }

    /** Python's repr of a float: "1.0", "0.0001", "1e-05", "1e+16", "NaN", "Infinity". */
    static String pyFloat(double d) {
        if (Double.isNaN(d)) return "NaN";
        if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
        String r = Double.toString(d);
        double abs = Math.abs(d);
        if (abs == 0 || (abs >= 1e-4 && abs < 1e16)) {
            if (r.indexOf('E') < 0) return r;
            String plain = new BigDecimal(r).toPlainString();
            return plain.indexOf('.') < 0 ? plain + ".0" : plain;
        }
        int e = r.indexOf('E');
        String mantissa;
        int exp;
        if (e < 0) {
            BigDecimal bd = new BigDecimal(r);
            exp = bd.precision() - bd.scale() - 1;
            mantissa = bd.movePointLeft(exp).stripTrailingZeros().toPlainString();
        } else {
            mantissa = r.substring(0, e);
            exp = Integer.parseInt(r.substring(e + 1));
        }
        if (mantissa.endsWith(".0")) mantissa = mantissa.substring(0, mantissa.length() - 2);
        return mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }

    static boolean isCollection(Object v) {
        return v instanceof Collection<?> || v instanceof Map<?, ?> || v instanceof Object[];
    }
}
