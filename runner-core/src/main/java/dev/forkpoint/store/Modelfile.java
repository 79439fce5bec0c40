package dev.forkpoint.store;

import dev.forkpoint.InvalidInputException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The subset of Ollama's Modelfile that {@code /api/create} accepts: {@code FROM}, {@code PARAMETER <name> <value>}
 * (repeatable; {@code stop} repeated builds a list), {@code TEMPLATE} and {@code SYSTEM}, instructions case-insensitive,
 * {@code #} comments, values plain to the end of the line, {@code "quoted"} or {@code """multi-line"""}. Any other
 * instruction (ADAPTER, LICENSE, MESSAGE, REQUIRES …) is refused naming it.
 *
 * @param from       the FROM value (a path or a model name)
 * @param parameters PARAMETER lines in order, values as written (typed by {@link ModelParams})
 * @param template   TEMPLATE, or null
 * @param system     SYSTEM, or null
 */
public record Modelfile(String from, List<String[]> parameters, String template, String system) {

    /** Parses {@code text}; an error is an {@link InvalidInputException} naming the instruction and line. */
    public static Modelfile parse(String text) {
        String from = null, template = null, system = null;
        List<String[]> params = new ArrayList<>();
        int i = 0, n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            if (Character.isWhitespace(c)) { i++; continue; }
            int line = lineOf(text, i);
            if (c == '#') {
                while (i < n && text.charAt(i) != '\n') i++;
                continue;
            }
            int start = i;
            while (i < n && !Character.isWhitespace(text.charAt(i))) i++;
            String word = text.substring(start, i);
            String instruction = word.toUpperCase(Locale.ROOT);
            switch (instruction) {
                case "FROM", "TEMPLATE", "SYSTEM" -> {
                    int[] at = {i};
                    String value = value(text, at, instruction, line);
                    i = at[0];
                    if (instruction.equals("FROM")) {
                        if (value.isEmpty()) throw new InvalidInputException("Modelfile line " + line + ": FROM needs a model name or a path");
                        from = value;
                    } else if (instruction.equals("TEMPLATE")) {
                        template = value;
                    } else {
                        system = value;
                    }
                }
                case "PARAMETER" -> {
                    while (i < n && (text.charAt(i) == ' ' || text.charAt(i) == '\t')) i++;
                    int s = i;
                    while (i < n && !Character.isWhitespace(text.charAt(i))) i++;
                    String name = text.substring(s, i);
                    if (name.isEmpty()) throw new InvalidInputException("Modelfile line " + line + ": PARAMETER needs a name and a value");
                    int[] at = {i};
                    String value = value(text, at, "PARAMETER " + name, line);
                    i = at[0];
                    if (value.isEmpty()) throw new InvalidInputException("Modelfile line " + line + ": PARAMETER " + name + " has no value");
                    params.add(new String[] {name.toLowerCase(Locale.ROOT), value});
                }
                case "ADAPTER", "LICENSE", "MESSAGE", "REQUIRES", "RENDERER", "PARSER" -> throw new InvalidInputException(
                        "Modelfile line " + line + ": the instruction " + instruction + " is not supported by Forkpoint"
                                + " (FROM, PARAMETER, TEMPLATE and SYSTEM are)");
                default -> throw new InvalidInputException("Modelfile line " + line + ": unknown instruction '" + word
                        + "' (FROM, PARAMETER, TEMPLATE and SYSTEM are supported)");
            }
        }
        if (from == null) throw new InvalidInputException("the Modelfile has no FROM instruction");
        return new Modelfile(from, params, template, system);
    }

    private static String value(String text, int[] at, String what, int line) {
        int i = at[0], n = text.length();
        while (i < n && (text.charAt(i) == ' ' || text.charAt(i) == '\t')) i++;
        String value;
        if (text.startsWith("\"\"\"", i)) {
            int end = text.indexOf("\"\"\"", i + 3);
            if (end < 0) throw new InvalidInputException("Modelfile line " + line + ": " + what + " opens \"\"\" without closing it");
            value = text.substring(i + 3, end);
            i = end + 3;
        } else if (i < n && text.charAt(i) == '"') {
            StringBuilder b = new StringBuilder();
            i++;
            while (true) {
                if (i >= n) throw new InvalidInputException("Modelfile line " + line + ": " + what + " opens \" without closing it");
                char c = text.charAt(i++);
                if (c == '"') break;
                if (c == '\\' && i < n) {
                    char e = text.charAt(i++);
                    b.append(switch (e) { case 'n' -> '\n'; case 't' -> '\t'; default -> e; });
                } else {
                    b.append(c);
                }
            }
            value = b.toString();
        } else {
            int s = i;
            while (i < n && text.charAt(i) != '\n') i++;
            value = text.substring(s, i).strip();
        }
        at[0] = i;
        return value;
    }

    private static int lineOf(String text, int offset) {
        int line = 1;
        for (int i = 0; i < offset; i++) if (text.charAt(i) == '\n') line++;
        return line;
    }
}
