package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The subset of Ollama's Go-template TEMPLATE that Forkpoint runs: text, {@code {{ .System }}}, {@code {{ .Prompt }}},
 * {@code {{ .Response }}}, {@code {{ if .X }} … {{ else }} … {{ end }}} (X one of the three), with Go's trim markers
 * ({@code {{-} trims the whitespace before, {@code -}}} the whitespace after). Anything else ({@code range .Messages},
 * functions, pipelines) is refused by {@link #parse} with a message naming the action.
 *
 * <p>A chat is rendered as Ollama renders such a template: the messages are collapsed into turns (the latest system
 * message as .System, a user message as .Prompt, the assistant's reply as .Response); each completed turn is rendered
 * whole, and the last turn is rendered up to its {@code {{ .Response }}}, where the model's reply begins.
 */
public final class OllamaTemplate {
    private static final Pattern ACTION = Pattern.compile("\\{\\{(-\\s)?\\s*(.*?)\\s*(\\s-)?}}", Pattern.DOTALL);

    private sealed interface Node permits Text, Var, If {}
    private record Text(String text) implements Node {}
    private record Var(String name) implements Node {}
    private record If(String name, List<Node> then, List<Node> otherwise) implements Node {}

    private final String source;
    private final List<Node> nodes;

    private OllamaTemplate(String source, List<Node> nodes) {
        this.source = source;
        this.nodes = nodes;
    }

    public String source() { return source; }

    /** Parses {@code source}; an action outside the subset throws {@link InvalidInputException} naming it. */
    public static OllamaTemplate parse(String source) {
        // tokens: text and actions, with trim markers applied to the neighbouring text
        List<Object> tokens = new ArrayList<>();   // String text or String[] {action}
        Matcher m = ACTION.matcher(source);
        int at = 0;
        boolean trimNext = false;
        while (m.find()) {
            String text = source.substring(at, m.start());
            if (trimNext) text = text.stripLeading();
            if (m.group(1) != null) text = text.stripTrailing();
            tokens.add(text);
            tokens.add(new String[] {m.group(2)});
            trimNext = m.group(3) != null;
            at = m.end();
        }
        String tail = source.substring(at);
        if (trimNext) tail = tail.stripLeading();
        if (tail.contains("{{")) throw new InvalidInputException("the template has an unclosed '{{' action");
        tokens.add(tail);
        int[] pos = {0};
        List<Node> nodes = parseBlock(tokens, pos, false);
        return new OllamaTemplate(source, nodes);
    }

    private static List<Node> parseBlock(List<Object> tokens, int[] pos, boolean inIf) {
        List<Node> out = new ArrayList<>();
        while (pos[0] < tokens.size()) {
            Object t = tokens.get(pos[0]);
            if (t instanceof String s) {
                if (!s.isEmpty()) out.add(new Text(s));
                pos[0]++;
                continue;
            }
            String action = ((String[]) t)[0];
            if (action.equals("end") || action.equals("else")) {
                if (!inIf) throw new InvalidInputException("the template has {{ " + action + " }} outside an {{ if }}");
                return out;
            }
            pos[0]++;
            if (action.matches("\\.(System|Prompt|Response)")) {
                out.add(new Var(action.substring(1)));
            } else if (action.matches("if\\s+\\.(System|Prompt|Response)")) {
                String name = action.substring(action.indexOf('.') + 1);
                List<Node> then = parseBlock(tokens, pos, true);
                List<Node> otherwise = List.of();
                if (pos[0] < tokens.size() && ((String[]) tokens.get(pos[0]))[0].equals("else")) {
                    pos[0]++;
                    otherwise = parseBlock(tokens, pos, true);
                }
                if (pos[0] >= tokens.size()) throw new InvalidInputException("the template's {{ if ." + name + " }} has no {{ end }}");
                pos[0]++;   // end
                out.add(new If(name, then, otherwise));
            } else {
                throw new InvalidInputException("the template action {{ " + action + " }} is not supported: Forkpoint runs"
                        + " templates of text, {{ .System }}, {{ .Prompt }}, {{ .Response }} and {{ if .X }} … {{ else }} … {{ end }}");
            }
        }
        if (inIf) throw new InvalidInputException("the template has an {{ if }} without {{ end }}");
        return out;
    }

    /** Renders one turn; with {@code cut} rendering stops at the first {@code {{ .Response }}}. */
    public String render(String system, String prompt, String response, boolean cut) {
        StringBuilder out = new StringBuilder();
        render(nodes, system, prompt, response, cut, out);
        return out.toString();
    }

    private static boolean render(List<Node> nodes, String system, String prompt, String response, boolean cut, StringBuilder out) {
        for (Node n : nodes) {
            switch (n) {
                case Text t -> out.append(t.text());
                case Var v -> {
                    if (cut && v.name().equals("Response")) return true;
                    out.append(value(v.name(), system, prompt, response));
                }
                case If i -> {
                    boolean stop = render(value(i.name(), system, prompt, response).isEmpty() ? i.otherwise() : i.then(),
                            system, prompt, response, cut, out);
                    if (stop) return true;
                }
            }
        }
        return false;
    }

    private static String value(String name, String system, String prompt, String response) {
        return switch (name) {
            case "System" -> system;
            case "Prompt" -> prompt;
            default -> response;
        };
    }

    /** The chat collapsed into turns as Ollama does for a template without .Messages; message ends at completed turns. */
    public RenderedChat renderChat(List<ChatMessage> messages) {
        StringBuilder out = new StringBuilder();
        int[] ends = new int[messages.size()];
        String system = "", prompt = "";
        for (int i = 0; i < messages.size(); i++) {
            ChatMessage m = messages.get(i);
            ends[i] = -1;
            switch (m.role()) {
                case "system" -> system = m.content();
                case "user", "tool" -> prompt = prompt.isEmpty() ? m.content() : prompt + "\n\n" + m.content();
                case "assistant" -> {
                    out.append(render(system, prompt, m.content(), false));
                    system = "";
                    prompt = "";
                    ends[i] = out.length();
                }
                default -> throw new InvalidInputException("messages[" + i + "].role must be system, user, assistant or tool, got '" + m.role() + "'");
            }
        }
        out.append(render(system, prompt, "", true));
        return new RenderedChat(out.toString(), ends);
    }
}
